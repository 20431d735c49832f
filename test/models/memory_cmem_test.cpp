// CMEM (v4): the GEMM lowering stages re-read weights in CMEM (kernels::lower_gemm), moving the re-reads from
// HBM to CMEM. One simulation per test process (the comparison run is forked).
#include <gtest/gtest.h>

#include "memory_test_support.h"
#include "test_chips.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::models {
namespace {

using memtest::simulate_in_child;
using memtest::single;
using testing::scenario_for;
using testing::v4_like;

constexpr std::int64_t kM = 16384, kK = 2048, kN = 2048;

// An HBM-bound v4-like chip: 200 GB/s of HBM against 275 TFLOP/s (ridge at 1375 FLOP/byte).
ChipSpec hbm_bound(bool with_cmem) {
  ChipSpec chip = v4_like();
  chip.hbm.bandwidth = BytesPerSecond(200e9);
  if (!with_cmem) chip.cmem = MemorySpec{Bytes(0), BytesPerSecond(0)};
  return chip;
}

ir::ProgramSet gemm_program(const ChipSpec& chip, bool* staged = nullptr) {
  ir::Program p("gemm");
  const kernels::GemmLowering g = kernels::lower_gemm(p, chip, kM, kK, kN, DType::bf16, {}, "gemm");
  if (staged != nullptr) *staged = g.weights_in_cmem;
  return single(std::move(p));
}

// B (2048 x 2048 bf16, 8 MiB) is re-read ceil(m / tm) times from HBM without CMEM; with CMEM it is read
// once, so HBM reads drop by exactly 8 MiB x (ceil(m / tm) - 1), and the HBM-bound GEMM gets faster.
TEST(CmemStaging, StagedWeightsMoveTheReReadsFromHbmToCmem) {
  const ChipSpec plain = hbm_bound(false), staged_chip = hbm_bound(true);
  const kernels::GemmTiling t = kernels::tile_gemm(staged_chip, kM, kK, kN, DType::bf16);
  const std::int64_t row_tiles = (kM + t.tm - 1) / t.tm;
  ASSERT_GT(row_tiles, 1) << "the test needs weight re-reads";
  bool staged_plain = true;
  const memtest::ChildResult without = simulate_in_child(scenario_for(plain), gemm_program(plain, &staged_plain));
  EXPECT_FALSE(staged_plain);
  ASSERT_GT(without.step_time, 0);

  bool staged = false;
  const SimResult r = simulate(scenario_for(staged_chip), gemm_program(staged_chip, &staged), {});
  EXPECT_TRUE(staged);
  const std::uint64_t weights = static_cast<std::uint64_t>(kK * kN * 2);
  EXPECT_EQ(without.hbm_read - r.traffic.hbm_read.count(), weights * static_cast<std::uint64_t>(row_tiles - 1));
  // Closed forms: A re-read ceil(n / tn) times, B read once.
  const auto col_tiles = static_cast<std::uint64_t>((kN + t.tn - 1) / t.tn);
  EXPECT_EQ(r.traffic.hbm_read.count(), static_cast<std::uint64_t>(kM * kK * 2) * col_tiles + weights);
  EXPECT_LT(r.step_time.value(), without.step_time);
  RecordProperty("speedup", std::to_string(without.step_time / r.step_time.value()));
}

}  // namespace
}  // namespace tpusim::models
