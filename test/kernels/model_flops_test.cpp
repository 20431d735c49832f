// Model FLOPs of a sharded step are the model's for the global batch, whatever the mesh: work several chips
// compute alike (kv heads fewer than the tensor axis, a mesh axis a rule leaves out) counts once, padding rows
// not at all, while hardware FLOPs count every copy. Against hand counts.
#include <string>
#include <utility>
#include <vector>

#include "kernels_test_support.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/core/model_spec.h"
#include "tpusim/kernels/model_params.h"

#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

PodSpec pod_ring(int chips) {
  PodSpec p;
  p.name = "test-pod";
  p.shape = {chips};
  return p;
}

MeshSpec mesh_of(const std::vector<std::pair<std::string, int>>& axes,
                 const std::vector<std::string>& replicated = {}) {
  MeshSpec m;
  for (const auto& [name, size] : axes) m.axes.push_back(MeshAxisSpec{name, size, {}});
  for (const std::string& logical : replicated) m.rules.push_back(ShardingRuleSpec{logical, {}, {}});
  return m;
}

// Two blocks: d 256, 4 heads of 64 sharing 2 kv heads, d_ff 1024 (ReLU), tied vocabulary `vocab`, no biases;
// a training step of 8 sequences of 128 tokens.
WorkloadSpec gqa_step(const MeshSpec& m, std::int64_t vocab = 2048) {
  ModelSpec model = testing::small_decoder("gqa", 2, 256, 4, 1024, vocab, 128);
  model.transformer.kv_heads = 2;
  WorkloadSpec w = testing::training_step(model, 8, 128);
  w.mesh = m;
  return w;
}

double pod_hardware_flops(const LoweredWorkload& l, std::uint32_t chips) {
  double f = 0;
  for (std::uint32_t c = 0; c < chips; ++c) f += l.programs.program_for(c).hardware_flops();
  return f;
}

// 6 N T + 12 L H Q S T, T = 1024 tokens: per block N = d (H Q + 2 KV Q) + H Q d + 2 d f = 720,896, and the
// tied projection d V.
double gqa_by_hand(double vocab) {
  const double d = 256, tokens = 8 * 128, blocks = 2 * (d * (256 + 2 * 128) + 256 * d + 2 * d * 1024);
  return 6 * (blocks + d * vocab) * tokens + 12 * 2 * 4 * 64 * 128 * tokens;
}

TEST(ModelFlops, KvHeadsRepeatedOverTheTensorAxisCountOnceAndTheirCopiesAsHardwareFlops) {
  // fsdp 2 x tensor 2: one kv head per chip, none repeated. tensor 4: each of the 2 kv heads on 2 chips, whose
  // key/value projections (forward, input and weight gradients) run twice.
  const LoweredWorkload split = lower(gqa_step(mesh_of({{"fsdp", 2}, {"tensor", 2}})), testing::roomy(), pod_ring(4));
  const LoweredWorkload repeated = lower(gqa_step(mesh_of({{"tensor", 4}})), testing::roomy(), pod_ring(4));
  const double by_hand = gqa_by_hand(2048);
  EXPECT_DOUBLE_EQ(by_hand, 12'884'901'888.0);
  EXPECT_DOUBLE_EQ(model_flops(split, 4), by_hand);
  EXPECT_DOUBLE_EQ(model_flops(repeated, 4), by_hand);
  EXPECT_DOUBLE_EQ(split.closed_form_model_flops, by_hand);
  EXPECT_DOUBLE_EQ(repeated.closed_form_model_flops, by_hand);
  // The second copy of the key/value projections: 6 x d x 2 KV Q x T x 2 blocks.
  const double kv_copy = 6.0 * 256 * (2 * 128) * 1024 * 2;
  EXPECT_DOUBLE_EQ(pod_hardware_flops(repeated, 4) - pod_hardware_flops(split, 4), kv_copy);
  for (const ir::Instruction& ins : repeated.programs.programs[0].instructions()) {
    EXPECT_LE(ins.flops.model, ins.flops.hardware) << repeated.programs.programs[0].label_of(ins);
  }
}

TEST(ModelFlops, AStepReplicatedOverAMeshAxisCountsItsModelFlopsOnce) {
  // fsdp 4 with `batch: []`: every chip runs all 8 sequences (the weights still sharded over fsdp), four times
  // the hardware FLOPs of the batch split four ways, the same model FLOPs.
  const LoweredWorkload plain = lower(gqa_step(mesh_of({{"fsdp", 4}})), testing::roomy(), pod_ring(4));
  const LoweredWorkload replicated = lower(gqa_step(mesh_of({{"fsdp", 4}}, {"batch"})), testing::roomy(), pod_ring(4));
  EXPECT_DOUBLE_EQ(model_flops(plain, 4), gqa_by_hand(2048));
  EXPECT_DOUBLE_EQ(model_flops(replicated, 4), gqa_by_hand(2048));
  EXPECT_DOUBLE_EQ(replicated.closed_form_model_flops, gqa_by_hand(2048));
  EXPECT_DOUBLE_EQ(pod_hardware_flops(replicated, 4), 4 * pod_hardware_flops(plain, 4));
  // The same with the heads left whole on a tensor axis: each chip runs every head of its 4 sequences.
  const LoweredWorkload heads = lower(gqa_step(mesh_of({{"fsdp", 2}, {"tensor", 2}}, {"heads", "kv_heads"})),
                                      testing::roomy(), pod_ring(4));
  EXPECT_DOUBLE_EQ(model_flops(heads, 4), gqa_by_hand(2048));
}

TEST(ModelFlops, VocabularyPaddingRowsAreHardwareFlopsOnly) {
  // 2049 rows over tensor 4: 513 a chip, 3 of the 2052 padding. Model FLOPs count the 2049 real rows; hardware
  // FLOPs the padding too, 6 x d x 3 rows x T more than a vocabulary of 2052 would add to the model's.
  const LoweredWorkload padded = lower(gqa_step(mesh_of({{"tensor", 4}}), 2049), testing::roomy(), pod_ring(4));
  const LoweredWorkload whole = lower(gqa_step(mesh_of({{"tensor", 4}}), 2052), testing::roomy(), pod_ring(4));
  EXPECT_DOUBLE_EQ(model_flops(padded, 4), gqa_by_hand(2049));
  EXPECT_DOUBLE_EQ(padded.closed_form_model_flops, gqa_by_hand(2049));
  EXPECT_DOUBLE_EQ(pod_hardware_flops(padded, 4), pod_hardware_flops(whole, 4));
  EXPECT_DOUBLE_EQ(model_flops(whole, 4) - model_flops(padded, 4), 6.0 * 256 * 3 * 1024);
}

// Every family's lowered programs, summed over the chips, equal the closed form of the global batch under
// meshes that split, repeat and pad: GQA and MoE over tensor parallelism (the router repeats over the tensor
// group), BERT's head transform under sequence parallelism, an encoder-decoder with its kv heads repeated, a
// pipeline, context parallelism, and ResNet with a mesh axis its batch leaves out.
TEST(ModelFlops, LoweredProgramsOverThePodEqualTheClosedFormOfTheGlobalBatch) {
  struct Case {
    std::string what;
    ModelSpec model;
    MeshSpec mesh;
    int chips;
  };
  auto cut = [](ModelSpec m, int layers, int kv_heads = 0) {
    m.transformer.layers = layers;
    if (m.transformer.encoder_layers > 0) m.transformer.encoder_layers = layers;
    if (kv_heads > 0) m.transformer.kv_heads = kv_heads;
    return m;
  };
  const ModelSpec small = testing::small_decoder("small", 2, 256, 4, 1024, 2049, 128);
  ModelSpec moe = small;
  moe.transformer.moe.experts = 4;
  moe.transformer.moe.top_k = 2;
  moe.transformer.moe.d_ff = 512;
  ModelSpec encoder = small;
  encoder.transformer.architecture = Architecture::encoder;
  encoder.transformer.ends.lm_head_transform = true;
  ModelSpec t5 = small;
  t5.transformer.architecture = Architecture::encoder_decoder;
  t5.transformer.encoder_layers = 2;
  t5.transformer.kv_heads = 1;
  const std::vector<Case> cases{
      {"gqa tensor 4", cut(small, 2, 2), mesh_of({{"tensor", 4}}), 4},
      {"moe tensor 2 x expert 2", moe, mesh_of({{"expert", 2}, {"tensor", 2}}), 4},
      {"encoder, sequence parallel", encoder, mesh_of({{"data", 2}, {"tensor_sequence", 2}}), 4},
      {"encoder, tensor parallel", encoder, mesh_of({{"tensor", 4}}), 4},
      {"encoder-decoder, one kv head", t5, mesh_of({{"tensor", 2}}), 2},
      {"pipeline", small, mesh_of({{"pipeline", 2}, {"tensor", 2}}), 4},
      {"context", small, mesh_of({{"sequence", 2}, {"tensor", 2}}), 4},
  };
  for (const Case& c : cases) {
    WorkloadSpec w = testing::training_step(c.model, 4, 128);
    w.mesh = c.mesh;
    if (c.what == "pipeline") w.memory.microbatches = 2;
    for (const StepKind step : {StepKind::train, StepKind::forward}) {
      w.step = step;
      const LoweredWorkload l = lower(w, testing::roomy(), pod_ring(c.chips));
      EXPECT_NEAR(model_flops(l, static_cast<std::uint32_t>(c.chips)) / l.closed_form_model_flops, 1.0, 1e-12)
          << c.what << " step " << static_cast<int>(step);
    }
  }
  // ResNet-50 on 64 x 64 images, the batch over data alone: each image's work on both chips of an fsdp pair.
  ModelSpec resnet50 = load_model("resnet-50");
  resnet50.resnet.image_size = 64;
  WorkloadSpec resnet = testing::training_step(resnet50, 8, 0);
  resnet.mesh = mesh_of({{"data", 2}, {"fsdp", 2}});
  resnet.mesh.rules.push_back(ShardingRuleSpec{"batch", {"data"}, {}});
  const LoweredWorkload r = lower(resnet, testing::roomy(), pod_ring(4));
  EXPECT_NEAR(model_flops(r, 4) / r.closed_form_model_flops, 1.0, 1e-12);
}

// Under a capacity factor of 0.5 each expert's buffer keeps half the tokens routed to it: the closed form counts
// the kept half of the experts' matmuls, as the programs do (it counted every routed token: 7.7e12 against
// 1.35e13 for moe-layer-v5p's prefill). 512 tokens x 2 layers x top 2 x (256 x 512 + 512 x 256), 6 FLOPs per MAC
// of a training step, halved: 1,610,612,736 FLOPs fewer.
TEST(ModelFlops, ClosedFormOfAMixtureOfExpertsCountsOnlyTheTokensItsBuffersKeep) {
  ModelSpec moe = testing::small_decoder("small", 2, 256, 4, 1024, 2049, 128);
  moe.transformer.moe.experts = 4;
  moe.transformer.moe.top_k = 2;
  moe.transformer.moe.d_ff = 512;
  WorkloadSpec w = testing::training_step(moe, 4, 128);
  const double kept_all = closed_form_model_flops(w);  // the default capacity factor, 1.25, drops nothing
  w.model.transformer.moe.capacity_factor = 0.5;
  EXPECT_DOUBLE_EQ(kept_all - closed_form_model_flops(w), 1'610'612'736.0);
  w.mesh = mesh_of({{"expert", 2}, {"tensor", 2}});
  for (const StepKind step : {StepKind::train, StepKind::forward}) {
    w.step = step;
    const LoweredWorkload l = lower(w, testing::roomy(), pod_ring(4));
    EXPECT_NEAR(model_flops(l, 4) / l.closed_form_model_flops, 1.0, 1e-12) << static_cast<int>(step);
  }
}

}  // namespace
}  // namespace tpusim::kernels
