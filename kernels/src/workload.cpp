// Whole-workload lowering (contracts in lowering.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "graph/collective_points.h"
#include "graph/fused_ops.h"
#include "zoo/model_lowering.h"
#include "zoo/replicated_memory.h"
#include "tiling/pipeline.h"
#include "sharding/sharding_points.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/estimate.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {

namespace {

// Sorted union: a stage waits for the data it reads and for the previous stage of its kind (VMEM budget).
std::vector<std::uint32_t> join(std::vector<std::uint32_t> a, const std::vector<std::uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

ir::Instruction host_op(ir::HostOp op, std::uint64_t bytes, double host_seconds) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::host;
  ins.host.op = op;
  ins.bytes = bytes;
  ins.host.seconds = host_seconds;
  ins.op_class = ir::OpClass::host;
  return ins;
}

bool whole_model(const WorkloadSpec& w) { return step_builder(w.model.kind) != nullptr; }

// workload.overlap and async_collectives as the emitter takes them.
fused::CollectiveTiming collective_timing(const WorkloadSpec& w) {
  return fused::CollectiveTiming{!w.schedule.overlap, w.schedule.async_collectives};
}

// Whether the tensor group's gathers and reduce-scatters of the split residual stream run as ring steps
// (workload.collective_matmul): always under `on` (check_collective_matmul has refused a step with nothing to
// decompose), never under `off`, and under `auto` where XLA's partitioner would window the einsum: the residual
// stream gathered on a chip, one microbatch's tokens at full width, is at least kWindowedEinsumThreshold.
bool decomposes_collective_matmul(const WorkloadSpec& w, const ShardingPlan& plan, const ShardView& shard) {
  switch (w.schedule.collective_matmul) {
    case CollectiveMatmul::on: return true;
    case CollectiveMatmul::off: return false;
    case CollectiveMatmul::automatic: break;
  }
  if (plan.residual_shards() <= 1) return false;
  const double row = static_cast<double>(w.model.transformer.d_model) * dtype_bytes(w.numerics.dtype);  // exact
  const double gathered = static_cast<double>(shard.microbatch()) * static_cast<double>(shard.seq_len) * row;
  return gathered >= static_cast<double>(kWindowedEinsumThreshold);
}

// A whole model's step: the graph (fused when workload.fusion is on) and its memory plan.
struct BuiltStep {
  fused::Graph graph;
  MemoryPlan plan;
};

// `plan` null: one chip holding everything (no collectives); else the chip's shard of the plan, its collectives
// naming groups added to `groups`. `run_ahead`: ShardingPoints' FSDP gathers start with the previous layer.
BuiltStep build_step(const WorkloadSpec& w, const ChipSpec& chip, const ShardingPlan* plan = nullptr,
                     std::vector<ir::CollectiveGroup>* groups = nullptr, int stage = 0, bool run_ahead = true) {
  const ShardView shard = plan != nullptr ? shard_view(w, *plan, stage) : full_shard(w);
  CollectivePoints single_chip;  // inserts nothing
  std::vector<ir::CollectiveGroup> scratch;
  std::optional<ShardingPoints> sharded;
  if (plan != nullptr) {
    sharded.emplace(*plan, chip, w.numerics.dtype, groups != nullptr ? *groups : scratch,
                    decomposes_collective_matmul(w, *plan, shard), run_ahead);
  }
  CollectivePoints& points = sharded ? static_cast<CollectivePoints&>(*sharded) : single_chip;
  BuiltStep b{step_builder(w.model.kind)(w, chip, shard, points), {}};
  if (w.kernels.fusion) fused::fuse(b.graph);
  const fused::Liveness live = fused::activation_liveness(b.graph);
  // Clamped at 2^60 (an exbibyte: far beyond any chip, and the categories' sum stays inside 64 bits).
  auto bytes = [](double v) { return Bytes(static_cast<std::uint64_t>(std::llround(std::min(v, 0x1p60)))); };
  b.plan.capacity = chip.hbm.capacity;
  b.plan.weights = bytes(b.graph.bytes_of(fused::TensorKind::weight));
  b.plan.gradients = bytes(b.graph.bytes_of(fused::TensorKind::gradient));
  b.plan.optimizer_state = bytes(b.graph.bytes_of(fused::TensorKind::optimizer_state));
  b.plan.kv_cache = bytes(b.graph.bytes_of(fused::TensorKind::kv_cache));
  b.plan.activations = bytes(live.saved_for_backward);
  b.plan.workspace = bytes(live.peak - live.saved_for_backward);
  b.plan.host_offload = bytes(live.host_offload);
  b.plan.host_capacity = chip.host.memory_per_chip;
  return b;
}

// The steps of every pipeline stage (stage 0 first), with the FSDP gathers run ahead of their layer where that
// fits and held back where it does not (memory the run-ahead buffers would take: the plan counts a gather's
// output from where it may start). `held_back` says which; the plans are checked by the caller.
struct BuiltStages {
  std::vector<BuiltStep> steps;
  bool held_back = false;
};
BuiltStages build_stages(const WorkloadSpec& w, const ChipSpec& chip, const ShardingPlan& plan,
                         std::vector<ir::CollectiveGroup>* groups = nullptr) {
  const int stages = shard_view(w, plan).pipeline.stages;
  auto build = [&](bool run_ahead) {
    std::vector<ir::CollectiveGroup> tried = groups != nullptr ? *groups : std::vector<ir::CollectiveGroup>{};
    std::vector<BuiltStep> out;
    for (int s = 0; s < stages; ++s) out.push_back(build_step(w, chip, &plan, &tried, s, run_ahead));
    return std::make_pair(std::move(out), std::move(tried));
  };
  auto fit = [](const std::vector<BuiltStep>& steps) {
    return std::all_of(steps.begin(), steps.end(), [](const BuiltStep& b) { return b.plan.fits(); });
  };
  BuiltStages out;
  auto [steps, tried] = build(true);
  if (!fit(steps) && plan.shards(LogicalAxis::embed) > 1) {
    // Held back, the step holds no more than run ahead: if it does not fit either, its plan is the least the
    // step needs (what a does-not-fit error and the layout search report).
    std::tie(steps, tried) = build(false);
    out.held_back = true;
  }
  if (groups != nullptr) *groups = std::move(tried);
  out.steps = std::move(steps);
  return out;
}

// The memory a step's graph holds over its step (MemoryTimeline), given the instructions emit() made of each op.
MemoryTimeline memory_timeline(const fused::Graph& graph, const MemoryPlan& plan,
                               std::vector<std::vector<std::uint32_t>> op_instructions) {
  MemoryTimeline t;
  t.persistent = plan.weights + plan.gradients + plan.optimizer_state + plan.kv_cache;
  const fused::ActivationSpans spans = fused::activation_spans(graph);
  for (std::size_t op = 0; op < op_instructions.size(); ++op) {
    if (op_instructions[op].empty() || (spans.allocated[op] == 0 && spans.freed[op] == 0)) continue;
    t.uses.push_back(kernels::ActivationUse{std::move(op_instructions[op]), spans.allocated[op], spans.freed[op]});
  }
  return t;
}

// The largest step (in estimated instructions) an alternative of the does-not-fit hint may build.
constexpr double kHintSearchInstructions = 2e5;

// The error for a step that does not fit: the categories by size, the capacity, and what would fit.
ConfigError does_not_fit(const WorkloadSpec& w, const ChipSpec& chip, const MemoryPlan& plan,
                         const ShardingPlan* sharding) {
  auto cats = plan.categories();
  std::stable_sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> found;
  for (const auto& [name, b] : cats) {
    if (b.count() > 0) found.push_back(fmt::format("{} {}", name, format_bytes_approx(b)));
  }
  std::vector<std::string> fits;
  auto plan_with = [&](WorkloadSpec alt) {
    return sharding != nullptr ? build_stages(alt, chip, *sharding).steps.front().plan : build_step(alt, chip).plan;
  };
  std::optional<MemoryPlan> full_remat;
  if (w.step == StepKind::train && w.memory.remat != Remat::full) {
    WorkloadSpec alt = w;
    alt.memory.remat = Remat::full;
    full_remat = plan_with(alt);
    if (full_remat->fits()) fits.push_back(fmt::format("remat: full ({})", format_bytes_approx(full_remat->total())));
  }
  // The first of the alternatives (each one knob changed) that fits.
  auto first_fitting = [&](const char* knob, const std::vector<std::int64_t>& values, auto set) {
    for (const std::int64_t v : values) {
      WorkloadSpec alt = w;
      set(alt, v);
      // Each alternative builds its step's graph: stop where that would take longer than a moment (many
      // microbatches of a deep model), so that refusing a step never takes minutes.
      if (estimate_lowering(alt, chip).instructions > kHintSearchInstructions) return;
      std::optional<MemoryPlan> p;
      try {
        p = plan_with(alt);
      } catch (const ConfigError&) {  // an alternative the mesh cannot take is no suggestion, not the user's error
        continue;
      }
      if (!p->fits()) continue;
      fits.push_back(fmt::format("{}: {} ({})", knob, v, format_bytes_approx(p->total())));
      return;
    }
  };
  if (w.step == StepKind::train) {
    // More microbatches than now, each a divisor of the batch per chip (the batch over its data and fsdp
    // shards), which workload.microbatches must split into: a count that divides only the global batch would
    // be refused as a wrong microbatch count instead of planned.
    std::int64_t per_chip = w.batch;
    if (sharding != nullptr) {
      const std::int64_t shards = sharding->shards(LogicalAxis::batch);
      per_chip = shards > 0 && w.batch % shards == 0 ? w.batch / shards : 0;
    }
    std::vector<std::int64_t> counts;
    for (std::int64_t m = w.memory.microbatches + 1; m <= per_chip && m <= 1024; ++m) {
      if (per_chip % m == 0) counts.push_back(m);
    }
    first_fitting("microbatches", counts,
                  [](WorkloadSpec& a, std::int64_t v) { a.memory.microbatches = static_cast<int>(v); });
  }
  if (w.inference()) {
    // Smaller batches that still split over the batch's shards (data and fsdp chips).
    const std::int64_t shards =
        sharding != nullptr ? std::max<std::int64_t>(1, sharding->shards(LogicalAxis::batch)) : 1;
    std::vector<std::int64_t> batches;
    for (std::int64_t b = w.batch / 2; b >= 1; b /= 2) {
      if (b % shards == 0) batches.push_back(b);
    }
    first_fitting("batch", batches, [](WorkloadSpec& a, std::int64_t v) { a.batch = v; });
  }
  // Sharding the persistent state over N more chips (FSDP / ZeRO-3) leaves the rest per chip; with full
  // rematerialization when that keeps less.
  auto rest_of = [](const MemoryPlan& p) { return (p.activations + p.kv_cache + p.workspace).as_double(); };
  const bool use_remat = full_remat && rest_of(*full_remat) < rest_of(plan);
  const double rest = use_remat ? rest_of(*full_remat) : rest_of(plan);
  const double state = (plan.weights + plan.gradients + plan.optimizer_state).as_double();
  const double room = plan.capacity.as_double() - rest;
  const auto more_fsdp = static_cast<long long>(std::ceil(state / room));
  if (room > 0 && more_fsdp > 1) {
    const long long fsdp = sharding != nullptr ? sharding->shards(LogicalAxis::embed) : 1;
    const long long want = fsdp * more_fsdp;
    const long long chips = sharding != nullptr ? sharding->mesh.chips() : 1;
    // More FSDP chips than the pod has call for a bigger pod, not a mesh this one cannot take.
    const std::string where =
        want > chips ? fmt::format("a pod of at least {} chips (this one has {}) with fsdp: {}", want, chips, want)
                     : fmt::format("a mesh with fsdp: {}", want);
    fits.push_back(fmt::format("{} (the weights{} sharded{}; workload.mesh)", where,
                               w.step == StepKind::train ? ", gradients and optimizer state" : "",
                               use_remat ? ", with remat: full" : ""));
  } else if (room > 0) {
    // The state already fits beside the rest: with full remat on this mesh (suggested above), which a mesh
    // suggestion would only repeat as the mesh the user already has.
    if (fits.empty()) fits.push_back("remat: full (workload.remat)");
  } else {
    fits.push_back(fmt::format("the {} alone exceed the chip: a smaller batch per chip (more data or fsdp "
                               "chips) or tensor parallelism (workload.mesh)",
                               w.inference() ? "KV cache and activations" : "activations"));
  }
  SourceLoc at{"(workload)", 0, 0};
  for (const char* key : {"batch", "step"}) {
    if (const auto it = w.origins.find(key); it != w.origins.end() && !it->second.defaulted) {
      at = it->second.loc;
      break;
    }
  }
  const std::string has = format_bytes_approx(plan.capacity) + written_by_user(chip, BlockKind::hbm, "capacity");
  return ConfigError({Diagnostic{at, "workload",
                                 fmt::format("the step does not fit in HBM: {} per chip, chip {} has {}",
                                             format_bytes_approx(plan.total()), chip.name, has),
                                 fmt::format("at most {} (chip.hbm.capacity)", format_bytes_approx(plan.capacity)),
                                 fmt::format("{}", fmt::join(found, ", ")),
                                 fmt::format("would fit: {}", fmt::join(fits, "; "))}});
}

// The error for a step whose offloaded activations exceed the host memory of a chip.
ConfigError host_does_not_fit(const WorkloadSpec& w, const ChipSpec& chip, const MemoryPlan& plan) {
  const SourceLoc at = origin_of(w.origins, "remat");
  const bool unknown = plan.host_capacity.count() == 0;
  return ConfigError({Diagnostic{
      at, "workload.remat",
      unknown ? fmt::format("the policy offloads {} per chip to host memory, but chip {} gives no host memory",
                            format_bytes_approx(plan.host_offload), chip.name)
              : fmt::format("the offloaded activations do not fit in host memory: {} per chip, chip {} has {}",
                            format_bytes_approx(plan.host_offload), chip.name, format_bytes_approx(plan.host_capacity)),
      fmt::format("at most {} (chip.host.memory_per_chip)", format_bytes_approx(plan.host_capacity)),
      format_bytes_approx(plan.host_offload),
      unknown ? "set chip.host.memory_per_chip (the host's DRAM over its chips), or keep the tensors on the device"
              : "offload fewer tensors (remat_custom: device or remat), more microbatches, or a smaller batch per "
                "chip"}});
}

}  // namespace

namespace {

// The chips one host's input pipeline feeds: the slice's own host blocks (pod.host_shape) when the slice has
// more than one chip, so a 2x2 v5e slice's one host feeds its 4 chips, not the 8 of a full v5e host; a one-chip
// slice stands for one chip of a fully populated host (chip.host.chips_per_host), as documented in lowering.h.
int chips_fed_per_host(const ChipSpec& chip, const PodSpec* pod) {
  if (pod == nullptr || pod->host_shape.empty() || pod->chip_count() <= 1) return std::max(1, chip.host.chips_per_host);
  int fed = 1;
  for (std::size_t a = 0; a < pod->host_shape.size() && a < pod->shape.size(); ++a) {
    fed *= std::max(1, std::min(pod->host_shape[a], pod->shape[a]));
  }
  return fed;
}

// The host costs of one chip whose checkpoint state (parameters and optimizer state it holds) is `state`
// bytes, on a host whose `writers` chips write theirs and whose input pipeline feeds `fed` chips; no state: the
// chip holds no checkpoint (a forward step, no checkpoint interval).
HostStepCosts host_costs(const WorkloadSpec& workload, const ChipSpec& chip, double state, int writers, int fed) {
  HostStepCosts c;
  const double chips_per_host = std::max(1, fed);
  const auto batch = static_cast<double>(std::max<std::int64_t>(workload.batch, 0));
  c.infeed_bytes = static_cast<std::uint64_t>(batch * workload.host.input.bytes_per_example.as_double());
  if (workload.host.input.examples_per_s_per_host > 0) {
    c.input_seconds = batch * chips_per_host / workload.host.input.examples_per_s_per_host;
  }
  if (workload.step == StepKind::train && workload.host.checkpoint.every_steps > 0) {
    const double every = workload.host.checkpoint.every_steps;
    c.checkpoint_bytes = static_cast<std::uint64_t>(std::ceil(state / every));
    const double storage = chip.host.storage_bandwidth.value();
    c.checkpoint_seconds = storage > 0 ? state * writers / storage / every : 0.0;
  }
  return c;
}

// What one chip of a sharded model checkpoints: its shard of the parameters and of the optimizer state.
double checkpoint_state(const MemoryPlan& plan) {
  return static_cast<double>((plan.weights + plan.optimizer_state).count());
}

// The most chips of one host that write the checkpoint. Each distinct shard is written once: chips that differ
// only along mesh axes no parameter is sharded over (data, and sequence unless embed names it) hold the same
// state, and of them the one at coordinate 0 along those axes writes it (JAX's Shard.replica_id 0, the copy
// Orbax saves). Hosts are pod.host_shape blocks of the torus (a pod without one: runs of chips_per_host
// chips); they write in parallel, so the fullest bounds the checkpoint. No sharding: every chip holds the whole state and chip 0 alone writes it. The few
// parameters replicated over a sharded axis (norms over tensor, kv heads fewer than the tensor axis) are
// counted on every chip holding them, as before.
int checkpoint_writers(const ShardingPlan* sharding, const PodSpec& pod, int chips_per_host) {
  if (sharding == nullptr) return 1;
  const DeviceMesh& mesh = sharding->mesh;
  std::vector<bool> sharded(mesh.axes().size(), false);
  for (LogicalAxis a : {LogicalAxis::embed, LogicalAxis::heads, LogicalAxis::kv_heads, LogicalAxis::mlp,
                        LogicalAxis::vocab, LogicalAxis::expert, LogicalAxis::layers}) {
    for (int m : sharding->axes(a)) sharded[static_cast<std::size_t>(m)] = true;
  }
  std::vector<int> replica;
  for (std::size_t m = 0; m < sharded.size(); ++m) {
    if (!sharded[m] && mesh.axes()[m].size > 1) replica.push_back(static_cast<int>(m));
  }
  std::array<int, ir::kGroupAxes> block{std::max(1, chips_per_host), 1, 1};  // the host's chips per torus axis
  if (!pod.host_shape.empty()) block[0] = 1;
  for (std::size_t a = 0; a < pod.host_shape.size() && a < block.size(); ++a) block[a] = std::max(1, pod.host_shape[a]);
  const std::array<int, ir::kGroupAxes>& shape = mesh.shape();
  const int hx = std::max(1, (shape[0] + block[0] - 1) / block[0]), hy = std::max(1, shape[1] / block[1]);
  const int hz = std::max(1, shape[2] / block[2]);
  std::vector<int> per_host(static_cast<std::size_t>(hx) * hy * hz * std::max(1, mesh.pods()), 0);
  const auto chips = static_cast<std::uint32_t>(mesh.chips());
  for (std::uint32_t c = 0; c < chips; ++c) {
    if (std::any_of(replica.begin(), replica.end(), [&](int m) { return mesh.coordinate(c, m) != 0; })) continue;
    // Chips are numbered x fastest, then y, z, pod (mesh.h).
    const auto x = static_cast<int>(c % static_cast<std::uint32_t>(shape[0]));
    const auto y = static_cast<int>(c / static_cast<std::uint32_t>(shape[0]) % static_cast<std::uint32_t>(shape[1]));
    const auto z = static_cast<int>(c / static_cast<std::uint32_t>(shape[0] * shape[1]) % static_cast<std::uint32_t>(shape[2]));
    const auto p = static_cast<int>(c / static_cast<std::uint32_t>(shape[0] * shape[1] * shape[2]));
    ++per_host[static_cast<std::size_t>(x / block[0] + hx * (y / block[1] + hy * (z / block[2] + hz * p)))];
  }
  return std::max(1, *std::max_element(per_host.begin(), per_host.end()));
}

}  // namespace

HostStepCosts host_step_costs(const WorkloadSpec& workload, const ChipSpec& chip) {
  if (workload.model.kind != ModelKind::mlp && !whole_model(workload)) return {};
  // One chip holding the whole model: the host's other chips hold the same state, and this one writes it.
  return host_costs(workload, chip, static_cast<double>(state_bytes(workload)), 1, chips_fed_per_host(chip, nullptr));
}

HostStepCosts host_step_costs(const WorkloadSpec& workload, const ChipSpec& chip, const PodSpec& pod) {
  if (!whole_model(workload)) {
    if (workload.model.kind != ModelKind::mlp) return {};
    return host_costs(workload, chip, static_cast<double>(state_bytes(workload)),
                      checkpoint_writers(nullptr, pod, chip.host.chips_per_host), chips_fed_per_host(chip, &pod));
  }
  const ShardingPlan sharding = make_sharding(workload, pod);
  double state = 0;
  for (int s = 0; s < std::max(1, sharding.shards(LogicalAxis::layers)); ++s) {
    state = std::max(state, checkpoint_state(build_step(workload, chip, &sharding, nullptr, s).plan));
  }
  return host_costs(workload, chip, state, checkpoint_writers(&sharding, pod, chip.host.chips_per_host),
                    chips_fed_per_host(chip, &pod));
}

std::optional<MemoryPlan> plan_memory(const WorkloadSpec& workload, const ChipSpec& chip) {
  if (!whole_model(workload)) return std::nullopt;
  return build_step(workload, chip).plan;
}

std::optional<MemoryPlan> plan_memory(const WorkloadSpec& workload, const ChipSpec& chip, const PodSpec& pod) {
  if (!whole_model(workload)) return std::nullopt;
  const ShardingPlan sharding = make_sharding(workload, pod);
  return build_stages(workload, chip, sharding).steps.front().plan;
}

ir::ProgramSet lower_workload(const WorkloadSpec& workload, const ChipSpec& chip) {
  return lower(workload, chip).programs;
}

double model_flops(const LoweredWorkload& lowered, std::uint32_t chips) {
  std::vector<double> per_program;
  for (const ir::Program& p : lowered.programs.programs) per_program.push_back(p.model_flops());
  double f = 0;
  for (std::uint32_t c = 0; c < chips; ++c) {
    f += per_program[lowered.programs.role_of_chip.empty() ? 0 : lowered.programs.role_of_chip[c]];
  }
  return f;
}

LoweredWorkload lower(const WorkloadSpec& workload, const ChipSpec& chip) {
  PodSpec one;
  one.shape = {1};
  return lower(workload, chip, one);
}

LoweredWorkload lower(const WorkloadSpec& workload, const ChipSpec& chip, const PodSpec& pod) {
  const ModelSpec& model = workload.model;
  LoweredWorkload out;
  // A whole model is sharded over the pod's mesh (no mesh: data parallel over every chip); the other kinds run
  // the same one-chip program on every chip.
  std::optional<ShardingPlan> sharding;
  if (workload.schedule.collective_matmul == CollectiveMatmul::on && !whole_model(workload)) {
    throw ConfigError({Diagnostic{origin_of(workload.origins, "collective_matmul"), "workload.collective_matmul",
                                  "collective matmul decomposes a whole model's tensor-parallel all-gathers",
                                  "a transformer with a tensor split", std::string(model_kind_name(model.kind)),
                                  "set workload.collective_matmul: off"}});
  }
  if (whole_model(workload)) sharding = make_sharding(workload, pod);
  // A sharding the model cannot take is refused before anything else is worked out (build_stages reads it again).
  if (sharding) (void)shard_view(workload, *sharding);
  out.work = step_work(workload, full_shard(workload));
  if (!whole_model(workload)) {  // every chip runs the whole one-chip step: the pod does that many times its work
    out.work.examples *= static_cast<double>(pod.chip_count());
    out.work.tokens *= static_cast<double>(pod.chip_count());
  }
  if (model.kind == ModelKind::collective) {
    out.programs = lower_collective(workload);  // collective_lowering.cpp
    return out;
  }
  if (!whole_model(workload)) check_resident_bytes(workload, chip);
  // The job's: the model's for the global batch, whatever the mesh (each chip's programs count their share of
  // it: ShardView::replicas); the other kinds' chips each run the whole one-chip step.
  out.closed_form_model_flops = closed_form_model_flops(workload);
  if (!whole_model(workload)) out.closed_form_model_flops *= static_cast<double>(pod.chip_count());
  if (model.kind == ModelKind::dlrm) {
    out.programs = lower_dlrm(workload, chip);  // dlrm.cpp
    return out;
  }
  std::optional<BuiltStep> built;
  std::vector<BuiltStep> later_stages;  // pipeline stages 1 .. p - 1 (stage 0 is `built`)
  if (whole_model(workload)) {
    BuiltStages built_stages = build_stages(workload, chip, *sharding, &out.programs.groups);
    out.fsdp_gathers_held_back = built_stages.held_back;
    std::vector<BuiltStep>& stages = built_stages.steps;
    built = std::move(stages.front());
    if (!built->plan.fits()) throw does_not_fit(workload, chip, built->plan, &*sharding);
    if (!built->plan.host_fits()) throw host_does_not_fit(workload, chip, built->plan);
    out.memory = built->plan;
    out.sharding = sharding;
    for (std::size_t s = 1; s < stages.size(); ++s) {
      later_stages.push_back(std::move(stages[s]));
      const MemoryPlan& p = later_stages.back().plan;
      if (!p.fits()) throw does_not_fit(workload, chip, p, &*sharding);
      if (!p.host_fits()) throw host_does_not_fit(workload, chip, p);
      if (p.total() > out.memory->total()) out.memory = p;  // the plan of the fullest stage
    }
  }
  ir::Program prog(model.name.empty() ? "main" : model.name);
  const DType dt = workload.numerics.dtype;
  // A sharded model's chips checkpoint their own shard (the fullest stage's bytes differ from the others').
  const int writers = built ? checkpoint_writers(&*sharding, pod, chip.host.chips_per_host) : 1;
  const HostStepCosts host = built ? host_costs(workload, chip, checkpoint_state(built->plan), writers,
                                                chips_fed_per_host(chip, &pod))
                                  : host_step_costs(workload, chip, pod);

  // The step starts once the host has launched it; its work depends on the launch (and, without prefetch,
  // on the infeed).
  std::vector<std::uint32_t> start;
  if (workload.host.step_launch_overhead.value() > 0) {
    start.push_back(prog.add(host_op(ir::HostOp::launch, 0, workload.host.step_launch_overhead.value()), {},
                             "host.launch"));
  }
  if (host.infeed_bytes > 0 || host.input_seconds > 0) {
    const std::uint32_t infeed =
        prog.add(host_op(ir::HostOp::infeed, host.infeed_bytes, host.input_seconds), start,
                 workload.host.input.prefetch > 0 ? "host.infeed.next_step" : "host.infeed");
    if (workload.host.input.prefetch == 0) start.push_back(infeed);
  }
  std::vector<std::uint32_t> sinks = start;  // instructions nothing else depends on (the end of the step)

  if (model.kind == ModelKind::gemm && model.gemm.lowering == GemmGranularity::tiled) {
    sinks = lower_gemm(prog, chip, model.gemm.m, model.gemm.k, model.gemm.n, dt, start, "gemm").done;
  } else if (model.kind == ModelKind::gemm) {
    // One fused matmul per TensorCore; A, B and C stream from HBM as tile_gemm's tiling reads and writes them.
    Builder b(chip, dt);
    const GemmModel& g = model.gemm;
    const auto a = b.tensor("a", static_cast<double>(g.m) * static_cast<double>(g.k), dt, fused::TensorKind::weight);
    const auto w = b.tensor("b", static_cast<double>(g.k) * static_cast<double>(g.n), dt, fused::TensorKind::weight);
    const auto c = b.activation("c", static_cast<double>(g.m) * static_cast<double>(g.n));
    Builder::Matmul mm;
    mm.m = g.m, mm.k = g.k, mm.n = g.n, mm.dtype = dt, mm.a = {a}, mm.b = {w}, mm.outputs = {c};
    b.matmul(OpName{fused::Phase::forward, "gemm", "matmul"}, ir::OpClass::matmul, mm);
    sinks = fused::emit(b.graph(), chip, prog, start);
  } else if (built) {
    std::vector<std::vector<std::uint32_t>> op_instructions;
    sinks = fused::emit(built->graph, chip, prog, start, collective_timing(workload), &op_instructions);
    out.memory_timelines.push_back(memory_timeline(built->graph, built->plan, std::move(op_instructions)));
    if (host.checkpoint_bytes > 0) {
      sinks = {prog.add(host_op(ir::HostOp::checkpoint, host.checkpoint_bytes, host.checkpoint_seconds), sinks,
                        "host.checkpoint")};
    }
  } else {
    const std::vector<int>& w = model.mlp.widths;
    const std::int64_t batch = workload.batch;
    if (w.size() < 2 || batch < 1 || *std::min_element(w.begin(), w.end()) < 1) {
      throw std::invalid_argument(fmt::format("mlp {}: needs >= 2 positive widths and a positive batch", model.name));
    }
    const auto layers = static_cast<int>(w.size()) - 1;
    const bool gelu = model.mlp.activation == Activation::gelu;
    const ir::VectorOp act_op = gelu ? ir::VectorOp::transcendental : ir::VectorOp::elementwise;
    // GEMMs follow GEMMs and vector passes follow vector passes (see the VMEM contract in lowering.h).
    std::vector<std::uint32_t> last_gemm, last_vector;
    auto gemm = [&](std::int64_t m, std::int64_t k, std::int64_t n, const std::vector<std::uint32_t>& reads,
                    const std::string& label) {
      last_gemm = lower_gemm(prog, chip, m, k, n, dt, join(reads, last_gemm), label).done;
      return last_gemm;
    };
    auto vector = [&](const VectorPass& pass, const std::vector<std::uint32_t>& reads, const std::string& label) {
      last_vector = lower_vector_pass(prog, chip, pass, join(reads, last_vector), label);
      return last_vector;
    };

    std::vector<std::uint32_t> x = start;  // the current activation is ready once these are done
    for (int l = 1; l <= layers; ++l) {
      x = gemm(batch, w[l - 1], w[l], x, fmt::format("layer{}.fwd", l));
      if (l < layers) x = vector({batch * w[l], {dt}, {dt}, act_op, 1, dt}, x, fmt::format("layer{}.act", l));
    }
    if (workload.step == StepKind::train) {
      std::vector<std::uint32_t> dz = x;  // the loss gradient is not modelled: dZ(L) is ready with the output
      for (int l = layers; l >= 1; --l) {
        std::vector<std::uint32_t> dx;
        if (l > 1) dx = gemm(batch, w[l], w[l - 1], dz, fmt::format("layer{}.bwd.dx", l));
        const std::vector<std::uint32_t> dw = gemm(w[l - 1], batch, w[l], dz, fmt::format("layer{}.bwd.dw", l));
        if (l > 1) {
          dz = vector({batch * w[l - 1], {dt, dt}, {dt}, act_op, 1, dt}, dx, fmt::format("layer{}.bwd.act", l - 1));
        }
        const std::int64_t params = static_cast<std::int64_t>(w[l - 1]) * w[l];
        const VectorPass update = workload.optimizer == Optimizer::sgd
                                      ? VectorPass{params, {dt, dt}, {dt}, ir::VectorOp::elementwise, 1, dt,
                                                   ir::OpClass::optimizer}
                                      : VectorPass{params, {dt, dt, DType::f32, DType::f32},
                                                   {dt, DType::f32, DType::f32}, ir::VectorOp::elementwise, 10,
                                                   DType::f32, ir::OpClass::optimizer};
        vector(update, dw, fmt::format("layer{}.update", l));
      }
    }
    sinks = join(last_gemm, last_vector);  // every stage is chained behind the last one of its kind
    if (host.checkpoint_bytes > 0) {
      sinks = {prog.add(host_op(ir::HostOp::checkpoint, host.checkpoint_bytes, host.checkpoint_seconds), sinks,
                        "host.checkpoint")};
    }
  }
  for (int s = 0; s < workload.host.host_syncs; ++s) {
    sinks = {prog.add(host_op(ir::HostOp::sync, 0, chip.host.round_trip.value()), sinks, "host.sync")};
  }
  out.programs.programs.push_back(std::move(prog));
  // Pipeline stages after the first: their own programs (launch and input as the first stage's), and which
  // stage each chip runs.
  for (std::size_t i = 0; i < later_stages.size(); ++i) {
    ir::Program stage_prog(fmt::format("{}.stage{}", model.name.empty() ? "main" : model.name, i + 1));
    std::vector<std::uint32_t> stage_start;
    if (workload.host.step_launch_overhead.value() > 0) {
      stage_start.push_back(stage_prog.add(host_op(ir::HostOp::launch, 0, workload.host.step_launch_overhead.value()),
                                           {}, "host.launch"));
    }
    std::vector<std::vector<std::uint32_t>> op_instructions;
    std::vector<std::uint32_t> stage_sinks = fused::emit(later_stages[i].graph, chip, stage_prog, stage_start,
                                                         collective_timing(workload), &op_instructions);
    out.memory_timelines.push_back(
        memory_timeline(later_stages[i].graph, later_stages[i].plan, std::move(op_instructions)));
    const HostStepCosts stage_host =
        host_costs(workload, chip, checkpoint_state(later_stages[i].plan), writers, chips_fed_per_host(chip, &pod));
    if (stage_host.checkpoint_bytes > 0) {
      stage_sinks = {stage_prog.add(host_op(ir::HostOp::checkpoint, stage_host.checkpoint_bytes,
                                            stage_host.checkpoint_seconds),
                                    stage_sinks, "host.checkpoint")};
    }
    for (int h = 0; h < workload.host.host_syncs; ++h) {
      stage_sinks = {stage_prog.add(host_op(ir::HostOp::sync, 0, chip.host.round_trip.value()), stage_sinks,
                                    "host.sync")};
    }
    out.programs.programs.push_back(std::move(stage_prog));
  }
  if (!later_stages.empty()) {
    const int axis = sharding->axes(LogicalAxis::layers).front();
    const auto chips = static_cast<std::uint32_t>(sharding->mesh.chips());
    out.programs.role_of_chip.resize(chips);
    for (std::uint32_t c = 0; c < chips; ++c) {
      out.programs.role_of_chip[c] = static_cast<std::uint16_t>(sharding->mesh.coordinate(c, axis));
    }
  }
  return out;
}

}  // namespace tpusim::kernels
