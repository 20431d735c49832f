// Simulation speed of one chip, in simulated instructions and kernel events per wall second:
//  - BM_OneChipTiledProgram: a hand-built tiled program of about 10,000 instructions on one v4-like chip: per
//    TensorCore, 512^3 matmul tiles with loads issued two tiles ahead (double buffering), a transcendental
//    epilogue on the VPU and a store, the two cores interleaved in program order as a scheduler would emit them
//    for the shared in-order DMA queue.
//  - BM_QuickstartTrainingStep: the bundled quickstart scenario (scenarios/quickstart.yaml: the mlp-quickstart
//    training step, batch 2048, Adam, on one v4 chip) lowered by the lowering library and simulated.
// A SystemC kernel runs once per process, so every simulation runs in a forked child that sends its counters
// back through a pipe; each benchmark runs one iteration and reports them as custom counters.
#include <benchmark/benchmark.h>

#include <exception>
#include <string>

#include "test_chips.h"
#include "tools/src/environment.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/simulate.h"
#include <sys/wait.h>
#include <unistd.h>

namespace tpusim::models {
namespace {

// TPUSIM_MIRROR and TPUSIM_RUN_AHEAD as `tpusim run` reads them (bench/README.md compares runs both ways).
SimOptions options_from_environment() {
  SimOptions o;
  tools::apply_environment(o);
  return o;
}

constexpr int kCores = 2;
constexpr int kTiles = 1250;  // x 2 cores x 4 instructions = 10,000 instructions
constexpr std::int64_t kTile = 512;
constexpr std::uint64_t kInBytes = 2 * kTile * kTile * 2;  // A and B tiles, bf16
constexpr std::uint64_t kOutBytes = kTile * kTile * 2;

ir::Instruction load(int core) {
  ir::Instruction i;
  i.kind = ir::OpKind::dma;
  i.core = static_cast<std::uint8_t>(core);
  i.memory.src = ir::Memory::hbm;
  i.memory.dst = ir::Memory::vmem;
  i.bytes = kInBytes;
  i.vmem.alloc = kInBytes;
  return i;
}

ir::ProgramSet tiled_program() {
  ir::Program p("bench.tiled");
  std::vector<std::vector<std::uint32_t>> loads(kCores);
  for (int core = 0; core < kCores; ++core) {
    for (int t = 0; t < 2; ++t) loads[static_cast<std::size_t>(core)].push_back(p.add(load(core), {}, "tile.load"));
  }
  for (int t = 0; t < kTiles; ++t) {
    for (int core = 0; core < kCores; ++core) {
      auto& core_loads = loads[static_cast<std::size_t>(core)];
      ir::Instruction mm;
      mm.kind = ir::OpKind::matmul;
      mm.core = static_cast<std::uint8_t>(core);
      mm.shape.m = mm.shape.k = mm.shape.n = kTile;
      mm.flops.model = mm.flops.hardware = 2.0 * kTile * kTile * kTile;
      mm.vmem.free = kInBytes;
      mm.vmem.alloc = kOutBytes;
      const std::uint32_t m = p.add(mm, {core_loads[static_cast<std::size_t>(t)]}, "tile.matmul");

      ir::Instruction act;
      act.kind = ir::OpKind::vector;
      act.core = mm.core;
      act.vector.op = ir::VectorOp::transcendental;
      act.vector.elements = kTile * kTile;
      const std::uint32_t a = p.add(act, {m}, "tile.gelu");

      ir::Instruction store;
      store.kind = ir::OpKind::dma;
      store.core = mm.core;
      store.memory.src = ir::Memory::vmem;
      store.memory.dst = ir::Memory::hbm;
      store.bytes = kOutBytes;
      store.vmem.free = kOutBytes;
      p.add(store, {a}, "tile.store");

      if (t + 2 < kTiles) core_loads.push_back(p.add(load(core), {m}, "tile.load"));
    }
  }
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

// What a child simulation sends back (plain data through a pipe).
struct RunCounters {
  bool ok = false;
  double instructions = 0, kernel_events = 0, wall_seconds = 0, step_time = 0, mxu_util = 0, hbm_util = 0;
};

RunCounters simulate_in_child(const Scenario& scenario, const ir::ProgramSet& programs) {
  RunCounters c;
  int fds[2];
  if (pipe(fds) != 0) return c;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    try {
      const SimResult r = simulate(scenario, programs, options_from_environment());
      c = RunCounters{true,
                      static_cast<double>(r.cost.instructions_executed),
                      static_cast<double>(r.cost.kernel_events),
                      r.cost.wall_seconds,
                      r.step_time.value(),
                      r.unit(HwUnit::mxu).utilization.mean,
                      r.unit(HwUnit::hbm).utilization.mean};
    } catch (...) {
    }
    const ssize_t written = write(fds[1], &c, sizeof c);
    _exit(written == sizeof c ? 0 : 1);
  }
  close(fds[1]);
  if (read(fds[0], &c, sizeof c) != sizeof c) c.ok = false;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return c;
}

void report(benchmark::State& state, const RunCounters& r) {
  if (!r.ok) {
    state.SkipWithError("the simulation failed");
    return;
  }
  state.counters["instructions"] = r.instructions;
  state.counters["instr_per_s"] = r.instructions / r.wall_seconds;
  state.counters["kernel_events"] = r.kernel_events;
  state.counters["events_per_s"] = r.kernel_events / r.wall_seconds;
  state.counters["simulated_ms"] = r.step_time * 1e3;
  state.counters["mxu_util"] = r.mxu_util;
  state.counters["hbm_util"] = r.hbm_util;
}

void BM_OneChipTiledProgram(benchmark::State& state) {
  const Scenario scenario = testing::scenario_for(testing::v4_like());
  const ir::ProgramSet programs = tiled_program();
  RunCounters r;
  for (auto _ : state) r = simulate_in_child(scenario, programs);
  report(state, r);
}
BENCHMARK(BM_OneChipTiledProgram)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_QuickstartTrainingStep(benchmark::State& state) {
  Scenario scenario;
  try {
    scenario = load_scenario("quickstart", {});
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("cannot load the bundled quickstart scenario: ") + e.what()).c_str());
    return;
  }
  const ir::ProgramSet programs = kernels::lower_workload(scenario.workload, scenario.chip);
  RunCounters r;
  for (auto _ : state) r = simulate_in_child(scenario, programs);
  report(state, r);
}
BENCHMARK(BM_QuickstartTrainingStep)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::models

BENCHMARK_MAIN();
