// One chip (or a few independent chips) under SystemC: each test calls simulate() exactly once, and ctest
// runs every test case in its own process (gtest_discover_tests), because a SystemC kernel cannot restart.
//
// Expected times come from the closed forms in timing.h; the simulator rounds each duration up to a whole
// picosecond, so sums of a few durations agree within a few picoseconds.
#include <gtest/gtest.h>

#include "support/in_child.h"
#include "test_chips.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/simulate.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using testing::scenario_for;
using testing::v4_like;
using testing::dma;
using testing::matmul;
using testing::single;
using testing::vector;

using testing::kPicosecond;

double matmul_seconds(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n) {
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  return static_cast<double>(matmul_cycles(*df, chip.mxu, MatmulShape{m, k, n}, DType::bf16)) / chip.clock.value();
}

double hbm_seconds(const ChipSpec& chip, double bytes) {
  return bytes / (chip.hbm.bandwidth.value() * chip.hbm.efficiency);
}

TEST(ChipSimulation, TwoTensorCoresSplittingA4096CubedMatmulRunAtPeakPlusFillAndDrain) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(matmul(0, 4096, 4096, 2048), {}, "gemm.core0");
  p.add(matmul(1, 4096, 4096, 2048), {}, "gemm.core1");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double ideal = 2.0 * 4096.0 * 4096.0 * 4096.0 / 275.25e12;
  EXPECT_NEAR(r.step_time.value(), (128.0 * 4096 + 382) / 1.05e9, kPicosecond);
  EXPECT_NEAR(r.step_time.value() / ideal, 1.0, 1e-3);
  // Utilization counts MACs against the array arithmetic (275.2512 TFLOP/s); MFU against the published peak.
  const double at_array_rate = 2.0 * 4096.0 * 4096.0 * 4096.0 / chip.derived_peak_bf16().value();
  EXPECT_NEAR(r.unit(HwUnit::mxu).utilization.mean, at_array_rate / r.step_time.value(), 1e-9);
  EXPECT_NEAR(r.mfu(), ideal / r.step_time.value(), 1e-9);
  EXPECT_DOUBLE_EQ(r.model_flops, 2.0 * 4096.0 * 4096.0 * 4096.0);
  EXPECT_EQ(r.cost.instructions_executed, 2u);
  EXPECT_EQ(r.instructions_per_unit[static_cast<std::size_t>(ir::UnitKind::mxu)], 2u);
  EXPECT_NEAR(r.breakdown.compute.value(), r.step_time.value(), kPicosecond);
  EXPECT_EQ(r.breakdown.memory_stall.value(), 0.0);
  EXPECT_GT(r.cost.kernel_events, 0u);
}

TEST(ChipSimulation, AnInt8MatmulAtTwiceTheBf16RateFillsTheMxuOnceNotTwice) {
  ChipSpec chip = v4_like();
  chip.mxu.int8_rate = 2;
  chip.vmem.bandwidth = BytesPerSecond(1e15);  // the arrays, not the VMEM operand stream, bound the step
  ir::Program p;
  for (int core = 0; core < 2; ++core) {
    ir::Instruction mm = matmul(core, 4096, 4096, 2048);
    mm.dtype = DType::int8;
    p.add(mm, {}, "gemm.core" + std::to_string(core));
  }
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  // Each core's 4096 x 4096 x 2048 at 2 x 4 x 128 x 128 MACs per cycle: 2^35 / 2^18 = 131,072 cycles.
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  const std::int64_t cycles = matmul_cycles(*df, chip.mxu, MatmulShape{4096, 4096, 2048}, DType::int8);
  EXPECT_EQ(cycles, (df->bf16_cycles(chip.mxu, MatmulShape{4096, 4096, 2048}) + 1) / 2);
  EXPECT_NEAR(r.step_time.value(), static_cast<double>(cycles) / 1.05e9, kPicosecond);
  // Utilization is against the int8 peak: the MACs fill half as many bf16 slots, over the step's cycles.
  const double slots = 4096.0 * 4096.0 * 4096.0 / 2;
  const double capacity = 128.0 * 128.0 * 4 * 2 * r.step_time.value() * 1.05e9;
  EXPECT_NEAR(r.unit(HwUnit::mxu).utilization.mean, slots / capacity, 1e-9);
  EXPECT_LE(r.unit(HwUnit::mxu).utilization.max, 1.0);
  EXPECT_LE(r.mxu_array_utilization.max, 1.0);
  EXPECT_NEAR(r.mxu_array_utilization.mean, r.unit(HwUnit::mxu).utilization.mean, 1e-12);
  // MFU stays against the published bf16 peak, as the literature counts it: above 1 for an all-int8 step.
  EXPECT_NEAR(r.mfu(), 2.0 * 4096.0 * 4096.0 * 4096.0 / r.step_time.value() / chip.published.peak_bf16.value(), 1e-9);
  EXPECT_GT(r.mfu(), 1.0);
}

TEST(ChipSimulation, TwoConcurrentDmasEachGetHalfTheHbmBandwidth) {
  const ChipSpec chip = v4_like();
  const std::uint64_t bytes = 48ull << 20;
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, bytes), {}, "load.a");
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, bytes), {}, "load.b");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  // Both move at bandwidth / 2 for their whole life: they end together, as one transfer of twice the bytes.
  const double expected = chip.hbm.latency.value() + hbm_seconds(chip, 2.0 * static_cast<double>(bytes));
  EXPECT_NEAR(r.step_time.value(), expected, kPicosecond);
  EXPECT_EQ(r.traffic.hbm_read.count(), 2 * bytes);
  EXPECT_EQ(r.traffic.dma_bytes.count(), 2 * bytes);
  EXPECT_NEAR(r.unit(HwUnit::hbm).busy.value(), hbm_seconds(chip, 2.0 * static_cast<double>(bytes)), kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::dma).utilization.mean, 1.0, 1e-9);
  EXPECT_NEAR(r.breakdown.memory_stall.value(), r.step_time.value(), kPicosecond);
}

TEST(ChipSimulation, HbmEfficiencyScalesTheAchievedBandwidth) {
  ChipSpec chip = v4_like();
  chip.hbm.efficiency = 0.8;
  ir::Program p;
  p.add(dma(ir::Memory::vmem, ir::Memory::hbm, 12ull << 20), {}, "store");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // A write into HBM is posted: no read latency.
  EXPECT_NEAR(r.step_time.value(),
              transfer_time(MiB(12), Seconds(0), chip.hbm.bandwidth, chip.hbm.efficiency).value(), kPicosecond);
  EXPECT_EQ(r.traffic.hbm_written.count(), 12ull << 20);
  EXPECT_NEAR(r.unit(HwUnit::hbm).utilization.mean, 0.8 * hbm_seconds(chip, 12.0 * (1 << 20)) / r.step_time.value(),
              1e-9);
}

// Four 1024^3 matmul steps, each needing 2 MiB loaded into VMEM first.
constexpr int kSteps = 4;
constexpr std::uint64_t kTileBytes = 2ull << 20;

TEST(ChipSimulation, DependentLoadAndMatmulChainSerializes) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  std::uint32_t prev = 0;
  for (int s = 0; s < kSteps; ++s) {
    ir::Instruction load = dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes);
    load.vmem.alloc = kTileBytes;
    std::vector<std::uint32_t> after;
    if (s > 0) after.push_back(prev);
    const std::uint32_t l = p.add(load, after, "load");
    ir::Instruction mm = matmul(0, 1024, 1024, 1024);
    mm.vmem.free = kTileBytes;
    prev = p.add(mm, {l}, "matmul");
  }
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double load = chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes);
  const double mm = matmul_seconds(chip, 1024, 1024, 1024);
  EXPECT_NEAR(r.step_time.value(), kSteps * (load + mm), 4 * kSteps * kPicosecond);
  EXPECT_NEAR(r.breakdown.memory_stall.value(), kSteps * load, 4 * kSteps * kPicosecond);
  EXPECT_NEAR(r.breakdown.compute.value(), kSteps * mm, 4 * kSteps * kPicosecond);
  EXPECT_EQ(r.chips[0].vmem_peak.count(), kTileBytes);
}

TEST(ChipSimulation, DoubleBufferedLoadsHideBehindTheMatmuls) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  std::vector<std::uint32_t> mms;
  for (int s = 0; s < kSteps; ++s) {
    ir::Instruction load = dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes);
    load.vmem.alloc = kTileBytes;
    std::vector<std::uint32_t> after;
    if (s >= 2) after.push_back(mms[static_cast<std::size_t>(s - 2)]);  // reuses the buffer of step s - 2
    const std::uint32_t l = p.add(load, after, "load");
    ir::Instruction mm = matmul(0, 1024, 1024, 1024);
    mm.vmem.free = kTileBytes;
    mms.push_back(p.add(mm, {l}, "matmul"));
  }
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  // The first two loads go through the core's descriptor queue in order: the first lands after latency + one
  // tile at full bandwidth; every later load runs under a matmul (2 us < 16 us), and the four back-to-back
  // matmuls pipeline: 4 x 16 tiles per array x 1024 rows + one fill and drain (128 + 254).
  const double first = chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes);
  const double mm = (kSteps * 16 * 1024.0 + 128 + 254) / chip.clock.value();
  EXPECT_NEAR(r.step_time.value(), first + mm, 4 * kSteps * kPicosecond);
  EXPECT_NEAR(r.breakdown.memory_stall.value(), first, 4 * kPicosecond);
  EXPECT_EQ(r.chips[0].vmem_peak.count(), 2 * kTileBytes);
  const double chained =
      kSteps * (chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes) + matmul_seconds(chip, 1024, 1024, 1024));
  EXPECT_LT(r.step_time.value(), chained);
}

TEST(ChipSimulation, DmasRetireInIssueOrder) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 95ull << 20), {}, "big");
  const std::uint32_t small = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 1ull << 20), {}, "small");
  p.add(matmul(0, 1024, 1024, 1024), {small}, "consumer");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // The small transfer finishes first but retires behind the big one (96 MiB moved in all).
  const double expected =
      chip.hbm.latency.value() + hbm_seconds(chip, 96.0 * (1 << 20)) + matmul_seconds(chip, 1024, 1024, 1024);
  EXPECT_NEAR(r.step_time.value(), expected, 4 * kPicosecond);
}

TEST(ChipSimulation, VmemOverflowNamesTheInstruction) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  for (const char* label : {"weights.load", "acts.load", "overflowing.load"}) {
    ir::Instruction load = dma(ir::Memory::hbm, ir::Memory::vmem, 6ull << 20, 1);
    load.vmem.alloc = 6ull << 20;  // 3 x 6 MiB > 16 MiB
    p.add(load, {}, label);
  }
  try {
    (void)simulate(scenario_for(chip), single(std::move(p)), {});
    FAIL() << "expected a VMEM overflow";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.chip(), 0u);
    EXPECT_EQ(e.core(), 1);
    EXPECT_EQ(e.instruction(), 2u);
    EXPECT_EQ(e.label(), "overflowing.load");
    EXPECT_NE(std::string(e.what()).find("VMEM overflow"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("instruction 2 'overflowing.load'"), std::string::npos) << e.what();
  }
}

TEST(ChipSimulation, ElementwiseOpRunsAtTheVpuRate) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(vector(0, ir::VectorOp::elementwise, 1 << 24), {}, "gelu");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // 2^24 elements / (128 lanes x 8 sublanes x 1 ALU) = 16384 cycles.
  EXPECT_NEAR(r.step_time.value(), 16384 / 1.05e9, kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).utilization.mean, 0.5, 1e-9);  // one of the two TensorCores' VPUs
  EXPECT_NEAR(r.breakdown.compute.value(), r.step_time.value(), kPicosecond);
}

// The bundled v6e (configs/chips/v6e.yaml): 128 lanes x 8 sublanes x 4 ALUs = 4096 element-ops per cycle at
// 1.75 GHz. An elementwise op of 2^24 elements takes 2^24 / 4096 = 4096 cycles; the exp after it (2^20
// elements at transcendental_rate 0.25, one vreg of 1024 per cycle) 1024 cycles: 5120 cycles in all.
TEST(ChipSimulation, BundledV6eVectorOpsRunAtLanesTimesSublanesTimesAlusTimesClock) {
  const ChipSpec chip = load_chip("v6e");
  ASSERT_EQ(chip.vpu.lanes * chip.vpu.sublanes * chip.vpu.alus, 4096);
  ASSERT_EQ(chip.vpu.transcendental_rate, 0.25);
  ASSERT_EQ(chip.clock.value(), 1.75e9);
  ir::Program p;
  const std::uint32_t add = p.add(vector(0, ir::VectorOp::elementwise, 1 << 24), {}, "add");
  p.add(vector(0, ir::VectorOp::transcendental, 1 << 20), {add}, "exp");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), (4096 + 1024) / 1.75e9, 2 * kPicosecond);
}

TEST(ChipSimulation, InputBoundStepShowsTheTpuWaitingOnTheHost) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  ir::Instruction infeed;
  infeed.kind = ir::OpKind::host;
  infeed.host.op = ir::HostOp::infeed;
  infeed.bytes = 16'000'000;
  const std::uint32_t in = p.add(infeed, {}, "infeed");
  p.add(matmul(0, 1024, 1024, 1024), {in}, "step");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double host = kPcieLatency.value() + 16e6 / 16e9;
  const double mm = matmul_seconds(chip, 1024, 1024, 1024);
  EXPECT_NEAR(r.step_time.value(), host + mm, 4 * kPicosecond);
  EXPECT_NEAR(r.breakdown.host_stall.value(), host, 4 * kPicosecond);
  EXPECT_NEAR(r.breakdown.compute.value(), mm, 4 * kPicosecond);
  EXPECT_EQ(r.traffic.host_bytes.count(), 16'000'000u);
  EXPECT_LT(r.unit(HwUnit::mxu).utilization.mean, 0.01);
}

TEST(ChipSimulation, ChipsOfAPodRunTheirProgramIndependently) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t l = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes), {}, "load");
  p.add(matmul(0, 1024, 1024, 1024), {l}, "matmul");
  const SimResult r = simulate(scenario_for(chip, {2, 2}), single(std::move(p)), {});
  ASSERT_EQ(r.chips.size(), 4u);
  const double expected =
      chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes) + matmul_seconds(chip, 1024, 1024, 1024);
  EXPECT_NEAR(r.step_time.value(), expected, 4 * kPicosecond);
  for (const ChipResult& c : r.chips) EXPECT_EQ(c.finish.value(), r.step_time.value());
  EXPECT_EQ(r.cost.instructions_executed, 8u);
  EXPECT_DOUBLE_EQ(r.model_flops, 4 * 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(r.traffic.hbm_read.count(), 4 * kTileBytes);
}

TEST(ChipSimulation, BarrierCompletesWithItsDependencies) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t a = p.add(matmul(0, 512, 512, 512), {}, "a");
  const std::uint32_t b = p.add(matmul(1, 1024, 1024, 1024), {}, "b");
  ir::Instruction barrier;
  barrier.kind = ir::OpKind::barrier;
  const std::uint32_t sync = p.add(barrier, {a, b}, "sync");
  p.add(vector(0, ir::VectorOp::elementwise, 1024), {sync}, "after");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), matmul_seconds(chip, 1024, 1024, 1024) + 1 / 1.05e9, 4 * kPicosecond);
  EXPECT_EQ(r.instructions_per_unit[static_cast<std::size_t>(ir::UnitKind::sync)], 1u);
}

TEST(ChipSimulation, TraceReportsEveryInstructionWithItsUnitAndTimes) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t l = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes, 1), {}, "load");
  p.add(matmul(1, 1024, 1024, 1024), {l}, "matmul");
  std::vector<TraceSpan> spans;
  SimOptions options;
  options.trace = [&spans](const TraceSpan& s) { spans.push_back(s); };
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), options);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].unit, ir::UnitKind::dma);
  EXPECT_EQ(spans[0].instruction, 0u);
  EXPECT_EQ(spans[0].start.value(), 0.0);
  EXPECT_NEAR(spans[0].end.value(), chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes), kPicosecond);
  EXPECT_EQ(spans[1].unit, ir::UnitKind::mxu);
  EXPECT_EQ(spans[1].core, 1);
  EXPECT_EQ(spans[1].start.value(), spans[0].end.value());
  EXPECT_EQ(spans[1].end.value(), r.step_time.value());
}

// End to end: the lowering library's program for a GEMM workload, run on the chip model.
SimResult simulate_gemm(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                        MxuFidelity fidelity = MxuFidelity::fast) {
  WorkloadSpec w;
  w.model.name = "gemm";
  w.model.kind = ModelKind::gemm;
  w.model.gemm.m = m;
  w.model.gemm.k = k;
  w.model.gemm.n = n;
  Scenario s = scenario_for(chip);
  s.fidelity.mxu = fidelity;
  return simulate(s, kernels::lower_workload(w, chip), {});
}

TEST(ChipSimulation, LoweredCube4096RunsWithinTwoPercentOfPeakPlusOneFillAndDrain) {
  const ChipSpec chip = v4_like();
  const SimResult r = simulate_gemm(chip, 4096, 4096, 4096);
  // FLOPs / peak at the array rate, plus one fill and drain (2R + C - 2 + R cycles = 382).
  const double bound = 2.0 * 4096.0 * 4096.0 * 4096.0 / chip.derived_peak_bf16().value() + 382 / chip.clock.value();
  EXPECT_GE(r.step_time.value(), bound);
  EXPECT_LE(r.step_time.value(), 1.02 * bound) << "step " << r.step_time.value() * 1e6 << " us";
  // Measured when written: 504.6 us against 499.6 us (+1.0%): the first operand loads and the last C
  // write-back are exposed.
}

TEST(ChipSimulation, LoweredSkinnyGemmRunsWithinFivePercentOfItsHbmBytesOverBandwidth) {
  const ChipSpec chip = v4_like();
  const SimResult r = simulate_gemm(chip, 8, 4096, 4096);
  // The least HBM traffic: A, B and C once each, 2 B per element.
  const double bytes = 2.0 * (8.0 * 4096 + 4096.0 * 4096 + 8.0 * 4096);
  const double bound = bytes / (chip.hbm.bandwidth.value() * chip.hbm.efficiency);
  EXPECT_GE(r.step_time.value(), bound);
  EXPECT_LE(r.step_time.value(), 1.05 * bound) << "step " << r.step_time.value() * 1e6 << " us";
  EXPECT_GE(static_cast<double>(r.traffic.hbm_read.count() + r.traffic.hbm_written.count()), bytes);
  // Measured when written: 29.36 us against 28.07 us (+4.6%): HBM latency before the first step, the last
  // step's matmul and drain after the last load.
}

TEST(ChipSimulation, MfuIsTheProgramsModelFlopsOverStepTimesPeak) {
  const ChipSpec chip = v4_like();
  const SimResult r = simulate_gemm(chip, 1024, 2048, 512);
  EXPECT_DOUBLE_EQ(r.model_flops, 2.0 * 1024 * 2048 * 512);
  EXPECT_NEAR(r.mfu(), r.model_flops / (r.step_time.value() * chip.published.peak_bf16.value()), 1e-12);
  EXPECT_GT(r.mfu(), 0.5);
  EXPECT_LT(r.mfu(), 1.0);
}

TEST(ChipSimulation, BackToBackMatmulsPayOneFillAndDrain) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t a = p.add(matmul(0, 1024, 1024, 1024), {}, "a");
  p.add(matmul(0, 1024, 1024, 1024), {a}, "b");  // accumulates after a: ordering only, pipelined
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // 2 x 16 tiles per array x 1024 rows + 128 (first weights) + 254 (last drain).
  EXPECT_NEAR(r.step_time.value(), (2 * 16 * 1024.0 + 128 + 1024 + 254 - 1024) / 1.05e9, kPicosecond);
  EXPECT_LT(r.step_time.value(), 2 * matmul_seconds(chip, 1024, 1024, 1024));
}

// chip.mxu.step_overhead: 95 ns at 1.05 GHz rounds up to 100 whole MXU cycles, idled once between the two
// instructions (the second one's weights load meanwhile), so the run above takes exactly 100 cycles longer.
TEST(ChipSimulation, BackToBackMatmulsIdleTheStepOverheadBetweenThem) {
  ChipSpec chip = v4_like();
  chip.mxu.step_overhead = Seconds(95e-9);
  ir::Program p;
  const std::uint32_t a = p.add(matmul(0, 1024, 1024, 1024), {}, "a");
  p.add(matmul(0, 1024, 1024, 1024), {a}, "b");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), (2 * 16 * 1024.0 + 128 + 254 + 100) / 1.05e9, kPicosecond);
}

// ---- MXU results drained through the VPU (result_pop_cycles) ------------------------------------------------

TEST(ResultPops, ALoneMxuBoundMatmulKeepsItsVpuBusyPoppingItsResults) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(matmul(0, 1024, 1024, 1024), {}, "matmul");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // The step is the MXU's 16766 cycles; the 1024 pops (ceil(1024 x 1024 / (128 x 8))) run inside it.
  EXPECT_NEAR(r.step_time.value(), matmul_seconds(chip, 1024, 1024, 1024), kPicosecond);
  const double pops = 1024 / chip.clock.value();
  // Means over the two TensorCores' VPUs; core 1's is idle.
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), pops / 2, 2 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).utilization.mean, pops / 2 / r.step_time.value(), 1e-7);  // ticks round up
  EXPECT_EQ(r.unit(HwUnit::vpu).stalled.value(), 0.0);
  EXPECT_NEAR(r.breakdown.compute.value(), r.step_time.value(), kPicosecond);
}

TEST(ResultPops, AVectorOpIssuedWhileAMatmulsResultsArePoppedWaitsForThePops) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t l = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 1024), {}, "load");
  p.add(matmul(0, 1024, 1024, 1024), {}, "matmul");
  p.add(vector(0, ir::VectorOp::elementwise, 1 << 20), {l}, "op");  // 1024 cycles
  std::vector<TraceSpan> spans;
  SimOptions options;
  options.trace = [&spans](const TraceSpan& s) { spans.push_back(s); };
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), options);
  ASSERT_EQ(spans.size(), 3u);
  const double clock = chip.clock.value();
  const double load = chip.hbm.latency.value() + hbm_seconds(chip, 1024);  // 500.85 ns = 525.9 cycles
  // Pops from the first results (383 cycles) for 1024 cycles, to 1407 cycles (1340 ns): the op, ready at
  // 500.85 ns, starts when they end and runs its 1024 cycles.
  const TraceSpan& op = spans[1];
  ASSERT_EQ(op.unit, ir::UnitKind::vpu);
  EXPECT_NEAR(spans[0].end.value(), load, kPicosecond);
  EXPECT_NEAR(op.start.value(), (383 + 1024) / clock, 2 * kPicosecond);
  EXPECT_NEAR(op.end.value(), (383 + 1024 + 1024) / clock, 3 * kPicosecond);
  // The matmul itself is MXU-bound and unchanged; the VPU of core 0 was busy for pops + op.
  EXPECT_NEAR(r.step_time.value(), matmul_seconds(chip, 1024, 1024, 1024), kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), 2048 / clock / 2, 4 * kPicosecond);
}

TEST(ResultPops, AMatmulWithAShallowContractionBecomesBoundByItsPops) {
  ChipSpec chip = v4_like();
  chip.vpu.result_pops_per_cycle = 0.25;  // a VPU popping one register every 4 cycles
  ir::Program p;
  p.add(matmul(0, 8192, 128, 8192), {}, "matmul");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // MXU: 64 tiles, 16 per array of 8192 rows: 16 x 8192 + 382 = 131454 cycles. Pops: 8192 x 8192 /
  // (1024 x 0.25) = 262144 cycles from the first results at 383: the matmul ends at 383 + 262144 cycles.
  const double clock = chip.clock.value();
  EXPECT_NEAR(matmul_seconds(chip, 8192, 128, 8192), 131454 / clock, kPicosecond);
  EXPECT_NEAR(r.step_time.value(), (383 + 262144) / clock, 2 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), 262144 / clock / 2, 2 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::mxu).busy.value(), r.step_time.value() / 2, 2 * kPicosecond);
}

TEST(ResultPops, AtOnePopPerCycleTheShallowContractionStaysMxuBound) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  p.add(matmul(0, 8192, 128, 8192), {}, "matmul");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // 65536 pops against 131454 MXU cycles: four 128-wide arrays emit 512 results a cycle, the VPU pops 1024.
  EXPECT_NEAR(r.step_time.value(), 131454 / chip.clock.value(), kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), 65536 / chip.clock.value() / 2, 2 * kPicosecond);
}

TEST(ChipSimulation, CycleFidelityMatchesTheFastModelOnSmallShapes) {
  ChipSpec chip = v4_like();
  const SimResult r = simulate_gemm(chip, 129, 129, 129, MxuFidelity::cycle);
  // One tile per MXU: load 128 + stream 129 + drain 254 cycles, after the operand loads.
  const double loads = chip.hbm.latency.value() + hbm_seconds(chip, 2.0 * 129 * 129 * 2);
  EXPECT_NEAR(r.step_time.value(), loads + 511 / chip.clock.value() + hbm_seconds(chip, 129.0 * 129 * 2), 1e-9);
}

TEST(ChipSimulation, CycleFidelityRefusesAMatmulTooLargeForTheReference) {
  ir::Program p;
  p.add(matmul(0, 4096, 4096, 2048), {}, "huge");
  Scenario s = scenario_for(v4_like());
  s.fidelity.mxu = MxuFidelity::cycle;
  try {
    (void)simulate(s, single(std::move(p)), {});
    FAIL() << "expected an error";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.label(), "huge");
    EXPECT_NE(std::string(e.what()).find("fidelity.mxu: cycle"), std::string::npos) << e.what();
  }
}

TEST(ChipSimulation, InstructionOnAMissingTensorCoreIsRejected) {
  ir::Program p;
  p.add(matmul(2, 128, 128, 128), {}, "third.core");
  EXPECT_THROW((void)simulate(scenario_for(v4_like()), single(std::move(p)), {}), SimulationError);
}


// ---- host: input pipeline, launch, syncs, checkpoint (lowered by kernels::lower_workload) ---------------------

// The step time of another simulation, run in a forked child: a SystemC kernel runs once per process, and the
// host tests compare a step with and without its host work. Call before this process's own simulate().
double step_time_in_child(const Scenario& s, const ir::ProgramSet& programs) {
  return tpusim::testing::in_child<double>([&] { return simulate(s, programs, {}).step_time.value(); }, -1.0);
}

ChipSpec v4_with_host() {
  ChipSpec chip = v4_like();
  chip.host.round_trip = Seconds(20e-6);
  chip.host.storage_bandwidth = BytesPerSecond(1e9);
  return chip;
}

// A training step of about 0.4 ms: 2 layers of 2048 x 2048, batch 2048, SGD. Input: 256 B per example, so
// each step's infeed is 512 KiB (32.768 us over 16 GB/s PCIe).
WorkloadSpec host_test_step() {
  WorkloadSpec w;
  w.model.name = "mlp";
  w.model.kind = ModelKind::mlp;
  w.model.mlp.widths = {2048, 2048, 2048};
  w.batch = 2048;
  w.step = StepKind::train;
  w.optimizer = Optimizer::sgd;
  return w;
}
constexpr double kInfeedBytes = 2048.0 * 256;
// Examples per second per host for a given host-side input time (2048 examples for each of 4 chips).
double rate_for(double input_seconds) { return 2048.0 * 4 / input_seconds; }

TEST(HostSimulation, InputSlowerThanTheStepMakesTheStepTakeTheInputTime) {
  const ChipSpec chip = v4_with_host();
  WorkloadSpec w = host_test_step();
  const double t0 = step_time_in_child(scenario_for(chip), kernels::lower_workload(w, chip));
  ASSERT_GT(t0, 0);
  w.host.input.examples_per_s_per_host = rate_for(1e-3);  // 1 ms of input preparation, above the ~0.4 ms step
  w.host.input.bytes_per_example = Bytes(256);
  w.host.input.prefetch = 2;
  const SimResult r = simulate(scenario_for(chip), kernels::lower_workload(w, chip), {});
  // Closed form (to a few ps of rounding): the host prepares and sends the next batch while the chip computes,
  // and the step ends when it arrives: input time + PCIe latency + bytes / PCIe bandwidth.
  const double input = 1e-3 + kPcieLatency.value() + kInfeedBytes / 16e9;
  ASSERT_LT(t0, input);
  EXPECT_NEAR(r.step_time.value(), input, 4 * kPicosecond);
  // The chip works for t0, then waits on the host alone: that wait is the host stall.
  EXPECT_NEAR(r.breakdown.host_stall.value(), input - t0, 1e-9);
  EXPECT_GT(r.breakdown.host_stall.value() / r.step_time.value(), 0.2);  // tools notes "input-bound"
  EXPECT_EQ(r.traffic.host_bytes.count(), static_cast<std::uint64_t>(kInfeedBytes));
}

TEST(HostSimulation, PrefetchHidesAnInputFasterThanTheStepWhichWithoutPrefetchAddsItsTime) {
  const ChipSpec chip = v4_with_host();
  WorkloadSpec w = host_test_step();
  const double t0 = step_time_in_child(scenario_for(chip), kernels::lower_workload(w, chip));
  w.host.input.examples_per_s_per_host = rate_for(100e-6);  // 100 us of input preparation
  w.host.input.bytes_per_example = Bytes(256);
  w.host.input.prefetch = 0;
  const double no_prefetch = step_time_in_child(scenario_for(chip), kernels::lower_workload(w, chip));
  w.host.input.prefetch = 1;
  const SimResult r = simulate(scenario_for(chip), kernels::lower_workload(w, chip), {});

  const double input = 100e-6 + kPcieLatency.value() + kInfeedBytes / 16e9;
  ASSERT_GT(t0, input);
  EXPECT_NEAR(no_prefetch, t0 + input, 4 * kPicosecond);  // waits for its batch, then runs as before
  EXPECT_NEAR(r.step_time.value(), t0, 2 * kPicosecond);  // compute-bound: the input is hidden
  EXPECT_EQ(r.breakdown.host_stall.value(), 0.0);
}

TEST(HostSimulation, LaunchOverheadAddsExactlyItsValue) {
  const ChipSpec chip = v4_with_host();
  WorkloadSpec w = host_test_step();
  const double t0 = step_time_in_child(scenario_for(chip), kernels::lower_workload(w, chip));
  w.host.step_launch_overhead = Seconds(50e-6);
  const SimResult r = simulate(scenario_for(chip), kernels::lower_workload(w, chip), {});
  EXPECT_NEAR(r.step_time.value(), t0 + 50e-6, 2 * kPicosecond);
  EXPECT_NEAR(r.breakdown.host_stall.value(), 50e-6, 2 * kPicosecond);
}

TEST(HostSimulation, CheckpointAndSyncsAddStorageWritePcieAndRoundTrips) {
  const ChipSpec chip = v4_with_host();
  WorkloadSpec w = host_test_step();
  const double t0 = step_time_in_child(scenario_for(chip), kernels::lower_workload(w, chip));
  w.host.checkpoint.every_steps = 100;
  w.host.host_syncs = 2;
  const kernels::HostStepCosts host = kernels::host_step_costs(w, chip);
  const SimResult r = simulate(scenario_for(chip), kernels::lower_workload(w, chip), {});
  // 2 x 2048^2 bf16 weights = 16 MiB of state; 1/100 per step: 167773 B over PCIe, and the storage write of
  // one copy (the host's 4 chips are identical replicas; one writes), 16 MiB / 1 GB/s / 100 = 168 us.
  EXPECT_EQ(host.checkpoint_bytes, 167773u);
  EXPECT_NEAR(host.checkpoint_seconds, 16.0 * 1048576 / 1e9 / 100, 1e-15);
  const double checkpoint = host.checkpoint_seconds + kPcieLatency.value() + 167773.0 / 16e9;
  EXPECT_NEAR(r.step_time.value(), t0 + checkpoint + 2 * 20e-6, 4 * kPicosecond);
  EXPECT_NEAR(r.breakdown.host_stall.value(), checkpoint + 2 * 20e-6, 4 * kPicosecond);
}


// ---- per-unit stall statistics ---------------------------------------------------------------------------------

double stalled_on(const SimResult& r, HwUnit u, int why) {
  return r.unit(u).stalled_by[static_cast<std::size_t>(why)].value();
}

TEST(UnitStats, AMatmulWaitingForItsLoadIsStalledOnTheDmaThenBusy) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const std::uint32_t l = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes), {}, "load");
  p.add(matmul(0, 1024, 1024, 1024), {l}, "matmul");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double load = chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes);  // 2.2476 us
  const double mm = matmul_seconds(chip, 1024, 1024, 1024);                      // 15.97 us
  ASSERT_NEAR(r.step_time.value(), load + mm, 4 * kPicosecond);
  // MXU: core 0 waits for the load then computes; core 1 has nothing to do. Means over the two TensorCores.
  EXPECT_NEAR(r.unit(HwUnit::mxu).stalled.value(), load / 2, 4 * kPicosecond);
  EXPECT_NEAR(stalled_on(r, HwUnit::mxu, stall_on(ir::UnitKind::dma)), load / 2, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::mxu).busy.value(), mm / 2, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::mxu).idle.value(), (load + mm) - load / 2 - mm / 2, 8 * kPicosecond);
  // DMA: busy for the load, idle while the matmul runs, never stalled.
  EXPECT_NEAR(r.unit(HwUnit::dma).busy.value(), load, 4 * kPicosecond);
  EXPECT_EQ(r.unit(HwUnit::dma).stalled.value(), 0.0);
  EXPECT_NEAR(r.unit(HwUnit::dma).idle.value(), mm, 8 * kPicosecond);
  // Core 0's VPU pops the matmul's 1024 x 1024 results (1024 cycles); units without instructions are idle
  // the whole step; nothing waited on VMEM or on a slot.
  const double pops = 1024 / chip.clock.value();
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), pops / 2, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::vpu).idle.value(), r.step_time.value() - pops / 2, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::host).idle.value(), r.step_time.value(), kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::hbm).idle.value(), r.step_time.value() - r.unit(HwUnit::hbm).busy.value(), kPicosecond);
  EXPECT_EQ(stalled_on(r, HwUnit::mxu, kStallOnVmem), 0.0);
  EXPECT_EQ(r.unit(HwUnit::mxu).queue_slots.value(), 0.0);
}

TEST(UnitStats, ADmaBehindAFullDescriptorQueueWaitsForASlotWhileTheEngineIsBusy) {
  ChipSpec chip = v4_like();
  chip.dma.outstanding = 1;
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes), {}, "load.a");
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes), {}, "load.b");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double load = chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes);
  ASSERT_NEAR(r.step_time.value(), 2 * load, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::dma).busy.value(), 2 * load, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::dma).queue_slots.value(), load, 4 * kPicosecond);  // load.b behind load.a
  EXPECT_EQ(r.unit(HwUnit::dma).stalled.value(), 0.0);
  EXPECT_NEAR(r.unit(HwUnit::dma).idle.value(), 0.0, 4 * kPicosecond);
}

TEST(UnitStats, AStallIsChargedToTheUnitOfTheDirectDependency) {
  ChipSpec chip = v4_like();
  ir::Program p;
  ir::Instruction launch;
  launch.kind = ir::OpKind::host;
  launch.host.seconds = 10e-6;
  const std::uint32_t h = p.add(launch, {}, "host.launch");
  const std::uint32_t l = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kTileBytes), {h}, "load");
  p.add(vector(0, ir::VectorOp::elementwise, 1 << 20), {l}, "op");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double load = chip.hbm.latency.value() + hbm_seconds(chip, kTileBytes);
  const double op = 1024 / chip.clock.value();  // 2^20 / (128 x 8) cycles
  EXPECT_NEAR(r.step_time.value(), 10e-6 + load + op, 4 * kPicosecond);
  EXPECT_NEAR(r.breakdown.host_stall.value(), 10e-6, kPicosecond);
  EXPECT_NEAR(stalled_on(r, HwUnit::dma, stall_on(ir::UnitKind::host)), 10e-6, kPicosecond);
  // VPU of core 0: its own dependency is the load, which itself waits for the launch: the reason is the unit
  // of the direct dependency, so all of it is on the DMA. Averaged with core 1's idle VPU.
  EXPECT_EQ(stalled_on(r, HwUnit::vpu, stall_on(ir::UnitKind::host)), 0.0);
  EXPECT_NEAR(stalled_on(r, HwUnit::vpu, stall_on(ir::UnitKind::dma)), (10e-6 + load) / 2, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::host).busy.value(), 10e-6, kPicosecond);
}

}  // namespace
}  // namespace tpusim::models
