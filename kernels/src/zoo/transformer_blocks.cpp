// A transformer block's forward (transformer_step.h): attention, the dense or mixture-of-experts MLP, the
// block's order and the weight-gradient matmuls they share with the backward.
#include "zoo/transformer_step.h"

namespace tpusim::kernels::transformer {

TensorId TransformerStep::attention_sub(const OpName& base, const Stack& st, int layer, TensorId h, double tokens,
                                        const BlockParams& p, BlockFwd& f, std::optional<TensorId> enc_out) {
  const std::string sc = base.scope + "." + std::string(fused::phase_name(base.phase));
  const double q_elems = tokens * heads_.query * heads_.dim, kv_elems = tokens * heads_.kv * heads_.dim;
  const Phase ph = base.phase;
  // QKV projection, bias and rotary as elementwise ops that fusion folds into the projection's epilogue.
  TensorId q = b_.activation(sc + ".q", q_elems), k = b_.activation(sc + ".k", kv_elems),
           v = b_.activation(sc + ".v", kv_elems);
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(tokens), mm.k = d_, mm.n = qkv_width(), mm.dtype = dtypes_.matmul;
    mm.a = {h}, mm.b = {weights(layer, ph, p.qkv)}, mm.outputs = {q, k, v};
    mm.flops.model_share = p.qkv.model_share;
    b_.matmul(OpName{ph, base.scope, "qkv"}, ir::OpClass::matmul, mm);
  }
  if (p.qkv_bias.elements > 0) {
    const TensorId q1 = b_.activation(sc + ".q_biased", q_elems), k1 = b_.activation(sc + ".k_biased", kv_elems),
                   v1 = b_.activation(sc + ".v_biased", kv_elems);
    b_.vector(OpName{ph, base.scope, "qkv_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise,
              q_elems + 2 * kv_elems, kAdd, {{q, 1}, {k, 1}, {v, 1}, {p.qkv_bias.w, 1}}, {{q1, 1}, {k1, 1}, {v1, 1}},
              q);
    q = q1, k = k1, v = v1;
  }
  f.attn.q_pre = q, f.attn.k_pre = k;
  if (m_.style.position == PositionKind::rotary) {
    const TensorId q2 = b_.activation(sc + ".q_rotary", q_elems), k2 = b_.activation(sc + ".k_rotary", kv_elems);
    b_.vector(OpName{ph, base.scope, "rotary"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              q_elems + kv_elems, kRotary, {{q, 1}, {k, 1}}, {{q2, 1}, {k2, 1}}, q);
    q = q2, k = k2;
  }
  AttentionShape shape{mb(), st.s, st.s_k, heads_.query, heads_.kv, heads_.dim, st.causal,
                       m_.style.position == PositionKind::relative && st.relative_table.has_value(),
                       share(shard_.replicas.heads)};
  TensorId keys = k, values = v;
  double kv_times = 1.0;
  f.attn.k_local = k, f.attn.v_local = v;
  if (shard_.context_shards > 1) {
    // Context parallelism: this chip's queries attend to every position's keys and values, all-gathered over
    // the sequence group (MaxText's all-gather context parallelism).
    const std::vector<TensorId> kv = points_.gather_keys_values(b_.graph(), layer, ph, {k, v});
    keys = kv[0], values = kv[1];
  }
  if (mode_.inference) {
    // The new keys and values go into this layer's cache; attention reads the cache.
    const auto [kc, vc] = kv_caches_.self.at({static_cast<int>(&st - stacks_.data()), layer});
    const double fraction = static_cast<double>(st.s) / static_cast<double>(st.s_k);
    b_.vector(OpName{ph, base.scope, "kv_cache_write"}, ir::OpClass::attention, ir::VectorOp::elementwise,
              2 * kv_elems, VpuCost{"copy", {0, 0}, ""}, {{k, 1}, {v, 1}}, {{kc, fraction}, {vc, fraction}}, k);
    keys = kc, values = vc;
  }
  f.attn.core = attention_forward(b_, OpName{ph, base.scope, "attention"}, w_.kernels.attention, shape, q, keys, values,
                             kv_times);
  // Output projection, bias, the tensor-parallel reduction point, and the residual add.
  TensorId a = b_.activation(sc + ".attn_out", tokens * static_cast<double>(d_));
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(tokens), mm.k = static_cast<std::int64_t>(heads_.query) * heads_.dim, mm.n = d_;
    mm.dtype = dtypes_.matmul;
    mm.a = {f.attn.core.o}, mm.b = {weights(layer, ph, p.out)}, mm.outputs = {a};
    mm.flops.model_share = p.out.model_share;
    if (ring_blocks(layer, mm) > 0) {
      f.attn.out = ring_row_parallel(OpName{ph, base.scope, "out"}, layer, mm, &p.out_bias);
      return f.attn.out;
    }
    b_.matmul(OpName{ph, base.scope, "out"}, ir::OpClass::matmul, mm);
  }
  if (p.out_bias.elements > 0) {
    const TensorId a1 = b_.activation(sc + ".attn_out_biased", tokens * static_cast<double>(d_));
    b_.vector(OpName{ph, base.scope, "out_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise,
              tokens * static_cast<double>(d_), kAdd, {{a, 1}, {p.out_bias.w, 1}}, {{a1, 1}}, a);
    a = a1;
  }
  a = points_.after_row_parallel(b_.graph(), layer, ph, a);
  (void)enc_out;
  f.attn.out = a;
  return a;
}

TensorId TransformerStep::mlp_forward(const OpName& base, int layer, TensorId h, double tokens, const BlockParams& p,
                                      BlockFwd& f) {
  const std::string sc = base.scope + "." + std::string(fused::phase_name(base.phase));
  const Phase ph = base.phase;
  const VpuCost& act = m_.style.mlp == MlpKind::gelu     ? kGeluForward
                       : m_.style.mlp == MlpKind::relu   ? kReluForward
                       : m_.style.mlp == MlpKind::swiglu ? kSwigluForward
                                                   : kGegluForward;
  const double td = tokens * static_cast<double>(d_);
  if (!p.moe) {
    const double f_elems = tokens * static_cast<double>(shard_.d_ff);
    TensorId u = b_.activation(sc + ".up", tokens * static_cast<double>(up_width(false)));
    Builder::Matmul up;
    up.m = static_cast<std::int64_t>(tokens), up.k = d_, up.n = up_width(false), up.dtype = dtypes_.matmul;
    up.a = {h}, up.b = {weights(layer, ph, p.up)}, up.outputs = {u};
    up.flops.model_share = p.up.model_share;
    b_.matmul(OpName{ph, base.scope, "up"}, ir::OpClass::matmul, up);
    if (p.up_bias.elements > 0) {
      const TensorId u1 = b_.activation(sc + ".up_biased", tokens * static_cast<double>(up_width(false)));
      b_.vector(OpName{ph, base.scope, "up_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise,
                tokens * static_cast<double>(up_width(false)), kAdd, {{u, 1}, {p.up_bias.w, 1}}, {{u1, 1}}, u);
      u = u1;
    }
    f.mlp.u = u;
    f.mlp.g = b_.activation(sc + ".act", f_elems);
    b_.vector(OpName{ph, base.scope, "act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, f_elems, act,
              {{u, 1}}, {{f.mlp.g, 1}}, u);
    TensorId o = b_.activation(sc + ".down", td);
    Builder::Matmul down;
    down.m = static_cast<std::int64_t>(tokens), down.k = shard_.d_ff, down.n = d_, down.dtype = dtypes_.matmul;
    down.a = {f.mlp.g}, down.b = {weights(layer, ph, p.down)}, down.outputs = {o};
    down.flops.model_share = p.down.model_share;
    if (ring_blocks(layer, down) > 0) {
      f.mlp.out = ring_row_parallel(OpName{ph, base.scope, "down"}, layer, down, &p.down_bias);
      return f.mlp.out;
    }
    b_.matmul(OpName{ph, base.scope, "down"}, ir::OpClass::matmul, down);
    if (p.down_bias.elements > 0) {
      const TensorId o1 = b_.activation(sc + ".down_biased", td);
      b_.vector(OpName{ph, base.scope, "down_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise, td, kAdd,
                {{o, 1}, {p.down_bias.w, 1}}, {{o1, 1}}, o);
      o = o1;
    }
    f.mlp.out = points_.after_row_parallel(b_.graph(), layer, ph, o);
    return f.mlp.out;
  }
  // Mixture of experts: router, top-k, dispatch into per-expert buffers of `capacity` tokens, the expert MLPs
  // as batched matmuls (one product per local expert), combine. Model FLOPs count the routed tokens (top_k
  // per token); hardware FLOPs the full capacity (padding included).
  const ExpertShape e = expert_shape(tokens);
  const int experts = e.experts, local = e.local, k = e.top_k;
  const std::int64_t capacity = e.capacity, fe = e.fe, fu = e.fu;
  const double buffer = e.buffer;
  f.experts.router_logits = b_.activation(sc + ".router", tokens * experts, DType::f32);
  {
    Builder::Matmul r;
    r.m = static_cast<std::int64_t>(tokens), r.k = d_, r.n = experts, r.dtype = dtypes_.matmul;
    r.a = {h}, r.b = {weights(layer, ph, p.experts.router)}, r.outputs = {f.experts.router_logits};
    r.flops.model_share = p.experts.router.model_share;
    b_.matmul(OpName{ph, base.scope, "router"}, ir::OpClass::matmul, r);
  }
  f.experts.gates = b_.activation(sc + ".gates", tokens * k * 2, DType::f32);  // weights and expert indices
  b_.vector(OpName{ph, base.scope, "top_k"}, ir::OpClass::other, ir::VectorOp::reduction, tokens * experts, kRouter,
            {{f.experts.router_logits, 1}}, {{f.experts.gates, 1}});
  f.experts.dispatched = b_.activation(sc + ".dispatched", buffer);
  b_.vector(OpName{ph, base.scope, "dispatch"}, ir::OpClass::other, ir::VectorOp::elementwise, buffer, kDispatch,
            {{h, std::min<double>(k, static_cast<double>(local))}, {f.experts.gates, 1}}, {{f.experts.dispatched, 1}});
  const TensorId disp = points_.expert_dispatch(b_.graph(), layer, ph, f.experts.dispatched);
  f.experts.up = b_.activation(sc + ".experts_up", static_cast<double>(local) * capacity * fu);
  expert_matmul(OpName{ph, base.scope, "experts_up"}, capacity, d_, fu, dtypes_.matmul, disp,
                weights(layer, ph, p.experts.up), f.experts.up, e.routed * d_ * fu, nullptr);
  const double ge = static_cast<double>(local) * capacity * fe;
  f.experts.act = b_.activation(sc + ".experts_act", ge);
  b_.vector(OpName{ph, base.scope, "experts_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, ge, act,
            {{f.experts.up, 1}}, {{f.experts.act, 1}}, f.experts.up);
  f.experts.down = b_.activation(sc + ".experts_down", buffer);
  expert_matmul(OpName{ph, base.scope, "experts_down"}, capacity, fe, d_, dtypes_.matmul, f.experts.act,
                weights(layer, ph, p.experts.down), f.experts.down, e.routed * fe * d_, nullptr);
  const TensorId eo = points_.expert_combine(b_.graph(), layer, ph, f.experts.down);
  const TensorId o = b_.activation(sc + ".combined", td);
  b_.vector(OpName{ph, base.scope, "combine"}, ir::OpClass::other, ir::VectorOp::elementwise, tokens * k * d_,
            kCombine, {{eo, 1}, {f.experts.gates, 1}}, {{o, 1}});
  // The expert down-projections are row parallel over the tensor group (their d_ff is split): partial sums.
  f.mlp.out = points_.after_row_parallel(b_.graph(), layer, ph, o);
  return f.mlp.out;
}

BlockFwd TransformerStep::forward_block(const Stack& st, int l, TensorId x, Phase phase, const std::string& mbp,
                                        std::optional<TensorId> enc_out) {
  const BlockParams& p = st.params[static_cast<std::size_t>(l - st.first)];
  const std::string scope = fmt::format("{}{}{}", mbp, st.name, l);
  const std::string sc = scope + "." + std::string(fused::phase_name(phase));
  const double tokens = static_cast<double>(mb()) * static_cast<double>(st.s);
  // The residual stream: this chip's tokens (all of them without sequence parallelism).
  const double td = norm_tokens(tokens) * static_cast<double>(d_);
  BlockFwd f;
  f.x = x;
  f.attn.norm = norm(OpName{phase, scope, "norm1"}, x, norm_tokens(tokens), p.norm1, &f.attn.norm_stats);
  prefetch(l, phase, p.qkv);
  f.attn.gathered = gather(l, phase, f.attn.norm);
  const TensorId a = attention_sub(OpName{phase, scope, "attn"}, st, l, f.attn.gathered, tokens, p, f, enc_out);
  if (m_.style.block == TransformerBlock::parallel && !st.cross) {
    const TensorId o = mlp_forward(OpName{phase, scope, "mlp"}, l, f.attn.gathered, tokens, p, f);
    f.out = b_.activation(sc + ".out", td);
    b_.vector(OpName{phase, scope, "residual"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td,
              VpuCost{"two residual adds", {2, 0}, ""}, {{x, 1}, {a, 1}, {o, 1}}, {{f.out, 1}}, o);
    return f;
  }
  f.attn.residual = b_.activation(sc + ".residual1", td);
  b_.vector(OpName{phase, scope, "residual1"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
            {{a, 1}, {x, 1}}, {{f.attn.residual, 1}}, a);
  TensorId mlp_in = f.attn.residual;
  if (st.cross) {
    // Cross-attention over the encoder output: queries from the decoder, keys and values from the encoder.
    f.cross.norm = norm(OpName{phase, scope, "norm_x"}, f.attn.residual, tokens, p.cross.norm, &f.cross.norm_stats);
    const double q_elems = tokens * heads_.query * heads_.dim;
    const double enc_tokens = static_cast<double>(mb()) * static_cast<double>(stacks_.front().s);
    const TensorId q = b_.activation(sc + ".xq", q_elems);
    {
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(tokens), mm.k = d_, mm.n = static_cast<std::int64_t>(heads_.query) * heads_.dim;
      mm.dtype = dtypes_.matmul, mm.a = {f.cross.norm}, mm.b = {weights(l, phase, p.cross.q)}, mm.outputs = {q};
      mm.flops.model_share = p.cross.q.model_share;
      b_.matmul(OpName{phase, scope, "xq"}, ir::OpClass::matmul, mm);
    }
    TensorId kx = 0, vx = 0;
    if (mode_.decode) {
      std::tie(kx, vx) = kv_caches_.cross.at({1, l});
    } else {
      const double kv_elems = enc_tokens * heads_.kv * heads_.dim;
      kx = b_.activation(sc + ".xk", kv_elems);
      vx = b_.activation(sc + ".xv", kv_elems);
      std::vector<TensorId> outs{kx, vx};
      if (mode_.inference) {  // prefill fills the cross-attention cache once
        std::tie(kx, vx) = kv_caches_.cross.at({1, l});
        outs = {kx, vx};
      }
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(enc_tokens), mm.k = d_,
      mm.n = 2 * static_cast<std::int64_t>(heads_.kv) * heads_.dim;
      mm.dtype = dtypes_.matmul, mm.a = {*enc_out}, mm.b = {weights(l, phase, p.cross.kv)}, mm.outputs = outs;
      mm.flops.model_share = p.cross.kv.model_share;
      b_.matmul(OpName{phase, scope, "xkv"}, ir::OpClass::matmul, mm);
    }
    const AttentionShape shape{mb(),  st.s,  stacks_.front().s,           heads_.query, heads_.kv, heads_.dim,
                               false, false, share(shard_.replicas.heads)};
    f.cross.core = attention_forward(b_, OpName{phase, scope, "xattn"}, w_.kernels.attention, shape, q, kx, vx);
    const TensorId ax = b_.activation(sc + ".xattn_out", tokens * static_cast<double>(d_));
    {
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(tokens), mm.k = static_cast<std::int64_t>(heads_.query) * heads_.dim, mm.n = d_;
      mm.dtype = dtypes_.matmul, mm.a = {f.cross.core.o}, mm.b = {weights(l, phase, p.cross.out)}, mm.outputs = {ax};
      mm.flops.model_share = p.cross.out.model_share;
      b_.matmul(OpName{phase, scope, "xout"}, ir::OpClass::matmul, mm);
    }
    const TensorId axr = points_.after_row_parallel(b_.graph(), l, phase, ax);
    f.cross.residual = b_.activation(sc + ".residual_x", td);
    b_.vector(OpName{phase, scope, "residual_x"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
              {{axr, 1}, {f.attn.residual, 1}}, {{f.cross.residual, 1}}, axr);
    mlp_in = f.cross.residual;
  }
  f.mlp.norm = norm(OpName{phase, scope, "norm2"}, mlp_in, norm_tokens(tokens), p.norm2, &f.mlp.norm_stats);
  if (!p.moe) prefetch(l, phase, p.up);
  f.mlp.gathered = gather(l, phase, f.mlp.norm);
  const TensorId o = mlp_forward(OpName{phase, scope, "mlp"}, l, f.mlp.gathered, tokens, p, f);
  f.out = b_.activation(sc + ".residual2", td);
  b_.vector(OpName{phase, scope, "residual2"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
            {{o, 1}, {mlp_in, 1}}, {{f.out, 1}}, o);
  return f;
}

TransformerStep::ExpertShape TransformerStep::expert_shape(double tokens) const {
  ExpertShape e;
  e.experts = m_.moe.experts;
  e.local = shard_.moe.experts;
  e.top_k = m_.moe.top_k;
  e.capacity = static_cast<std::int64_t>(
      std::ceil(m_.moe.capacity_factor * tokens * shard_.moe.group * e.top_k / static_cast<double>(e.experts) -
                1e-9));
  // A buffer holds at most `capacity` tokens: under a capacity factor below 1 the tokens routed past it are
  // dropped (they skip the experts), and only the rows that carry tokens count as model FLOPs.
  e.routed = std::min(tokens * shard_.moe.group * e.top_k * static_cast<double>(e.local) / e.experts,
                      static_cast<double>(e.local) * static_cast<double>(e.capacity));
  e.fe = shard_.moe.d_ff;
  e.fu = up_width(true);
  e.buffer = static_cast<double>(e.local) * static_cast<double>(e.capacity) * static_cast<double>(d_);
  return e;
}

void TransformerStep::expert_matmul(const OpName& name, std::int64_t m, std::int64_t k, std::int64_t n, DType dtype,
                                    TensorId a, TensorId b, TensorId out, double useful_macs, const Param* grad) {
  Builder::Matmul mm;
  mm.m = m, mm.k = k, mm.n = n, mm.batch = shard_.moe.experts, mm.dtype = dtype;
  const GradientWrite gw = grad != nullptr ? b_.gradient(*grad, backward_.micro) : GradientWrite{out, false};
  mm.a = {a}, mm.b = {b}, mm.outputs = {gw.tensor};
  const bool recompute = name.phase == Phase::recompute;
  mm.flops.given = Builder::Flops{recompute ? 0.0 : 2.0 * useful_macs,
                            Builder::matmul_flops(m, k, n, shard_.moe.experts, recompute).hardware};
  mm.flops.model_share = share(shard_.replicas.experts);
  if (gw.accumulate) mm.extra_reads.push_back({gw.tensor, 1});
  b_.matmul(name, ir::OpClass::matmul, mm);
}

Builder::Matmul TransformerStep::weight_gradient_matmul(std::int64_t m, std::int64_t k, std::int64_t n,
                                                       std::int64_t batch, std::vector<TensorId> a,
                                                       std::vector<TensorId> dy, const Param& weight,
                                                       const Param* bias) {
  Builder::Matmul mm;
  mm.m = m, mm.k = k, mm.n = n, mm.batch = batch, mm.dtype = dtypes_.weight_grad;
  mm.gathered_along_k = true;  // A^T's contraction runs over the tokens
  mm.flops.model_share = weight.model_share;
  // The whole gradient (under FSDP a full-size buffer, Builder::gradient), or the stored one accumulated into.
  const GradientWrite gw = b_.gradient(weight, backward_.micro);
  mm.a = std::move(a), mm.b = std::move(dy), mm.outputs = {gw.tensor};
  if (gw.accumulate) {
    // Gradient accumulation: the epilogue adds into the gradient of the earlier microbatches.
    mm.extra_reads.push_back({gw.tensor, 1});
    mm.epilogue += kGradientAccumulate.per_element.times(weight.elements);
  }
  if (bias != nullptr && bias->elements > 0) {
    // The bias gradient is the column sum of dY, done on the VPU in the same kernel.
    const GradientWrite bw = b_.gradient(*bias, backward_.micro);
    mm.extra_writes.push_back({bw.tensor, 1});
    mm.epilogue += kAdd.per_element.times(static_cast<double>(k) * static_cast<double>(n));
    if (bw.accumulate) mm.extra_reads.push_back({bw.tensor, 1});
  }
  return mm;
}

}  // namespace tpusim::kernels::transformer
