#include "tpusim/core/scenario.h"

#include <fmt/format.h>

#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/data_paths.h"

namespace tpusim {
namespace fs = std::filesystem;

std::string_view collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::permute: return "permute";
  }
  return "?";
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::bf16: return 2;
    case DType::f32: return 4;
    case DType::int8: return 1;
    case DType::fp8: return 1;
  }
  return 2;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::int8: return "int8";
    case DType::fp8: return "fp8";
  }
  return "?";
}

namespace {

const std::vector<std::pair<std::string, ModelKind>> kModelKinds{
    {"gemm", ModelKind::gemm},
    {"mlp", ModelKind::mlp},
    {"collective", ModelKind::collective},
    {"dlrm", ModelKind::dlrm}};

FieldTable<ModelSpec> model_base_fields() {
  using S = ModelSpec;
  FieldTable<ModelSpec> t;
  t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, "unnamed", "model name");
  t.add_choice<ModelKind>("kind", [](S& s) -> ModelKind& { return s.kind; }, kModelKinds, std::nullopt,
                          "model family");
  return t;
}

const FieldTable<ModelSpec>& gemm_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<std::int64_t>("m", [](S& s) -> std::int64_t& { return s.gemm.m; }, std::nullopt, "rows of A and C",
                        positive<std::int64_t>());
    t.add<std::int64_t>("k", [](S& s) -> std::int64_t& { return s.gemm.k; }, std::nullopt,
                        "contraction dimension", positive<std::int64_t>());
    t.add<std::int64_t>("n", [](S& s) -> std::int64_t& { return s.gemm.n; }, std::nullopt, "columns of B and C",
                        positive<std::int64_t>());
    return t;
  }();
  return table;
}

const FieldTable<ModelSpec>& mlp_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<std::vector<int>>("widths", [](S& s) -> std::vector<int>& { return s.mlp.widths; }, std::nullopt,
                            "input width, then the width of each layer", positive_list(2, 1024));
    t.add_choice<Activation>("activation", [](S& s) -> Activation& { return s.mlp.activation; },
                             {{"relu", Activation::relu}, {"gelu", Activation::gelu}}, "gelu",
                             "activation after each hidden layer");
    return t;
  }();
  return table;
}

const FieldTable<ModelSpec>& collective_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add_choice<CollectiveKind>("op", [](S& s) -> CollectiveKind& { return s.collective.op; },
                                 {{"all_reduce", CollectiveKind::all_reduce},
                                  {"reduce_scatter", CollectiveKind::reduce_scatter},
                                  {"all_gather", CollectiveKind::all_gather},
                                  {"all_to_all", CollectiveKind::all_to_all},
                                  {"permute", CollectiveKind::permute}},
                                 std::nullopt, "the collective");
    t.add<Bytes>("bytes", [](S& s) -> Bytes& { return s.collective.bytes; }, std::nullopt,
                 "buffer size per chip", positive<Bytes>());
    t.add<std::vector<int>>("axes", [](S& s) -> std::vector<int>& { return s.collective.axes; }, "[]",
                            "torus axes taking part (0-based); [] = every axis");
    t.add<std::string>("algorithm", [](S& s) -> std::string& { return s.collective.algorithm; }, "auto",
                       "collective algorithm by name; auto = the default for the op and topology");
    return t;
  }();
  return table;
}

const FieldTable<ModelSpec>& dlrm_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<int>("dense_features", [](S& s) -> int& { return s.dlrm.dense_features; }, std::nullopt,
               "dense (numerical) features per example: the bottom MLP's input width", at_least(1));
    t.add<std::vector<int>>("bottom_mlp", [](S& s) -> std::vector<int>& { return s.dlrm.bottom_mlp; }, std::nullopt,
                            "output width of each bottom-MLP layer; the last must equal embedding_dim",
                            positive_list(1, 64));
    t.add<std::vector<int>>("top_mlp", [](S& s) -> std::vector<int>& { return s.dlrm.top_mlp; }, std::nullopt,
                            "output width of each top-MLP layer (the last is the prediction)", positive_list(1, 64));
    t.add<int>("tables", [](S& s) -> int& { return s.dlrm.tables; }, std::nullopt,
               "embedding tables (one per categorical feature)", at_least(1));
    t.add<std::int64_t>("rows_per_table", [](S& s) -> std::int64_t& { return s.dlrm.rows_per_table; }, std::nullopt,
                        "rows of each embedding table", positive<std::int64_t>());
    t.add<int>("embedding_dim", [](S& s) -> int& { return s.dlrm.embedding_dim; }, std::nullopt,
               "values per embedding row", at_least(1));
    t.add<int>("lookups_per_table", [](S& s) -> int& { return s.dlrm.lookups_per_table; }, "1",
               "rows looked up and sum-pooled per table and example (the pooling factor)", at_least(1));
    return t;
  }();
  return table;
}

const FieldTable<WorkloadSpec>& workload_fields() {
  using S = WorkloadSpec;
  static const FieldTable<WorkloadSpec> table = [] {
    FieldTable<WorkloadSpec> t;
    t.add<std::string>("program", [](S& s) -> std::string& { return s.program; }, "",
                       "path to a program file (tpusim lower's format) to run instead of a model");
    t.add<std::int64_t>("batch", [](S& s) -> std::int64_t& { return s.batch; }, "1",
                        "examples per step (global batch)", positive<std::int64_t>());
    t.add_choice<StepKind>("step", [](S& s) -> StepKind& { return s.step; },
                           {{"forward", StepKind::forward}, {"train", StepKind::train}}, "train",
                           "forward pass only, or a training step (forward, backward, optimizer update)");
    t.add_choice<DType>("dtype", [](S& s) -> DType& { return s.dtype; },
                        {{"bf16", DType::bf16}, {"f32", DType::f32}, {"int8", DType::int8}, {"fp8", DType::fp8}},
                        "bf16", "matmul operand type");
    t.add_choice<Optimizer>("optimizer", [](S& s) -> Optimizer& { return s.optimizer; },
                            {{"sgd", Optimizer::sgd}, {"adam", Optimizer::adam}}, "adam",
                            "optimizer of a training step");
    t.add<double>("input.examples_per_s_per_host", [](S& s) -> double& { return s.input.examples_per_s_per_host; },
                  "0",
                  "examples per second the host's input pipeline produces (shared by its chip.host.chips_per_host "
                  "chips); 0 = no limit",
                  non_negative<double>());
    t.add<Bytes>("input.bytes_per_example", [](S& s) -> Bytes& { return s.input.bytes_per_example; }, "0 B",
                 "bytes of one example sent host -> chip over PCIe (MLP: an infeed of batch x this per step); "
                 "0 = none",
                 non_negative<Bytes>());
    t.add<int>("input.prefetch", [](S& s) -> int& { return s.input.prefetch; }, "2",
               "steps of input the host prepares ahead; > 0 overlaps the next step's input with this step, 0 = "
               "the step waits for its input",
               at_least(0));
    t.add<Seconds>("step_launch_overhead", [](S& s) -> Seconds& { return s.step_launch_overhead; }, "0 s",
                   "host time to launch the step before the chip starts it", non_negative<Seconds>());
    t.add<int>("host_syncs", [](S& s) -> int& { return s.host_syncs; }, "0",
               "host round trips (chip.host.round_trip each) at the end of the step, e.g. fetching the loss",
               at_least(0));
    t.add<int>("checkpoint.every_steps", [](S& s) -> int& { return s.checkpoint.every_steps; }, "0",
               "write parameters and optimizer state to storage every N training steps, amortised per step; 0 = "
               "never",
               at_least(0));
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
                               {{"chunked", LinkFidelity::chunked}, {"flow", LinkFidelity::flow}}, "chunked",
                               "ICI links: chunked store-and-forward with contention, or max-min fair flows");
    t.add<Bytes>("link_chunk", [](S& s) -> Bytes& { return s.link_chunk; }, "1 MiB",
                 "transfer chunk of the chunked link model", positive<Bytes>());
    t.add_choice<RoutingPolicy>("routing", [](S& s) -> RoutingPolicy& { return s.routing; },
                                {{"dor", RoutingPolicy::dor}, {"fault_aware", RoutingPolicy::fault_aware}}, "dor",
                                "ICI routing: dimension-order, or fault-aware (shortest surviving path around "
                                "failed links and chips; DOR where it is unaffected)");
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

bool is_reference_override(const std::string& assignment) {
  std::string path, value;
  if (!split_assignment(assignment, path, value)) return false;
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

const FieldTable<ModelSpec>& model_fields(ModelKind kind) {
  switch (kind) {
    case ModelKind::gemm: return gemm_fields();
    case ModelKind::mlp: return mlp_fields();
    case ModelKind::collective: return collective_fields();
    case ModelKind::dlrm: return dlrm_fields();
  }
  return mlp_fields();
}

ModelSpec resolve_model(const ConfigNode& node, const std::string& path, Diagnostics& diags) {
  ModelSpec spec;
  if (!node.is_map()) {
    diags.error(node.loc(), path, "wrong type", "a model name or a map with 'kind'", node.describe());
    return spec;
  }
  const ConfigNode* kind = node.find("kind");
  std::vector<std::string> names;
  for (const auto& k : kModelKinds) names.push_back(k.first);
  if (kind == nullptr || !kind->is_scalar()) {
    diags.error(kind ? kind->loc() : node.loc(), path + ".kind", "missing required key",
                "one of: gemm, mlp, collective, dlrm", kind ? kind->describe() : "nothing");
    return spec;
  }
  if (kind->scalar() == "gemm") {
    gemm_fields().resolve(node, path, spec, diags, &spec.origins);
  } else if (kind->scalar() == "mlp") {
    mlp_fields().resolve(node, path, spec, diags, &spec.origins);
  } else if (kind->scalar() == "collective") {
    collective_fields().resolve(node, path, spec, diags, &spec.origins);
  } else if (kind->scalar() == "dlrm") {
    const std::size_t before = diags.size();
    dlrm_fields().resolve(node, path, spec, diags, &spec.origins);
    if (diags.size() == before && spec.dlrm.bottom_mlp.back() != spec.dlrm.embedding_dim) {
      diags.error(spec.origins.at("bottom_mlp").loc, path + ".bottom_mlp",
                  "the bottom MLP's output interacts with the embeddings, so its last width is embedding_dim",
                  fmt::format("a last width of {}", spec.dlrm.embedding_dim),
                  fmt::format("{}", spec.dlrm.bottom_mlp.back()));
    }
  } else {
    diags.error(kind->loc(), path + ".kind", fmt::format("unknown model kind '{}'", kind->scalar()),
                "one of: gemm, mlp, collective, dlrm", kind->scalar(), suggestion(kind->scalar(), names));
  }
  return spec;
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
    } else {
      chip_overlay = *inline_chip;
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
    merge_into(chip, chip_overlay);
  }
  tree.set("chip", chip.loc(), chip);

  if (ConfigNode* workload = tree.find("workload"); workload != nullptr && workload->is_map()) {
    expand_reference(*workload, "model", "configs/models", base, "workload.model", diags);
  }

  for (const auto& o : overrides) {
    if (!is_reference_override(o)) apply_override(tree, o, diags);
  }
  diags.throw_if_any();

  Scenario s;
  scenario_fields().resolve(tree, "", s, diags, &s.origins, {"pod", "chip", "workload", "fidelity"});
  if (pod != nullptr) s.pod = resolve_pod(*tree.find("pod"), "pod", diags);
  s.chip = resolve_chip(*tree.find("chip"), "chip", diags);
  const ConfigNode* workload = tree.find("workload");
  if (workload == nullptr) {
    diags.error(tree.loc(), "workload", "missing required key", "a workload map (model, batch, step, ...)",
                "nothing");
  } else {
    workload_fields().resolve(*workload, "workload", s.workload, diags, nullptr, {"model"});
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
        diags.error(model->loc(), "workload.model", "a workload runs a model or a program file, not both",
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
  const ConfigNode* fidelity = tree.find("fidelity");
  const ConfigNode empty = ConfigNode::make_map(tree.loc());
  fidelity_fields().resolve(fidelity ? *fidelity : empty, "fidelity", s.fidelity, diags);
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
  if (s.workload.program.empty()) {
    append_rendered(out, "workload.model", model_fields(s.workload.model.kind), s.workload.model);
  }
  append_rendered(out, "fidelity", fidelity_fields(), s.fidelity);
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

std::vector<std::pair<std::string, std::vector<FieldInfo>>> all_field_tables() {
  std::vector<std::pair<std::string, std::vector<FieldInfo>>> out{{"scenario", scenario_fields().infos()},
                                                                  {"pod", pod_fields().infos()}};
  for (auto& section : chip_field_sections()) out.push_back(std::move(section));
  out.insert(out.end(), {{"workload", workload_fields().infos()},
                         {"workload.model (kind: gemm)", gemm_fields().infos()},
                         {"workload.model (kind: mlp)", mlp_fields().infos()},
                         {"workload.model (kind: collective)", collective_fields().infos()},
                         {"workload.model (kind: dlrm)", dlrm_fields().infos()},
                         {"fidelity", fidelity_fields().infos()}});
  return out;
}

}  // namespace tpusim
