// Pod-scale benchmarks of the interconnect (bench/README.md says how to run them). One simulation per
// process, so the binary runs one case per call:
//   bench_pod elaborate-v5p [full]   build the full v5p pod (16x20x28 = 8960 chips) with its interconnect and a
//                                    planned 1 GiB all-reduce; prints wall time and peak RSS against the
//                                    DESIGN.md budget (1 s, 512 MiB). Each chip builds the blocks its program
//                                    reaches: its ICI ports; with `full` the program reaches every block.
//   bench_pod allreduce-v4 MODE [CHUNK_MIB]
//                                    1 GiB all-reduce on the full v4 pod (16x16x16), MODE flow|chunked; prints
//                                    simulated vs ideal time, wall time, kernel events, events/s, transfers/s
//   bench_pod astra SHAPE            the ASTRA-sim analytical comparison (issue 21): an all-reduce of 1 MiB to
//                                    1 GiB on a SHAPE torus (32x32 or 16x16x16) of 100 GB/s links and 1 us
//                                    hops in the default fidelity, each size in its own child process; prints
//                                    per size the wall time, the simulated time and its ratio to the bound
//   bench_pod raw N                  the raw SystemC rate: one SC_METHOD re-notifying itself N times (compare
//                                    with allreduce-v4's events/s: DESIGN.md asks for within 2x)
//   bench_pod train SCENARIO [KEY=VALUE ...]
//                                    a sharded training step (the bundled gpt3-175b-train-v4-pod: one GPT-3 175B
//                                    step on the full v4 pod; gpt3-175b-dp-2x-v4-pod: over two pods) with
//                                    --set style overrides: lowering and simulation wall time, peak RSS, kernel
//                                    events and instructions per second, against the DESIGN.md budget (15 s and
//                                    1 GiB for one pod; 30 s for two, and 2 GiB in proportion) when the scenario
//                                    is one of those two
// The all-reduce is the collective library's own plan (kernels::plan_collective, ring_bidirectional over the
// three axes at once), as `tpusim run allreduce-v4-pod` runs it.
#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

#include "net/simulate_with_planner.h"
#include "collective_test_support.h"
#include "pod.h"
#include "run_control.h"
#include "test_chips.h"
#include "tools/src/environment.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::models {
namespace {

// TPUSIM_MIRROR and TPUSIM_RUN_AHEAD as `tpusim run` reads them (bench/README.md compares runs both ways).
SimOptions options_from_environment() {
  SimOptions o;
  tools::apply_environment(o);
  return o;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

Scenario pod_scenario(std::vector<int> shape, LinkFidelity links, Bytes chunk) {
  Scenario s = testing::scenario_for(testing::v4_like(), shape);
  s.pod.wraparound.assign(shape.size(), 1);
  s.pod.cube = {4, 4, 4};
  s.pod.host_shape = {2, 2, 1};
  s.pod.ocs_reconfiguration = Seconds(0.1);
  s.fidelity.links = links;
  s.fidelity.link_chunk = chunk;
  return s;
}

ir::ProgramSet one_all_reduce(std::uint64_t bytes) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.bytes = bytes;
  ir::Program p("allreduce");
  p.add(ins, {}, "allreduce");
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

kernels::CollectivePlan plan_for(const Scenario& s, std::uint64_t bytes) {
  const Topology topo = build_topology(s.pod, s.chip);
  return kernels::plan_collective(topo, CollectiveKind::all_reduce, bytes, DType::bf16, 0,
                                  kernels::CollectiveAlgorithm::automatic);
}

struct SystemCObjects {
  double modules = 0, ports = 0, exports = 0, other = 0;
};

// The SystemC objects under `root` (itself excluded), by kind.
SystemCObjects count_objects(const sc_core::sc_object& root) {
  SystemCObjects c;
  std::vector<const sc_core::sc_object*> stack{&root};
  while (!stack.empty()) {
    const sc_core::sc_object* o = stack.back();
    stack.pop_back();
    for (const sc_core::sc_object* child : o->get_child_objects()) {
      if (dynamic_cast<const sc_core::sc_module*>(child) != nullptr) {
        ++c.modules;
      } else if (dynamic_cast<const sc_core::sc_port_base*>(child) != nullptr) {
        ++c.ports;
      } else if (dynamic_cast<const sc_core::sc_export_base*>(child) != nullptr) {
        ++c.exports;
      } else {
        ++c.other;
      }
      stack.push_back(child);
    }
  }
  return c;
}

constexpr double kElaborateBudgetSeconds = 1;  // DESIGN.md: a full v5p pod elaborates in under 1 s ...
constexpr double kElaborateBudgetMiB = 512;    // ... and 512 MiB

// A program that reaches every block of the chip, so every chip elaborates all of them (a chip builds only the
// blocks its program reaches): a matmul and a vector op on TensorCore 1, DMAs touching VMEM, CMEM and host
// memory, a host instruction, an embedding gather on the SparseCores, and the all-reduce.
ir::ProgramSet every_block_and_an_all_reduce(std::uint64_t bytes) {
  ir::ProgramSet set = one_all_reduce(bytes);
  ir::Program& p = set.programs[0];
  p.add(testing::matmul(1, 128, 128, 128), {}, "matmul");
  p.add(testing::vector(1, ir::VectorOp::elementwise, 1024), {}, "vector");
  p.add(testing::dma(ir::Memory::hbm, ir::Memory::vmem, 4096), {}, "load");
  p.add(testing::dma(ir::Memory::hbm, ir::Memory::cmem, 4096), {}, "stage");
  p.add(testing::dma(ir::Memory::hbm, ir::Memory::host, 4096), {}, "outfeed");
  ir::Instruction host;
  host.kind = ir::OpKind::host;
  host.bytes = 4096;
  p.add(host, {}, "infeed");
  ir::Instruction gather;
  gather.kind = ir::OpKind::gather;
  gather.shape.m = 1024;
  gather.shape.n = 128;
  gather.shape.k = 64;
  gather.memory.src = gather.memory.dst = ir::Memory::hbm;
  p.add(gather, {}, "lookup");
  return set;
}

int elaborate_v5p(bool every_block) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const std::vector<int> shape{16, 20, 28};
  Scenario s = pod_scenario(shape, LinkFidelity::flow, MiB(1));
  s.chip.sparsecore = SparseCoreSpec{4, 16, 8};
  const ir::ProgramSet programs =
      every_block ? every_block_and_an_all_reduce(1ULL << 30) : one_all_reduce(1ULL << 30);
  const auto t0 = std::chrono::steady_clock::now();
  RunControl control({}, {}, static_cast<std::uint32_t>(s.pod.chip_count()));
  BlockRegistry registry;
  register_chip_blocks(registry);
  const std::clock_t cpu0 = std::clock();
  // Left to the kernel at the end, as simulate() does (SystemC's registries make tearing down 10^5 modules
  // quadratic).
  auto* pod = new Pod("pod", s, programs, control, net::InterconnectOptions{}, registry);
  (void)pod;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const double rss = peak_rss_mib();
  const SystemCObjects objects = count_objects(*pod);
  std::printf("elaborate v5p 16x20x28 (%lld chips, %zu directed links, 1 GiB all-reduce planned and routed; %s)\n",
              s.pod.chip_count(), static_cast<std::size_t>(s.pod.chip_count()) * 6,
              every_block ? "every block of every chip" : "each chip's ICI ports, all its program reaches");
  std::printf("  wall      %8.3f s    budget %.0f s    %s   (cpu %.3f s)\n", wall, kElaborateBudgetSeconds,
              wall < kElaborateBudgetSeconds ? "ok" : "OVER", cpu);
  std::printf("  peak RSS  %8.1f MiB  budget %.0f MiB %s\n", rss, kElaborateBudgetMiB,
              rss < kElaborateBudgetMiB ? "ok" : "OVER");
  const double n = static_cast<double>(s.pod.chip_count());
  std::printf("  per chip  %.1f modules, %.1f ports, %.1f exports (a TLM socket is one of each), %.1f other objects\n",
              objects.modules / n, objects.ports / n, objects.exports / n, objects.other / n);
  return wall < kElaborateBudgetSeconds && rss < kElaborateBudgetMiB ? 0 : 1;
}

int allreduce_v4(const std::string& mode, std::uint64_t chunk_mib) {
  const std::vector<int> shape{16, 16, 16};
  const LinkFidelity links = mode == "chunked" ? LinkFidelity::chunked : LinkFidelity::flow;
  const Scenario s = pod_scenario(shape, links, MiB(chunk_mib));
  const kernels::CollectivePlan plan = plan_for(s, 1ULL << 30);
  const SimResult r = simulate(s, one_all_reduce(1ULL << 30), options_from_environment());
  std::printf("all-reduce 1 GiB on v4 16x16x16 (4096 chips), %s links, %llu MiB chunks, %s, %zu steps\n",
              r.network.link_model.c_str(), static_cast<unsigned long long>(chunk_mib),
              std::string(kernels::algorithm_name(plan.algorithm)).c_str(), plan.steps.size());
  std::printf("  simulated      %10.3f ms  (ideal %.3f ms, x%.3f)\n", r.step_time.value() * 1e3,
              plan.ideal_time.value() * 1e3, r.step_time.value() / plan.ideal_time.value());
  std::printf("  wall           %10.3f s\n", r.cost.wall_seconds);
  std::printf("  kernel events  %10llu    %12.0f events/s\n", static_cast<unsigned long long>(r.cost.kernel_events),
              static_cast<double>(r.cost.kernel_events) / r.cost.wall_seconds);
  std::printf("  ICI transfers  %10llu    %12.0f transfers/s\n",
              static_cast<unsigned long long>(r.network.ici_transfers),
              static_cast<double>(r.network.ici_transfers) / r.cost.wall_seconds);
  std::uint64_t chunks = 0;
  for (const LinkUsage& l : r.network.links) chunks += l.chunks;
  if (chunks > 0) {
    std::printf("  link chunks    %10llu    %12.0f chunk-hops/s\n", static_cast<unsigned long long>(chunks),
                static_cast<double>(chunks) / r.cost.wall_seconds);
  }
  std::printf("  link util      mean %.3f max %.3f;  peak RSS %.1f MiB\n", r.network.link_utilization.mean,
              r.network.link_utilization.max, peak_rss_mib());
  return 0;
}

struct AstraCase {
  double simulated = -1, wall = 0, cpu = 0;
  double hbm_bytes = 0;  // per chip, read and written (the collective's own HBM traffic)
  std::uint64_t kernel_events = 0, transfers = 0;
};

int astra(const std::string& name) {
  const std::vector<int> shape = name == "32x32" ? std::vector<int>{32, 32} : std::vector<int>{16, 16, 16};
  const Scenario s = net::nettest::astra_torus(shape);
  std::printf("all-reduce on a %s torus (%lld chips), 100 GB/s links, 1 us hops, %s links, %s collectives\n",
              name.c_str(), s.pod.chip_count(), s.fidelity.links == LinkFidelity::flow ? "flow" : "chunked",
              s.fidelity.collectives == CollectiveFidelity::aggregate ? "aggregate" : "per-step");
  // The HBM's bound: the bytes the collective moves through a chip's HBM at its achievable rate (bandwidth x
  // efficiency); the step can beat neither bound, and the larger is the one to be near.
  const double hbm_rate = s.chip.hbm.bandwidth.value() * s.chip.hbm.achievable_fraction();
  std::printf("  %10s %8s %8s %14s %14s %8s %14s %10s %8s %10s\n", "size", "wall s", "cpu s", "simulated us",
              "bound us", "x bound", "HBM bound us", "x larger", "events", "transfers");
  double total = 0, total_cpu = 0;
  for (std::uint64_t mib = 1; mib <= 1024; mib *= 4) {
    const std::uint64_t bytes = mib << 20;
    std::fflush(stdout);  // the child must not inherit unwritten output
    const AstraCase c = tpusim::testing::in_child<AstraCase>(
        [&] {
          const auto t0 = std::chrono::steady_clock::now();
          const std::clock_t cpu0 = std::clock();
          const SimResult r = simulate(s, one_all_reduce(bytes), options_from_environment());
          AstraCase out;
          out.simulated = r.step_time.value();
          out.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          out.cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
          out.kernel_events = r.cost.kernel_events;
          out.hbm_bytes = (r.traffic.hbm_read.as_double() + r.traffic.hbm_written.as_double()) /
                          static_cast<double>(r.cost.chips_simulated);
          out.transfers = r.network.ici_transfers;
          return out;
        },
        AstraCase{});
    if (c.simulated < 0) return 1;
    const double bound = net::nettest::all_reduce_bound(shape, static_cast<double>(bytes), 100e9, 1e-6);
    total += c.wall;
    total_cpu += c.cpu;
    const double hbm_bound = c.hbm_bytes / hbm_rate;
    std::printf("  %6llu MiB %8.3f %8.3f %14.2f %14.2f %8.3f %14.2f %10.3f %8llu %10llu\n",
                static_cast<unsigned long long>(mib), c.wall, c.cpu, c.simulated * 1e6, bound * 1e6,
                c.simulated / bound, hbm_bound * 1e6, c.simulated / std::max(bound, hbm_bound),
                static_cast<unsigned long long>(c.kernel_events), static_cast<unsigned long long>(c.transfers));
  }
  std::printf("  all sizes: %.3f s wall, %.3f s cpu (each size's simulate() call, elaboration included)\n", total,
              total_cpu);
  return 0;
}

int train(const std::string& name, const std::vector<std::string>& overrides) {
  const auto t0 = std::chrono::steady_clock::now();
  const Scenario s = load_scenario(name, overrides);
  const kernels::LoweredWorkload lowered = kernels::lower(s.workload, s.chip, s.pod);
  const double lowering = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SimResult r = simulate(s, lowered.programs, options_from_environment());
  std::size_t instructions = 0;
  for (const auto& p : lowered.programs.programs) instructions += p.size();
  std::printf("%s on %s (%lld chips), %s links: %zu program(s) of %zu instructions\n", s.name.c_str(),
              s.pod.name.c_str(), s.pod.chip_count(), r.network.link_model.c_str(), lowered.programs.programs.size(),
              instructions);
  std::printf("  simulated      %10.3f s step, MFU %.3f\n", r.step_time.value(), r.mfu());
  std::printf("  wall           %10.3f s lowering, %.3f s simulation\n", lowering, r.cost.wall_seconds);
  std::printf("  kernel events  %10llu    %12.0f events/s\n", static_cast<unsigned long long>(r.cost.kernel_events),
              static_cast<double>(r.cost.kernel_events) / r.cost.wall_seconds);
  std::printf("  instructions   %10llu    %12.0f instructions/s\n",
              static_cast<unsigned long long>(r.cost.instructions_executed),
              static_cast<double>(r.cost.instructions_executed) / r.cost.wall_seconds);
  std::printf("  ICI transfers  %10llu    %12.0f transfers/s (sends of collective steps and aggregate flows, all chips)\n",
              static_cast<unsigned long long>(r.network.ici_transfers),
              static_cast<double>(r.network.ici_transfers) / r.cost.wall_seconds);
  if (!r.cost.mirroring.empty()) std::printf("  mirrored chips %s\n", r.cost.mirroring.c_str());
  const double rss = peak_rss_mib();
  std::printf("  peak RSS       %10.1f MiB\n", rss);
  // DESIGN.md "Performance budgets": one pod 15 s and 1 GiB, two pods 30 s (memory in proportion: 2 GiB).
  const bool one_pod = name == "gpt3-175b-train-v4-pod";
  const bool two_pods = name == "gpt3-175b-dp-2x-v4-pod";
  if (!(one_pod || two_pods) || !overrides.empty()) return 0;
  const double budget = one_pod ? 15 : 30;
  const double budget_mib = one_pod ? 1024 : 2048;
  const double wall = lowering + r.cost.wall_seconds;
  std::printf("  budget         %.0f s: %s, %.0f MiB: %s\n", budget, wall < budget ? "ok" : "OVER", budget_mib,
              rss < budget_mib ? "ok" : "OVER");
  return wall < budget && rss < budget_mib ? 0 : 1;
}

struct Ticker : sc_core::sc_module {
  SC_HAS_PROCESS(Ticker);
  Ticker(const sc_core::sc_module_name& n, std::uint64_t count) : sc_core::sc_module(n), left(count) {
    SC_METHOD(tick);
    sensitive << ev;
  }
  void tick() {
    if (left-- > 0) ev.notify(sc_core::sc_time(1, sc_core::SC_NS));
  }
  std::uint64_t left;
  sc_core::sc_event ev;
};

int raw(std::uint64_t n) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  Ticker t("ticker", n);
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("raw SystemC: one SC_METHOD, %llu timed notifications\n", static_cast<unsigned long long>(n));
  std::printf("  wall           %10.3f s\n  events/s       %10.0f\n", wall, static_cast<double>(n) / wall);
  return 0;
}

}  // namespace
}  // namespace tpusim::models

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  try {
    if (what == "elaborate-v5p") return tpusim::models::elaborate_v5p(argc > 2 && std::string(argv[2]) == "full");
    if (what == "allreduce-v4" && argc > 2) {
      return tpusim::models::allreduce_v4(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
    }
    if (what == "astra" && argc > 2) return tpusim::models::astra(argv[2]);
    if (what == "raw" && argc > 2) return tpusim::models::raw(std::strtoull(argv[2], nullptr, 10));
    if (what == "train" && argc > 2) return tpusim::models::train(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_pod: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: bench_pod elaborate-v5p [full] | allreduce-v4 flow|chunked [CHUNK_MIB] | astra 32x32|16x16x16 | raw N | train SCENARIO "
                       "[KEY=VALUE ...]\n");
  return 2;
}
