// The transformer model kind: decoder-only, encoder-only and encoder-decoder stacks, with mixture-of-experts
// MLPs as an option (TransformerModel in model_spec.h).
#include <fmt/format.h>

#include "model_kinds.h"

namespace tpusim::detail {

const FieldTable<ModelSpec>& transformer_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add_choice<Architecture>("architecture", [](S& s) -> Architecture& { return s.transformer.architecture; },
                               {{"decoder", Architecture::decoder},
                                {"encoder", Architecture::encoder},
                                {"encoder_decoder", Architecture::encoder_decoder}},
                               "decoder",
                               "decoder-only (causal), encoder-only (bidirectional), or encoder-decoder");
    t.add<int>("layers", [](S& s) -> int& { return s.transformer.layers; }, std::nullopt,
               "blocks of the decoder (or of the encoder, for an encoder-only model)", in_range(1, kMaxRepeat));
    t.add<int>("encoder_layers", [](S& s) -> int& { return s.transformer.encoder_layers; }, "0",
               "encoder_decoder: blocks of the encoder; 0 = layers", in_range(0, kMaxRepeat));
    t.add<std::int64_t>("d_model", [](S& s) -> std::int64_t& { return s.transformer.d_model; }, std::nullopt,
                        "width of the residual stream", in_range(std::int64_t{1}, kMaxDimension));
    t.add<int>("heads", [](S& s) -> int& { return s.transformer.heads; }, std::nullopt, "attention (query) heads",
               in_range(1, kMaxRepeat));
    t.add<int>("kv_heads", [](S& s) -> int& { return s.transformer.kv_heads; }, "0",
               "key/value heads: = heads (multi-head), 1 (multi-query), a divisor of heads (grouped-query); "
               "0 = heads",
               in_range(0, kMaxRepeat));
    t.add<int>("d_head", [](S& s) -> int& { return s.transformer.d_head; }, "0",
               "width of one head; 0 = d_model / heads", in_range(0, 1 << 20));
    t.add<std::int64_t>("d_ff", [](S& s) -> std::int64_t& { return s.transformer.d_ff; }, std::nullopt,
                        "hidden width of the MLP (of each branch of a gated MLP)", in_range(std::int64_t{1}, kMaxDimension));
    t.add<std::int64_t>("vocab", [](S& s) -> std::int64_t& { return s.transformer.vocab; }, std::nullopt,
                        "vocabulary size", in_range(std::int64_t{1}, kMaxDimension));
    t.add<std::int64_t>("context", [](S& s) -> std::int64_t& { return s.transformer.context; }, std::nullopt,
                        "longest sequence (rows of a learned position table; default sequence length)",
                        in_range(std::int64_t{1}, kMaxDimension));
    t.add_choice<PositionKind>("position", [](S& s) -> PositionKind& { return s.transformer.style.position; },
                               {{"learned", PositionKind::learned},
                                {"rotary", PositionKind::rotary},
                                {"relative", PositionKind::relative},
                                {"none", PositionKind::none}},
                               "learned",
                               "learned table added to the input, rotary on queries and keys, or relative "
                               "per-head biases (T5)");
    t.add_choice<NormKind>("norm", [](S& s) -> NormKind& { return s.transformer.style.norm; },
                           {{"layernorm", NormKind::layernorm}, {"rmsnorm", NormKind::rmsnorm}}, "layernorm",
                           "normalization before each sub-block and at the end");
    t.add_choice<MlpKind>("mlp", [](S& s) -> MlpKind& { return s.transformer.style.mlp; },
                          {{"gelu", MlpKind::gelu},
                           {"relu", MlpKind::relu},
                           {"swiglu", MlpKind::swiglu},
                           {"geglu", MlpKind::geglu}},
                          "gelu", "MLP activation; swiglu and geglu are gated (two up-projections)");
    t.add_choice<TransformerBlock>("block", [](S& s) -> TransformerBlock& { return s.transformer.style.block; },
                            {{"serial", TransformerBlock::serial}, {"parallel", TransformerBlock::parallel}}, "serial",
                            "serial attention then MLP, or parallel attention + MLP from one norm");
    t.add<bool>("bias", [](S& s) -> bool& { return s.transformer.style.bias; }, "true",
                "biases on every projection and on layer norms");
    t.add<bool>("tied_embeddings", [](S& s) -> bool& { return s.transformer.ends.tied_embeddings; }, "true",
                "the vocabulary projection reuses the token embedding matrix");
    t.add<int>("relative_buckets", [](S& s) -> int& { return s.transformer.style.relative_buckets; }, "32",
               "position: relative: buckets of the per-head bias table (one table per stack)", in_range(1, kMaxRepeat));
    t.add<int>("token_types", [](S& s) -> int& { return s.transformer.ends.token_types; }, "0",
               "segment (token type) embeddings added to the input; 0 = none", in_range(0, kMaxRepeat));
    t.add<bool>("pooler", [](S& s) -> bool& { return s.transformer.ends.pooler; }, "false",
                "a d_model x d_model pooler on the first token (BERT)");
    t.add<bool>("lm_head_transform", [](S& s) -> bool& { return s.transformer.ends.lm_head_transform; }, "false",
                "a dense layer and a norm before the vocabulary projection (BERT's masked-LM head)");
    t.add<int>("moe.experts", [](S& s) -> int& { return s.transformer.moe.experts; }, "0",
               "experts per mixture-of-experts layer; 0 = dense MLPs", in_range(0, kMaxRepeat));
    t.add<int>("moe.top_k", [](S& s) -> int& { return s.transformer.moe.top_k; }, "2",
               "experts each token is routed to", in_range(1, kMaxRepeat));
    t.add<double>("moe.capacity_factor", [](S& s) -> double& { return s.transformer.moe.capacity_factor; },
                  "1.25", "expert capacity = capacity_factor x tokens x top_k / experts (padding is computed)",
                  positive<double>());
    t.add<int>("moe.every", [](S& s) -> int& { return s.transformer.moe.every; }, "1",
               "every N-th layer is a mixture-of-experts layer (1 = all)", in_range(1, kMaxRepeat));
    t.add<std::int64_t>("moe.d_ff", [](S& s) -> std::int64_t& { return s.transformer.moe.d_ff; }, "0",
                        "hidden width of each expert; 0 = d_ff", in_range(std::int64_t{0}, kMaxDimension));
    return t;
  }();
  return table;
}

void check_transformer(const ModelSpec& spec, const std::string& path, Diagnostics& diags) {
  const TransformerModel& m = spec.transformer;
  // Each rule relates two fields and names the first, or the second when only that one is the user's
  // (blamed_field): a bundled model changed by an override is wrong where the override is.
  auto report = [&](const std::string& key, std::string message, std::string expected, std::string found,
                    std::string hint = {}) {
    diags.error(origin_of(spec.origins, key), key_path(path, key), std::move(message), std::move(expected),
                std::move(found), std::move(hint));
  };
  auto blames = [&](const std::string& key, const std::string& other) {
    return blamed_field(spec.origins, key, other) == key;
  };
  if (m.kv_heads > 0 && m.heads % m.kv_heads != 0) {
    if (blames("kv_heads", "heads")) {
      report("kv_heads", "key/value heads must divide the query heads", fmt::format("a divisor of heads ({})", m.heads),
             std::to_string(m.kv_heads));
    } else {
      report("heads", "the query heads must be a multiple of the key/value heads",
             fmt::format("a multiple of kv_heads ({})", m.kv_heads), std::to_string(m.heads),
             "set kv_heads too (a divisor of heads; 0 = heads)");
    }
  }
  if (m.d_head == 0 && m.d_model % m.heads != 0) {
    if (blames("heads", "d_model")) {
      report("heads", "d_model is not a multiple of the heads",
             fmt::format("heads dividing d_model ({}), or d_head set explicitly", m.d_model), std::to_string(m.heads),
             "set d_head: the width of one head");
    } else {
      report("d_model", "d_model is not a multiple of the heads",
             fmt::format("a multiple of heads ({}), or d_head set explicitly", m.heads), std::to_string(m.d_model),
             "set d_head: the width of one head");
    }
  }
  if (m.encoder_layers > 0 && m.architecture != Architecture::encoder_decoder) {
    if (blames("encoder_layers", "architecture")) {
      report("encoder_layers", "encoder_layers applies to an encoder_decoder model",
             "0, or architecture: encoder_decoder", std::to_string(m.encoder_layers));
    } else {
      report("architecture", "the model has encoder_layers, which only an encoder_decoder model has",
             fmt::format("encoder_decoder, or encoder_layers: 0 (it is {})", m.encoder_layers),
             m.architecture == Architecture::decoder ? "decoder" : "encoder");
    }
  }
  // A parallel block runs attention and the MLP from one norm. An encoder-decoder's decoder block has a
  // cross-attention between them, and the lowering has no parallel form of either stack (its decoder ran serial
  // and its training step read parameters it never made).
  if (m.style.block == TransformerBlock::parallel && m.architecture == Architecture::encoder_decoder) {
    const std::string hint = "no published encoder-decoder model runs its blocks in parallel; use block: serial";
    if (blames("block", "architecture")) {
      report("block", "a parallel block is not modelled for an encoder_decoder model",
             "serial for architecture encoder_decoder", "parallel", hint);
    } else {
      report("architecture", "an encoder_decoder model's blocks are not modelled in parallel",
             "decoder or encoder with block: parallel", "encoder_decoder", hint);
    }
  }
  // The other moe.* fields shape the experts: with none (dense MLPs) they would change nothing.
  if (m.moe.experts == 0) {
    for (const char* key : {"moe.top_k", "moe.capacity_factor", "moe.every", "moe.d_ff"}) {
      const auto it = spec.origins.find(key);
      if (it == spec.origins.end() || it->second.defaulted) continue;
      report(key, fmt::format("{} shapes mixture-of-experts layers, and the model has none", key),
             "no moe settings with moe.experts 0 (dense MLPs)", "a value set",
             "set moe.experts to the experts per layer, or drop it");
    }
  }
  if (m.moe.experts > 0 && m.moe.top_k > m.moe.experts) {
    if (blames("moe.top_k", "moe.experts")) {
      report("moe.top_k", "a token cannot go to more experts than there are",
             fmt::format("at most moe.experts ({})", m.moe.experts), std::to_string(m.moe.top_k));
    } else {
      report("moe.experts", "fewer experts than each token goes to",
             fmt::format("at least moe.top_k ({})", m.moe.top_k), std::to_string(m.moe.experts));
    }
  }
  if (m.moe.experts > 0 && m.moe.every > m.layers) {
    if (blames("moe.every", "layers")) {
      report("moe.every", "no layer would be a mixture-of-experts layer", fmt::format("at most layers ({})", m.layers),
             std::to_string(m.moe.every));
    } else {
      report("layers", "no layer would be a mixture-of-experts layer",
             fmt::format("at least moe.every ({}), or moe.every set too", m.moe.every), std::to_string(m.layers));
    }
  }
}

}  // namespace tpusim::detail
