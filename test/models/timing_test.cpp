// Closed-form timing of the units, without SystemC. Exact integers where the formula is exact.
#include "tpusim/models/timing.h"

#include <gtest/gtest.h>

#include <map>

#include "memory/bandwidth_server.h"
#include "test_chips.h"

namespace tpusim::models {
namespace {

using testing::v4_like;

std::int64_t ws_cycles(const MxuSpec& mxu, std::int64_t m, std::int64_t k, std::int64_t n) {
  return make_mxu_dataflow(MxuDataflow::weight_stationary)->bf16_cycles(mxu, MatmulShape{m, k, n});
}

TEST(WeightStationary, LargeMatmulCostsMaxOfRowsAndArrayPerTilePlusOneFillAndDrain) {
  const MxuSpec mxu = v4_like().mxu;
  // 4096 x 4096 x 2048: 32 x 16 = 512 weight tiles, 128 per MXU, each streaming 4096 rows.
  // R + (T - 1) x m + m + R + C - 2 = 128 x 4096 + 128 + 128 + 128 - 2.
  EXPECT_EQ(ws_cycles(mxu, 4096, 4096, 2048), 128 * 4096 + 382);
}

TEST(WeightStationary, SkinnyMatmulIsBoundByWeightLoads) {
  const MxuSpec mxu = v4_like().mxu;
  // m = 8 < R: every tile waits R = 128 cycles for the next weights, 16x longer than its 8 rows.
  // 1024 x 1024 weights = 64 tiles, 16 per MXU: 128 + 15 x 128 + 8 + 254.
  const std::int64_t cycles = ws_cycles(mxu, 8, 1024, 1024);
  EXPECT_EQ(cycles, 128 + 15 * 128 + 8 + 254);
  const double utilization = 8.0 * 1024 * 1024 / mxu_mac_capacity(mxu, DType::bf16, cycles);
  EXPECT_LT(utilization, 8.0 / 128.0);  // below m / R, the bound set by weight loading alone
  EXPECT_DOUBLE_EQ(utilization, 8.0 * 1024 * 1024 / (128.0 * 128 * 4 * 2310));  // 0.0554
}

TEST(WeightStationary, OneRowPastTheArrayPaysForAWholeTile) {
  const MxuSpec mxu = v4_like().mxu;
  // 129^3: k and n both spill one row/column into a second tile: 2 x 2 = 4 tiles, one per MXU.
  const auto df = make_mxu_dataflow(MxuDataflow::weight_stationary);
  EXPECT_EQ(df->tiles(mxu, MatmulShape{129, 129, 129}), 4);
  EXPECT_EQ(ws_cycles(mxu, 129, 129, 129), 128 + 129 + 254);
  // The tiles stream all m rows through full 128 x 128 arrays: the useful share of the MACs they perform is
  // exactly (129 / 256)^2 (m is streamed, not padded).
  const double performed = 4.0 * 128 * 128 * 129;
  EXPECT_DOUBLE_EQ(129.0 * 129 * 129 / performed, (129.0 / 256) * (129.0 / 256));
  // Against the core's capacity over the instruction (fill and drain included): 2146689 / (65536 x 511).
  EXPECT_NEAR(129.0 * 129 * 129 / mxu_mac_capacity(mxu, DType::bf16, 511), 0.0641, 1e-4);
}

TEST(WeightStationary, ScheduleFromIdleIsTheClosedForm) {
  const MxuSpec mxu = v4_like().mxu;
  const auto df = make_mxu_dataflow(MxuDataflow::weight_stationary);
  for (const MatmulShape s : {MatmulShape{8, 1024, 1024}, MatmulShape{129, 129, 129}, MatmulShape{4096, 4096, 2048}}) {
    std::vector<MxuArrayState> arrays(4);
    EXPECT_EQ(df->schedule(mxu, s, 0, arrays), df->bf16_cycles(mxu, s));
  }
}

TEST(WeightStationary, BackToBackInstructionsPayFillAndDrainOnce) {
  const MxuSpec mxu = v4_like().mxu;
  const auto df = make_mxu_dataflow(MxuDataflow::weight_stationary);
  std::vector<MxuArrayState> arrays(4);
  // 1024^3: 64 tiles, 16 per array, 1024 rows each. Both issued at cycle 0: the second's first weights load
  // while the first streams its last tile, so it ends 16 x 1024 cycles after the first.
  const std::int64_t first = df->schedule(mxu, MatmulShape{1024, 1024, 1024}, 0, arrays);
  const std::int64_t second = df->schedule(mxu, MatmulShape{1024, 1024, 1024}, 0, arrays);
  EXPECT_EQ(first, 128 + 16 * 1024 + 254);
  EXPECT_EQ(second, first + 16 * 1024);
  // Issued after the arrays went quiet, an instruction pays its own fill again.
  const std::int64_t late = df->schedule(mxu, MatmulShape{1024, 1024, 1024}, second + 1000, arrays);
  EXPECT_EQ(late, second + 1000 + df->bf16_cycles(mxu, MatmulShape{1024, 1024, 1024}));
  // m < R: the next tile still waits R cycles for its weights.
  std::vector<MxuArrayState> skinny(4);
  const std::int64_t a = df->schedule(mxu, MatmulShape{8, 1024, 1024}, 0, skinny);
  EXPECT_EQ(df->schedule(mxu, MatmulShape{8, 1024, 1024}, 0, skinny), a + 16 * 128);
}

TEST(OutputStationary, BackToBackInstructionsPaySkewAndDrainOnce) {
  const MxuSpec mxu = v4_like().mxu;
  const auto df = make_mxu_dataflow(MxuDataflow::output_stationary);
  std::vector<MxuArrayState> arrays(4);
  const MatmulShape s{1024, 512, 1024};
  EXPECT_EQ(df->schedule(mxu, s, 0, arrays), df->bf16_cycles(mxu, s));
  EXPECT_EQ(df->schedule(mxu, s, 0, arrays), df->bf16_cycles(mxu, s) + 16 * 512);
}

TEST(DmaPattern, StridedAndGatherTransfersRunAtTheirEfficiency) {
  DmaSpec dma;
  dma.strided_efficiency = 0.9;
  dma.gather_efficiency = 0.5;
  EXPECT_EQ(dma_pattern_efficiency(dma, ir::DmaPattern::contiguous), 1.0);
  EXPECT_EQ(dma_pattern_efficiency(dma, ir::DmaPattern::strided), 0.9);
  EXPECT_EQ(dma_pattern_efficiency(dma, ir::DmaPattern::gather), 0.5);
}

TEST(WeightStationary, ZeroSizedMatmulTakesNoTime) {
  EXPECT_EQ(ws_cycles(v4_like().mxu, 0, 128, 128), 0);
  EXPECT_EQ(ws_cycles(v4_like().mxu, 128, 0, 128), 0);
}

TEST(MatmulCycles, Int8RunsAtTheChipsInt8Rate) {
  MxuSpec mxu = v4_like().mxu;
  mxu.int8_rate = 2;
  const auto df = make_mxu_dataflow(MxuDataflow::weight_stationary);
  const MatmulShape s{1024, 1024, 1024};
  EXPECT_EQ(matmul_cycles(*df, mxu, s, DType::int8), (df->bf16_cycles(mxu, s) + 1) / 2);
  EXPECT_EQ(matmul_cycles(*df, mxu, s, DType::bf16), df->bf16_cycles(mxu, s));
  // No fp8 path on this chip: fp8 runs at the bf16 rate.
  EXPECT_EQ(matmul_cycles(*df, mxu, s, DType::fp8), df->bf16_cycles(mxu, s));
}

TEST(OutputStationary, CostsMaxOfDepthAndArrayPerOutputTilePlusSkewAndDrain) {
  const MxuSpec mxu = v4_like().mxu;
  const auto df = make_mxu_dataflow(MxuDataflow::output_stationary);
  EXPECT_EQ(df->name(), "output_stationary");
  // 1024 x 512 x 1024: 8 x 8 = 64 output tiles, 16 per MXU, each accumulating k = 512.
  EXPECT_EQ(df->bf16_cycles(mxu, MatmulShape{1024, 512, 1024}), 15 * 512 + 512 + 127 + 127 + 128);
  // A shallow k is bound by draining the accumulators (R cycles per tile).
  EXPECT_EQ(df->bf16_cycles(mxu, MatmulShape{128, 16, 128}), 16 + 127 + 127 + 128);
  EXPECT_EQ(df->bf16_cycles(mxu, MatmulShape{1024, 16, 1024}), 15 * 128 + 16 + 127 + 127 + 128);
}

TEST(Vpu, ElementwiseProcessesLanesTimesSublanesTimesAlusPerCycle) {
  VpuSpec vpu = v4_like().vpu;
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::elementwise, 1 << 20), (1 << 20) / 1024);
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::elementwise, 1025), 2);
  vpu.alus = 4;
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::elementwise, 1 << 20), (1 << 20) / 4096);
}

TEST(Vpu, TranscendentalReductionAndTransposeHaveTheirDocumentedCosts) {
  const VpuSpec vpu = v4_like().vpu;
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::transcendental, 1 << 20), 4 * 1024);  // rate 0.25
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::reduction, 1 << 20), 1024 + 10);     // + log2(1024) tree
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::transpose, 1 << 20), (1 << 20) / 128);
  EXPECT_EQ(vpu_cycles(vpu, ir::VectorOp::elementwise, 0), 0);
}

TEST(ResultPops, AMatmulPopsOneVectorRegisterOfItsOutputsPerCycle) {
  VpuSpec vpu = v4_like().vpu;
  // 128 lanes x 8 sublanes = 1024 f32 results per pop.
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{1024, 1024, 1024}), 1024);
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{8192, 128, 8192}), 65536);
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{1, 4096, 1}), 1);  // a partial register costs a whole pop
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{1025, 7, 1024}), 1025);
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{0, 128, 128}), 0);
  vpu.result_pops_per_cycle = 0.25;
  EXPECT_EQ(result_pop_cycles(vpu, MatmulShape{8192, 128, 8192}), 262144);
}

TEST(ResultPops, FirstResultsLeaveWhenAOneRowMatmulWouldEnd) {
  MxuSpec mxu = v4_like().mxu;
  // Weight-stationary: R (first weights) + R + C - 1 (one row through the array) = 383.
  EXPECT_EQ(mxu_first_result_cycles(mxu, MatmulShape{1024, 1024, 1024}), 383);
  EXPECT_EQ(mxu_first_result_cycles(mxu, MatmulShape{1024, 1024, 1024}), ws_cycles(mxu, 1, 128, 128));
  mxu.dataflow = MxuDataflow::output_stationary;
  EXPECT_EQ(mxu_first_result_cycles(mxu, MatmulShape{1024, 512, 1024}), 512 + 255);
}

TEST(Transfer, TakesLatencyPlusBytesOverEfficientBandwidth) {
  const Seconds t = transfer_time(MiB(12), Seconds(500e-9), BytesPerSecond(1200e9), 0.8);
  EXPECT_DOUBLE_EQ(t.value(), 500e-9 + 12.0 * 1024 * 1024 / (1200e9 * 0.8));
}


// ---- HBM read/write turnaround (BandwidthServer, no SystemC) -----------------------------------------------

// Serves everything on `server` to completion from tick 0; returns the tick each tag finished.
std::map<std::uint32_t, Tick> drain(BandwidthServer& server) {
  std::map<std::uint32_t, Tick> done;
  for (Tick t = server.next_completion(); t != kNever; t = server.next_completion()) {
    server.advance(t, [&](std::uint32_t tag) { done[tag] = t; });
  }
  return done;
}

constexpr double kHbmRate = 1.2e12 * 0.9;  // bandwidth x efficiency, bytes/s
constexpr double kStreamBytes = 12e6;
constexpr std::uint32_t kQueue1 = 1u << 24;  // a tag of the second DMA queue (another sharing class)

TEST(HbmTurnaround, ALongSingleDirectionStreamReachesBandwidthTimesEfficiency) {
  BandwidthServer hbm(kHbmRate, 0.1);
  hbm.add(0, 0, kStreamBytes, 0, FlowDirection::read);
  hbm.add(0, kQueue1, kStreamBytes, 0, FlowDirection::read);
  const auto done = drain(hbm);
  // 24 MB at 1.08 TB/s = 22.222 us, no turnaround loss.
  EXPECT_NEAR(static_cast<double>(done.at(0)), 2 * kStreamBytes / kHbmRate * 1e12, 1.0);
  EXPECT_EQ(done.at(0), done.at(kQueue1));
}

TEST(HbmTurnaround, MixedReadAndWriteStreamsLoseTheTurnaroundFraction) {
  BandwidthServer hbm(kHbmRate, 0.1);
  hbm.add(0, 0, kStreamBytes, 0, FlowDirection::read);
  hbm.add(0, kQueue1, kStreamBytes, 0, FlowDirection::write);
  const auto done = drain(hbm);
  // Both directions all along: 24 MB at 1.08 TB/s x (1 - 0.1) = 24.691 us.
  EXPECT_NEAR(static_cast<double>(done.at(0)), 2 * kStreamBytes / (kHbmRate * 0.9) * 1e12, 1.0);
  EXPECT_EQ(done.at(0), done.at(kQueue1));
}

TEST(HbmTurnaround, TheLossLastsOnlyWhileBothDirectionsAreServed) {
  BandwidthServer hbm(kHbmRate, 0.1);
  hbm.add(0, 0, kStreamBytes, 0, FlowDirection::read);
  hbm.add(0, kQueue1, 2 * kStreamBytes, 0, FlowDirection::write);
  const auto done = drain(hbm);
  // Mixed until the read ends (24 MB served at 0.9 x rate), then the rest of the write alone at the full rate.
  const double mixed = 2 * kStreamBytes / (kHbmRate * 0.9);
  EXPECT_NEAR(static_cast<double>(done.at(0)), mixed * 1e12, 1.0);
  EXPECT_NEAR(static_cast<double>(done.at(kQueue1)), (mixed + kStreamBytes / kHbmRate) * 1e12, 2.0);
}

TEST(HbmTurnaround, ACopyAloneReadsAndWritesSoItLosesTheTurnaroundFraction) {
  BandwidthServer hbm(kHbmRate, 0.1);
  hbm.add(0, 0, 2 * kStreamBytes, 0, FlowDirection::copy);  // 12 MB read and 12 MB written
  const auto done = drain(hbm);
  EXPECT_NEAR(static_cast<double>(done.at(0)), 2 * kStreamBytes / (kHbmRate * 0.9) * 1e12, 1.0);
}

}  // namespace
}  // namespace tpusim::models

namespace tpusim::models {
namespace {

// The tile-by-tile sum matmul_array_macs stands for.
double array_macs_by_tiles(const MxuSpec& mxu, MatmulShape s, int array) {
  const bool ws = mxu.dataflow == MxuDataflow::weight_stationary;
  const std::int64_t outer_len = ws ? s.k : s.m, inner_len = s.n, depth = ws ? s.m : s.k;
  const std::int64_t outer = ceil_div(outer_len, mxu.rows), inner = ceil_div(inner_len, mxu.cols);
  double macs = 0;
  for (std::int64_t t = array; t < outer * inner; t += mxu.per_core) {
    const std::int64_t rows = std::min<std::int64_t>(mxu.rows, outer_len - (t / inner) * mxu.rows);
    const std::int64_t cols = std::min<std::int64_t>(mxu.cols, inner_len - (t % inner) * mxu.cols);
    macs += static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(depth);
  }
  return macs;
}

TEST(ArrayMacs, ClosedFormEqualsTheTileByTileSumForEveryArrayAndEdge) {
  for (const MxuDataflow df : {MxuDataflow::weight_stationary, MxuDataflow::output_stationary}) {
    for (const int per_core : {1, 2, 3, 4}) {
      MxuSpec mxu{per_core, 128, 128, df, 1, 0, Seconds(0)};
      for (const MatmulShape s : {MatmulShape{100, 600, 300}, MatmulShape{128, 640, 128}, MatmulShape{7, 129, 257},
                                  MatmulShape{2048, 12288, 36864}, MatmulShape{1, 1, 1}, MatmulShape{300, 5, 1000},
                                  MatmulShape{64, 833, 200}, MatmulShape{833, 64, 200}}) {
        for (int a = 0; a < per_core; ++a) {
          EXPECT_EQ(matmul_array_macs(mxu, s, a), array_macs_by_tiles(mxu, s, a))
              << s.m << "x" << s.k << "x" << s.n << " array " << a << " of " << per_core;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tpusim::models
