// The model and workload specs: every kind resolves through its table, and the rules across fields (a model's
// own, and the workload's against the model and the chip) are bad input naming file:line and the key.
#include <filesystem>
#include <fstream>
#include <string>

#include "tpusim/core/scenario.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

// Writes a scenario file with `workload` (YAML lines indented by two) and resolves it; returns the error
// text ("" when it resolved).
struct Loaded {
  Scenario scenario;
  std::string error;
  std::string file;
};

Loaded load(const std::string& workload, const std::string& pod = "v4-1x1x1") {
  static int counter = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("tpusim_model_spec_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".yaml");
  {
    std::ofstream out(path);
    out << "name: t\npod: " << pod << "\nworkload:\n" << workload;
  }
  Loaded l;
  l.file = path.string();
  try {
    l.scenario = load_scenario(path.string(), {});
  } catch (const ConfigError& e) {
    l.error = e.what();
  }
  std::filesystem::remove(path);
  return l;
}

const char* kTiny = R"(  model:
    kind: transformer
    layers: 2
    d_model: 256
    heads: 4
    d_ff: 1024
    vocab: 1000
    context: 128
)";

TEST(ModelSpec, TransformerDefaultsFollowThePublishedConventions) {
  const Loaded l = load(kTiny);
  ASSERT_EQ(l.error, "");
  const TransformerModel& t = l.scenario.workload.model.transformer;
  EXPECT_EQ(t.architecture, Architecture::decoder);
  EXPECT_EQ(t.kv(), 4);
  EXPECT_EQ(t.head_dim(), 64);
  EXPECT_EQ(t.style.position, PositionKind::learned);
  EXPECT_FALSE(t.moe.enabled());
  const WorkloadSpec& w = l.scenario.workload;
  EXPECT_EQ(w.tokens.seq_len, 128);  // the model's context
  EXPECT_EQ(w.tokens.context, 128);
  EXPECT_EQ(w.numerics.weight_dtype, DType::f32);  // training keeps f32 master weights
  EXPECT_EQ(w.kernels.attention, AttentionImpl::flash);
  EXPECT_TRUE(w.kernels.fusion);
}

TEST(ModelSpec, KvHeadsThatDoNotDivideTheHeadsAreNamedAtTheirLine) {
  const Loaded l = load(std::string(kTiny) + "    kv_heads: 3\n");
  EXPECT_NE(l.error.find(l.file + ":12:15"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("workload.model.kv_heads"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("a divisor of heads (4)"), std::string::npos) << l.error;
}

TEST(ModelSpec, HeadsThatDoNotDivideDModelAskForAnExplicitHeadWidth) {
  std::string text = kTiny;
  text.replace(text.find("heads: 4"), 8, "heads: 3");
  const Loaded bad = load(text);
  EXPECT_NE(bad.error.find("workload.model.heads"), std::string::npos) << bad.error;
  EXPECT_NE(bad.error.find("set d_head"), std::string::npos) << bad.error;
  EXPECT_EQ(load(text + "    d_head: 64\n").error, "");
}

// A bundled model changed by the user: each rule it breaks names the user's field, not the bundled file's.
TEST(ModelSpec, RulesABundledModelsOverrideBreaksNameTheOverride) {
  const Loaded heads = load("  model: {from: llama2-7b, heads: 5}\n  batch: 1\n");
  EXPECT_EQ(heads.error.find("configs/models"), std::string::npos) << heads.error;
  EXPECT_EQ(heads.error.rfind(heads.file + ":4:", 0), 0u) << heads.error;
  EXPECT_NE(heads.error.find("workload.model.heads: the query heads must be a multiple of the key/value heads"),
            std::string::npos)
      << heads.error;
  EXPECT_NE(heads.error.find("a multiple of kv_heads (32)"), std::string::npos) << heads.error;

  const Loaded width = load("  model: {from: llama2-7b, d_model: 4100}\n  batch: 1\n");
  EXPECT_NE(width.error.find("workload.model.d_model: d_model is not a multiple of the heads"), std::string::npos)
      << width.error;
  EXPECT_NE(width.error.find("a multiple of heads (32)"), std::string::npos) << width.error;

  const Loaded every = load("  model: {from: mixtral-8x7b, layers: 1, moe: {every: 2}}\n  batch: 1\n");
  EXPECT_NE(every.error.find("workload.model.moe.every"), std::string::npos) << every.error;  // both the user's

  const Loaded layers = load("  model: {from: t5-base, architecture: decoder}\n  batch: 1\n");
  EXPECT_NE(layers.error.find("workload.model.architecture: the model has encoder_layers"), std::string::npos)
      << layers.error;
  EXPECT_EQ(layers.error.find("configs/models"), std::string::npos) << layers.error;
}

TEST(ModelSpec, UnknownMoeKeySuggestsTheField) {
  const Loaded l = load(std::string(kTiny) + "    moe:\n      expert: 8\n");
  EXPECT_NE(l.error.find("workload.model.moe.expert"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("did you mean 'experts'?"), std::string::npos) << l.error;
}

TEST(ModelSpec, TopKAboveTheExpertCountIsRejected) {
  const Loaded l = load(std::string(kTiny) + "    moe:\n      experts: 2\n      top_k: 4\n");
  EXPECT_NE(l.error.find("workload.model.moe.top_k"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("at most moe.experts (2)"), std::string::npos) << l.error;
}

TEST(ModelSpec, UnknownKindListsEveryKind) {
  const Loaded l = load("  model:\n    kind: transformr\n");
  EXPECT_NE(l.error.find("did you mean 'transformer'?"), std::string::npos) << l.error;
}

TEST(ModelSpec, ResnetNeedsOneWidthPerStage) {
  const Loaded l = load("  model:\n    kind: resnet\n    blocks: [3, 4]\n    widths: [64]\n");
  EXPECT_NE(l.error.find("workload.model.widths"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("one width per stage"), std::string::npos) << l.error;
}

TEST(WorkloadRules, MicrobatchesMustDivideTheBatch) {
  const Loaded l = load(std::string(kTiny) + "  batch: 6\n  microbatches: 4\n");
  EXPECT_NE(l.error.find(l.file + ":13:17"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("a divisor of the batch (6)"), std::string::npos) << l.error;
}

TEST(WorkloadRules, SequenceLongerThanALearnedPositionTableIsRejected) {
  const Loaded l = load(std::string(kTiny) + "  seq_len: 256\n");
  EXPECT_NE(l.error.find("workload.seq_len"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("at most the model's context (128)"), std::string::npos) << l.error;
}

TEST(WorkloadRules, DecodeNeedsATransformerWithADecoder) {
  EXPECT_NE(load("  model: mlp-small\n  step: decode\n").error.find("step decode needs a transformer model"),
            std::string::npos);
  EXPECT_NE(load("  model: bert-large\n  step: decode\n").error.find("an encoder-only model generates no tokens"),
            std::string::npos);
  EXPECT_EQ(load("  model: llama2-7b\n  step: decode\n  context: 1024\n").error, "");
}

TEST(WorkloadRules, QuantizedWeightsNeedTheChipsRateAndAnInferenceStep) {
  const std::string base = "  model: llama2-7b\n  step: decode\n";
  EXPECT_EQ(load(base + "  weight_dtype: int8\n", "v5e-1x1").error, "");
  const Loaded fp8 = load(base + "  weight_dtype: fp8\n", "v5e-1x1");
  EXPECT_NE(fp8.error.find("chip v5e has no fp8 MXU rate (chip.mxu.fp8_rate is 0)"), std::string::npos) << fp8.error;
  const Loaded v2 = load(base + "  weight_dtype: int8\n", "v2-2x2");
  EXPECT_NE(v2.error.find("chip v2 has no int8 MXU rate"), std::string::npos) << v2.error;
  const Loaded train = load("  model: llama2-7b\n  weight_dtype: int8\n", "v5e-1x1");
  EXPECT_NE(train.error.find("quantized weights are for inference"), std::string::npos) << train.error;
}

TEST(WorkloadRules, InferenceStoresWeightsInTheComputeType) {
  const Loaded l = load("  model: llama2-7b\n  step: prefill\n  seq_len: 512\n");
  ASSERT_EQ(l.error, "");
  EXPECT_EQ(l.scenario.workload.numerics.weight_dtype, DType::bf16);
  EXPECT_EQ(l.scenario.workload.tokens.seq_len, 512);
  EXPECT_EQ(l.scenario.workload.tokens.context, 512);
}

}  // namespace
}  // namespace tpusim
