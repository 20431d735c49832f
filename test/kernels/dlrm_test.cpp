// The DLRM lowering: lookups on the SparseCores when the chip has them, on the TensorCores otherwise; FLOPs as
// dlrm_model_flops counts them; the VMEM contract held by dependencies.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "kernels_test_support.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/model_params.h"

namespace tpusim::kernels {
namespace {

using testing::v4_like;
using testing::worst_vmem_peak;

constexpr std::int64_t kBatch = 512;

WorkloadSpec dlrm(StepKind step) {
  WorkloadSpec w;
  w.model.name = "dlrm";
  w.model.kind = ModelKind::dlrm;
  DlrmModel& m = w.model.dlrm;
  m.dense_features = 13;
  m.bottom_mlp = {512, 256, 128};
  m.top_mlp = {1024, 1024, 512, 256, 1};
  m.tables = 26;
  m.rows_per_table = 1000;
  m.embedding_dim = 128;
  m.lookups_per_table = 2;
  w.batch = kBatch;
  w.step = step;
  w.optimizer = Optimizer::sgd;
  return w;
}

ChipSpec with_sparsecores() {
  ChipSpec chip = v4_like();
  chip.sparsecore = SparseCoreSpec{4, 16, 8};
  return chip;
}

struct Counts {
  int gathers = 0, scatters = 0;
  std::uint64_t gather_dma_bytes = 0;  // DMAs with the gather pattern
  double flops = 0;
};

Counts count(const ir::Program& p) {
  Counts c;
  for (const ir::Instruction& ins : p.instructions()) {
    c.gathers += ins.kind == ir::OpKind::gather ? 1 : 0;
    c.scatters += ins.kind == ir::OpKind::scatter ? 1 : 0;
    if (ins.kind == ir::OpKind::dma && ins.memory.pattern == ir::DmaPattern::gather) c.gather_dma_bytes += ins.bytes;
    c.flops += ins.flops.model;
  }
  return c;
}

TEST(Dlrm, ModelFlopsCountTheMlpsAndTheInteraction) {
  // Forward, per example: bottom 13x512 + 512x256 + 256x128 = 170,496; top (128 + 27 x 26 / 2 = 479 inputs)
  // 479x1024 + 1024x1024 + 1024x512 + 512x256 + 256x1 = 2,194,688; interaction 27^2 x 128 = 93,312 MACs.
  const double macs = 170496.0 + 2194688.0 + 93312.0;
  EXPECT_DOUBLE_EQ(dlrm_model_flops(dlrm(StepKind::forward).model.dlrm, kBatch, StepKind::forward),
                   2 * kBatch * macs);
  EXPECT_DOUBLE_EQ(dlrm_model_flops(dlrm(StepKind::train).model.dlrm, kBatch, StepKind::train),
                   6 * kBatch * macs - 2.0 * kBatch * 13 * 512);
}

// Its parameters: the tables, and the MLPs' weights and biases; the top MLP reads the bottom's 128 outputs and
// the 27 x 26 / 2 = 351 pairwise products of the 26 tables' and the bottom MLP's vectors.
TEST(Dlrm, ParametersAreTheTablesAndBothMlps) {
  const ModelSpec m = dlrm(StepKind::train).model;
  const double tables = 26.0 * 1000 * 128;
  const double bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128;
  const double top = 479 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 + 1;
  EXPECT_EQ(parameter_count(m), tables + bottom + top);
  EXPECT_EQ(active_matmul_parameters(m), bottom + top);
}

TEST(Dlrm, TheProgramCarriesExactlyTheModelFlops) {
  for (const StepKind step : {StepKind::forward, StepKind::train}) {
    const WorkloadSpec w = dlrm(step);
    for (const ChipSpec& chip : {v4_like(), with_sparsecores()}) {
      const ir::ProgramSet set = lower_workload(w, chip);
      ASSERT_EQ(set.programs.size(), 1u);
      const double want = dlrm_model_flops(w.model.dlrm, kBatch, step);
      EXPECT_NEAR(count(set.programs[0]).flops, want, 1e-9 * want);
      EXPECT_NEAR(set.programs[0].model_flops(), want, 1e-9 * want);
    }
  }
}

// With more feature vectors than the MXU has columns (200 tables: F = 201 > 128), an example's Z^T takes two
// weight tiles: the interaction's GEMM computes at least its useful MACs, so no instruction's FLOPs, scaled to
// them, exceed what it computes (2 m k n batch) and the program still carries exactly the model FLOPs.
TEST(Dlrm, AnInteractionWiderThanTheMxuTakesATileMorePerExample) {
  WorkloadSpec w = dlrm(StepKind::forward);
  w.model.dlrm.tables = 200;
  const ir::Program p = lower_workload(w, v4_like()).programs[0];
  for (const ir::Instruction& ins : p.instructions()) {
    if (ins.kind != ir::OpKind::matmul) continue;
    const double computes = 2.0 * static_cast<double>(ins.shape.m) * static_cast<double>(ins.shape.k) *
                            static_cast<double>(ins.shape.n) * ins.shape.batch;
    EXPECT_LE(ins.flops.hardware, computes * (1 + 1e-12)) << p.label_of(ins);
  }
  const double want = dlrm_model_flops(w.model.dlrm, kBatch, StepKind::forward);
  EXPECT_NEAR(p.model_flops(), want, 1e-9 * want);
}

TEST(Dlrm, WithSparseCoresEachTableIsOneGatherAndOneScatter) {
  ASSERT_TRUE(dlrm_lookups_on_sparsecore(with_sparsecores()));
  const ir::Program p = lower_workload(dlrm(StepKind::train), with_sparsecores()).programs[0];
  const Counts c = count(p);
  EXPECT_EQ(c.gathers, 26);
  EXPECT_EQ(c.scatters, 26);
  EXPECT_EQ(c.gather_dma_bytes, 0u);
  for (const ir::Instruction& ins : p.instructions()) {
    if (ins.kind != ir::OpKind::gather && ins.kind != ir::OpKind::scatter) continue;
    EXPECT_EQ(ins.shape.m, kBatch * 2);  // batch x lookups_per_table rows
    EXPECT_EQ(ins.shape.n, 128);
    EXPECT_EQ(ins.shape.k, kBatch);
    EXPECT_EQ(ins.bytes, static_cast<std::uint64_t>(kBatch * 2 * 128 * 2));
    if (ins.kind == ir::OpKind::gather) {
      EXPECT_EQ(ins.deps.count, 0u);  // the lookups overlap the bottom MLP
    }
  }
}

TEST(Dlrm, WithoutSparseCoresTheTensorCoresGatherEveryRowThroughVmem) {
  ASSERT_FALSE(dlrm_lookups_on_sparsecore(v4_like()));
  const ir::Program fwd = lower_workload(dlrm(StepKind::forward), v4_like()).programs[0];
  const std::uint64_t rows = static_cast<std::uint64_t>(kBatch) * 26 * 2 * 128 * 2;  // bytes of every row read
  Counts c = count(fwd);
  EXPECT_EQ(c.gathers + c.scatters, 0);
  EXPECT_EQ(c.gather_dma_bytes, rows);
  // Training also gathers the rows again to update them and scatters them back.
  c = count(lower_workload(dlrm(StepKind::train), v4_like()).programs[0]);
  EXPECT_EQ(c.gather_dma_bytes, 3 * rows);
}

TEST(Dlrm, SparseCoresThatReachNoHbmLeaveTheLookupsOnTheTensorCores) {
  ChipSpec chip = standard_composition(with_sparsecores());
  chip.composition.paths.erase(std::remove_if(chip.composition.paths.begin(), chip.composition.paths.end(),
                                  [](const ChipPath& p) { return p.from == "sparsecore"; }),
                   chip.composition.paths.end());
  EXPECT_FALSE(dlrm_lookups_on_sparsecore(chip));
}

TEST(Dlrm, EveryTensorCoreStaysWithinItsVmemWhateverTheTiming) {
  const ChipSpec chip = v4_like();
  const ir::Program p = lower_workload(dlrm(StepKind::train), chip).programs[0];
  EXPECT_LE(worst_vmem_peak(p), chip.vmem.capacity.count());
}

}  // namespace
}  // namespace tpusim::kernels
