// The lowering estimate counts exactly what lower_workload emits, so resource guards refuse on real numbers.
#include <gtest/gtest.h>

#include "kernels_test_support.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/estimate.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {
namespace {

using testing::mlp;

using testing::v4_like;
using testing::v5e_like;

WorkloadSpec gemm(std::int64_t m, std::int64_t k, std::int64_t n) {
  WorkloadSpec w;
  w.model.kind = ModelKind::gemm;
  w.model.gemm = {m, k, n};
  return w;
}


double lowered(const WorkloadSpec& w, const ChipSpec& chip) {
  double n = 0;
  for (const auto& p : lower_workload(w, chip).programs) n += static_cast<double>(p.size());
  return n;
}

TEST(LoweringEstimate, CountsEveryInstructionOfGemmsOfEveryShape) {
  ChipSpec with_cmem = v4_like();
  with_cmem.cmem = MemorySpec{MiB(128), BytesPerSecond(1e12)};  // B staged in CMEM: one stage per B tile
  for (const ChipSpec& chip : {v4_like(), v5e_like(), with_cmem}) {
    for (auto [m, k, n] : {std::tuple{8, 4096, 4096}, {4096, 4096, 4096}, {1000, 333, 77}, {1, 1, 1},
                           {8192, 256, 8192}}) {
      const WorkloadSpec w = gemm(m, k, n);
      EXPECT_EQ(estimate_lowering(w, chip).instructions, lowered(w, chip)) << chip.name << " " << m << "x" << k << "x" << n;
    }
  }
}

TEST(LoweringEstimate, CountsEveryInstructionOfMlpStepsWithHostWork) {
  for (const ChipSpec& chip : {v4_like(), v5e_like()}) {
    for (StepKind step : {StepKind::forward, StepKind::train}) {
      for (Optimizer opt : {Optimizer::sgd, Optimizer::adam}) {
        WorkloadSpec w = mlp({512, 2048, 1000, 512}, 96, step, opt);
        EXPECT_EQ(estimate_lowering(w, chip).instructions, lowered(w, chip));
        w.host.step_launch_overhead = Seconds(1e-5);
        w.host.input.bytes_per_example = Bytes(4096);
        w.host.host_syncs = 2;
        w.host.checkpoint.every_steps = 10;
        w.model.mlp.activation = Activation::relu;
        EXPECT_EQ(estimate_lowering(w, chip).instructions, lowered(w, chip));
      }
    }
  }
}

TEST(LoweringEstimate, AGemmTooBigForAnyMachineIsCountedWithoutLoweringIt) {
  // 2^31 cubed on a v4: tiles of at most 16 MiB x 0.75 of VMEM, so more than (2^31 / 4096)^3 = 1.4e17 steps of
  // three instructions each; counted without lowering (which would need exabytes).
  const double n = estimate_lowering(gemm(kMaxDimension, kMaxDimension, kMaxDimension), v4_like()).instructions;
  EXPECT_GT(n, 3 * 1.4e17);
  // One tile: load A, load B, the matmul, store C.
  EXPECT_EQ(estimate_lowering(gemm(8, 8, 8), v4_like()).bytes(), 4 * kBytesPerInstruction);
}

}  // namespace
}  // namespace tpusim::kernels

namespace tpusim::kernels {
namespace {

// Whole models and DLRM are estimated by an upper bound: never below the real lowering (the guard must not
// let a bigger run through), and within a factor of it (it must not refuse runs that would fit).
TEST(LoweringEstimate, BoundsWholeModelsAndDlrmFromAbove) {
  struct Case {
    const char* scenario;
    std::vector<std::string> overrides;
  };
  const std::vector<Case> cases{
      {"gpt3-1.3b-train-v4", {}},
      {"gpt3-1.3b-train-v4",
       {"workload.fusion=off", "workload.remat=full", "workload.attention=unfused", "workload.microbatches=4"}},
      {"bert-large-train-v4", {"workload.remat=selective"}},
      {"llama2-7b-decode-v5e", {}},
      {"llama2-7b-prefill-v5e", {}},
      {"llama2-7b-prefill-v5e", {"workload.fusion=off", "workload.attention=unfused", "workload.batch=1"}},
      {"moe-layer-v5p", {"workload.fusion=off"}},
      {"resnet50-train-v3", {"workload.fusion=off"}},
      {"gpt3-1.3b-fsdp-tensor-v4-2x2x1", {}},
      {"resnet50-dp-v4", {}},
      {"dlrm-v4", {}},
      {"dlrm-v4-no-sparsecore", {}},
      {"whatif-v5e-sparsecore", {}},
  };
  for (const Case& c : cases) {
    const Scenario s = load_scenario(c.scenario, c.overrides);
    double real = 0;
    for (const auto& p : lower(s.workload, s.chip, s.pod).programs.programs) real += static_cast<double>(p.size());
    const double estimate = estimate_lowering(s.workload, s.chip).instructions;
    EXPECT_GE(estimate, real) << c.scenario;
    EXPECT_LE(estimate, 12 * real) << c.scenario;
  }
}

}  // namespace
}  // namespace tpusim::kernels
