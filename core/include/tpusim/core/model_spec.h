#pragma once
// What a workload runs: a model of one kind (configs/models/*.yaml, or an inline map under workload.model).
//
// Each kind is one struct below and one field table in a file of its own (core/src/model_<kind>.cpp), listed
// explicitly by model_kinds(). Adding a kind (dlrm, say) is: an enum value, a struct member of ModelSpec, a
// table file with its cross-field check, one entry in model_kinds(), and a lowering file in kernels/.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/units.h"

namespace tpusim {

enum class DType { bf16, f32, int8, fp8 };
[[nodiscard]] int dtype_bytes(DType t);
[[nodiscard]] std::string_view dtype_name(DType t);

enum class ModelKind { gemm, mlp, collective, transformer, resnet, dlrm };
enum class Activation { relu, gelu };

// How a single GEMM is lowered: tile by tile with explicit DMAs (for single-op studies), or as one fused
// instruction per TensorCore whose operands stream from HBM (the granularity whole models use).
enum class GemmGranularity { tiled, fused };

struct GemmModel {
  std::int64_t m = 0, k = 0, n = 0;  // C[m,n] = A[m,k] x B[k,n]
  GemmGranularity lowering = GemmGranularity::tiled;
};

// A stack of dense layers: widths[0] inputs, then one layer per following width.
struct MlpModel {
  std::vector<int> widths;
  Activation activation = Activation::gelu;
};

enum class CollectiveKind : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all, permute };
[[nodiscard]] std::string_view collective_name(CollectiveKind k);
[[nodiscard]] std::vector<CollectiveKind> all_collective_kinds();  // in declaration order
// Each kind with its name, in declaration order: the choices of a field that names collectives.
[[nodiscard]] std::vector<std::pair<std::string, CollectiveKind>> collective_choices();

// One collective over the pod, for interconnect studies: `bytes` per chip (the input buffer of each chip),
// over the listed torus axes (empty = every axis), with a named algorithm ("auto" picks the default).
struct CollectiveModel {
  CollectiveKind op = CollectiveKind::all_reduce;
  Bytes bytes;
  std::vector<int> axes;
  std::string algorithm = "auto";
};

// A DLRM-style recommender (Naumov et al. 2019, arXiv:1906.00091): dense features through a bottom MLP,
// categorical features looked up in embedding tables and sum-pooled, the pairwise dot products of the bottom
// MLP's output and the pooled embeddings, and a top MLP over those and the bottom output. Lowered by
// kernels/src/zoo/dlrm.cpp: lookups on the SparseCores when the chip has them, on the TensorCores otherwise.
struct DlrmModel {
  int dense_features = 0;           // inputs of the bottom MLP
  std::vector<int> bottom_mlp;      // output widths of its layers; the last is embedding_dim
  std::vector<int> top_mlp;         // output widths of the top MLP's layers; the last is the prediction
  int tables = 0;                   // embedding tables, one per categorical feature
  std::int64_t rows_per_table = 0;  // rows of each table
  int embedding_dim = 0;            // values per row
  int lookups_per_table = 1;        // rows pooled per table and example (the pooling factor)
};

// ---- transformer ---------------------------------------------------------------------------------------------
enum class Architecture { decoder, encoder, encoder_decoder };
enum class PositionKind { learned, rotary, relative, none };
enum class NormKind { layernorm, rmsnorm };
// The MLP: one up-projection and an activation, or a gated pair of up-projections (SwiGLU: silu(x W) * x V,
// GeGLU: gelu(x W) * x V, Shazeer 2020).
enum class MlpKind { gelu, relu, swiglu, geglu };
// Serial block: x + attn(norm(x)), then + mlp(norm(.)); parallel block (GPT-J, PaLM): x + attn(norm(x)) +
// mlp(norm(x)) with one norm.
enum class TransformerBlock { serial, parallel };

// Mixture of experts in the MLP of every `every`-th layer (GShard / Switch / Mixtral style): a router
// (d_model x experts), top-k dispatch with a capacity of capacity_factor x tokens x top_k / experts per
// expert, `experts` expert MLPs of width d_ff (the model's d_ff when 0), and a weighted combine.
struct MoeSpec {
  int experts = 0;  // 0: dense MLP everywhere
  int top_k = 2;
  double capacity_factor = 1.25;
  int every = 1;          // layers l with (l + 1) % every == 0 are MoE layers (1 = every layer)
  std::int64_t d_ff = 0;  // expert MLP width; 0 = the model's d_ff
  [[nodiscard]] bool enabled() const { return experts > 0; }
  [[nodiscard]] bool is_moe_layer(int layer) const { return experts > 0 && (layer + 1) % every == 0; }
};

// The choices that tell transformer families apart (GPT-3: learned positions, layernorm, gelu, serial blocks
// with biases; LLaMA: rotary, rmsnorm, swiglu, no biases; GPT-J and PaLM: parallel blocks; T5: relative).
struct TransformerStyle {
  PositionKind position = PositionKind::learned;
  NormKind norm = NormKind::layernorm;
  MlpKind mlp = MlpKind::gelu;
  TransformerBlock block = TransformerBlock::serial;
  bool bias = true;           // biases on every projection (and on layer norms)
  int relative_buckets = 32;  // position: relative (T5): buckets of the per-head bias, one table per stack
};

// What the stack's two ends hold besides the token embedding, the final norm and the vocabulary projection.
struct TransformerEnds {
  bool tied_embeddings = true;     // the vocabulary projection reuses the token embedding
  int token_types = 0;             // segment embeddings added to the input (BERT: 2)
  bool pooler = false;             // a d_model x d_model pooler on the first token (BERT)
  bool lm_head_transform = false;  // a dense + norm before the vocabulary projection (BERT's MLM head)
};

// The model's fields keep their flat names in the YAML (`norm`, `pooler`); `style` and `ends` group them here.
struct TransformerModel {
  Architecture architecture = Architecture::decoder;
  int layers = 0;          // blocks of the decoder (decoder, encoder_decoder) or of the encoder (encoder)
  int encoder_layers = 0;  // encoder_decoder: blocks of the encoder; 0 = layers
  std::int64_t d_model = 0;
  int heads = 0;
  int kv_heads = 0;  // key/value heads: heads (multi-head), 1 (multi-query), or a divisor (grouped-query); 0 = heads
  int d_head = 0;    // 0 = d_model / heads
  std::int64_t d_ff = 0;
  std::int64_t vocab = 0;
  std::int64_t context = 0;  // longest sequence the model takes (learned position table rows)
  TransformerStyle style;
  TransformerEnds ends;
  MoeSpec moe;

  // Derived (the defaults applied): kv_heads and d_head.
  [[nodiscard]] int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  [[nodiscard]] int head_dim() const {
    return d_head > 0 ? d_head : static_cast<int>(heads > 0 ? d_model / heads : 0);
  }
  [[nodiscard]] int encoder_depth() const {
    if (architecture == Architecture::decoder) return 0;
    if (architecture == Architecture::encoder) return layers;
    return encoder_layers > 0 ? encoder_layers : layers;
  }
  [[nodiscard]] int decoder_depth() const { return architecture == Architecture::encoder ? 0 : layers; }
  [[nodiscard]] bool gated() const { return style.mlp == MlpKind::swiglu || style.mlp == MlpKind::geglu; }
};

// ---- ResNet (bottleneck blocks, He et al. 2016) -------------------------------------------------------------
struct ResnetModel {
  std::vector<int> blocks;  // bottleneck blocks per stage, e.g. [3, 4, 6, 3] for ResNet-50
  std::vector<int> widths;  // bottleneck width of each stage (its 1x1 -> 3x3 channels), e.g. [64, 128, 256, 512]
  int expansion = 4;        // a block's output channels = width x expansion
  int stem_width = 64;      // channels of the 7x7/2 stem convolution
  int image_size = 224;     // input height = width
  int channels = 3;         // input channels
  int classes = 1000;
};

struct ModelSpec {
  std::string name;
  ModelKind kind = ModelKind::mlp;
  GemmModel gemm;
  MlpModel mlp;
  CollectiveModel collective;
  TransformerModel transformer;
  ResnetModel resnet;
  DlrmModel dlrm;
  std::map<std::string, FieldOrigin> origins;
};

// One model kind: its name in the YAML, its field table, and the rules across its fields (run after the
// table resolved without error; reports into `diags` at the origins of the fields involved).
struct ModelKindInfo {
  std::string name;
  ModelKind kind;
  const FieldTable<ModelSpec>& (*fields)();
  void (*check)(const ModelSpec& spec, const std::string& path, Diagnostics& diags);
};

// Every model kind, in a fixed order (the composition root: no static registration).
[[nodiscard]] const std::vector<ModelKindInfo>& model_kinds();
[[nodiscard]] const ModelKindInfo& model_kind_info(ModelKind kind);
[[nodiscard]] std::string_view model_kind_name(ModelKind kind);

// Resolves a model map (with `kind`) at key path `path` ("workload.model", or "" for a model file).
[[nodiscard]] ModelSpec resolve_model(const ConfigNode& node, const std::string& path, Diagnostics& diags);

// Loads a bundled model (configs/models/NAME.yaml) or a model file by path (used by `tpusim describe model`).
[[nodiscard]] ModelSpec load_model(const std::string& name_or_path);

// Where a resolved field came from, for errors about it: its file:line; for a defaulted field the map it would be
// written in; else the model's own location.
[[nodiscard]] SourceLoc origin_of(const std::map<std::string, FieldOrigin>& origins, const std::string& key);
// Whether the user wrote the field: it is set, and not in a bundled file (is_bundled_file). A cross-field rule
// names its usual field unless the user wrote only the other one (`from: llama2-7b, heads: 5` breaks "kv_heads
// divides heads" at heads, the user's line, not at the bundled model's kv_heads).
[[nodiscard]] bool user_wrote(const std::map<std::string, FieldOrigin>& origins, const std::string& key);
// `key`, or `other` when the user wrote `other` and not `key`: the field a rule relating the two names.
[[nodiscard]] std::string blamed_field(const std::map<std::string, FieldOrigin>& origins, const std::string& key,
                                       const std::string& other);

}  // namespace tpusim
