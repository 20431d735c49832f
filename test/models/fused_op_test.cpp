// Fused instructions (ir::Instruction::streams_hbm): a matmul or vector op standing for a whole fusion,
// whose operands stream through HBM while it computes. One simulation per test (one process per test case).
#include <cmath>

#include <gtest/gtest.h>

#include "test_chips.h"
#include "tpusim/models/simulate.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using testing::matmul;
using testing::scenario_for;
using testing::single;
using testing::v4_like;
using testing::vector;

using testing::kPicosecond;

ir::Instruction fused(ir::Instruction ins, std::uint64_t read, std::uint64_t written, std::uint32_t steps) {
  ins.stream.hbm_read = read;
  ins.stream.hbm_written = written;
  ins.stream.grid_steps = steps;
  return ins;
}

double cycles_s(const ChipSpec& chip, std::int64_t cycles) { return static_cast<double>(cycles) / chip.clock.value(); }

TEST(FusedOp, ComputeBoundMatmulTakesItsFirstLoadItsMxuTimeAndItsLastStore) {
  const ChipSpec chip = v4_like();
  // 4096 x 4096 x 4096 on one core: 2 x 4096^2 x 2 B of operands read, 4096^2 x 2 B written, 64 grid steps.
  const std::uint64_t read = 2ull * 4096 * 4096 * 2, written = 4096ull * 4096 * 2;
  ir::Program p;
  p.add(fused(matmul(0, 4096, 4096, 4096), read, written, 64), {}, "mm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double bw = chip.hbm.bandwidth.value();
  const double head = chip.hbm.latency.value() + read / 64.0 / bw, tail = written / 64.0 / bw;
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  const double mxu = cycles_s(chip, df->bf16_cycles(chip.mxu, MatmulShape{4096, 4096, 4096}));
  ASSERT_GT(mxu, (read + written) / bw);  // compute-bound: the stream hides behind the arrays
  // The head is rounded up to a whole MXU cycle before the arrays start.
  EXPECT_NEAR(r.step_time.value(), head + mxu + tail, 1.0 / chip.clock.value());
  EXPECT_EQ(r.traffic.hbm_read.count(), read);
  EXPECT_EQ(r.traffic.hbm_written.count(), written);
  EXPECT_NEAR(r.unit(HwUnit::hbm).busy.value(), (read + written) / bw, 2 * kPicosecond);
  EXPECT_NEAR(r.breakdown.compute.value(), r.step_time.value(), kPicosecond);
  EXPECT_EQ(r.traffic.dma_bytes.count(), 0u);  // streams are not DMA instructions
}

// 1024 x 1024 x 1024 on one core in 64 grid steps with `buffers` operand buffers, each step loading 1/64 of
// 4 MiB behind 20 us of HBM latency: far longer than a step's 0.24 us of matmul. Without buffers (a program that
// names none) the instruction takes its first load, the arrays' time and its last store (the test above); with D
// buffers every D steps last at least the MXU's drain (2 x 128 + 128 cycles), the latency, one step's loads of
// both TensorCores and one step's matmul, the bound kernels' tile_gemm ranks tilings by.
void expect_pipeline_bound(std::uint8_t buffers) {
  ChipSpec chip = v4_like();
  chip.hbm.latency = Seconds(20e-6);
  const std::uint64_t read = 2ull * 1024 * 1024 * 2, written = 1024ull * 1024 * 2;
  ir::Instruction ins = fused(matmul(0, 1024, 1024, 1024), read, written, 64);
  ins.stream.buffers = buffers;
  ir::Program p;
  p.add(ins, {}, "mm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  const double bw = chip.hbm.bandwidth.value(), clock = chip.clock.value();
  const double head = chip.hbm.latency.value() + read / 64.0 / bw, tail = written / 64.0 / bw;
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  const double mxu = cycles_s(chip, df->bf16_cycles(chip.mxu, MatmulShape{1024, 1024, 1024}));
  const double drain = (2.0 * chip.mxu.rows + chip.mxu.cols) / clock;
  const double floor = (64 * (drain + chip.hbm.latency.value() + chip.tensorcores * read / 64.0 / bw) + mxu) / buffers;
  ASSERT_GT(floor, 10 * mxu);
  EXPECT_NEAR(r.step_time.value(), head + floor + tail, 2.0 / clock);
}

TEST(FusedOp, AMatmulWhoseDoubleBufferCannotHideTheHbmLatencyTakesItsPipelineBound) { expect_pipeline_bound(2); }

TEST(FusedOp, ThreeBuffersHideAThirdMoreOfTheLatencyThanTwo) { expect_pipeline_bound(3); }

TEST(FusedOp, MemoryBoundVectorOpTakesTheLatencyAndItsBytesAtTheHbmRate) {
  const ChipSpec chip = v4_like();
  const std::uint64_t read = 96ull << 20, written = 48ull << 20;
  ir::Program p;
  p.add(fused(vector(0, ir::VectorOp::elementwise, 1 << 20), read, written, 16), {}, "norm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});

  // The posted writes move while the reads wait out the HBM latency; the reads, issued first, then go first.
  const double bw = chip.hbm.bandwidth.value();
  ASSERT_GT(written / bw, chip.hbm.latency.value());
  EXPECT_NEAR(r.step_time.value(), (read + written) / bw, 2 * kPicosecond);
  // The VPU computes for its first load, its cycles and its last store; the rest is waiting for HBM.
  const double vpu = chip.hbm.latency.value() + (read / 16.0 + written / 16.0) / bw +
                     cycles_s(chip, vpu_cycles(chip.vpu, ir::VectorOp::elementwise, 1 << 20));
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), vpu / 2, 2 * kPicosecond);  // mean over the 2 TensorCores
  EXPECT_NEAR(r.breakdown.compute.value(), vpu, 2 * kPicosecond);
  EXPECT_NEAR(r.breakdown.memory_stall.value(), r.step_time.value() - vpu, 4 * kPicosecond);
}

TEST(FusedOp, TwoTensorCoresStreamingAtOnceShareHbm) {
  const ChipSpec chip = v4_like();
  const std::uint64_t bytes = 120ull << 20;
  ir::Program p;
  p.add(fused(vector(0, ir::VectorOp::elementwise, 1024), bytes, 0, 1), {}, "a");
  p.add(fused(vector(1, ir::VectorOp::elementwise, 1024), bytes, 0, 1), {}, "b");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // Each gets half the rate for its whole life; the exposed head (its one step) runs beside the stream.
  const double bw = chip.hbm.bandwidth.value();
  EXPECT_NEAR(r.step_time.value(), chip.hbm.latency.value() + 2.0 * bytes / bw, 2 * kPicosecond);
}

TEST(FusedOp, AFusedMatmulWaitsForTheFusedMatmulItReads) {
  const ChipSpec chip = v4_like();
  const std::uint64_t bytes = 12ull << 20;
  ir::Program p;
  const auto a = p.add(fused(matmul(0, 1024, 1024, 1024), bytes, bytes, 16), {}, "a");
  p.add(fused(matmul(0, 1024, 1024, 1024), bytes, bytes, 16), {a}, "b");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // Each: memory-bound (24 MiB at 1.2 TB/s = 21 us against 15.6 us of MXU plus 1.3 us exposed; the posted
  // writes hide the reads' latency), one after the other.
  const double one = 2.0 * bytes / chip.hbm.bandwidth.value();
  EXPECT_NEAR(r.step_time.value(), 2 * one, 4 * kPicosecond);
}

TEST(FusedOp, BatchedMatmulPadsEachProductToTheArray) {
  const ChipSpec chip = v4_like();
  // 16 heads of [2048 x 64] x [64 x 2048]: k = 64 fills half of each 128-row array.
  ir::Instruction mm = matmul(0, 2048, 64, 2048);
  mm.shape.batch = 16;
  mm.flops.model = mm.flops.hardware = 16 * 2.0 * 2048 * 64 * 2048;
  ir::Program p;
  p.add(mm, {}, "scores");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // Weight-stationary: 16 x 1 x 16 tiles of 2048 rows over 4 arrays = 64 x 2048 cycles, plus fill and drain.
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  EXPECT_EQ(df->bf16_cycles(chip.mxu, MatmulShape{2048, 64, 16 * 2048}), 64 * 2048 + 2 * 128 + 128 - 2);
  EXPECT_NEAR(r.step_time.value(), cycles_s(chip, 64 * 2048 + 2 * 128 + 128 - 2), 1e-9);
  // Half the array's rows carry useful work: MXU utilization of the busy core is just under 1/2, so the
  // chip's (2 TensorCores) is just under 1/4.
  EXPECT_NEAR(r.unit(HwUnit::mxu).utilization.mean, 0.25 * 64 * 2048 / (64 * 2048 + 382.0), 1e-6);
}

TEST(FusedOp, EpilogueVectorWorkHoldsTheMatmulUntilTheVpuHasDoneIt) {
  const ChipSpec chip = v4_like();
  // 1024 x 128 x 1024 takes 8 tiles x 1024 rows / 4 arrays = 2048 cycles; an epilogue of 2^22 transcendental
  // element-ops takes 2^22 / (1024 x 0.25) = 16384 VPU cycles after the pops (1024 cycles).
  ir::Instruction mm = matmul(0, 1024, 128, 1024);
  mm.vector.op = ir::VectorOp::transcendental;
  mm.vector.elements = 1 << 22;
  ir::Program p;
  p.add(mm, {}, "mm.gelu");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  const std::int64_t first = mxu_first_result_cycles(chip.mxu, MatmulShape{1024, 128, 1024});
  EXPECT_NEAR(r.step_time.value(), cycles_s(chip, first) + cycles_s(chip, 1024 + 16384), 2 * kPicosecond);
}

}  // namespace
}  // namespace tpusim::models
