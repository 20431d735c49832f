// Simulated instructions and kernel events per wall second for a hand-built tiled program of about 10,000
// instructions on one v4-like chip: per TensorCore, 512^3 matmul tiles with loads issued two tiles ahead
// (double buffering), a transcendental epilogue on the VPU and a store, the two cores interleaved in program
// order as a scheduler would emit them for the shared in-order DMA queue.
// One simulation per process: the benchmark runs exactly one iteration.
#include <benchmark/benchmark.h>

#include "test_chips.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

constexpr int kCores = 2;
constexpr int kTiles = 1250;  // x 2 cores x 4 instructions = 10,000 instructions
constexpr std::int64_t kTile = 512;
constexpr std::uint64_t kInBytes = 2 * kTile * kTile * 2;  // A and B tiles, bf16
constexpr std::uint64_t kOutBytes = kTile * kTile * 2;

ir::Instruction load(int core) {
  ir::Instruction i;
  i.kind = ir::OpKind::dma;
  i.core = static_cast<std::uint8_t>(core);
  i.src = ir::Memory::hbm;
  i.dst = ir::Memory::vmem;
  i.bytes = kInBytes;
  i.vmem_alloc = kInBytes;
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
      mm.m = mm.k = mm.n = kTile;
      mm.model_flops = mm.hardware_flops = 2.0 * kTile * kTile * kTile;
      mm.vmem_free = kInBytes;
      mm.vmem_alloc = kOutBytes;
      const std::uint32_t m = p.add(mm, {core_loads[static_cast<std::size_t>(t)]}, "tile.matmul");

      ir::Instruction act;
      act.kind = ir::OpKind::vector;
      act.core = mm.core;
      act.vector_op = ir::VectorOp::transcendental;
      act.elements = kTile * kTile;
      const std::uint32_t a = p.add(act, {m}, "tile.gelu");

      ir::Instruction store;
      store.kind = ir::OpKind::dma;
      store.core = mm.core;
      store.src = ir::Memory::vmem;
      store.dst = ir::Memory::hbm;
      store.bytes = kOutBytes;
      store.vmem_free = kOutBytes;
      p.add(store, {a}, "tile.store");

      if (t + 2 < kTiles) core_loads.push_back(p.add(load(core), {m}, "tile.load"));
    }
  }
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

void BM_OneChipTiledProgram(benchmark::State& state) {
  const Scenario scenario = testing::scenario_for(testing::v4_like());
  const ir::ProgramSet programs = tiled_program();
  SimResult r;
  for (auto _ : state) r = simulate(scenario, programs, {});
  state.counters["instructions"] = static_cast<double>(r.instructions_executed);
  state.counters["instr_per_s"] = static_cast<double>(r.instructions_executed) / r.wall_seconds;
  state.counters["kernel_events"] = static_cast<double>(r.kernel_events);
  state.counters["events_per_s"] = static_cast<double>(r.kernel_events) / r.wall_seconds;
  state.counters["simulated_ms"] = r.step_time.value() * 1e3;
  state.counters["mxu_util"] = r.unit(HwUnit::mxu).utilization.mean;
  state.counters["hbm_util"] = r.unit(HwUnit::hbm).utilization.mean;
}
BENCHMARK(BM_OneChipTiledProgram)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::models

BENCHMARK_MAIN();
