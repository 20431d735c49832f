#include "tools/src/simulation_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "tpusim/kernels/shard.h"

namespace tpusim::tools {
namespace {

constexpr double kFindingThreshold = 0.2;  // a category above this share of the step is called out

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

// Utilization over both directions of a set of DCN channels, egress then ingress.
Spread both_sides_spread(const std::vector<models::LinkUsage>& egress, const std::vector<models::LinkUsage>& ingress) {
  std::vector<double> u;
  u.reserve(egress.size() + ingress.size());
  for (const auto* side : {&egress, &ingress}) {
    for (const models::LinkUsage& c : *side) u.push_back(c.utilization);
  }
  return spread_of(u);
}

// "fsdp 2 on y, tensor 2 on x": each mesh axis with the torus axes its group spans (and the DCN for slices).
std::string mesh_text(const kernels::DeviceMesh& mesh) {
  std::vector<std::string> parts;
  for (const auto& a : mesh.axes()) {
    std::string on;
    for (std::size_t t = 0; t < a.group.size.size(); ++t) {
      if (a.group.size[t] > 1) on += fmt::format("{}{}", on.empty() ? "" : " ", "xyz"[t]);
    }
    if (a.group.pods > 1) on += on.empty() ? "dcn" : " dcn";
    parts.push_back(on.empty() ? fmt::format("{} {}", a.name, a.size) : fmt::format("{} {} on {}", a.name, a.size, on));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "batch, embed over fsdp; heads, kv_heads, mlp, vocab over tensor": the logical axes that are split, grouped
// by the mesh axes they split over, in the order of logical_axis_names(); "replicated" when none is.
std::string sharding_text(const kernels::ShardingPlan& plan) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // mesh axes -> logical axes
  const auto& logical = logical_axis_names();
  for (std::size_t l = 0; l < plan.rules.size(); ++l) {
    std::vector<std::string> over;
    for (int i : plan.rules[l]) {
      const auto& axis = plan.mesh.axes()[static_cast<std::size_t>(i)];
      if (axis.size > 1) over.push_back(axis.name);
    }
    if (over.empty()) continue;
    const std::string key = fmt::format("{}", fmt::join(over, " x "));
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(logical[l]);
  }
  if (groups.empty()) return "replicated";
  std::vector<std::string> parts;
  for (const auto& [over, axes] : groups) parts.push_back(fmt::format("{} over {}", fmt::join(axes, ", "), over));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Sends, recvs and remote puts (a dma to `remote`): the point-to-point ICI work.
bool has_send_or_recv(const ir::ProgramSet& programs) {
  for (const ir::Program& p : programs.programs) {
    for (const ir::Instruction& ins : p.instructions()) {
      if (ins.kind == ir::OpKind::send || ins.kind == ir::OpKind::recv) return true;
      if (ir::is_remote_put(ins)) return true;
    }
  }
  return false;
}

// A pipeline's bubble, named as such: the closed form for equal stages under GPipe and 1F1B (kernels/README.md,
// "Pipeline"), and the shares of the step its stages spent waiting on a recv (counted as communication in the
// breakdown) and idle.
std::string bubble_note(const Scenario& s, int stages, double waiting, double idle) {
  const int m = std::max(1, kernels::full_shard(s.workload).microbatches);
  const double bubble = static_cast<double>(stages - 1) / (m + stages - 1);
  return fmt::format("pipeline bubble: with {} stages and {} microbatch{} ({}) a stage waits for its neighbours "
                     "(p - 1) / (m + p - 1) = {:.0f}% of the step; here {:.0f}% of the step waits on recvs from "
                     "the neighbouring stages (the breakdown's communication, not collective time) and {:.0f}% "
                     "is idle",
                     stages, m, m == 1 ? "" : "es",
                     s.workload.schedule.pipeline_schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b",
                     100 * bubble, 100 * waiting, 100 * idle);
}

// What the host stall is made of: the host ops' attributed time (op_classes.h: a host op counts only where
// nothing else is in flight, as the breakdown's host_stall does), by the kind the lowering declares for them
// (ir::HostOp): the step's launch, its input (infeed), checkpoint writes, host syncs and other transfers (outfeed).
// Their labels are not read, so a renamed op keeps its part.
std::string host_note(const std::vector<OpTime>& ops, double host_share, double step) {
  struct Part {
    ir::HostOp op;     // the kind the lowering declares (ir::HostWork::op), not a word in the op's name
    const char* what;  // in the note
    double time_s = 0;
  };
  std::vector<Part> parts = {{ir::HostOp::infeed, "the input pipeline (infeed)"},
                             {ir::HostOp::checkpoint, "checkpoint writes"},
                             {ir::HostOp::launch, "step launch"},
                             {ir::HostOp::sync, "host syncs"},
                             {ir::HostOp::outfeed, "other host transfers"}};
  for (const OpTime& op : ops) {
    if (op.unit != "host" || !op.host_op) continue;
    for (Part& p : parts) {
      if (p.op == *op.host_op) p.time_s += op.time_s;
    }
  }
  const auto largest = std::max_element(parts.begin(), parts.end(),
                                        [](const Part& a, const Part& b) { return a.time_s < b.time_s; });
  std::vector<std::string> shares;
  std::vector<Part> sorted = parts;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Part& a, const Part& b) { return a.time_s > b.time_s; });
  for (const Part& p : sorted) {
    if (p.time_s >= 0.005 * step) shares.push_back(fmt::format("{} {:.0f}%", p.what, 100 * p.time_s / step));
  }
  const std::string of = shares.empty() ? "" : fmt::format(" ({})", fmt::join(shares, ", "));
  if (largest->time_s > 0 && largest == parts.begin()) {
    return fmt::format("input-bound: the TPU waited for the host (PCIe / input pipeline) {:.0f}% of the step{}",
                       100 * host_share, of);
  }
  return fmt::format("host-bound: the TPU waited for the host {:.0f}% of the step{}{}", 100 * host_share,
                     largest->time_s > 0 ? fmt::format(", mostly {}", largest->what) : std::string(), of);
}

}  // namespace

RunReport make_report(const Scenario& scenario, const ir::ProgramSet& programs, const models::SimResult& r,
                      const Topology* topology, const kernels::LoweredWorkload* lowered,
                      const OpClassRecorder* classes) {
  using models::HwUnit;
  RunReport rep;
  rep.figures.step_time_s = r.step_time.value();
  rep.figures.model_flops = r.model_flops;
  rep.figures.hardware_flops = r.hardware_flops;
  rep.figures.peak_flops_per_s = r.peak_flops.value();
  rep.figures.chips = static_cast<long long>(r.cost.chips_simulated);
  if (lowered != nullptr) {
    rep.figures.examples_per_step = lowered->work.examples;
    rep.figures.tokens_per_step = lowered->work.tokens;
    rep.memory.plan = lowered->memory;
    if (lowered->sharding && lowered->sharding->mesh.chips() > 1) {  // one chip: nothing to place or split
      rep.mesh = mesh_text(lowered->sharding->mesh);
      rep.sharding = sharding_text(*lowered->sharding);
    }
  }
  rep.figures.step = scenario.workload.step;
  rep.time.hbm_bandwidth = scenario.chip.hbm.bandwidth.value();
  if (classes != nullptr) {
    TimeReport& time = rep.time;
    time.op_classes = classes->finish(r.step_time.value(), &time.op_idle_s, &time.exposed_collectives_s, &time.ops);
  }
  rep.time.breakdown_s = {{"compute", r.breakdown.compute.value()},
                     {"communication", r.breakdown.communication.value()},
                     {"memory_stall", r.breakdown.memory_stall.value()},
                     {"host_stall", r.breakdown.host_stall.value()},
                     {"idle", r.breakdown.idle.value()}};
  rep.hbm_bytes_read = r.traffic.hbm_read.count();
  rep.hbm_bytes_written = r.traffic.hbm_written.count();
  rep.programs = programs.programs.size();
  for (const auto& p : programs.programs) rep.instructions += p.size();

  for (const models::HwUnitInfo& info : models::hw_units()) {
    const auto u = static_cast<std::size_t>(info.unit);
    UnitReport ur;
    ur.name = std::string(info.name);
    ur.listed_when_unused = info.listed_when_unused;
    std::vector<double> busy;
    busy.reserve(r.chips.size());
    for (const auto& c : r.chips) busy.push_back(c.busy[u].value());
    ur.busy_s = spread_of(busy);
    const auto& usage = r.unit(info.unit);
    ur.utilization = Spread{usage.utilization.mean, usage.utilization.min, usage.utilization.max};
    ur.stalled_s = usage.stalled.value();
    for (int k = 0; k < models::kStallReasons; ++k) {
      const double v = usage.stalled_by[static_cast<std::size_t>(k)].value();
      if (v > 0) ur.stalled_by_s.emplace_back(models::stall_reason_name(k), v);
    }
    ur.queue_slots_s = usage.queue_slots.value();
    ur.idle_s = usage.idle.value();
    if (info.runs_instructions) ur.instructions = r.instructions_per_unit[static_cast<std::size_t>(info.queue)];
    ur.bytes = usage.bytes.count();
    rep.units.push_back(ur);
  }

  rep.mxu_array_utilization =
      Spread{r.mxu_array_utilization.mean, r.mxu_array_utilization.min, r.mxu_array_utilization.max};
  for (const models::BlockStat& b : r.block_stats) {
    rep.block_stats.push_back(BlockStatRow{b.block, b.name + std::string(models::stat_unit_suffix(b.unit)), b.total,
                                           Spread{b.per_chip.mean, b.per_chip.min, b.per_chip.max}});
  }

  for (std::size_t i = 0; i < r.chips.size(); ++i) {
    const auto& c = r.chips[i];
    ChipRow row;
    row.chip = static_cast<std::uint32_t>(i);
    row.finish_s = c.finish.value();
    for (const models::HwUnitInfo& info : models::hw_units()) {
      const std::string name(info.name);
      row.busy_s[name] = c.busy[static_cast<std::size_t>(info.unit)].value();
      row.utilization[name] = c.utilization[static_cast<std::size_t>(info.unit)];
    }
    row.breakdown_s = {{"compute", c.breakdown.compute.value()},
                       {"communication", c.breakdown.communication.value()},
                       {"memory_stall", c.breakdown.memory_stall.value()},
                       {"host_stall", c.breakdown.host_stall.value()},
                       {"idle", c.breakdown.idle.value()}};
    rep.chip_rows.push_back(std::move(row));
  }

  const models::NetworkUsage& net = r.network;
  rep.network.link_model = net.link_model;
  rep.network.link_utilization = Spread{net.link_utilization.mean, net.link_utilization.min,
                                        net.link_utilization.max};
  if (topology != nullptr) {
    for (std::size_t i = 0; i < net.links.size() && i < topology->link_count(); ++i) {
      const auto& usage = net.links[i];
      const Link& l = topology->link(LinkId(static_cast<std::uint32_t>(i)));
      rep.network.links.push_back(LinkRow{static_cast<std::uint32_t>(i), l.src.value(), l.dst.value(), l.axis,
                                          l.direction, link_kind_name(l.kind), usage.bytes.as_double(),
                                          usage.busy.value(), usage.utilization, usage.queueing.value()});
    }
  }
  rep.network.dcn_nics = net.dcn.egress.size();
  if (rep.network.dcn_nics > 0) {
    rep.network.dcn_utilization = both_sides_spread(net.dcn.egress, net.dcn.ingress);
    for (const auto& nic : net.dcn.egress) rep.network.dcn_bytes += nic.bytes.as_double();
  }
  rep.network.dcn_uplinks = net.dcn.uplink_egress.size();
  if (rep.network.dcn_uplinks > 0) {
    rep.network.dcn_uplink_utilization = both_sides_spread(net.dcn.uplink_egress, net.dcn.uplink_ingress);
  }
  for (const auto& c : net.collectives) {
    rep.network.collectives.push_back(CollectiveRow{c.program, c.instruction, std::string(collective_name(c.kind)),
                                            std::string(kernels::algorithm_name(c.algorithm)), c.participants,
                                            c.steps, c.bytes_per_chip.as_double(), c.time.value(),
                                            c.ideal_time.value(), c.algorithm_bandwidth().value(),
                                            c.bus_bandwidth.value()});
  }

  const double step = rep.figures.step_time_s;
  if (step > 0) {
    // The breakdown's communication is ICI work in flight without compute: collectives, and sends and recvs (a
    // pipeline stage waiting for its neighbour's activations). Where the program has sends or recvs, the
    // collectives' part is their attributed exposed time (op_classes.h) and the rest is point to point.
    const double communication = r.breakdown.communication.value();
    double collectives = communication;
    if (classes != nullptr && has_send_or_recv(programs)) {
      collectives = 0;
      for (const auto& kind : rep.time.exposed_collectives_s) collectives += kind.second;
      collectives = std::min(collectives, communication);
    }
    if (collectives / step > kFindingThreshold) {
      rep.notes.push_back(fmt::format("communication-bound: {:.0f}% of the step is exposed collective time",
                                      100 * collectives / step));
    }
    const double point_to_point = (communication - collectives) / step;
    const int stages =
        lowered != nullptr && lowered->sharding ? lowered->sharding->shards(kernels::LogicalAxis::layers) : 1;
    if (stages > 1) {
      rep.notes.push_back(bubble_note(scenario, stages, point_to_point, r.breakdown.idle.value() / step));
    } else if (point_to_point > kFindingThreshold) {
      rep.notes.push_back(fmt::format("point-to-point-bound: {:.0f}% of the step waits on sends, recvs and puts (no "
                                      "compute and no collective in flight)",
                                      100 * point_to_point));
    }
    const double host_share = r.breakdown.host_stall.value() / step;
    const double mem_share = r.breakdown.memory_stall.value() / step;
    if (host_share > kFindingThreshold) rep.notes.push_back(host_note(rep.time.ops, host_share, step));
    if (mem_share > kFindingThreshold) {
      rep.notes.push_back(fmt::format("memory-bound: compute waited on HBM transfers {:.0f}% of the step",
                                      100 * mem_share));
    }
  }
  if (lowered != nullptr && lowered->fsdp_gathers_held_back) {
    rep.notes.push_back(
        "FSDP all-gathers held back: with each layer's weights gathered during the layer before, the step would not "
        "fit in HBM, so each gather waits for the op before its first reader, as a compiler short of memory "
        "schedules it (kernels/README.md \"Sharding points\"); their time is exposed where the layer before "
        "would have hidden it");
  }
  // An mlp, dlrm or gemm is not sharded (kernels/README.md): on several chips each runs the one-chip step on its
  // own batch, so the pod's throughput is the chips times one chip's and a training step synchronises nothing.
  const ModelKind kind = scenario.workload.model.kind;
  const long long chips = scenario.pod.chip_count();
  if (scenario.workload.program.empty() && chips > 1 &&
      (kind == ModelKind::mlp || kind == ModelKind::dlrm || kind == ModelKind::gemm)) {
    rep.notes.push_back(fmt::format(
        "not sharded: each of the {} chips runs its own one-chip {} step on workload.batch ({}) examples, so the "
        "pod does {} times one chip's work{}",
        chips, model_kind_name(kind), scenario.workload.batch, chips,
        scenario.workload.step == StepKind::train
            ? "; no gradient all-reduce is modelled (use a transformer or resnet for data-parallel training)"
            : ""));
  }
  // ICI ports the user gave the chip beyond what the slice cables: accepted, and idle (slice_checks.cpp).
  if (const auto idle = idle_ici_ports_note(scenario.pod, scenario.chip)) rep.notes.push_back(*idle);
  // HBM serves its own transfers at most at bandwidth x efficiency, so more bytes than that can only be DMAs a
  // slower memory timed, which take no HBM bandwidth in the model (dma/dma.cpp: the faster end keeps up).
  const double hbm_util = r.unit(HwUnit::hbm).utilization.max;
  const double hbm_achievable = scenario.chip.hbm.achievable_fraction();
  if (hbm_util > hbm_achievable * (1 + 1e-9)) {
    rep.notes.push_back(fmt::format(
        "HBM over its rate: a chip moved {:.0f}% of HBM's peak in the step, above the {:.0f}% it can serve; "
        "DMAs timed by a slower memory (VMEM, CMEM, PCIe) take no HBM bandwidth in the model (the faster end "
        "keeps up: tpusim describe assumptions), so the step time is optimistic",
        100 * hbm_util, 100 * hbm_achievable));
  }
  return rep;
}

}  // namespace tpusim::tools
