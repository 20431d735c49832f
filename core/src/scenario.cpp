#include "tpusim/core/scenario.h"

#include <fmt/format.h>

#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/mesh_spec.h"
#include "workload_checks.h"

namespace tpusim {
namespace fs = std::filesystem;

std::string_view remat_tag_name(RematTag tag) {
  switch (tag) {
    case RematTag::decoder_layer_input: return "decoder_layer_input";
    case RematTag::query_proj: return "query_proj";
    case RematTag::key_proj: return "key_proj";
    case RematTag::value_proj: return "value_proj";
    case RematTag::context: return "context";
    case RematTag::out_proj: return "out_proj";
    case RematTag::mlpwi: return "mlpwi";
    case RematTag::mlpwo: return "mlpwo";
  }
  return "?";
}

namespace {

const FieldTable<WorkloadSpec>& workload_fields() {
  using S = WorkloadSpec;
  static const FieldTable<WorkloadSpec> table = [] {
    FieldTable<WorkloadSpec> t;
    t.add<std::string>("program", [](S& s) -> std::string& { return s.program; }, "",
                       "path to a program file (tpusim lower's format) to run instead of a model");
    t.add<std::int64_t>("batch", [](S& s) -> std::int64_t& { return s.batch; }, "1",
                        "examples per step: the global batch of a transformer or resnet (split over the mesh); an mlp, dlrm or "
                        "gemm is not sharded, so each chip runs its own step on this batch", in_range(std::int64_t{1}, kMaxDimension));
    t.add_choice<StepKind>("step", [](S& s) -> StepKind& { return s.step; },
                           {{"forward", StepKind::forward},
                            {"train", StepKind::train},
                            {"prefill", StepKind::prefill},
                            {"decode", StepKind::decode}},
                           "train",
                           "forward pass; training step (forward, backward, optimizer update); prefill (a prompt's "
                           "forward pass filling the KV cache); decode (one new token per sequence)");
    t.add_choice<DType>("dtype", [](S& s) -> DType& { return s.numerics.dtype; },
                        {{"bf16", DType::bf16}, {"f32", DType::f32}, {"int8", DType::int8}, {"fp8", DType::fp8}},
                        "bf16", "matmul operand and activation type; int8 / fp8 need the chip's MXU rate for them");
    t.add_choice<std::optional<DType>>(
        "weight_dtype", [](S& s) -> std::optional<DType>& { return s.numerics.weight_dtype; },
        {{"auto", std::nullopt},
         {"bf16", DType::bf16},
         {"f32", DType::f32},
         {"int8", DType::int8},
         {"fp8", DType::fp8}},
        "auto",
        "parameters in HBM: auto = f32 for training (mixed precision), dtype otherwise; int8 / fp8 (inference) "
        "need the chip's MXU rate for them");
    t.add_choice<Quantization>(
        "quantization", [](S& s) -> Quantization& { return s.numerics.quantization; },
        {{"none", Quantization::none}, {"int8", Quantization::int8}}, "none",
        "int8: a transformer's dense-layer matmuls (forward, input and weight gradients) quantize their operands "
        "to int8 inside the kernel and run at the chip's int8 MXU rate, as AQT does (MaxText quantization: "
        "int8); activations, gradients and master weights keep their types");
    t.add_choice<Optimizer>("optimizer", [](S& s) -> Optimizer& { return s.optimizer; },
                            {{"sgd", Optimizer::sgd},
                             {"adam", Optimizer::adam},
                             {"adamw", Optimizer::adamw},
                             {"adafactor", Optimizer::adafactor}},
                            "adam", "optimizer of a training step");
    t.add<int>("microbatches", [](S& s) -> int& { return s.memory.microbatches; }, "1",
               "gradient accumulation: the batch runs as this many microbatches, one optimizer update",
               in_range(1, kMaxRepeat));
    t.add_choice<Remat>("remat", [](S& s) -> Remat& { return s.memory.remat; },
                        {{"none", Remat::none},
                         {"full", Remat::full},
                         {"selective", Remat::selective},
                         {"minimal", Remat::minimal},
                         {"save_dot_except_mlpwi", Remat::save_dot_except_mlpwi},
                         {"save_dot_except_mlp", Remat::save_dot_except_mlp},
                         {"save_dot_with_context_except_mlp", Remat::save_dot_with_context_except_mlp},
                         {"save_dot_except_logits_ffn1", Remat::save_dot_except_logits_ffn1},
                         {"save_qkv_proj", Remat::save_qkv_proj},
                         {"save_out_proj", Remat::save_out_proj},
                         {"qkv_proj_offloaded", Remat::qkv_proj_offloaded},
                         {"minimal_offloaded", Remat::minimal_offloaded},
                         {"custom", Remat::custom}},
                        "none",
                        "rematerialization: keep all activations (none), recompute each block (full), recompute "
                        "the attention core (selective), or a MaxText policy saving, recomputing or offloading to "
                        "host memory each tagged tensor of a block (kernels/README.md; custom: remat_custom.*)");
    for (std::size_t i = 0; i < kRematTags; ++i) {
      const auto tag = static_cast<RematTag>(i);
      t.add_choice<RematPlacement>(
          "remat_custom." + std::string(remat_tag_name(tag)),
          [i](S& s) -> RematPlacement& { return s.memory.remat_custom[i]; },
          {{"device", RematPlacement::device}, {"remat", RematPlacement::remat}, {"offload", RematPlacement::offload}},
          tag == RematTag::decoder_layer_input ? "device" : "remat",
          "remat: custom: where this tensor of each block waits for the backward pass: kept in HBM (device), "
          "recomputed (remat), or written to host memory and read back (offload)");
    }
    t.add_choice<bool>("fusion", [](S& s) -> bool& { return s.kernels.fusion; }, {{"on", true}, {"off", false}}, "on",
                       "fuse elementwise ops into matmul prologues/epilogues and into each other (one HBM round "
                       "trip per fusion), or run every op on its own");
    t.add_choice<AttentionImpl>("attention", [](S& s) -> AttentionImpl& { return s.kernels.attention; },
                                {{"unfused", AttentionImpl::unfused}, {"flash", AttentionImpl::flash}}, "flash",
                                "attention core: scores written to HBM (unfused), or tiled through VMEM with an "
                                "online softmax (flash)");
    t.add_choice<ModelPart>("part", [](S& s) -> ModelPart& { return s.part; },
                            {{"model", ModelPart::model}, {"blocks", ModelPart::blocks}}, "model",
                            "transformer: run the whole model, or its blocks only (no embedding, final norm, "
                            "vocabulary projection or loss; with model.layers: 1, one layer)");
    t.add<std::int64_t>("seq_len", [](S& s) -> std::int64_t& { return s.tokens.seq_len; }, "0",
                        "tokens per sequence (the prompt, for prefill); 0 = the model's context",
                        in_range(std::int64_t{0}, kMaxDimension));
    t.add<std::int64_t>("context", [](S& s) -> std::int64_t& { return s.tokens.context; }, "0",
                        "decode: tokens already in the KV cache; 0 = seq_len", in_range(std::int64_t{0}, kMaxDimension));
    t.add<std::int64_t>("decoder_seq_len", [](S& s) -> std::int64_t& { return s.tokens.decoder_seq_len; }, "0",
                        "encoder-decoder models: decoder (target) tokens per sequence; 0 = seq_len",
                        in_range(std::int64_t{0}, kMaxDimension));
    t.add<double>("input.examples_per_s_per_host", [](S& s) -> double& { return s.host.input.examples_per_s_per_host; },
                  "0",
                  "examples per second the host's input pipeline produces (shared by the chips of its "
                  "pod.host_shape block; on a one-chip slice by a full host's chip.host.chips_per_host); 0 = no "
                  "limit",
                  non_negative<double>());
    t.add<Bytes>("input.bytes_per_example", [](S& s) -> Bytes& { return s.host.input.bytes_per_example; }, "0 B",
                 "bytes of one example sent host -> chip over PCIe (MLP: an infeed of batch x this per step); "
                 "0 = none",
                 in_range(Bytes(0), Bytes(std::uint64_t{1} << 32)));
    t.add<int>("input.prefetch", [](S& s) -> int& { return s.host.input.prefetch; }, "2",
               "steps of input the host prepares ahead; > 0 overlaps the next step's input with this step, 0 = "
               "the step waits for its input",
               at_least(0));
    t.add<Seconds>("step_launch_overhead", [](S& s) -> Seconds& { return s.host.step_launch_overhead; }, "0 s",
                   "host time to launch the step before the chip starts it", non_negative<Seconds>());
    t.add<int>("host_syncs", [](S& s) -> int& { return s.host.host_syncs; }, "0",
               "host round trips (chip.host.round_trip each) at the end of the step, e.g. fetching the loss",
               at_least(0));
    t.add<int>("checkpoint.every_steps", [](S& s) -> int& { return s.host.checkpoint.every_steps; }, "0",
               "write parameters and optimizer state to storage every N training steps, amortised per step; 0 = "
               "never",
               at_least(0));
    t.add_choice<bool>("overlap", [](S& s) -> bool& { return s.schedule.overlap; }, {{"on", true}, {"off", false}},
                       "on",
                       "sharded steps: collectives overlap independent compute as XLA schedules them (on), or run "
                       "after all earlier compute and before all later compute (off: the serialized baseline)");
    t.add_choice_list<CollectiveKind>(
        "async_collectives", [](S& s) -> std::vector<CollectiveKind>& { return s.schedule.async_collectives; },
        collective_choices(), "[all_reduce, reduce_scatter, all_gather, all_to_all, permute]",
        "sharded steps: the collective kinds that run asynchronously, overlapped with independent compute (XLA's "
        "async collectives); the others are synchronous: the TensorCores finish their earlier work and idle "
        "while the collective runs (XLA without that kind's async flags; docs/calibration.md)");
    t.add_choice<CollectiveMatmul>(
        "collective_matmul", [](S& s) -> CollectiveMatmul& { return s.schedule.collective_matmul; },
        {{"auto", CollectiveMatmul::automatic}, {"on", CollectiveMatmul::on}, {"off", CollectiveMatmul::off}}, "auto",
        "a residual stream split over the tensor group (activation_embed, norm_length): its all-gathers and "
        "reduce-scatters run as bidirectional ring steps overlapped with partial matmuls (XLA's collective "
        "matmul); off: one collective before or after the matmul; auto: on where the gathered residual stream "
        "is at least 256 MiB per chip, XLA's default threshold for a windowed einsum (an assumption for libtpu)");
    t.add_choice<PipelineSchedule>(
        "pipeline_schedule", [](S& s) -> PipelineSchedule& { return s.schedule.pipeline_schedule; },
        {{"gpipe", PipelineSchedule::gpipe}, {"1f1b", PipelineSchedule::one_f_one_b}}, "gpipe",
        "pipeline parallelism: the order of the microbatches' forward and backward passes on each stage");
    return t;
  }();
  return table;
}

const FieldTable<FidelitySpec>& fidelity_fields() {
  using S = FidelitySpec;
  static const FieldTable<FidelitySpec> table = [] {
    FieldTable<FidelitySpec> t;
    t.add_choice<MxuFidelity>("mxu", [](S& s) -> MxuFidelity& { return s.mxu; },
                              {{"fast", MxuFidelity::fast}, {"cycle", MxuFidelity::cycle}}, "fast",
                              "MXU timing: closed-form fast model, or cycle-stepped reference (small shapes)");
    t.add_choice<LinkFidelity>("links", [](S& s) -> LinkFidelity& { return s.links; },
                               {{"chunked", LinkFidelity::chunked}, {"flow", LinkFidelity::flow}}, "flow",
                               "ICI links: max-min fair flows (within 0.35% of chunked on every bundled scenario, "
                               "docs/fidelity.md), or chunked store-and-forward with contention");
    t.add<Bytes>("link_chunk", [](S& s) -> Bytes& { return s.link_chunk; }, "1 MiB",
                 "transfer chunk of the chunked link model", positive<Bytes>());
    t.add_choice<RoutingPolicy>("routing", [](S& s) -> RoutingPolicy& { return s.routing; },
                                {{"dor", RoutingPolicy::dor}, {"fault_aware", RoutingPolicy::fault_aware}}, "dor",
                                "ICI routing: dimension-order, or fault-aware (shortest surviving path around "
                                "failed links and chips; DOR where it is unaffected)");
    t.add_choice<CollectiveFidelity>(
        "collectives", [](S& s) -> CollectiveFidelity& { return s.collectives; },
        {{"aggregate", CollectiveFidelity::aggregate}, {"per_step", CollectiveFidelity::per_step}}, "aggregate",
        "ring collectives: each group advanced as one flow at its bottleneck link's rate plus the steps' fixed "
        "costs (aggregate; flow links, congruent ring plans, no chip failed or stopping), or step by step, "
        "every send a transfer (per_step; always used otherwise)");
    return t;
  }();
  return table;
}

const FieldTable<Scenario>& scenario_fields() {
  using S = Scenario;
  static const FieldTable<Scenario> table = [] {
    FieldTable<Scenario> t;
    t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, std::nullopt, "scenario name");
    t.add<std::string>("description", [](S& s) -> std::string& { return s.description; }, "",
                       "one line on what the scenario shows");
    t.add<std::int64_t>("seed",
                        [](S& s) -> std::int64_t& { return s.seed; }, "1",
                        "random seed (faults, jitter); same seed, same output", non_negative<std::int64_t>());
    return t;
  }();
  return table;
}

bool is_reference_override(const Override& o) {
  std::string path, value;
  if (!split_assignment(o.assignment, path, value)) return false;
  return path == "pod" || path == "chip" || path == "workload.model";
}

// Replaces a scalar reference at `key` of `parent` by the loaded file it names.
void expand_reference(ConfigNode& parent, const std::string& key, const std::string& folder,
                      const fs::path& relative_to, const std::string& key_path, Diagnostics& diags,
                      fs::path* loaded_from = nullptr) {
  ConfigNode* ref = parent.find(key);
  if (ref == nullptr || !ref->is_scalar()) return;
  const auto file = resolve_data_file(folder, ref->scalar(), relative_to, ref->loc(), key_path, diags);
  if (!file) {
    *ref = ConfigNode::make_map(ref->loc());  // keep going so other errors are reported too
    return;
  }
  ConfigNode loaded = load_yaml_file(*file, diags);
  if (loaded_from) *loaded_from = *file;
  if (!loaded.is_map()) {
    if (!loaded.is_null() || diags.empty()) {
      diags.error(SourceLoc{file->string(), 1, 1}, key_path, "wrong type", "a YAML map", loaded.describe());
    }
    loaded = ConfigNode::make_map(SourceLoc{file->string(), 1, 1});
  }
  *ref = std::move(loaded);
}

// An inline model map that names a model `from:` a file is that model with the map's other keys merged over
// it, as an inline chip map is merged over the pod's chip: `model: {from: gpt3-6.7b, layers: 1}`.
void expand_model_base(ConfigNode& workload, const fs::path& relative_to, Diagnostics& diags) {
  ConfigNode* model = workload.find("model");
  const ConfigNode* from = model != nullptr && model->is_map() ? model->find("from") : nullptr;
  if (from == nullptr || !from->is_scalar()) return;  // a non-scalar `from` stays, an unknown key
  ConfigNode overlay = *model;
  overlay.erase("from");
  expand_reference(*model, "from", "configs/models", relative_to, "workload.model.from", diags);
  ConfigNode merged = *model->find("from");
  merge_into(merged, overlay, "workload.model", diags);
  *model = std::move(merged);
}

template <class Spec>
void append_rendered(std::vector<std::pair<std::string, std::string>>& out, const std::string& prefix,
                     const FieldTable<Spec>& table, const Spec& spec) {
  for (auto& [k, v] : table.render(spec)) out.emplace_back(prefix.empty() ? k : prefix + "." + k, v);
}

ConfigNode load_root(const std::string& folder, const std::string& name_or_path, const std::string& what,
                     Diagnostics& diags, fs::path& file) {
  const auto path = resolve_data_file(folder, name_or_path, {}, SourceLoc{"(command line)", 0, 0}, what, diags);
  diags.throw_if_any();
  file = *path;
  ConfigNode root = load_yaml_file(*path, diags);
  diags.throw_if_any();
  return root;
}

}  // namespace

Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  std::vector<Override> located;
  located.reserve(overrides.size());
  for (const auto& o : overrides) located.push_back(Override{o, {}, {}, std::nullopt});
  return load_scenario_with_overrides(name_or_path, located);
}

Scenario load_scenario_with_overrides(const std::string& name_or_path, const std::vector<Override>& overrides) {
  Diagnostics diags;
  fs::path scenario_file;
  ConfigNode tree = load_root("scenarios", name_or_path, "scenario", diags, scenario_file);
  if (!tree.is_map()) {
    diags.error(tree.loc().line ? tree.loc() : SourceLoc{scenario_file.string(), 1, 1}, "", "wrong type",
                "a scenario map (name, pod, workload, ...)", tree.describe());
    diags.throw_if_any();
  }
  const fs::path base = scenario_file.parent_path();

  // References (pod, chip, workload.model) may themselves be overridden before they are expanded.
  for (const auto& o : overrides) {
    if (is_reference_override(o)) apply_override(tree, o, diags);
  }

  // Compose: pod file (which names the chip), chip file merged with inline chip overrides, model file.
  fs::path pod_file = base;
  if (tree.find("pod") == nullptr) {
    diags.error(tree.loc(), "pod", "missing required key", "a bundled pod name or a path to a pod YAML",
                "nothing", fmt::format("bundled pods: {}", fmt::join(bundled_names("configs/pods"), ", ")));
  } else {
    fs::path loaded;
    expand_reference(tree, "pod", "configs/pods", base, "pod", diags, &loaded);
    if (!loaded.empty()) pod_file = loaded.parent_path();
  }
  ConfigNode* pod = tree.find("pod");
  ConfigNode chip_overlay;
  if (ConfigNode* inline_chip = tree.find("chip"); inline_chip != nullptr) {
    if (inline_chip->is_scalar()) {
      // A chip name in the scenario replaces the pod's chip.
      if (pod != nullptr && pod->is_map()) pod->set("chip", inline_chip->loc(), *inline_chip);
    } else if (inline_chip->is_map()) {
      chip_overlay = *inline_chip;
    } else {  // `chip:` with no value too: leave the key out for the pod's chip
      diags.error(inline_chip->loc(), "chip", "wrong type",
                  "a chip name or path, or a map of chip fields and blocks over the pod's chip",
                  inline_chip->describe());
    }
  }
  ConfigNode chip;
  if (pod != nullptr && pod->is_map()) {
    if (const ConfigNode* chip_ref = pod->find("chip"); chip_ref != nullptr && chip_ref->is_scalar()) {
      ConfigNode holder = ConfigNode::make_map(pod->loc());
      holder.set("chip", chip_ref->loc(), *chip_ref);
      expand_reference(holder, "chip", "configs/chips", pod_file, "pod.chip", diags);
      chip = *holder.find("chip");
    }
  }
  if (!chip_overlay.is_null()) {
    if (chip.is_null()) chip = ConfigNode::make_map(chip_overlay.loc());
    merge_into(chip, chip_overlay, "chip", diags);
  }
  tree.set("chip", chip.loc(), chip);

  if (ConfigNode* workload = tree.find("workload"); workload != nullptr && workload->is_map()) {
    expand_reference(*workload, "model", "configs/models", base, "workload.model", diags);
    expand_model_base(*workload, base, diags);
  }

  for (const auto& o : overrides) {
    if (!is_reference_override(o)) apply_override(tree, o, diags);
  }
  diags.throw_if_any();

  Scenario s;
  scenario_fields().resolve(tree, "", s, diags, &s.origins, {"pod", "chip", "workload", "fidelity", "job", "faults", "fault_rates"});
  if (pod != nullptr) s.pod = resolve_pod(*tree.find("pod"), "pod", diags);
  s.chip = resolve_chip(*tree.find("chip"), "chip", diags);
  const ConfigNode* workload = tree.find("workload");
  if (workload == nullptr) {
    diags.error(tree.loc(), "workload", "missing required key", "a workload map (model, batch, step, ...)",
                "nothing");
  } else {
    workload_fields().resolve(*workload, "workload", s.workload, diags, &s.workload.origins,
                              {"model", "mesh", "mesh_mapping", "sharding"});
    parse_mesh(*workload, s.workload.mesh, diags);  // mesh_spec.cpp
    const ConfigNode* model = workload->is_map() ? workload->find("model") : nullptr;
    const ConfigNode* program = workload->is_map() ? workload->find("program") : nullptr;
    if (program != nullptr && !s.workload.program.empty()) {
      // A program file replaces the model; its path is relative to the file that names it.
      const SourceLoc& at = program->loc();
      fs::path path(s.workload.program);
      if (path.is_relative() && at.line > 0) path = fs::path(at.file).parent_path() / path;
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) {
        diags.error(at, "workload.program", "file not found", "a program file written by `tpusim lower`",
                    s.workload.program);
      }
      s.workload.program = path.string();
      if (model != nullptr) {
        // Named where `model:` is written, not inside the model file it named.
        SourceLoc where = model->loc();
        for (const auto& e : workload->entries()) {
          if (e.key == "model") where = e.key_loc;
        }
        diags.error(where, "workload.model", "a workload runs a model or a program file, not both",
                    "only one of workload.model and workload.program", "both");
      }
    } else if (model == nullptr) {
      if (workload->is_map()) {
        diags.error(workload->loc(), "workload.model", "missing required key",
                    fmt::format("a bundled model name ({}) or an inline model map",
                                fmt::join(bundled_names("configs/models"), ", ")),
                    "nothing");
      }
    } else {
      s.workload.model = resolve_model(*model, "workload.model", diags);
    }
  }
  if (diags.empty()) resolve_workload_defaults(s, diags);  // workload_checks.cpp
  if (!s.pod.shape.empty() && s.workload.program.empty()) check_mesh(s.workload.mesh, s.pod, diags);
  if (!s.pod.shape.empty() && diags.empty()) check_pod_on_chip(s.pod, s.chip, "pod.", diags);  // slice_checks.cpp
  const ConfigNode* fidelity = tree.find("fidelity");
  const ConfigNode empty = ConfigNode::make_map(tree.loc());
  fidelity_fields().resolve(fidelity ? *fidelity : empty, "fidelity", s.fidelity, diags);
  if (diags.empty() && s.fidelity.mxu == MxuFidelity::cycle && s.chip.mxu.dataflow != MxuDataflow::weight_stationary) {
    const ConfigNode* mxu = fidelity != nullptr ? fidelity->find("mxu") : nullptr;
    diags.error(mxu != nullptr ? mxu->loc() : tree.loc(), "fidelity.mxu",
                "the cycle-level MXU reference runs the weight_stationary dataflow only",
                "fidelity.mxu: fast with chip.mxu.dataflow output_stationary",
                "cycle", "fidelity.mxu: fast (the dataflow's closed form), or chip.mxu.dataflow: weight_stationary");
  }
  if (pod != nullptr && diags.empty()) resolve_fault_plan(tree, s.pod, s.job, s.faults, s.fidelity.link_chunk, diags);  // fault_plan.cpp
  diags.throw_if_any();
  s.tree = std::move(tree);
  return s;
}

std::vector<std::pair<std::string, std::string>> render_scenario(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> out;
  append_rendered(out, "", scenario_fields(), s);
  append_rendered(out, "pod", pod_fields(), s.pod);
  for (auto& [k, v] : render_chip(s.chip)) out.emplace_back("chip." + k, v);
  append_rendered(out, "workload", workload_fields(), s.workload);
  for (auto& [k, v] : render_mesh(s.workload.mesh)) out.emplace_back("workload." + k, v);
  if (s.workload.program.empty()) {
    append_rendered(out, "workload.model", model_kind_info(s.workload.model.kind).fields(), s.workload.model);
  }
  append_rendered(out, "fidelity", fidelity_fields(), s.fidelity);
  if (s.job.enabled) {
    append_rendered(out, "job", job_fields(), s.job);
    append_rendered(out, "fault_rates", fault_rate_fields(), s.faults.rates);
    for (const FaultSpec& f : s.faults.faults) {
      const std::string prefix = fmt::format("faults[{}]", f.index);
      append_rendered(out, prefix, fault_fields(), f);
      out.emplace_back(prefix + ".target", f.target.str(s.pod.pods > 1));
    }
  }
  return out;
}

ChipSpec load_chip(const std::string& name_or_path) {
  Diagnostics diags;
  fs::path file;
  const ConfigNode root = load_root("configs/chips", name_or_path, "chip", diags, file);
  ChipSpec spec = resolve_chip(root, "", diags);
  diags.throw_if_any();
  return spec;
}

PodSpec load_pod(const std::string& name_or_path) {
  Diagnostics diags;
  fs::path file;
  const ConfigNode root = load_root("configs/pods", name_or_path, "pod", diags, file);
  PodSpec spec = resolve_pod(root, "", diags);
  diags.throw_if_any();
  return spec;
}

}  // namespace tpusim

namespace tpusim {

namespace {

// The sharding keys, from the tables parse_mesh checks against (core/mesh_spec.h): one entry per known mesh
// axis, one for the mapping, one per logical axis with its default rule.
std::vector<FieldInfo> mesh_field_infos() {
  std::vector<FieldInfo> out;
  for (const MeshAxisInfo& a : known_mesh_axes()) {
    out.push_back(FieldInfo{"mesh." + a.name, "integer", "absent", a.doc});
  }
  out.push_back(FieldInfo{"mesh.<other name>", "integer", "absent",
                          "any other axis name: it shards what a sharding rule maps to it. The sizes multiply to "
                          "the pod's chips; no mesh = one data axis over every chip"});
  out.push_back(FieldInfo{"mesh_mapping.<axis>", "list of x y z", "automatic",
                          "the torus axes the mesh axis is laid on, in order (automatic: the most communicating "
                          "axes on the first torus axes, kernels/README.md)"});
  for (const LogicalAxisInfo& a : logical_axes()) {
    out.push_back(FieldInfo{"sharding." + a.name, "list of mesh axes",
                            fmt::format("[{}]", fmt::join(a.default_mesh_axes, ", ")), a.doc + "; [] = replicated"});
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<FieldInfo>>> all_field_tables() {
  std::vector<std::pair<std::string, std::vector<FieldInfo>>> out{{"scenario", scenario_fields().infos()},
                                                                    {"pod", pod_fields().infos()}};
  for (auto& section : chip_field_sections()) out.push_back(std::move(section));
  out.emplace_back("workload", workload_fields().infos());
  out.emplace_back("workload.mesh, workload.mesh_mapping, workload.sharding (sharded models)", mesh_field_infos());
  for (const ModelKindInfo& k : model_kinds()) {
    out.emplace_back(fmt::format("workload.model (kind: {})", k.name), k.fields().infos());
  }
  out.emplace_back("fidelity", fidelity_fields().infos());
  out.emplace_back("job", job_fields().infos());
  auto faults = fault_fields().infos();
  faults.insert(faults.begin() + 2, FieldInfo{"target", "target", std::nullopt,
                                              "random, chip coordinates [x, y, z], {chip: [x, y, z], dir: x+} "
                                              "(link kinds), or {host: N} (host_down); a map's pod: P names the "
                                              "pod of a multislice (default 0)"});
  out.emplace_back("faults[] (a list)", std::move(faults));
  out.emplace_back("fault_rates", fault_rate_fields().infos());
  return out;
}

}  // namespace tpusim
