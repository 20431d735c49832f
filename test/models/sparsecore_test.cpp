// The SparseCore block: embedding gathers and updates timed by the rows' HBM accesses and the tiles' adds,
// sharing HBM with the DMA engine. One simulation per test process.
#include <gtest/gtest.h>

#include "support/in_child.h"
#include "test_chips.h"
#include "tpusim/models/simulate.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using testing::dma;
using testing::scenario_for;
using testing::single;
using testing::v4_like;

using testing::kPicosecond;

// v4-like with v4's SparseCores (4 x 16 tiles x `lanes`) and one HBM channel (no striping caps).
ChipSpec with_sparsecores(int lanes) {
  ChipSpec chip = v4_like();
  chip.hbm.channels = 1;
  chip.sparsecore = SparseCoreSpec{4, 16, lanes};
  return chip;
}

ir::Instruction embedding(ir::OpKind kind, std::int64_t rows, std::int64_t width, std::int64_t bags, DType dtype) {
  ir::Instruction i;
  i.kind = kind;
  i.shape.m = rows;
  i.shape.n = width;
  i.shape.k = bags;
  i.dtype = dtype;
  i.memory.src = ir::Memory::hbm;
  i.memory.dst = ir::Memory::hbm;
  i.bytes = static_cast<std::uint64_t>(rows * width * dtype_bytes(dtype));
  return i;
}

TEST(SparseCore, RowsAreFetchedInWhole32ByteAccesses) {
  ir::Instruction g = embedding(ir::OpKind::gather, 1000, 100, 10, DType::f32);  // 400 B rows: 13 accesses
  EXPECT_EQ(embedding_row_volume(g), 1000.0 * 416);
  g = embedding(ir::OpKind::gather, 1000, 128, 10, DType::bf16);  // 256 B rows: no waste
  EXPECT_EQ(embedding_row_volume(g), 1000.0 * 256);
  EXPECT_EQ(sparsecore_pool_cycles(SparseCoreSpec{4, 16, 8}, g), 250);  // 128,000 adds / 512 per cycle
  EXPECT_EQ(sparsecore_pool_cycles(SparseCoreSpec{4, 16, 8}, embedding(ir::OpKind::gather, 1, 1, 1, DType::f32)), 1);
}

// 65536 rows of 64 f32 (256 B, 8 accesses) pooled into 2048 bags: 16 MiB read after hbm.latency; the 512 KiB
// of bags are written first (the read still waits out its latency: 0.44 us < 0.5 us).
constexpr std::int64_t kRows = 65536, kWidth = 64, kBags = 2048;

TEST(SparseCore, AGatherWithWideTilesIsBoundByItsHbmReads) {
  const ChipSpec chip = with_sparsecores(64);  // 4096 adds per cycle: the adds take 1024 cycles, under 1 us
  ir::Program p("gather");
  p.add(embedding(ir::OpKind::gather, kRows, kWidth, kBags, DType::f32), {}, "lookup");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 500e-9 + kRows * 256 / 1200e9, 2 * kPicosecond);
  EXPECT_EQ(r.traffic.hbm_read.count(), static_cast<std::uint64_t>(kRows * 256));
  EXPECT_EQ(r.traffic.hbm_written.count(), static_cast<std::uint64_t>(kBags * kWidth * 4));
  EXPECT_EQ(r.traffic.sparsecore_bytes.count(), static_cast<std::uint64_t>(kRows * 256));
  EXPECT_NEAR(r.unit(HwUnit::sparsecore).busy.value(), r.step_time.value(), kPicosecond);
  EXPECT_EQ(r.instructions_per_unit[static_cast<std::size_t>(ir::UnitKind::sparsecore)], 1u);
  EXPECT_NEAR(r.breakdown.compute.value(), r.step_time.value(), kPicosecond);  // a SparseCore at work is compute
}

TEST(SparseCore, AGatherOnFewTilesIsBoundByItsAdds) {
  // One SparseCore of one tile of 8 lanes: 65536 rows of 8 f32 (one 32-byte access each, 2 MiB: 2.25 us of
  // HBM) take 65536 x 8 / 8 = 65536 cycles of adds, 62.4 us.
  ChipSpec slow = with_sparsecores(8);
  slow.sparsecore = SparseCoreSpec{1, 1, 8};
  ir::Program p("gather");
  p.add(embedding(ir::OpKind::gather, kRows, 8, kBags, DType::f32), {}, "lookup");
  const SimResult r = simulate(scenario_for(slow), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), kRows / 1.05e9, 2 * kPicosecond);  // 65536 x 8 / 8 = 65536 cycles
}

TEST(SparseCore, AScatterReadsItsGradientsAndReadsAndWritesItsRows) {
  const ChipSpec chip = with_sparsecores(64);
  ir::Program p("scatter");
  p.add(embedding(ir::OpKind::scatter, kRows, kWidth, kBags, DType::f32), {}, "update");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  EXPECT_EQ(r.traffic.hbm_read.count(), static_cast<std::uint64_t>(kBags * kWidth * 4 + kRows * 256));
  EXPECT_EQ(r.traffic.hbm_written.count(), static_cast<std::uint64_t>(kRows * 256));
  // One engine, its transfers served in issue order: the posted row write-back runs alone while the reads
  // wait out hbm.latency, pauses while they run, then finishes. HBM is never idle, so the scatter takes
  // exactly (gradients + 2 x rows) / B.
  EXPECT_NEAR(r.step_time.value(), (kBags * kWidth * 4 + 2.0 * kRows * 256) / 1200e9, 2 * kPicosecond);
}

TEST(SparseCore, GathersShareHbmWithTheDmaEngine) {
  const ChipSpec chip = with_sparsecores(64);
  ir::Program p("both");
  p.add(embedding(ir::OpKind::gather, kRows, kWidth, 1, DType::f32), {}, "lookup");  // 256 B of bags
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kRows * 256), {}, "load");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  // Two engines with 16 MiB each split HBM from 0.5 us on: both end at 0.5 us + 32 MiB / B.
  EXPECT_NEAR(r.step_time.value(), 500e-9 + 2.0 * kRows * 256 / 1200e9, 4 * kPicosecond);
}

TEST(SparseCore, AGatherOnAChipWithoutSparseCoresFailsNamingTheInstruction) {
  ir::Program p("gather");
  p.add(embedding(ir::OpKind::gather, 16, 16, 1, DType::f32), {}, "lookup");
  try {
    (void)simulate(scenario_for(v4_like()), single(std::move(p)), {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.label(), "lookup");
    EXPECT_NE(std::string(e.what()).find("runs on a SparseCore, but chip v4-like has none"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tpusim::models
