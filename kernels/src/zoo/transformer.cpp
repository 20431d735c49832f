// Transformers (decoder-only, encoder-only, encoder-decoder, mixture-of-experts MLPs) as fused-graph steps.
//
// One chip's step from its ShardView: per microbatch the embedding, the blocks, the head and the loss
// forward, then the backward in reverse (rematerializing blocks as workload.remat says), then one optimizer
// update per block (train); a forward pass (forward, prefill) or one token per sequence against the KV cache
// (decode) for inference. Every block is pre-norm: norm -> attention -> residual add, norm -> MLP -> residual
// add (or, parallel: x + attention(norm(x)) + mlp(norm(x))); the decoder of an encoder-decoder adds a
// cross-attention sub-block over the encoder output. Tensor and op names follow the labels of the emitted
// instructions: "<scope>.<phase>.<op>", scope "layer3" (or "enc.layer3", "dec.layer3"), "embedding", "head",
// prefixed by "mb1." for microbatches after the first.
//
// Sequence parallelism (ShardView::sequence_shards = n > 1, Korthikanti et al. 2022): a block's input, its
// norms and residual adds hold 1/n of the tokens; the norm output is all-gathered before the column-parallel
// matmuls, the row-parallel output reduce-scattered (CollectivePoints::gather_sequence, after_row_parallel);
// in the backward the output gradient is all-gathered, the input gradients reduce-scattered, and the norm
// outputs gathered again for the weight gradients (only this chip's tokens are kept for the backward), as
// Megatron-LM does. The embedding's output is reduce-scattered and the head's input gathered likewise.
//
// Context parallelism (ShardView::context_shards = c > 1): the step holds seq_len (1 / c of each sequence)
// tokens everywhere; only the self-attention reads seq_len x c keys, its keys and values all-gathered over the
// sequence group after the QKV projection (CollectivePoints::gather_keys_values), gathered again in the
// backward from the kept part, and the key and value gradients reduce-scattered before the QKV input gradient.
#include "zoo/transformer_step.h"

namespace tpusim::kernels {
namespace transformer {

Param TransformerStep::param(const std::string& name, std::int64_t rows, std::int64_t cols, double model_share) {
  Param p =
      b_.parameter(name, rows, cols, ParamStorage{dtypes_.weights, mode_.train, w_.optimizer, shard_.weight_shards});
  p.model_share = model_share;
  return p;
}

BlockParams TransformerStep::block_params(const std::string& scope, bool cross, bool moe) {
  BlockParams p;
  const std::int64_t hd = static_cast<std::int64_t>(heads_.query) * heads_.dim;
  p.norm1 = param(scope + ".norm1", 1, norm_params());
  const Replicas& r = shard_.replicas;
  p.qkv = param(scope + ".qkv", d_, qkv_width(), qkv_share());
  p.out = param(scope + ".out", hd, d_, share(r.heads));
  if (m_.style.block == TransformerBlock::serial) p.norm2 = param(scope + ".norm2", 1, norm_params());
  if (m_.style.bias) {
    p.qkv_bias = param(scope + ".qkv_bias", 1, qkv_width());
    p.out_bias = param(scope + ".out_bias", 1, d_);
  }
  if (cross) {
    p.cross.norm = param(scope + ".norm_x", 1, norm_params());
    p.cross.q = param(scope + ".q_x", d_, hd, share(r.heads));
    p.cross.kv = param(scope + ".kv_x", d_, 2 * static_cast<std::int64_t>(heads_.kv) * heads_.dim, share(r.kv_heads));
    p.cross.out = param(scope + ".out_x", hd, d_, share(r.heads));
  }
  p.moe = moe;
  if (moe) {
    p.experts.router = param(scope + ".router", d_, m_.moe.experts, share(r.tokens));
    p.experts.up = param(scope + ".experts_up", static_cast<std::int64_t>(shard_.moe.experts) * d_, up_width(true));
    p.experts.down =
        param(scope + ".experts_down", static_cast<std::int64_t>(shard_.moe.experts) * shard_.moe.d_ff, d_);
  } else {
    p.up = param(scope + ".up", d_, up_width(false), share(r.mlp));
    p.down = param(scope + ".down", shard_.d_ff, d_, share(r.mlp));
    if (m_.style.bias) {
      p.up_bias = param(scope + ".up_bias", 1, up_width(false));
      p.down_bias = param(scope + ".down_bias", 1, d_);
    }
  }
  return p;
}

TensorId TransformerStep::norm(const OpName& name, TensorId x, double tokens, const Param& gamma, TensorId* stats,
                               double x_times) {
  const std::string base = name.scope + "." + std::string(fused::phase_name(name.phase)) + "." + name.name;
  const TensorId h = b_.activation(base, tokens * static_cast<double>(d_));
  *stats = b_.activation(base + ".stats", tokens * (m_.style.norm == NormKind::layernorm ? 2 : 1), DType::f32);
  b_.vector(name, ir::OpClass::norm_activation, ir::VectorOp::reduction, tokens * static_cast<double>(d_),
            norm_cost(false), {{x, x_times}, {gamma.w, 1}}, {{h, 1}, {*stats, 1}});
  points_.norm_statistics(b_.graph(), base, name.phase, *stats, h);
  return h;
}

TensorId TransformerStep::embed(const std::string& mbp, std::int64_t tokens, std::int64_t s, Phase phase) {
  const TensorId x = b_.activation(mbp + "embedding.x", static_cast<double>(tokens) * static_cast<double>(d_));
  // A gather of `tokens` rows of the table (at most all of it), plus position and segment rows; under FSDP
  // from the tables all-gathered first, like any weight.
  const double rows = static_cast<double>(tokens);
  std::vector<Access> reads{
      {weights(-1, phase, outer_.table), std::min(1.0, rows / static_cast<double>(shard_.vocab.rows))}};
  VpuCost cost{"embedding", {0, 0}, ""};
  if (outer_.positions.elements > 0) {
    reads.push_back({weights(-1, phase, outer_.positions),
                     std::min(1.0, static_cast<double>(s) / static_cast<double>(m_.context))});
    cost.per_element.elementwise += 1;
  }
  if (outer_.types.elements > 0) {
    reads.push_back({weights(-1, phase, outer_.types), 1});
    cost.per_element.elementwise += 1;
  }
  b_.vector(OpName{phase, mbp + "embedding", "lookup"}, ir::OpClass::embedding, ir::VectorOp::elementwise,
            rows * static_cast<double>(d_), cost, reads, {{x, 1}});
  // A vocabulary-parallel table: each chip looked up the rows it holds; the partial rows add up (layer -1: the
  // embedding and head), into this chip's tokens under sequence parallelism.
  return points_.after_row_parallel(b_.graph(), -1, phase, x);
}

TransformerStep::HeadFwd TransformerStep::head_forward(const std::string& mbp, TensorId x, double tokens,
                                                       double x_times, Phase phase) {
  HeadFwd h;
  h.x = x;
  h.tokens = tokens;
  h.x_times = x_times;
  const std::string scope = mbp + "head";
  const std::string sc = scope + "." + std::string(fused::phase_name(phase));
  const auto t = static_cast<std::int64_t>(tokens);
  // The final norm (and BERT's transform) on this chip's tokens; the vocabulary projection on every token.
  const double nt = norm_tokens(tokens);
  h.hf = norm(OpName{phase, scope, "norm"}, x, nt, outer_.final_norm, &h.statsf, x_times);
  TensorId in = h.hf;
  if (outer_.lm_dense.elements > 0) {
    // BERT's masked-LM transform: dense + bias + gelu, then a norm.
    h.ht0 = b_.activation(sc + ".transform", nt * static_cast<double>(d_));
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(nt), mm.k = d_, mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {h.hf};
    mm.b = {outer_.lm_dense.w}, mm.outputs = {h.ht0};
    mm.flops.model_share = outer_.lm_dense.model_share;
    b_.matmul(OpName{phase, scope, "transform"}, ir::OpClass::matmul, mm);
    h.ht1 = b_.activation(sc + ".transform_act", nt * static_cast<double>(d_));
    b_.vector(OpName{phase, scope, "transform_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              nt * static_cast<double>(d_), VpuCost{"bias and gelu", {9, 1}, ""}, {{h.ht0, 1}, {outer_.lm_bias.w, 1}},
              {{h.ht1, 1}}, h.ht0);
    h.ht = norm(OpName{phase, scope, "transform_norm"}, h.ht1, nt, outer_.lm_norm, &h.statst);
    in = h.ht;
  }
  const std::int64_t vocab = shard_.vocab.rows;
  h.logits = b_.activation(sc + ".logits", tokens * static_cast<double>(vocab));
  {
    Builder::Matmul mm;
    mm.m = t, mm.k = d_, mm.n = vocab, mm.dtype = dtypes_.matmul, mm.a = {gather(-1, phase, in)};
    const TensorId weight = m_.ends.tied_embeddings ? outer_.table.w : outer_.out_proj.w;
    mm.b = {points_.weights_before_use(b_.graph(), -1, phase, weight)};
    mm.outputs = {h.logits};
    mm.flops.model_share = vocab_share();
    b_.matmul(OpName{phase, scope, "logits"}, ir::OpClass::loss, mm);
  }
  cross_entropy(scope, h, tokens * static_cast<double>(vocab), phase);
  return h;
}

void TransformerStep::cross_entropy(const std::string& scope, HeadFwd& h, double logits, Phase phase) {
  const std::string sc = scope + "." + std::string(fused::phase_name(phase));
  const double tokens = h.tokens;
  if (mode_.inference) {
    // Greedy sampling; over a vocabulary-parallel head, each chip's best (logit, index) pair is all-reduced.
    const TensorId next = b_.activation(sc + ".next_token", tokens * (shard_.vocab.shards > 1 ? 2 : 1), DType::f32);
    b_.vector(OpName{phase, scope, "sample"}, ir::OpClass::loss, ir::VectorOp::reduction, logits, kSampling,
              {{h.logits, 1}}, {{next, 1}});
    (void)points_.vocab_reduction(b_.graph(), phase, "argmax", next);
    return;
  }
  if (mode_.train) h.dlogits = b_.activation(sc + ".dlogits", logits);
  const TensorId loss = b_.activation(sc + ".loss", tokens, DType::f32);
  if (shard_.vocab.shards <= 1) {
    // One fused pass over the logits: the row max, the sums, the loss (and its gradient).
    if (mode_.train) {
      b_.vector(OpName{phase, scope, "cross_entropy"}, ir::OpClass::loss, ir::VectorOp::reduction, logits,
                kCrossEntropyWithGradient, {{h.logits, 1}}, {{h.dlogits, 1}, {loss, 1}});
    } else {
      b_.vector(OpName{phase, scope, "cross_entropy"}, ir::OpClass::loss, ir::VectorOp::reduction, logits,
                kCrossEntropyForward, {{h.logits, 1}}, {{loss, 1}});
    }
    return;
  }
  // Vocabulary parallel (Megatron-LM's vocab_parallel_cross_entropy): this chip's row max all-reduced (max)
  // over the vocabulary's chips; then its sums of exp(l - max) and the target logit (on the chip holding it),
  // all-reduced (sum); then the loss and the gradient of this chip's logits. [tokens] f32 vectors each.
  const TensorId row_max = b_.activation(sc + ".logit_max", tokens, DType::f32);
  b_.vector(OpName{phase, scope, "cross_entropy_max"}, ir::OpClass::loss, ir::VectorOp::reduction, logits,
            kCrossEntropyMax, {{h.logits, 1}}, {{row_max, 1}});
  const TensorId max_all = points_.vocab_reduction(b_.graph(), phase, "max", row_max);
  const TensorId sum_exp = b_.activation(sc + ".sum_exp", tokens, DType::f32);
  const TensorId target = b_.activation(sc + ".target_logit", tokens, DType::f32);
  b_.vector(OpName{phase, scope, "cross_entropy_sums"}, ir::OpClass::loss, ir::VectorOp::reduction, logits,
            kCrossEntropySums, {{h.logits, 1}, {max_all, 1}}, {{sum_exp, 1}, {target, 1}});
  const TensorId sum_all = points_.vocab_reduction(b_.graph(), phase, "sum_exp", sum_exp);
  const TensorId target_all = points_.vocab_reduction(b_.graph(), phase, "target", target);
  b_.vector(OpName{phase, scope, "cross_entropy"}, ir::OpClass::loss, ir::VectorOp::elementwise, tokens,
            kCrossEntropyLoss, {{max_all, 1}, {sum_all, 1}, {target_all, 1}}, {{loss, 1}});
  if (mode_.train) {
    b_.vector(OpName{phase, scope, "cross_entropy_grad"}, ir::OpClass::loss, ir::VectorOp::elementwise, logits,
              kCrossEntropyGradient, {{h.logits, 1}, {max_all, 1}, {sum_all, 1}}, {{h.dlogits, 1}});
  }
}

TensorId TransformerStep::head_backward(const std::string& mbp, const HeadFwd& h) {
  const std::string scope = mbp + "head";
  const std::string sc = scope + ".bwd";
  const Phase ph = Phase::backward;
  const auto t = static_cast<std::int64_t>(h.tokens);
  const double nt = norm_tokens(h.tokens);
  const std::int64_t vocab = shard_.vocab.rows;
  const Param& proj = m_.ends.tied_embeddings ? outer_.table : outer_.out_proj;
  const TensorId in = outer_.lm_dense.elements > 0 ? h.ht : h.hf;
  TensorId dh = b_.activation(sc + ".dh", h.tokens * static_cast<double>(d_));
  {
    Builder::Matmul mm;
    mm.m = t, mm.k = vocab, mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {h.dlogits};
    mm.b = {points_.weights_before_use(b_.graph(), -1, ph, proj.w)}, mm.outputs = {dh};
    mm.flops.model_share = vocab_share();
    b_.matmul(OpName{ph, scope, "logits.dx"}, ir::OpClass::loss, mm);
  }
  // Vocabulary-parallel: partial sums over the vocab (reduce-scattered into this chip's tokens under sequence
  // parallelism, whose projection input is gathered again for the weight gradient).
  dh = points_.after_row_parallel(b_.graph(), -1, ph, dh);
  weight_gradient(OpName{ph, scope, "logits.dw"}, ir::OpClass::loss, d_, t, vocab, 1, {gather(-1, ph, in)},
                  {h.dlogits}, proj, nullptr);
  if (outer_.lm_dense.elements > 0) {
    const auto tn = static_cast<std::int64_t>(nt);
    const TensorId dn = norm_backward(OpName{ph, scope, "transform_norm"}, dh, h.ht1, h.statst, nt, outer_.lm_norm);
    const TensorId da = b_.activation(sc + ".dtransform", nt * static_cast<double>(d_));
    b_.vector(OpName{ph, scope, "transform_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              nt * static_cast<double>(d_), kGeluBackward, {{dn, 1}, {h.ht0, 1}}, {{da, 1}}, dn);
    const TensorId dhf = b_.activation(sc + ".dtransform_in", nt * static_cast<double>(d_));
    Builder::Matmul mm;
    mm.m = tn, mm.k = d_, mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {da}, mm.b = {outer_.lm_dense.w},
    mm.outputs = {dhf};
    mm.flops.model_share = outer_.lm_dense.model_share;
    b_.matmul(OpName{ph, scope, "transform.dx"}, ir::OpClass::matmul, mm);
    weight_gradient(OpName{ph, scope, "transform.dw"}, ir::OpClass::matmul, d_, tn, d_, 1, {h.hf}, {da},
                    outer_.lm_dense, &outer_.lm_bias);
    dh = dhf;
  }
  return norm_backward(OpName{ph, scope, "norm"}, dh, h.x, h.statsf, nt, outer_.final_norm);
}

fused::Graph TransformerStep::build() {
  if (heads_.query < 1 || heads_.kv < 1 || heads_.dim < 1 || d_ < 1 || mb() < 1 || shard_.seq_len < 1) {
    throw std::invalid_argument(fmt::format("transformer {}: needs heads, a head width, a batch and a sequence",
                                            w_.model.name));
  }
  const bool enc_dec = m_.architecture == Architecture::encoder_decoder;
  // Stacks: the encoder (encoder-only, or the first of an encoder-decoder), then the decoder.
  const std::int64_t s_enc = shard_.seq_len, s_dec = enc_dec ? shard_.decoder_seq_len : shard_.seq_len;
  const std::int64_t s_new = mode_.decode ? 1 : s_dec;  // decoder queries this step
  // Decoder keys this step; context parallelism: every position's (the sequence group's).
  const std::int64_t s_keys = mode_.decode ? shard_.context + 1 : s_dec * shard_.context_shards;
  if (m_.architecture == Architecture::encoder) {
    stacks_.push_back(Stack{"layer", shard_.pipeline.first_layer, shard_.pipeline.layers, false, false, s_enc,
                            s_enc * shard_.context_shards, {}, {}});
  } else if (enc_dec) {
    // Decoding, the encoder ran at prefill: its stack has no blocks this step.
    const int enc_layers = mode_.decode ? 0 : shard_.pipeline.encoder_layers;
    stacks_.push_back(Stack{"enc.layer", 0, enc_layers, false, false, s_enc, s_enc, {}, {}});
    stacks_.push_back(
        Stack{"dec.layer", shard_.pipeline.first_layer, shard_.pipeline.layers, true, true, s_new, s_keys, {}, {}});
  } else {
    stacks_.push_back(
        Stack{"layer", shard_.pipeline.first_layer, shard_.pipeline.layers, true, false, s_new, s_keys, {}, {}});
  }

  // Parameters (the encoder of an encoder-decoder keeps its parameters even when decoding: they are stored).
  if (shard_.pipeline.embedding || (shard_.pipeline.head && m_.ends.tied_embeddings))
    outer_.table = param("embedding.table", shard_.vocab.rows, d_, vocab_share());
  if (shard_.pipeline.embedding && m_.style.position == PositionKind::learned)
    outer_.positions = param("embedding.positions", m_.context, d_);
  if (shard_.pipeline.embedding && m_.ends.token_types > 0) {
    outer_.types = param("embedding.types", m_.ends.token_types, d_);
  }
  for (std::size_t si = 0; si < stacks_.size(); ++si) {
    Stack& st = stacks_[si];
    const int stored = enc_dec && si == 0 ? shard_.pipeline.encoder_layers : st.count;
    for (int l = 0; l < stored; ++l) {
      const bool moe = m_.moe.is_moe_layer(st.first + l) && (!enc_dec || si == 1);
      st.params.push_back(block_params(fmt::format("{}{}", st.name, st.first + l), st.cross, moe));
    }
    if (m_.style.position == PositionKind::relative && stored > 0) {
      // T5: one bias table per stack, shared by its blocks (its gradient's scatter-add is not modelled).
      outer_.relative.push_back(param(st.name + ".position_bias", m_.style.relative_buckets, heads_.query));
      st.relative_table = outer_.relative.back().w;
    }
  }
  if (shard_.pipeline.head) {
    outer_.final_norm = param("head.norm", 1, norm_params());
    if (!m_.ends.tied_embeddings) outer_.out_proj = param("head.out", d_, shard_.vocab.rows, vocab_share());
    if (m_.ends.lm_head_transform) {
      // On this chip's tokens (norm_tokens): split under sequence parallelism, else repeated over the tensor group.
      outer_.lm_dense = param("head.transform", d_, d_, share(shard_.replicas.tokens, shard_.sequence_shards));
      outer_.lm_bias = param("head.transform_bias", 1, d_);
      outer_.lm_norm = param("head.transform_norm", 1, norm_params());
    }
    if (m_.ends.pooler) {
      // Stored and updated with the model; its compute (the next-sentence head) is not modelled.
      outer_.pooler = param("head.pooler", d_, d_);
      outer_.pooler_bias = param("head.pooler_bias", 1, d_);
    }
  }
  if (enc_dec) outer_.enc_final = param("enc.norm", 1, norm_params());
  const Param& enc_final = outer_.enc_final;
  // KV caches: keys and values of every decoder (or encoder-decoder decoder) layer, and the cross-attention
  // keys and values of an encoder-decoder's decoder.
  if (mode_.inference) {
    Stack& dec = stacks_.back();
    for (int l = dec.first; l < dec.first + dec.count; ++l) {
      const double elems = static_cast<double>(mb()) * static_cast<double>(dec.s_k) * heads_.kv * heads_.dim;
      kv_caches_.self[{static_cast<int>(stacks_.size() - 1), l}] = {
          b_.tensor(fmt::format("{}{}.kv_cache.k", dec.name, l), elems, w_.numerics.dtype, TensorKind::kv_cache),
          b_.tensor(fmt::format("{}{}.kv_cache.v", dec.name, l), elems, w_.numerics.dtype, TensorKind::kv_cache)};
      if (enc_dec) {
        const double xe = static_cast<double>(mb()) * static_cast<double>(s_enc) * heads_.kv * heads_.dim;
        kv_caches_.cross[{1, l}] = {
            b_.tensor(fmt::format("{}{}.cross_cache.k", dec.name, l), xe, w_.numerics.dtype, TensorKind::kv_cache),
            b_.tensor(fmt::format("{}{}.cross_cache.v", dec.name, l), xe, w_.numerics.dtype, TensorKind::kv_cache)};
      }
    }
  }

  const int microbatches = mode_.train ? std::max(1, shard_.microbatches) : 1;
  // What a microbatch's backward reads of its forward.
  struct MicroState {
    std::vector<std::vector<BlockFwd>> fwd;
    std::optional<TensorId> enc_out;
    TensorId x = 0, enc_last = 0, enc_stats = 0;
    HeadFwd head;
  };
  std::vector<MicroState> state(static_cast<std::size_t>(microbatches));
  auto forward = [&](int micro) {
    const std::string mbp = micro == 0 ? "" : fmt::format("mb{}.", micro);
    // ---- forward ----
    MicroState& ms = state[static_cast<std::size_t>(micro)];
    auto& fwd = ms.fwd;
    auto& enc_out = ms.enc_out;
    TensorId& x = ms.x;
    TensorId& enc_last = ms.enc_last;
    TensorId& enc_stats = ms.enc_stats;
    fwd.resize(stacks_.size());
    for (std::size_t si = 0; si < stacks_.size(); ++si) {
      Stack& st = stacks_[si];
      const bool decoder_of_enc_dec = enc_dec && si == 1;
      if (st.count == 0 && !decoder_of_enc_dec) continue;
      const double tokens = static_cast<double>(mb()) * static_cast<double>(st.s);
      if (si == 0 || decoder_of_enc_dec) {
        x = shard_.pipeline.embedding ? embed(mbp + (enc_dec ? (si == 0 ? "enc." : "dec.") : ""),
                                     static_cast<std::int64_t>(tokens), st.s, Phase::forward)
                             : points_.stage_input(b_.graph(), Phase::forward,
                                                   b_.activation(mbp + st.name + ".input",
                                                                 norm_tokens(tokens) * static_cast<double>(d_)));
      }
      for (int l = st.first; l < st.first + st.count; ++l) {
        fwd[si].push_back(forward_block(st, l, x, Phase::forward, mbp, enc_out));
        if (memory_.policy) {
          offload(fwd[si].back(), st.params[static_cast<std::size_t>(l - st.first)].moe,
                  fmt::format("{}{}{}.fwd", mbp, st.name, l));
        }
        x = fwd[si].back().out;
      }
      if (enc_dec && si == 0 && st.count > 0) {
        enc_last = x;
        enc_out = norm(OpName{Phase::forward, mbp + "enc", "norm"}, x, tokens, enc_final, &enc_stats);
      }
    }
    HeadFwd& head = ms.head;
    if (!shard_.pipeline.head) points_.stage_output(b_.graph(), Phase::forward, x);  // to the next pipeline stage
    if (shard_.pipeline.head) {
      const Stack& last = stacks_.back();
      // Inference needs the last position of each sequence only.
      const double tokens = static_cast<double>(mb()) * (mode_.inference ? 1.0 : static_cast<double>(last.s));
      head = head_forward(mbp, x, tokens, mode_.inference ? 1.0 / static_cast<double>(last.s) : 1.0, Phase::forward);
    }
  };
  auto backward = [&](int micro) {
    const std::string mbp = micro == 0 ? "" : fmt::format("mb{}.", micro);
    const bool first = micro == 0, last = micro == microbatches - 1;
    backward_.micro = micro;
    // ---- backward ----
    MicroState& ms = state[static_cast<std::size_t>(micro)];
    const auto& fwd = ms.fwd;
    const auto& enc_out = ms.enc_out;
    const TensorId enc_last = ms.enc_last, enc_stats = ms.enc_stats;
    TensorId dx = shard_.pipeline.head
                      ? head_backward(mbp, ms.head)
                      : points_.stage_input(b_.graph(), Phase::backward,
                                            b_.activation(mbp + "head.bwd.dx",
                                                          norm_tokens(static_cast<double>(mb()) *
                                                                      static_cast<double>(stacks_.back().s)) * d_));
    std::optional<TensorId> d_enc;
    for (std::size_t si = stacks_.size(); si-- > 0;) {
      Stack& st = stacks_[si];
      const bool decoder_of_enc_dec = enc_dec && si == 1;
      if (enc_dec && si == 0) {
        // The encoder's output gradient is what the decoder's cross-attention accumulated.
        if (!d_enc) break;
        const double tokens = static_cast<double>(mb()) * static_cast<double>(st.s);
        dx = norm_backward(OpName{Phase::backward, mbp + "enc", "norm"}, *d_enc, enc_last, enc_stats, tokens,
                           enc_final);
      }
      for (int l = st.first + st.count; l-- > st.first;) {
        BlockFwd use = fwd[si][static_cast<std::size_t>(l - st.first)];
        if (w_.memory.remat == Remat::full) {
          // Full rematerialization: only the block input was kept; run the block forward again first.
          use = forward_block(st, l, use.x, Phase::recompute, mbp, enc_out);
        }
        std::size_t recompute_start = 0;
        if (memory_.policy) use = rematerialize(st, l, use, mbp, enc_out, recompute_start);
        const std::size_t backward_start = b_.graph().ops().size();
        dx = backward_block(st, l, use, dx, mbp, enc_out, d_enc);
        if (memory_.policy) {
          drop_unread(recompute_start, backward_start);
          backward_.last_start = backward_start;
        }
        // The block's gradients of this microbatch are complete (FSDP reduce-scatters them now; the data-parallel
        // all-reduce follows the last microbatch).
        const BlockParams& bp = st.params[static_cast<std::size_t>(l - st.first)];
        points_.after_weight_gradients(b_.graph(), l, b_.gradient_buffers(bp.all(), micro), first, last);
        if (last) {
          std::vector<TensorId> norms;
          for (const Param* n : {&bp.norm1, &bp.norm2}) {
            if (n->grad) norms.push_back(*n->grad);
          }
          points_.after_sequence_parallel_gradients(b_.graph(), l, norms);
        }
      }
      if (shard_.pipeline.embedding && (si == 0 || decoder_of_enc_dec)) {
        // The embedding gradient: the rows the lookup gathered, scatter-added into the table's gradient (every
        // token's: a vocabulary-parallel table's rows may come from any token).
        const double tokens = static_cast<double>(mb()) * static_cast<double>(st.s);
        std::vector<Access> reads{{gather(-1, Phase::backward, dx), 1}}, writes;
        // Under FSDP a table's whole gradient is a fresh buffer per microbatch, written whole (zeros and the added
        // rows) unless the tied head's weight gradient wrote it first.
        auto scatter_add = [&](const Param& p, double fraction) {
          const GradientWrite gw = b_.gradient(p, micro);
          if (p.shards > 1 && !gw.accumulate) {
            writes.push_back({gw.tensor, 1});
            return;
          }
          reads.push_back({gw.tensor, fraction});
          writes.push_back({gw.tensor, fraction});
        };
        scatter_add(outer_.table, std::min(1.0, tokens / static_cast<double>(shard_.vocab.rows)));
        if (outer_.positions.elements > 0) {
          scatter_add(outer_.positions, std::min(1.0, static_cast<double>(st.s) / static_cast<double>(m_.context)));
        }
        b_.vector(OpName{Phase::backward, mbp + (enc_dec ? (si == 0 ? "enc." : "dec.") : "") + "embedding", "lookup"},
                  ir::OpClass::embedding, ir::VectorOp::elementwise, tokens * static_cast<double>(d_), kAdd, reads,
                  writes);
      }
    }
    if (!shard_.pipeline.embedding) points_.stage_output(b_.graph(), Phase::backward, dx);  // to the previous stage
    // The embedding and head gradients of a microbatch before the last (FSDP reduce-scatters them now); those
    // of the last are reduced after the blocks' updates, below.
    if (!last) points_.after_weight_gradients(b_.graph(), -1, b_.gradient_buffers(embedding_and_head(), micro), first, false);
  };
  // The order of the microbatches' passes: forward then backward of each in turn on one chip; a pipeline
  // stage follows its schedule (pipeline_order, shard.h).
  for (const auto& [is_forward, micro] : pipeline_order(shard_, w_.schedule.pipeline_schedule, mode_.train)) {
    if (is_forward) forward(micro);
    else backward(micro);
  }
  if (mode_.train) {
    points_.flush_gradient_reductions(b_.graph());
    for (const Stack& st : stacks_) {
      for (std::size_t i = 0; i < st.params.size(); ++i) {
        b_.optimizer_update(fmt::format("{}{}", st.name, st.first + static_cast<int>(i)), st.params[i].all(),
                            w_.optimizer);
      }
    }
    const std::vector<const Param*> rest = embedding_and_head();
    points_.after_weight_gradients(b_.graph(), -1, b_.gradient_buffers(rest, microbatches - 1), microbatches == 1,
                                   true);
    // Applied to this chip's tokens under sequence parallelism: the final norm and BERT's head transform.
    std::vector<TensorId> sequence_partial;
    for (const Param* p : {&outer_.final_norm, &outer_.lm_dense, &outer_.lm_bias, &outer_.lm_norm}) {
      if (p->elements > 0 && p->grad) sequence_partial.push_back(*p->grad);
    }
    points_.after_sequence_parallel_gradients(b_.graph(), -1, sequence_partial);
    points_.flush_gradient_reductions(b_.graph());
    b_.optimizer_update("embedding_and_head", rest, w_.optimizer);
  }
  return std::move(b_.graph());
}

}  // namespace transformer

fused::Graph build_transformer_step(const WorkloadSpec& workload, const ChipSpec& chip, const ShardView& shard,
                                    CollectivePoints& points) {
  return transformer::TransformerStep(workload, chip, shard, points).build();
}

}  // namespace tpusim::kernels
