#pragma once
// Shared by the collective and network simulation tests: hand-built pods of a v4-like chip (ideal links:
// ici.link_efficiency 1), one-instruction programs, the plan the interconnect will run (kernels::plan_collective,
// the same call as default_collective_planner()), the VPU time its reductions cost, the runtime's collective
// overheads, and a fork() helper so a test can compare two simulations (a SystemC kernel runs once per process).
#include <functional>
#include <stdexcept>
#include <vector>

#include "net/simulate_with_planner.h"
#include "support/in_child.h"
#include "support/simulate_step.h"
#include "test_chips.h"
#include "ticks.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/models/timing.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net::nettest {

inline constexpr double kLinkRate = 45e9;  // v4, one direction (docs/hardware.md)
inline constexpr double kHop = 1e-6;       // the scaling book's assumed hop latency (docs/hardware.md)
inline constexpr std::uint64_t k256MiB = 256ULL << 20;

// A pod of v4-like chips (one chip per host) of `shape`; wraparound on every axis when `wrap`.
inline Scenario pod_scenario(std::vector<int> shape, bool wrap, LinkFidelity links = LinkFidelity::chunked,
                             Bytes chunk = MiB(1)) {
  ChipSpec chip = models::testing::v4_like();
  chip.ici.link_bandwidth = BytesPerSecond(kLinkRate);
  chip.ici.hop_latency = Seconds(kHop);
  Scenario s = models::testing::scenario_for(chip, shape);
  s.pod.wraparound.assign(shape.size(), wrap ? 1 : 0);
  s.pod.host_shape.assign(shape.size(), 1);
  s.fidelity.links = links;
  s.fidelity.link_chunk = chunk;
  return s;
}

// One program of one collective instruction (bf16, every axis unless `axes` says otherwise).
inline ir::ProgramSet one_collective(CollectiveKind kind, std::uint64_t bytes,
                                     kernels::CollectiveAlgorithm algorithm = kernels::CollectiveAlgorithm::automatic,
                                     std::uint32_t axes = 0) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.comm.collective = kind;
  ins.bytes = bytes;
  ins.dtype = DType::bf16;
  ins.comm.mesh_axes = axes;
  ins.comm.algorithm = static_cast<std::uint8_t>(algorithm);
  ir::Program p("collective");
  p.add(ins, {}, "grads.collective");
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

// One program of one collective instruction over `group` (the program set's only group).
inline ir::ProgramSet one_collective_over(const ir::CollectiveGroup& group, CollectiveKind kind, std::uint64_t bytes,
                                          kernels::CollectiveAlgorithm algorithm) {
  ir::ProgramSet set = one_collective(kind, bytes, algorithm);
  set.groups.push_back(group);
  ir::Instruction ins = set.programs[0][0];
  ins.comm.group = 0;
  ir::Program p("grouped");
  p.add(ins, {}, "grads.collective");
  set.programs[0] = std::move(p);
  return set;
}

// The plan the interconnect runs for the program's first instruction.
inline kernels::CollectivePlan plan_of(const Scenario& s, const ir::ProgramSet& programs) {
  const Topology topo = build_topology(s.pod, s.chip);
  const ir::Instruction& ins = programs.programs.at(0)[0];
  const ir::CollectiveGroup group = ins.comm.group == ir::kAxesGroup
                                        ? kernels::whole_axes_group(topo, ins.comm.mesh_axes)
                                        : programs.groups.at(ins.comm.group);
  return default_collective_planner()(topo, ins, group, {});
}

// VPU time of the plan's reductions on one chip: the interconnect reduces each step's reduce_elements after
// the step's receives, before the next step, at the elementwise rate (net/collective_engine.h).
inline double reduction_seconds(const kernels::CollectivePlan& plan, const ChipSpec& chip) {
  Tick t = 0;
  for (const kernels::CollectiveStep& step : plan.steps) {
    if (step.reduce_elements == 0) continue;
    t += cycles_to_ticks(
        vpu_cycles(chip.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(step.reduce_elements)), chip.clock);
  }
  return to_seconds(t).value();
}

// The runtime's overheads of one collective (net/collective_engine.h): the start-up, then one synchronisation per step.
inline double overhead_seconds(const kernels::CollectivePlan& plan) {
  return kCollectiveStartup.value() + static_cast<double>(plan.steps.size()) * kCollectiveStepSync.value();
}

struct CollectiveRun {
  SimResult result;
  kernels::CollectivePlan plan;
  double reduce = 0;    // reduction_seconds(plan)
  double overhead = 0;  // overhead_seconds(plan)
  [[nodiscard]] double time() const { return result.step_time.value(); }
  [[nodiscard]] double ideal() const { return plan.ideal_time.value(); }
};

inline CollectiveRun run_collective(const Scenario& s, const ir::ProgramSet& programs) {
  CollectiveRun r;
  r.plan = plan_of(s, programs);
  r.reduce = reduction_seconds(r.plan, s.chip);
  r.overhead = overhead_seconds(r.plan);
  r.result = ::tpusim::testing::simulate_step(s, programs, {});
  return r;
}

using models::testing::single;

// The + link of the cable from chip `src` along axis 0.
inline LinkId cable_from(const Topology& topo, std::uint32_t src) {
  for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
    const Link& link = topo.link(LinkId(l));
    if (link.src == ChipId(src) && link.axis == 0 && link.direction == 1) return LinkId(l);
  }
  throw std::logic_error("no such link");
}

// The ASTRA-sim comparison's machine (issue 21; bench_pod astra): a torus of `shape` of v4-like chips whose
// links move 100 GB/s each way (link_efficiency 1: the bound and ASTRA-sim's analytical backend take the link
// rate as given) with 1 us hops, one chip per host, the default fidelity otherwise.
inline Scenario astra_torus(const std::vector<int>& shape) {
  ChipSpec chip = models::testing::v4_like();
  chip.ici.link_bandwidth = BytesPerSecond(100e9);
  chip.ici.link_efficiency = 1.0;
  chip.ici.hop_latency = Seconds(1e-6);
  Scenario s = models::testing::scenario_for(chip, shape);
  s.pod.wraparound.assign(shape.size(), 1);
  s.pod.host_shape.assign(shape.size(), 1);
  return s;
}

// The bound of an all-reduce of S bytes on a D-axis torus of P chips (N_i per axis) with links of B bytes/s
// each way and hops of a: every chip sends (and receives) at least 2 (P - 1) / P x S (a reduce-scatter and an
// all-gather of the whole buffer) over its 2 D outgoing links, and a ring over every axis (each axis's ring
// used in both directions by half the buffer) takes 2 sum_i (N_i - 1) steps of at least one hop:
//   T_bound = 2 (P - 1) / P x S / (2 D B) + 2 sum_i (N_i - 1) a.
inline double all_reduce_bound(const std::vector<int>& shape, double bytes, double link_rate, double hop) {
  double chips = 1, hops = 0;
  for (const int n : shape) {
    chips *= n;
    hops += 2.0 * (n - 1);
  }
  const auto d = static_cast<double>(shape.size());
  return 2 * (chips - 1) / chips * bytes / (2 * d * link_rate) + hops * hop;
}

// A vector op of `us` microseconds on `core`'s VPU (elementwise on the v4-like 128 x 8 VPU at 1.05 GHz).
inline ir::Instruction vector_us(double us, int core = 0) {
  return models::testing::vector(core, ir::VectorOp::elementwise, static_cast<std::int64_t>(1024 * 1.05e3 * us));
}

// Runs `f` (returning a number) in a forked child, so the parent can run its own simulation; -1 when the
// child fails (see test/support/in_child.h).
inline double in_child(const std::function<double()>& f) { return tpusim::testing::in_child<double>(f, -1.0); }

// What a test compares between two runs of one step (aggregate against per-step, a child's against the parent's):
// the step time and a hash of the bytes of every link and DCN NIC.
struct Outcome {
  double time = -1;
  std::uint64_t link_bytes_hash = 0;
  double link_bytes = 0;  // summed over links
};

inline Outcome outcome(const SimResult& r) {
  Outcome o;
  o.time = r.step_time.value();
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the links' byte counts in link order, then the NICs'
  for (const auto* links : {&r.network.links, &r.network.dcn.egress, &r.network.dcn.ingress}) {
    for (const LinkUsage& l : *links) {
      const std::uint64_t b = l.bytes.count();
      for (int i = 0; i < 8; ++i) h = (h ^ ((b >> (8 * i)) & 0xff)) * 1099511628211ULL;
      o.link_bytes += static_cast<double>(b);
    }
  }
  o.link_bytes_hash = h;
  return o;
}

// outcome() of a simulation run in a child process (time -1 when it failed).
inline Outcome outcome_in_child(const std::function<SimResult()>& f) {
  return tpusim::testing::in_child<Outcome>([&] { return outcome(f()); }, Outcome{});
}

}  // namespace tpusim::models::net::nettest
