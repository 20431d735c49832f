#include <cmath>
#include <sstream>
#include <string>

#include "kernels_test_support.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program_io.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using testing::mlp;

using testing::v4_like;
using testing::v5e_like;
using testing::worst_vmem_peak;


bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Sums over the instructions whose label starts with `prefix`.
struct Totals {
  int count = 0, matmuls = 0, vectors = 0;
  std::int64_t elements = 0;
  std::uint64_t dma_bytes = 0;
  double flops = 0;
};
Totals totals(const ir::Program& p, const std::string& prefix) {
  Totals t;
  for (const auto& ins : p.instructions()) {
    if (!starts_with(p.label_of(ins), prefix)) continue;
    ++t.count;
    t.matmuls += ins.kind == ir::OpKind::matmul;
    t.vectors += ins.kind == ir::OpKind::vector;
    if (ins.kind == ir::OpKind::vector) t.elements += ins.vector.elements;
    if (ins.kind == ir::OpKind::dma) t.dma_bytes += ins.bytes;
    t.flops += ins.flops.model;
  }
  return t;
}

std::vector<std::uint32_t> with_prefix(const ir::Program& p, const std::string& prefix) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (starts_with(p.label_of(p[i]), prefix)) out.push_back(i);
  }
  return out;
}

// True when instruction `later` transitively depends on `earlier`.
bool depends_on(const ir::Program& p, std::uint32_t later, std::uint32_t earlier) {
  std::vector<bool> seen(p.size());
  std::vector<std::uint32_t> stack{later};
  while (!stack.empty()) {
    const std::uint32_t i = stack.back();
    stack.pop_back();
    if (i == earlier) return true;
    if (seen[i] || i < earlier) continue;
    seen[i] = true;
    for (std::uint32_t d = 0; d < p[i].deps.count; ++d) stack.push_back(p.deps_of(p[i])[d]);
  }
  return false;
}

// Every instruction labelled `later` depends on every instruction labelled `earlier`.
void expect_ordered(const ir::Program& p, const std::string& later, const std::string& earlier) {
  const auto a = with_prefix(p, later), b = with_prefix(p, earlier);
  ASSERT_FALSE(a.empty()) << later;
  ASSERT_FALSE(b.empty()) << earlier;
  // Checking the first instruction of `later` (all others follow it) against the stores of `earlier`
  // suffices: each stage's stores are its final instructions.
  for (std::uint32_t e : b) {
    if (p[e].kind == ir::OpKind::dma && p[e].memory.src == ir::Memory::vmem) {
      EXPECT_TRUE(depends_on(p, a.front(), e)) << later << " does not wait for " << earlier << " #" << e;
    }
  }
}

TEST(LowerWorkload, GemmModelIsOneLowerGemmInOneProgramForEveryChip) {
  WorkloadSpec w;
  w.model.kind = ModelKind::gemm;
  w.model.gemm = GemmModel{4096, 4096, 4096};
  const ir::ProgramSet set = lower_workload(w, v4_like());
  ASSERT_EQ(set.programs.size(), 1u);
  EXPECT_TRUE(set.role_of_chip.empty());
  ir::Program direct;
  (void)lower_gemm(direct, v4_like(), 4096, 4096, 4096, DType::bf16, {}, "gemm");
  EXPECT_EQ(set.programs[0].size(), direct.size());
  EXPECT_EQ(set.programs[0].model_flops(), 2.0 * 4096 * 4096 * 4096);
  EXPECT_EQ(set.programs[0].dma_bytes(), direct.dma_bytes());
}

// A GEMM, an MLP or a DLRM has no memory plan, but every chip holds what it computes on: a GEMM's A, B and C,
// an MLP's state, gradients and widest activation. One byte over the chip's HBM is refused as a whole model's
// plan is ("does not fit in HBM", which a study reports as a result); exactly the chip's HBM runs.
TEST(LowerWorkload, AGemmOrMlpAboveTheChipsHbmDoesNotFit) {
  WorkloadSpec gemm;
  gemm.model.kind = ModelKind::gemm;
  gemm.model.gemm = GemmModel{1024, 512, 256};
  const std::uint64_t abc = (1024 * 512 + 512 * 256 + 1024 * 256) * 2;  // bf16
  ChipSpec chip = v4_like();
  chip.hbm.capacity = Bytes(abc);
  EXPECT_NO_THROW((void)lower(gemm, chip));
  chip.hbm.capacity = Bytes(abc - 1);
  try {
    (void)lower(gemm, chip);
    ADD_FAILURE() << "A, B and C fit one byte less";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("does not fit in HBM: at least"), std::string::npos)
        << e.diagnostics().at(0).message;
  }
  // An MLP trained with adam: bf16 parameters and gradients, two f32 moments, the widest activation.
  const WorkloadSpec train = mlp({512, 1024, 256}, 64, StepKind::train);
  const std::uint64_t params = 512 * 1024 + 1024 * 256;
  const std::uint64_t need = params * (2 + 8) + params * 2 + 64 * 1024 * 2;
  chip.hbm.capacity = Bytes(need);
  EXPECT_NO_THROW((void)lower(train, chip));
  chip.hbm.capacity = Bytes(need - 1);
  EXPECT_THROW((void)lower(train, chip), ConfigError);
}

// Every chip runs an MLP's whole one-chip step: a pod of 4 does 4 x its examples, as it does 4 x its FLOPs.
TEST(LowerWorkload, AnMlpOnAPodCountsEveryChipsExamples) {
  PodSpec pod;
  pod.shape = {2, 2};
  const WorkloadSpec w = mlp({512, 1024, 256}, 64, StepKind::train);
  EXPECT_EQ(lower(w, v4_like()).work.examples, 64);
  EXPECT_EQ(lower(w, v4_like(), pod).work.examples, 4 * 64);
}

TEST(LowerWorkload, MlpForwardIsOneGemmPerLayerAndActivationsBetweenThem) {
  const ir::ProgramSet set = lower_workload(mlp({512, 1024, 256}, 64, StepKind::forward), v4_like());
  const ir::Program& p = set.programs[0];
  EXPECT_EQ(p.model_flops(), 2.0 * 64 * (512 * 1024 + 1024 * 256));
  const Totals act = totals(p, "layer1.act");
  EXPECT_EQ(act.elements, 64 * 1024);
  EXPECT_EQ(act.dma_bytes, 2u * 64 * 1024 * 2);  // read Z, write X, bf16
  EXPECT_EQ(totals(p, "layer2.act").count, 0);   // no activation after the last layer
  for (const auto& ins : p.instructions()) {
    if (ins.kind == ir::OpKind::vector) {
      EXPECT_EQ(ins.vector.op, ir::VectorOp::transcendental);
    }
  }
  expect_ordered(p, "layer1.act", "layer1.fwd");
  expect_ordered(p, "layer2.fwd", "layer1.act");
}

TEST(LowerWorkload, ReluIsElementwise) {
  const ir::Program p =
      lower_workload(mlp({256, 256, 256}, 32, StepKind::train, Optimizer::sgd, Activation::relu), v4_like()).programs[0];
  for (const auto& ins : p.instructions()) {
    if (ins.kind == ir::OpKind::vector) {
      EXPECT_EQ(ins.vector.op, ir::VectorOp::elementwise);
    }
  }
}

TEST(LowerWorkload, MlpTrainingFlopsAreSixBSumMinusTheSkippedFirstLayerDx) {
  const std::int64_t b = 256;
  const std::vector<int> w{784, 1024, 512, 10};
  const ir::Program p = lower_workload(mlp(w, b, StepKind::train), v4_like()).programs[0];
  const double sum = 784.0 * 1024 + 1024.0 * 512 + 512.0 * 10;
  EXPECT_EQ(p.model_flops(), 6.0 * b * sum - 2.0 * b * 784 * 1024);
  EXPECT_EQ(p.hardware_flops(), p.model_flops());
  EXPECT_EQ(totals(p, "layer3.bwd.dw").flops, 2.0 * b * 512 * 10);
  EXPECT_EQ(totals(p, "layer3.bwd.dx").flops, 2.0 * b * 512 * 10);
  EXPECT_EQ(totals(p, "layer1.bwd.dx").count, 0);
  // Activation gradients for the two hidden layers: read dX and Z, write dZ.
  EXPECT_EQ(totals(p, "layer2.bwd.act").dma_bytes, 3u * b * 512 * 2);
  EXPECT_EQ(totals(p, "layer1.bwd.act").elements, b * 1024);
  EXPECT_EQ(totals(p, "layer3.bwd.act").count, 0);
}

TEST(LowerWorkload, AdamReadsParamsGradsAndTwoF32MomentsAndWritesThreeBack) {
  const ir::Program p = lower_workload(mlp({512, 1024, 256}, 64, StepKind::train), v4_like()).programs[0];
  for (auto [layer, params] : {std::pair{1, 512 * 1024}, {2, 1024 * 256}}) {
    const Totals u = totals(p, "layer" + std::to_string(layer) + ".update");
    EXPECT_EQ(u.elements, 10 * params);
    EXPECT_EQ(u.dma_bytes, static_cast<std::uint64_t>(params) * ((2 + 2 + 4 + 4) + (2 + 4 + 4)));
    EXPECT_EQ(u.flops, 0);
  }
}

// A vector op declares the VMEM operand bytes it reads and writes (the models bound it by vmem.bandwidth):
// its chunk's inputs and outputs, the same bytes its loads and stores move; they survive the program file.
TEST(LowerWorkload, VectorOpsDeclareTheirVmemOperandBytes) {
  const ir::ProgramSet set = lower_workload(mlp({512, 1024, 256}, 64, StepKind::train), v4_like());
  std::uint64_t vector_bytes = 0, vector_dma = 0;
  for (const ir::Instruction& ins : set.programs[0].instructions()) {
    if (ins.kind == ir::OpKind::vector) vector_bytes += ins.bytes;
  }
  for (const char* stage : {"layer1.act", "layer1.bwd.act", "layer1.update", "layer2.update"}) {
    vector_dma += totals(set.programs[0], stage).dma_bytes;
  }
  EXPECT_GT(vector_bytes, 0u);
  EXPECT_EQ(vector_bytes, vector_dma);
  std::ostringstream out;
  ir::write_program_json(set, out);
  const ir::ProgramSet back = ir::parse_program_json(out.str(), "test");
  for (std::size_t i = 0; i < set.programs[0].size(); ++i) {
    EXPECT_EQ(back.programs[0][i].bytes, set.programs[0][i].bytes) << i;
  }
}

TEST(LowerWorkload, SgdIsOneElementwisePassOverParams) {
  const ir::Program p =
      lower_workload(mlp({512, 1024, 256}, 64, StepKind::train, Optimizer::sgd), v4_like()).programs[0];
  const Totals u = totals(p, "layer1.update");
  EXPECT_EQ(u.elements, 512 * 1024);
  EXPECT_EQ(u.dma_bytes, 512u * 1024 * 3 * 2);  // read W and dW, write W, bf16
}

TEST(LowerWorkload, TrainingFollowsTheDataflow) {
  const ir::Program p = lower_workload(mlp({256, 512, 384, 128}, 64, StepKind::train), v4_like()).programs[0];
  expect_ordered(p, "layer2.fwd", "layer1.act");
  expect_ordered(p, "layer3.fwd", "layer2.act");
  expect_ordered(p, "layer3.bwd.dx", "layer3.fwd");
  expect_ordered(p, "layer3.bwd.dw", "layer3.fwd");
  expect_ordered(p, "layer2.bwd.act", "layer3.bwd.dx");
  expect_ordered(p, "layer2.bwd.dw", "layer2.bwd.act");
  expect_ordered(p, "layer2.bwd.dx", "layer2.bwd.act");
  expect_ordered(p, "layer1.bwd.dw", "layer1.bwd.act");
  expect_ordered(p, "layer1.bwd.act", "layer2.bwd.dx");
  for (int l = 1; l <= 3; ++l) {
    expect_ordered(p, "layer" + std::to_string(l) + ".update", "layer" + std::to_string(l) + ".bwd.dw");
  }
}

TEST(LowerWorkload, TrainingStepVmemStaysWithinCapacityOnEveryChip) {
  for (const ChipSpec& chip : {v4_like(), v5e_like()}) {
    for (const auto& w : {mlp({784, 1024, 512, 10}, 256, StepKind::train),
                          mlp({4096, 8192, 4096}, 1024, StepKind::train)}) {
      const ir::Program p = lower_workload(w, chip).programs[0];
      EXPECT_LE(worst_vmem_peak(p), chip.vmem.capacity.count()) << chip.name;
    }
  }
}

TEST(LowerVectorPass, ChunksAreWholeVregsSpreadOverCores) {
  ir::Program p;
  const VectorPass pass{10000, {DType::bf16}, {DType::bf16}, ir::VectorOp::elementwise, 1, DType::bf16};
  const auto done = lower_vector_pass(p, v4_like(), pass, {}, "v");
  // 10000 elements over 2 cores: one chunk each of 5120 (5 vregs) and 4880 elements. Order: both loads,
  // both ops, then both stores (a group's stores follow the next round's loads).
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(done.size(), 2u);
  EXPECT_EQ(p[2].vector.elements, 5120);
  EXPECT_EQ(p[2].core, 0);
  EXPECT_EQ(p[3].vector.elements, 4880);
  EXPECT_EQ(p[3].core, 1);
  EXPECT_EQ(p[4].kind, ir::OpKind::dma);
  EXPECT_EQ(p[4].memory.dst, ir::Memory::hbm);
  EXPECT_EQ(p.dma_bytes(), 2u * 10000 * 2);
}


// ---- host work -----------------------------------------------------------------------------------------------

ChipSpec v4_with_host() {
  ChipSpec c = v4_like();
  c.host.chips_per_host = 4;
  c.host.pcie_bandwidth = BytesPerSecond(16e9);
  c.host.round_trip = Seconds(20e-6);
  c.host.storage_bandwidth = BytesPerSecond(1e9);
  return c;
}

TEST(HostStepCosts, InputTimeIsTheHostsBatchOverItsPipelineRate) {
  WorkloadSpec w = mlp({1024, 1024}, 512, StepKind::train);
  w.host.input.examples_per_s_per_host = 1e5;
  w.host.input.bytes_per_example = Bytes(4096);
  const HostStepCosts c = host_step_costs(w, v4_with_host());
  EXPECT_EQ(c.infeed_bytes, 512u * 4096);
  // 512 examples for each of the host's 4 chips at 1e5 examples/s.
  EXPECT_DOUBLE_EQ(c.input_seconds, 512.0 * 4 / 1e5);
  EXPECT_EQ(c.checkpoint_bytes, 0u);
}

// A slice of several chips feeds each host's chips as its own host blocks say (pod.host_shape), whatever the
// chip's chips_per_host (a full host's): a 2x2 slice taken as one host of 2x2 shares the pipeline 4 ways, even
// with chips_per_host 8 (v5e's) or 16. Before, the 2x2 v5e slice divided its one host's rate by 8.
TEST(HostStepCosts, ASlicesHostsFeedTheirOwnChipsWhateverAFullHostHolds) {
  WorkloadSpec w = mlp({1024, 1024}, 512, StepKind::train);
  w.host.input.examples_per_s_per_host = 1e5;
  PodSpec pod;
  pod.shape = {2, 2};
  pod.wraparound = {0, 0};
  pod.host_shape = {2, 2};
  for (const int full_host : {1, 8, 16}) {
    ChipSpec chip = v4_with_host();
    chip.host.chips_per_host = full_host;
    EXPECT_DOUBLE_EQ(host_step_costs(w, chip, pod).input_seconds, 512.0 * 4 / 1e5) << full_host;
  }
  pod.host_shape = {2, 1};  // two hosts of 2
  EXPECT_DOUBLE_EQ(host_step_costs(w, v4_with_host(), pod).input_seconds, 512.0 * 2 / 1e5);
}

TEST(HostStepCosts, CheckpointIsTheStateOverStorageBandwidthAmortisedOverItsInterval) {
  WorkloadSpec w = mlp({1024, 2048}, 8, StepKind::train, Optimizer::adam);
  w.host.checkpoint.every_steps = 100;
  const HostStepCosts c = host_step_costs(w, v4_with_host());
  // 2 Mi parameters x (2 B bf16 + 2 x 4 B Adam moments) = 20 MiB; / 100 steps; one copy / 1 GB/s (the
  // host's 4 chips are identical replicas: one writes).
  const double state = 1024.0 * 2048 * 10;
  EXPECT_EQ(c.checkpoint_bytes, static_cast<std::uint64_t>(std::ceil(state / 100)));
  EXPECT_DOUBLE_EQ(c.checkpoint_seconds, state / 1e9 / 100);
  EXPECT_EQ(c.infeed_bytes, 0u);
  EXPECT_EQ(c.input_seconds, 0.0);
}

TEST(HostStepCosts, DefaultWorkloadHasNoHostWorkAndLowersWithoutHostInstructions) {
  const WorkloadSpec w = mlp({256, 256}, 64, StepKind::train);
  const HostStepCosts c = host_step_costs(w, v4_with_host());
  EXPECT_EQ(c.infeed_bytes + c.checkpoint_bytes, 0u);
  EXPECT_EQ(c.input_seconds + c.checkpoint_seconds, 0.0);
  const ir::ProgramSet set = lower_workload(w, v4_with_host());
  EXPECT_TRUE(with_prefix(set.programs[0], "host.").empty());
}

TEST(HostLowering, WithoutPrefetchTheFirstLayerWaitsForTheInfeedBehindTheLaunch) {
  WorkloadSpec w = mlp({256, 256, 256}, 64, StepKind::forward);
  w.host.input.examples_per_s_per_host = 1e4;
  w.host.input.bytes_per_example = Bytes(512);
  w.host.input.prefetch = 0;
  w.host.step_launch_overhead = Seconds(50e-6);
  const ir::Program p = lower_workload(w, v4_with_host()).programs[0];
  const auto launch = with_prefix(p, "host.launch"), infeed = with_prefix(p, "host.infeed");
  ASSERT_EQ(launch.size(), 1u);
  ASSERT_EQ(infeed.size(), 1u);
  EXPECT_EQ(p.label_of(p[infeed[0]]), "host.infeed");
  EXPECT_DOUBLE_EQ(p[launch[0]].host.seconds, 50e-6);
  EXPECT_EQ(p[launch[0]].host.op, ir::HostOp::launch);  // its kind, which the run's host-stall note reads
  EXPECT_EQ(p[infeed[0]].host.op, ir::HostOp::infeed);
  EXPECT_EQ(p[launch[0]].bytes, 0u);
  EXPECT_EQ(p[infeed[0]].bytes, 64u * 512);
  EXPECT_DOUBLE_EQ(p[infeed[0]].host.seconds, 64.0 * 4 / 1e4);
  EXPECT_TRUE(depends_on(p, infeed[0], launch[0]));
  EXPECT_TRUE(depends_on(p, with_prefix(p, "layer1.fwd")[0], infeed[0]));
}

TEST(HostLowering, WithPrefetchTheNextStepsInfeedRunsBesideTheStep) {
  WorkloadSpec w = mlp({256, 256, 256}, 64, StepKind::forward);
  w.host.input.bytes_per_example = Bytes(512);
  w.host.input.prefetch = 2;
  w.host.step_launch_overhead = Seconds(50e-6);
  const ir::Program p = lower_workload(w, v4_with_host()).programs[0];
  const auto launch = with_prefix(p, "host.launch"), infeed = with_prefix(p, "host.infeed.next_step");
  ASSERT_EQ(infeed.size(), 1u);
  EXPECT_EQ(p[infeed[0]].host.seconds, 0.0);  // no pipeline rate: only the PCIe transfer
  EXPECT_TRUE(depends_on(p, infeed[0], launch[0]));
  for (std::uint32_t i = 0; i < p.size(); ++i) EXPECT_FALSE(i != infeed[0] && depends_on(p, i, infeed[0])) << i;
  EXPECT_TRUE(depends_on(p, with_prefix(p, "layer1.fwd")[0], launch[0]));
}

TEST(HostLowering, CheckpointFollowsTheUpdatesAndSyncsEndTheStep) {
  WorkloadSpec w = mlp({256, 256, 256}, 64, StepKind::train, Optimizer::sgd);
  w.host.checkpoint.every_steps = 10;
  w.host.host_syncs = 2;
  const ir::Program p = lower_workload(w, v4_with_host()).programs[0];
  const auto ckpt = with_prefix(p, "host.checkpoint"), syncs = with_prefix(p, "host.sync");
  ASSERT_EQ(ckpt.size(), 1u);
  ASSERT_EQ(syncs.size(), 2u);
  EXPECT_EQ(p[ckpt[0]].host.op, ir::HostOp::checkpoint);
  EXPECT_EQ(p[syncs[0]].host.op, ir::HostOp::sync);
  EXPECT_EQ(p[ckpt[0]].bytes, (2u * 256 * 256 * 2 + 9) / 10);  // 2 layers of bf16 weights, sgd: no moments
  for (const std::uint32_t u : with_prefix(p, "layer")) EXPECT_TRUE(depends_on(p, ckpt[0], u)) << u;
  EXPECT_TRUE(depends_on(p, syncs[1], syncs[0]));
  EXPECT_TRUE(depends_on(p, syncs[0], ckpt[0]));
  EXPECT_DOUBLE_EQ(p[syncs[0]].host.seconds, 20e-6);
  EXPECT_EQ(syncs.back(), p.size() - 1);
}

}  // namespace
}  // namespace tpusim::kernels
