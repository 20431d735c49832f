#include <map>

#include "kernels_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/lowering.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using testing::v4_like;
using testing::v5e_like;
using testing::worst_vmem_peak;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TEST(LowerGemm, A128CubeIsOneTileOfTwoLoadsOneMatmulOneStore) {
  ir::Program p;
  const GemmLowering g = lower_gemm(p, v4_like(), 128, 128, 128, DType::bf16, {}, "g");
  EXPECT_EQ(g.tiling.tm, 128);
  EXPECT_EQ(g.tiling.tk, 128);
  EXPECT_EQ(g.tiling.tn, 128);
  // Two 32 KiB bf16 operand tiles and a 64 KiB f32 accumulator.
  EXPECT_EQ(g.tiling.vmem_peak, 128u * 1024);
  ASSERT_EQ(p.size(), 4u);

  for (std::uint32_t i : {0u, 1u}) {
    EXPECT_EQ(p[i].kind, ir::OpKind::dma);
    EXPECT_EQ(p[i].memory.src, ir::Memory::hbm);
    EXPECT_EQ(p[i].memory.dst, ir::Memory::vmem);
    EXPECT_EQ(p[i].memory.pattern, ir::DmaPattern::contiguous);
    EXPECT_EQ(p[i].bytes, 32768u);
    EXPECT_EQ(p[i].vmem.alloc, 32768u);
    EXPECT_EQ(p[i].deps.count, 0u);
  }
  EXPECT_EQ(p.label_of(p[0]), "g.load_a");
  EXPECT_EQ(p.label_of(p[1]), "g.load_b");

  const ir::Instruction& mm = p[2];
  EXPECT_EQ(mm.kind, ir::OpKind::matmul);
  EXPECT_EQ(mm.shape.m, 128);
  EXPECT_EQ(mm.shape.k, 128);
  EXPECT_EQ(mm.shape.n, 128);
  EXPECT_EQ(mm.flops.model, 2.0 * 128 * 128 * 128);
  EXPECT_EQ(mm.flops.hardware, mm.flops.model);
  EXPECT_EQ(mm.vmem.alloc, 65536u);
  EXPECT_EQ(mm.vmem.free, 65536u);
  ASSERT_EQ(mm.deps.count, 2u);
  EXPECT_EQ(p.deps_of(mm)[0], 0u);
  EXPECT_EQ(p.deps_of(mm)[1], 1u);

  const ir::Instruction& out = p[3];
  EXPECT_EQ(out.kind, ir::OpKind::dma);
  EXPECT_EQ(out.memory.src, ir::Memory::vmem);
  EXPECT_EQ(out.memory.dst, ir::Memory::hbm);
  EXPECT_EQ(out.bytes, 32768u);  // C written back in bf16
  EXPECT_EQ(out.vmem.free, 65536u);
  ASSERT_EQ(out.deps.count, 1u);
  EXPECT_EQ(p.deps_of(out)[0], 2u);

  EXPECT_EQ(g.done, std::vector<std::uint32_t>{3});
  EXPECT_EQ(p.dma_bytes(), 3u * 32768);
  EXPECT_EQ(worst_vmem_peak(p), 128u * 1024);
}

TEST(LowerGemm, FirstLoadsDependOnAfter) {
  ir::Program p;
  ir::Instruction barrier;
  const std::uint32_t before = p.add(barrier, {}, "before");
  (void)lower_gemm(p, v4_like(), 128, 128, 128, DType::bf16, {before}, "g");
  EXPECT_EQ(p[1].deps.count, 1u);
  EXPECT_EQ(p.deps_of(p[1])[0], before);
  EXPECT_EQ(p.deps_of(p[2])[0], before);
}

TEST(LowerGemm, OddShapeFlopsAreExactlyTwoMkn) {
  for (const ChipSpec& chip : {v4_like(), v5e_like()}) {
    ir::Program p;
    (void)lower_gemm(p, chip, 129, 129, 129, DType::bf16, {}, "g");
    EXPECT_EQ(p.model_flops(), 2.0 * 129 * 129 * 129) << chip.name;
    EXPECT_EQ(p.hardware_flops(), 2.0 * 129 * 129 * 129) << chip.name;
  }
  ir::Program p;
  (void)lower_gemm(p, v4_like(), 1000, 3001, 517, DType::f32, {}, "g");
  EXPECT_EQ(p.model_flops(), 2.0 * 1000 * 3001 * 517);
}

TEST(LowerGemm, TilesAreMxuMultiplesOrTheWholeDimension) {
  const ChipSpec chip = v4_like();
  for (auto [m, k, n] : {std::tuple{129, 129, 129}, {4096, 4096, 4096}, {8192, 1024, 300}, {100, 20000, 50}}) {
    const GemmTiling t = tile_gemm(chip, m, k, n, DType::bf16);
    EXPECT_TRUE(t.tm % 128 == 0 || t.tm == m) << t.tm;
    EXPECT_TRUE(t.tk % 128 == 0 || t.tk == k) << t.tk;
    EXPECT_TRUE(t.tn % 128 == 0 || t.tn == n) << t.tn;
    EXPECT_LE(t.tm, m);
    EXPECT_LE(t.tk, k);
    EXPECT_LE(t.tn, n);
  }
}

TEST(LowerGemm, Cube4096OnV4UsesMegabyteTilesAndMovesTheClosedFormBytes) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const GemmLowering g = lower_gemm(p, chip, 4096, 4096, 4096, DType::bf16, {}, "g");
  // 64 C tiles of 512x512, 32 per core; double-buffered 512x1024 + 1024x512 bf16 operand tiles (4 MiB) and
  // two 1 MiB f32 accumulators (6 MiB). Smaller C tiles than 1024x1024: the first loads and the last
  // write-back, which nothing hides, are shorter, while HBM (8 + 8 re-reads, 475 us) stays below the MXU
  // time (499 us).
  EXPECT_EQ(g.tiling.tm, 512);
  EXPECT_EQ(g.tiling.tk, 1024);
  EXPECT_EQ(g.tiling.tn, 512);
  EXPECT_EQ(g.tiling.buffers, 2);
  EXPECT_EQ(g.tiling.vmem_peak, 6u << 20);
  // A read n/tn = 8 times, B m/tm = 8 times, C written once: 2 B x 4096^2 x (8 + 8 + 1).
  const std::uint64_t s = 4096ull * 4096;
  EXPECT_EQ(p.dma_bytes(), 2 * s * (8 + 8 + 1));
  EXPECT_EQ(g.done.size(), 64u);
  EXPECT_EQ(p.size(), 64u * 4 * 3 + 64);
}

TEST(LowerGemm, HbmBytesFollowTheReReadClosedForm) {
  for (const ChipSpec& chip : {v4_like(), v5e_like()}) {
    for (auto [m, k, n] : {std::tuple{4096, 4096, 4096}, {1000, 3001, 517}, {129, 129, 129}}) {
      ir::Program p;
      const GemmLowering g = lower_gemm(p, chip, m, k, n, DType::bf16, {}, "g");
      const std::uint64_t expect = 2ull * (static_cast<std::uint64_t>(m) * k * ceil_div(n, g.tiling.tn) +
                                           static_cast<std::uint64_t>(k) * n * ceil_div(m, g.tiling.tm) +
                                           static_cast<std::uint64_t>(m) * n);
      EXPECT_EQ(p.dma_bytes(), expect) << chip.name << " " << m << "x" << k << "x" << n;
    }
  }
}

TEST(LowerGemm, F32WeightsCastAsTheyLoadAreTiledForTheirOwnBytes) {
  // A bf16 matmul of 2048 tokens against 2048 x 6144 weights kept in f32 (master weights a fused matmul casts
  // as it loads them): each re-read of B costs twice the bytes a bf16 B would, so the tiling re-reads B fewer
  // times than the all-bf16 one (512 -> 1024 rows per C tile), and its VMEM bound counts B's tiles at 4 B.
  const ChipSpec chip = v4_like();
  const std::int64_t m = 2048, k = 2048, n = 6144;
  const GemmTiling bf16 = tile_gemm(chip, m, k, n, DType::bf16);
  const GemmTiling f32_b = tile_gemm(chip, m, k, n, DType::bf16, OperandBytes{0, 4});
  auto hbm = [&](const GemmTiling& t) {  // with B at 4 B per element
    return 2.0 * m * k * ceil_div(n, t.tn) + 4.0 * k * n * ceil_div(m, t.tm) + 2.0 * m * n;
  };
  EXPECT_LT(hbm(f32_b), hbm(bf16));
  EXPECT_GT(f32_b.tm, bf16.tm);
  const std::int64_t steps = ceil_div(ceil_div(m, f32_b.tm) * ceil_div(n, f32_b.tn), chip.tensorcores) *
                             ceil_div(k, f32_b.tk);
  const std::int64_t tiles = ceil_div(ceil_div(m, f32_b.tm) * ceil_div(n, f32_b.tn), chip.tensorcores);
  EXPECT_EQ(f32_b.vmem_peak, static_cast<std::uint64_t>(std::min<std::int64_t>(f32_b.buffers, steps) *
                                                            (f32_b.tm * f32_b.tk * 2 + f32_b.tk * f32_b.tn * 4) +
                                                        std::min<std::int64_t>(2, tiles) * f32_b.tm * f32_b.tn * 4));
  // Operands given at their dtype's bytes choose exactly the dtype's tiling.
  const GemmTiling same = tile_gemm(chip, m, k, n, DType::bf16, OperandBytes{2, 2});
  EXPECT_EQ(std::tie(same.tm, same.tk, same.tn, same.buffers), std::tie(bf16.tm, bf16.tk, bf16.tn, bf16.buffers));
}

TEST(LowerGemm, ABatchOfProductsIsRankedAsOneKernelAndTakesWholeProductsPerStep) {
  // BERT-Large's attention scores: 512 products (16 heads x 32 sequences) of 512 x 64 x 512. Alone, one product
  // is short enough that its exposed first loads and last store dominate, so smaller tiles win (128 x 64 x 256: 8
  // steps). Ranked as the batch the simulation runs as one kernel, those are exposed once and every step of every
  // product pays the step overhead: one whole product per step.
  const ChipSpec chip = v4_like();
  const GemmTiling alone = tile_gemm(chip, 512, 64, 512, DType::bf16);
  const GemmTiling batch = tile_gemm(chip, 512, 64, 512, DType::bf16, {}, 512);
  EXPECT_EQ(alone.tm, 128);
  EXPECT_EQ(alone.tk, 64);
  EXPECT_EQ(alone.tn, 256);
  EXPECT_EQ(batch.tm, 512);
  EXPECT_EQ(batch.tk, 64);
  EXPECT_EQ(batch.tn, 512);
  // No pipeline bound for a batch: the fewest buffers win the tie.
  EXPECT_EQ(batch.buffers, 2);
  EXPECT_THROW((void)tile_gemm(chip, 512, 64, 512, DType::bf16, {}, 0), std::invalid_argument);
}

TEST(LowerGemm, VmemStaysWithinItsBoundAndCapacityOnEveryChip) {
  for (const ChipSpec& chip : {v4_like(), v5e_like()}) {
    for (auto [m, k, n] : {std::tuple{4096, 4096, 4096}, {129, 129, 129}, {8192, 512, 8192}, {64, 65536, 64}}) {
      ir::Program p;
      const GemmLowering g = lower_gemm(p, chip, m, k, n, DType::bf16, {}, "g");
      EXPECT_LE(g.tiling.vmem_peak, chip.vmem.capacity.count() * 3 / 4) << chip.name;
      EXPECT_LE(worst_vmem_peak(p), g.tiling.vmem_peak) << chip.name << " " << m << "x" << k << "x" << n;
      std::map<int, std::int64_t> balance;
      for (const auto& ins : p.instructions()) {
        balance[ins.core] += static_cast<std::int64_t>(ins.vmem.alloc) - static_cast<std::int64_t>(ins.vmem.free);
      }
      for (const auto& [core, b] : balance) EXPECT_EQ(b, 0) << "core " << core;
    }
  }
}

TEST(LowerGemm, EveryMatmulDependsOnItsOperandLoadsAndThePreviousMatmulOfItsCore) {
  const ChipSpec chip = v4_like();
  ir::Program p;
  const GemmTiling t = lower_gemm(p, chip, 3000, 2000, 1500, DType::bf16, {}, "g").tiling;
  std::map<int, std::int64_t> last_matmul;
  int matmuls = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const ir::Instruction& ins = p[i];
    const std::uint32_t* deps = p.deps_of(ins);
    if (ins.kind == ir::OpKind::matmul) {
      ++matmuls;
      bool a = false, b = false, prev = !last_matmul.count(ins.core);
      for (std::uint32_t d = 0; d < ins.deps.count; ++d) {
        const ir::Instruction& dep = p[deps[d]];
        const bool load = dep.kind == ir::OpKind::dma && dep.memory.dst == ir::Memory::vmem && dep.core == ins.core;
        a = a || (load && dep.bytes == static_cast<std::uint64_t>(ins.shape.m * ins.shape.k) * 2);
        b = b || (load && dep.bytes == static_cast<std::uint64_t>(ins.shape.k * ins.shape.n) * 2);
        prev = prev || static_cast<std::int64_t>(deps[d]) == last_matmul[ins.core];
      }
      EXPECT_TRUE(a && b && prev) << "matmul " << i;
      last_matmul[ins.core] = static_cast<std::int64_t>(i);
    } else if (ins.memory.src == ir::Memory::vmem) {
      ASSERT_EQ(ins.deps.count, 1u);
      EXPECT_EQ(p[deps[0]].kind, ir::OpKind::matmul);
      EXPECT_EQ(p[deps[0]].core, ins.core);
    }
  }
  EXPECT_EQ(matmuls, ceil_div(3000, t.tm) * ceil_div(2000, t.tk) * ceil_div(1500, t.tn));
}

TEST(LowerGemm, CTilesAreSplitEvenlyAcrossTensorCores) {
  ir::Program p;
  (void)lower_gemm(p, v4_like(), 4096, 4096, 4096, DType::bf16, {}, "g");
  double flops[2] = {0, 0};
  for (const auto& ins : p.instructions()) flops[ins.core] += ins.flops.model;
  EXPECT_EQ(flops[0], flops[1]);
  EXPECT_EQ(p.cores_used(), 2);
}

TEST(LowerGemm, VmemTooSmallForOneTileIsAConfigErrorNamingTheCapacity) {
  ChipSpec chip = v4_like();
  chip.vmem.capacity = KiB(64);
  try {
    (void)tile_gemm(chip, 1024, 1024, 1024, DType::bf16);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].key_path, "chip.vmem.capacity");
    EXPECT_EQ(e.diagnostics()[0].found, "64 KiB");
  }
}

// XLA's scoped VMEM limit (chip.vmem.scoped_limit) caps a GEMM's tiles below its 75% share of VMEM. On a
// v5e-like core (128 MiB) an 8192^3 GEMM without the limit takes 16 MiB of tiles; under an 8 MiB limit its
// tiling stays within 8 MiB, and its HBM traffic (the re-read closed form) grows, since smaller
// C tiles re-read A and B more often.
TEST(LowerGemm, TheScopedVmemLimitCapsTheTilesAndRaisesTheReReads) {
  ChipSpec chip = v5e_like();
  ir::Program free_p;
  const GemmLowering free_g = lower_gemm(free_p, chip, 8192, 8192, 8192, DType::bf16, {}, "g");
  EXPECT_EQ(free_g.tiling.vmem_peak, 16u << 20);
  chip.vmem.scoped_limit = MiB(8);
  ir::Program p;
  const GemmLowering g = lower_gemm(p, chip, 8192, 8192, 8192, DType::bf16, {}, "g");
  EXPECT_LE(g.tiling.vmem_peak, 8u << 20);
  EXPECT_LE(worst_vmem_peak(p), 8u << 20);
  const auto re_read = [](const GemmTiling& t) {
    const std::uint64_t s = 8192ull * 8192;
    return 2 * s * (ceil_div(8192, t.tn) + ceil_div(8192, t.tm) + 1);
  };
  EXPECT_EQ(p.dma_bytes(), re_read(g.tiling));
  EXPECT_EQ(free_p.dma_bytes(), re_read(free_g.tiling));
  EXPECT_GT(p.dma_bytes(), free_p.dma_bytes());
  // A limit above the 75% share does not bind: the tiling is the unlimited one.
  chip.vmem.scoped_limit = MiB(128);
  EXPECT_EQ(tile_gemm(chip, 8192, 8192, 8192, DType::bf16).vmem_peak, free_g.tiling.vmem_peak);
}

TEST(LowerGemm, AScopedLimitTooSmallForOneTileIsAConfigErrorNamingTheLimit) {
  ChipSpec chip = v4_like();
  chip.vmem.scoped_limit = KiB(64);
  try {
    (void)tile_gemm(chip, 1024, 1024, 1024, DType::bf16);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].key_path, "chip.vmem.scoped_limit");
    EXPECT_EQ(e.diagnostics()[0].found, "64 KiB");
    // The smallest tiling: 128 x 128 bf16 A and B tiles double-buffered (8 k steps; 128 KiB) and two 128 x 128
    // f32 accumulators (128 KiB).
    EXPECT_EQ(e.diagnostics()[0].expected, "at least 256 KiB");
  }
}

}  // namespace
}  // namespace tpusim::kernels

namespace tpusim::kernels {
namespace {

ChipSpec v4_with_cmem(Bytes capacity) {
  ChipSpec chip = testing::v4_like();
  chip.cmem = MemorySpec{capacity, BytesPerSecond(2400e9)};
  return chip;
}

std::uint64_t bytes_between(const ir::Program& p, ir::Memory src, ir::Memory dst, std::size_t* count = nullptr) {
  std::uint64_t b = 0;
  std::size_t n = 0;
  for (const ir::Instruction& ins : p.instructions()) {
    if (ins.kind == ir::OpKind::dma && ins.memory.src == src && ins.memory.dst == dst) {
      b += ins.bytes;
      ++n;
    }
  }
  if (count != nullptr) *count = n;
  return b;
}

// 4096^3 on a v4-like chip with 128 MiB of CMEM: the tiling is the one without CMEM (512 x 1024 x 512), B
// (32 MiB) fits and is re-read 8 times, so each of its 4 x 8 tiles is staged HBM -> CMEM once and every one
// of the 64 x 4 B loads reads CMEM. HBM reads: A 8 times + B once = 2 B x 4096^2 x 9.
TEST(LowerGemm, ReReadWeightsAreStagedInCmemOnceAndLoadedFromThere) {
  const ChipSpec chip = v4_with_cmem(MiB(128));
  ir::Program p;
  const GemmLowering g = lower_gemm(p, chip, 4096, 4096, 4096, DType::bf16, {}, "g");
  EXPECT_TRUE(g.weights_in_cmem);
  EXPECT_EQ(g.tiling.tm, 512);
  const std::uint64_t s = 4096ull * 4096;
  std::size_t stages = 0, cmem_loads = 0;
  EXPECT_EQ(bytes_between(p, ir::Memory::hbm, ir::Memory::cmem, &stages), 2 * s);
  EXPECT_EQ(stages, 4u * 8);
  EXPECT_EQ(bytes_between(p, ir::Memory::cmem, ir::Memory::vmem, &cmem_loads), 2 * s * 8);
  EXPECT_EQ(cmem_loads, 64u * 4);
  EXPECT_EQ(bytes_between(p, ir::Memory::hbm, ir::Memory::vmem), 2 * s * 8);  // A only
  // Every CMEM load depends on the stage of its tile, which comes first in the program.
  for (std::size_t i = 0; i < p.size(); ++i) {
    const ir::Instruction& ins = p[i];
    if (ins.kind != ir::OpKind::dma || ins.memory.src != ir::Memory::cmem) continue;
    bool staged = false;
    for (std::uint32_t d = 0; d < ins.deps.count; ++d) {
      const ir::Instruction& dep = p[p.deps_of(ins)[d]];
      staged = staged || (dep.kind == ir::OpKind::dma && dep.memory.dst == ir::Memory::cmem && dep.bytes == ins.bytes);
    }
    EXPECT_TRUE(staged) << "instruction " << i;
  }
}

TEST(LowerGemm, WeightsAreNotStagedWhenTheyDoNotFitOrAreReadOnce) {
  ir::Program big;
  EXPECT_FALSE(lower_gemm(big, v4_with_cmem(MiB(16)), 4096, 4096, 4096, DType::bf16, {}, "g").weights_in_cmem);
  ir::Program once;  // m = 8: one row of C tiles reads B once
  EXPECT_FALSE(lower_gemm(once, v4_with_cmem(MiB(128)), 8, 4096, 4096, DType::bf16, {}, "g").weights_in_cmem);
  ir::Program none;
  EXPECT_FALSE(lower_gemm(none, testing::v4_like(), 4096, 4096, 4096, DType::bf16, {}, "g").weights_in_cmem);
  EXPECT_TRUE(weights_fit_cmem(v4_with_cmem(MiB(32)), 4096, 4096, DType::bf16));
  EXPECT_FALSE(weights_fit_cmem(v4_with_cmem(MiB(32)), 4096, 4097, DType::bf16));
}

}  // namespace
}  // namespace tpusim::kernels
