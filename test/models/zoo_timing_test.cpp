// Whole-model programs under the unit timing models (no simulation): what the MXU makes of the shapes the
// lowering emits.
#include <cmath>

#include <gtest/gtest.h>

#include "test_chips.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

// Useful MACs over the MXU arrays' capacity while the instruction streams (its timing shape's cycles).
double mxu_utilization(const ChipSpec& chip, const ir::Instruction& ins) {
  const auto df = make_mxu_dataflow(chip.mxu.dataflow);
  const std::int64_t cycles = df->bf16_cycles(chip.mxu, matmul_timing_shape(chip.mxu, ins));
  return matmul_useful_macs(ins) / mxu_mac_capacity(chip.mxu, ins.dtype, cycles);
}

// What the padding allows: the useful share of each R x C tile (k/R x n/C, each product padded on its own),
// times the arrays' balance (T tiles dealt round-robin to A arrays: T/A over ceil(T/A)), times the share of
// the streaming in the busiest array's time (ceil(T/A) x m rows against one fill and drain, R + C + R - 2).
double padding_bound(const ChipSpec& chip, const ir::Instruction& ins) {
  const double r = chip.mxu.rows, c = chip.mxu.cols, arrays = chip.mxu.per_core;
  const double tiles = static_cast<double>(ins.shape.batch) * std::ceil(ins.shape.k / r) * std::ceil(ins.shape.n / c);
  const double per_array = std::ceil(tiles / arrays), m = static_cast<double>(ins.shape.m);
  const double padding =
      (ins.shape.k / (r * std::ceil(ins.shape.k / r))) * (ins.shape.n / (c * std::ceil(ins.shape.n / c)));
  return padding * (tiles / arrays / per_array) * (per_array * m / (per_array * m + r + c + r - 2));
}

ir::Program resnet50_forward(const ChipSpec& chip) {
  WorkloadSpec w;
  w.model = load_model("resnet-50");
  w.step = StepKind::forward;
  w.batch = 32;
  w.numerics.weight_dtype = DType::bf16;
  return kernels::lower(w, chip).programs.programs[0];
}

TEST(ResnetOnTheMxu, TheStemUsesThreeOfTheArraysRowsAndHalfItsColumns) {
  const ChipSpec chip = testing::v4_like();
  const ir::Program p = resnet50_forward(chip);
  int stems = 0;
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "stem.fwd.conv") continue;
    ++stems;
    // 49 taps of [positions x 3] x [3 x 64]: each tap fills 3 of 128 rows and 64 of 128 columns.
    EXPECT_EQ(ins.shape.k, 3);
    EXPECT_EQ(ins.shape.n, 64);
    EXPECT_EQ(ins.shape.batch, 49);
    EXPECT_TRUE(ins.shape.sum_batch);
    EXPECT_NEAR(mxu_utilization(chip, ins), padding_bound(chip, ins), 1e-12);
    // 3/128 x 64/128 = 1.17%, less 49 taps on 4 arrays (13 on the busiest): 1.10%.
    EXPECT_NEAR(mxu_utilization(chip, ins), 3.0 * 64 / (128 * 128) * (49.0 / 4) / 13, 1e-5);
  }
  EXPECT_EQ(stems, chip.tensorcores);  // split over the TensorCores by output rows
}

TEST(ResnetOnTheMxu, SixtyFourChannelLayersFillAQuarterOfTheArray) {
  const ChipSpec chip = testing::v4_like();
  const ir::Program p = resnet50_forward(chip);
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "stage1.block1.conv3.fwd.conv") continue;
    EXPECT_EQ(ins.shape.k, 64);
    EXPECT_EQ(ins.shape.n, 64);
    EXPECT_NEAR(mxu_utilization(chip, ins), padding_bound(chip, ins), 1e-12);
    EXPECT_NEAR(mxu_utilization(chip, ins), 0.25 * (9.0 / 4) / 3, 1e-3);  // 9 taps on 4 arrays
  }
  // A stage-4 1x1 convolution (512 -> 2048 channels) fills the array.
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "stage4.block1.expand.fwd.conv") continue;
    EXPECT_NEAR(mxu_utilization(chip, ins), padding_bound(chip, ins), 1e-12);
    EXPECT_GT(mxu_utilization(chip, ins), 0.97);  // 784 rows per tile against a 382-cycle fill and drain
  }
}

}  // namespace
}  // namespace tpusim::models
