// A transformer block's backward (transformer_step.h), its rematerialization under the remat policy and the
// host offload of what the policy keeps in host memory.
#include "zoo/transformer_step.h"

namespace tpusim::kernels::transformer {

TensorId TransformerStep::norm_backward(const OpName& name, TensorId dy, TensorId x, TensorId stats, double tokens,
                                        const Param& gamma) {
  const std::string base = name.scope + "." + std::string(fused::phase_name(name.phase)) + "." + name.name;
  const TensorId dx = b_.activation(base, tokens * static_cast<double>(d_));
  std::vector<Access> reads{{dy, 1}, {x, 1}, {stats, 1}, {gamma.w, 1}};
  const GradientWrite gw = b_.gradient(gamma, backward_.micro);
  if (gw.accumulate) reads.push_back({gw.tensor, 1});
  b_.vector(name, ir::OpClass::norm_activation, ir::VectorOp::reduction, tokens * static_cast<double>(d_),
            norm_cost(true), reads, {{dx, 1}, {gw.tensor, 1}});
  points_.norm_statistics(b_.graph(), base, name.phase, stats, dx);
  return dx;
}

TensorId TransformerStep::mlp_backward(const OpName& base, int layer, TensorId dout, TensorId h, double tokens,
                                       const BlockParams& p, const BlockFwd& f) {
  const std::string sc = base.scope + ".bwd";
  const Phase ph = Phase::backward;
  const VpuCost& act = m_.style.mlp == MlpKind::gelu     ? kGeluBackward
                       : m_.style.mlp == MlpKind::relu   ? kReluBackward
                       : m_.style.mlp == MlpKind::swiglu ? kSwigluBackward
                                                   : kGegluBackward;
  const auto t = static_cast<std::int64_t>(tokens);
  const double td = tokens * static_cast<double>(d_);
  if (!p.moe) {
    const std::int64_t fu = up_width(false), fd = shard_.d_ff;
    const TensorId dg = b_.activation(sc + ".dact", tokens * static_cast<double>(fd));
    bool together = false;  // down.dx and down.dw run chunk by chunk on the gathered dY
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = d_, mm.n = fd, mm.dtype = dtypes_.matmul, mm.a = {dout}, mm.b = {weights(layer, ph, p.down)};
      mm.outputs = {dg};
      mm.flops.model_share = p.down.model_share;
      const OpName dw{ph, base.scope, "down.dw"};
      together = input_and_weight_gradient(OpName{ph, base.scope, "down.dx"}, mm, dw, fd, t, d_, {f.mlp.g}, {dout},
                                           p.down, &p.down_bias);
      if (!together) b_.matmul(OpName{ph, base.scope, "down.dx"}, ir::OpClass::matmul, mm);
    }
    const TensorId du = b_.activation(sc + ".dup", tokens * static_cast<double>(fu));
    b_.vector(OpName{ph, base.scope, "act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              tokens * static_cast<double>(fd), act, {{dg, 1}, {f.mlp.u, 1}}, {{du, 1}}, dg);
    if (!together) {
      weight_gradient(OpName{ph, base.scope, "down.dw"}, ir::OpClass::matmul, fd, t, d_, 1, {f.mlp.g}, {dout}, p.down,
                      &p.down_bias);
    }
    const TensorId dh = b_.activation(sc + ".dh_mlp", td);
    std::optional<TensorId> ring;
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = fu, mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {du}, mm.b = {weights(layer, ph, p.up)};
      mm.outputs = {dh};
      mm.flops.model_share = p.up.model_share;
      if (ring_blocks(layer, mm) > 0) ring = ring_row_parallel(OpName{ph, base.scope, "up.dx"}, layer, mm, nullptr);
      else b_.matmul(OpName{ph, base.scope, "up.dx"}, ir::OpClass::matmul, mm);
    }
    weight_gradient(OpName{ph, base.scope, "up.dw"}, ir::OpClass::matmul, d_, t, fu, 1, {h}, {du}, p.up, &p.up_bias);
    return ring ? *ring : points_.after_row_parallel(b_.graph(), layer, ph, dh);
  }
  // Mixture of experts, in reverse.
  const ExpertShape e = expert_shape(tokens);
  const int experts = e.experts, local = e.local, k = e.top_k;
  const std::int64_t capacity = e.capacity, fe = e.fe, fu = e.fu;
  const double buffer = e.buffer;
  const TensorId deo = b_.activation(sc + ".dexperts_out", buffer);
  const TensorId dgates = b_.activation(sc + ".dgates", tokens * k, DType::f32);
  b_.vector(OpName{ph, base.scope, "combine"}, ir::OpClass::other, ir::VectorOp::elementwise, tokens * k * d_,
            kCombine, {{dout, 1}, {f.experts.down, 1}, {f.experts.gates, 1}}, {{deo, 1}, {dgates, 1}});
  // A gate's gradient is the dot product of the output gradient with its expert's output, of which a
  // tensor-parallel expert holds partial sums: all-reduced over the tensor group (every token's, for the router).
  const TensorId dgates_sum = points_.tensor_all_reduce(b_.graph(), layer, ph, dgates);
  const TensorId deo_local = points_.expert_combine(b_.graph(), layer, ph, deo);
  const TensorId deg = b_.activation(sc + ".dexperts_act", static_cast<double>(local) * capacity * fe);
  expert_matmul(OpName{ph, base.scope, "experts_down.dx"}, capacity, d_, fe, dtypes_.matmul, deo_local,
                weights(layer, ph, p.experts.down), deg, e.routed * d_ * fe, nullptr);
  const TensorId deu = b_.activation(sc + ".dexperts_up", static_cast<double>(local) * capacity * fu);
  b_.vector(OpName{ph, base.scope, "experts_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
            static_cast<double>(local) * capacity * fe, act, {{deg, 1}, {f.experts.up, 1}}, {{deu, 1}}, deg);
  expert_matmul(OpName{ph, base.scope, "experts_down.dw"}, fe, capacity, d_, dtypes_.weight_grad, f.experts.act,
                deo_local, *p.experts.down.grad, e.routed * d_ * fe, &p.experts.down);
  const TensorId ddisp = b_.activation(sc + ".ddispatched", buffer);
  expert_matmul(OpName{ph, base.scope, "experts_up.dx"}, capacity, fu, d_, dtypes_.matmul, deu,
                weights(layer, ph, p.experts.up), ddisp, e.routed * d_ * fu, nullptr);
  expert_matmul(OpName{ph, base.scope, "experts_up.dw"}, d_, capacity, fu, dtypes_.weight_grad,
                f.experts.dispatched, deu, *p.experts.up.grad, e.routed * d_ * fu, &p.experts.up);
  const TensorId ddisp_local = points_.expert_dispatch(b_.graph(), layer, ph, ddisp);
  const TensorId dh_experts = b_.activation(sc + ".dh_experts", td);
  b_.vector(OpName{ph, base.scope, "dispatch"}, ir::OpClass::other, ir::VectorOp::elementwise, buffer, kDispatch,
            {{ddisp_local, 1}, {f.experts.gates, 1}}, {{dh_experts, 1}});
  const TensorId dh_experts_sum = points_.after_row_parallel(b_.graph(), layer, ph, dh_experts);
  const TensorId drl = b_.activation(sc + ".drouter", tokens * experts, DType::f32);
  b_.vector(OpName{ph, base.scope, "top_k"}, ir::OpClass::other, ir::VectorOp::reduction, tokens * experts, kRouter,
            {{dgates_sum, 1}, {f.experts.router_logits, 1}}, {{drl, 1}});
  // The router's input gradient for this chip's tokens only (sequence parallelism: its shard of the rows).
  const double tdn = norm_tokens(tokens) * static_cast<double>(d_);
  const TensorId dh_router = b_.activation(sc + ".dh_router", tdn);
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(norm_tokens(tokens)), mm.k = experts, mm.n = d_, mm.dtype = dtypes_.matmul;
    mm.a = {drl}, mm.b = {weights(layer, ph, p.experts.router)};
    mm.outputs = {dh_router};
    mm.flops.model_share = share(shard_.replicas.tokens, shard_.sequence_shards);  // this chip's tokens only
    b_.matmul(OpName{ph, base.scope, "router.dx"}, ir::OpClass::matmul, mm);
  }
  weight_gradient(OpName{ph, base.scope, "router.dw"}, ir::OpClass::matmul, d_, t, experts, 1, {h}, {drl},
                  p.experts.router, nullptr);
  const TensorId dh = b_.activation(sc + ".dh_mlp", tdn);
  b_.vector(OpName{ph, base.scope, "dh_sum"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
            {{dh_router, 1}, {dh_experts_sum, 1}}, {{dh, 1}}, dh_router);
  return dh;
}

std::size_t TransformerStep::host_copy(const std::string& label, Phase phase, TensorId from, TensorId to) {
  fused::Op op;
  op.label = label;
  op.cls = ir::OpClass::host;
  op.unit = fused::Unit::dma;
  op.phase = phase;
  op.dtype = b_.graph().tensor(from).dtype;
  op.reads = {{from, 1}};
  op.writes = {{to, 1}};
  return b_.graph().add(std::move(op));
}

void TransformerStep::offload(const BlockFwd& f, bool moe, const std::string& scope) {
  const std::array<TensorId, kRematTags> t = tagged(f, moe);
  for (std::size_t i = 0; i < kRematTags; ++i) {
    if ((*memory_.policy)[i] != RematPlacement::offload || memory_.host_copies.count(t[i]) > 0) continue;
    const fused::Tensor& src = b_.graph().tensor(t[i]);
    const std::string name = fmt::format("{}.offload.{}", scope, remat_tag_name(static_cast<RematTag>(i)));
    const TensorId copy = b_.tensor(name + ".host", src.elements, src.dtype, TensorKind::host_offload);
    host_copy(name, Phase::forward, t[i], copy);
    memory_.host_copies[t[i]] = copy;
  }
}

BlockFwd TransformerStep::rematerialize(const Stack& st, int l, const BlockFwd& kept, const std::string& mbp,
                                        std::optional<TensorId> enc_out, std::size_t& start) {
  const bool moe = st.params[static_cast<std::size_t>(l - st.first)].moe;
  const std::array<TensorId, kRematTags> kept_tags = tagged(kept, moe);
  const std::string scope = fmt::format("{}{}{}", mbp, st.name, l);
  // The tensor the backward reads for each tag that is not recomputed: the kept one, or its copy fetched back.
  std::array<std::optional<TensorId>, kRematTags> held;
  for (std::size_t i = 0; i < kRematTags; ++i) {
    if ((*memory_.policy)[i] == RematPlacement::device) held[i] = kept_tags[i];
    if ((*memory_.policy)[i] != RematPlacement::offload) continue;
    const auto copy = memory_.host_copies.find(kept_tags[i]);
    if (copy == memory_.host_copies.end())
      throw std::logic_error("remat: " + scope + " fetches a tensor never offloaded");
    const fused::Tensor& src = b_.graph().tensor(kept_tags[i]);
    const std::string name = fmt::format("{}.fetch.{}", scope, remat_tag_name(static_cast<RematTag>(i)));
    const TensorId back = b_.activation(name, src.elements, src.dtype);
    const std::size_t fetch = host_copy(name, Phase::backward, copy->second, back);
    // Prefetched: started with the backward of the block after this one, so the copy overlaps its compute.
    if (backward_.last_start) b_.graph().ops()[fetch].after = {*backward_.last_start};
    held[i] = back;
  }
  start = b_.graph().ops().size();
  const auto input = static_cast<std::size_t>(RematTag::decoder_layer_input);
  BlockFwd rec = forward_block(st, l, held[input].value_or(kept.x), Phase::recompute, mbp, enc_out);
  const std::array<TensorId, kRematTags> rec_tags = tagged(rec, moe);
  std::map<TensorId, TensorId> use;  // recomputed tensor -> what is read instead
  for (std::size_t i = 0; i < kRematTags; ++i) {
    if (held[i] && rec_tags[i] != *held[i]) use[rec_tags[i]] = *held[i];
  }
  auto& ops = b_.graph().ops();
  for (std::size_t i = start; i < ops.size(); ++i) {
    for (Access& r : ops[i].reads) {
      if (const auto it = use.find(r.tensor); it != use.end()) r.tensor = it->second;
    }
    // An epilogue of a producer that is not recomputed runs on its own, reading the held tensor from HBM.
    if (ops[i].passes.fuse_into && use.count(*ops[i].passes.fuse_into) > 0) ops[i].passes.fuse_into.reset();
  }
  for_each_tensor(rec, [&](TensorId& t) {
    if (const auto it = use.find(t); it != use.end()) t = it->second;
  });
  return rec;
}

void TransformerStep::drop_unread(std::size_t start, std::size_t end) {
  auto& ops = b_.graph().ops();
  std::vector<bool> read(b_.graph().tensors().size(), false);
  for (std::size_t i = end; i < ops.size(); ++i) {
    for (const Access& r : ops[i].reads) read[r.tensor] = true;
  }
  for (std::size_t i = end; i-- > start;) {
    const bool needed = std::any_of(ops[i].writes.begin(), ops[i].writes.end(),
                                    [&](const Access& w) { return read[w.tensor]; });
    if (!needed) {
      ops[i].passes.dropped = true;
      continue;
    }
    for (const Access& r : ops[i].reads) read[r.tensor] = true;
  }
}

TensorId TransformerStep::backward_block(const Stack& st, int l, const BlockFwd& f, TensorId dout,
                                         const std::string& mbp, std::optional<TensorId> enc_out,
                                         std::optional<TensorId>& d_enc) {
  const BlockParams& p = st.params[static_cast<std::size_t>(l - st.first)];
  const std::string scope = fmt::format("{}{}{}", mbp, st.name, l);
  const std::string sc = scope + ".bwd";
  const Phase ph = Phase::backward;
  const double tokens = static_cast<double>(mb()) * static_cast<double>(st.s);
  const auto t = static_cast<std::int64_t>(tokens);
  const double td = tokens * static_cast<double>(d_);
  const double tdn = norm_tokens(tokens) * static_cast<double>(d_);  // the residual stream on this chip
  const std::int64_t hd = static_cast<std::int64_t>(heads_.query) * heads_.dim;
  const std::size_t block_start = b_.graph().ops().size();  // this block's first backward op
  // A norm output with every token for a weight gradient: the rematerialized forward's, else gathered again
  // from the kept shard (sequence parallelism; without it the kept tensor itself). Called right after the
  // output gradient's gather, it starts when that one is done (Megatron-LM launches it then, overlapped with
  // the input-gradient matmul) instead of sharing the links with it on the critical path.
  auto all_tokens = [&](TensorId shard, TensorId recomputed) {
    if (w_.memory.remat == Remat::full) return recomputed;
    const std::size_t before = b_.graph().ops().size();
    const TensorId out = gather(l, ph, shard);
    auto& ops = b_.graph().ops();
    if (ops.size() > before && before > 0 && ops[before - 1].unit == fused::Unit::ici) {
      ops.back().after.push_back(before - 1);
    }
    return out;
  };

  // Attention sub-block backward, given the gradient at its output (after the residual add) `dy` and the
  // norm output `h`, both with every token; returns the gradient of its norm's output (this chip's tokens),
  // not yet including the residual path.
  auto attention_backward_sub = [&](TensorId dy, TensorId h, TensorId x_in, TensorId stats, const Param& norm_w,
                                    bool cross) -> TensorId {
    const Param& out_w = cross ? p.cross.out : p.out;
    const AttentionSaved& saved = cross ? f.cross.core : f.attn.core;
    const char* tag = cross ? "x" : "";
    const TensorId d_o = b_.activation(sc + "." + tag + "dattn", tokens * hd);
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = d_, mm.n = hd, mm.dtype = dtypes_.matmul, mm.a = {dy}, mm.b = {weights(l, ph, out_w)};
      mm.outputs = {d_o};
      mm.flops.model_share = out_w.model_share;
      const OpName dx{ph, scope, std::string(tag) + "out.dx"}, dw{ph, scope, std::string(tag) + "out.dw"};
      if (!input_and_weight_gradient(dx, mm, dw, hd, t, d_, {saved.o}, {dy}, out_w, cross ? nullptr : &p.out_bias)) {
        b_.matmul(dx, ir::OpClass::matmul, mm);
        weight_gradient(dw, ir::OpClass::matmul, hd, t, d_, 1, {saved.o}, {dy}, out_w, cross ? nullptr : &p.out_bias);
      }
    }
    const std::int64_t s_k = cross ? stacks_.front().s : st.s_k;
    AttentionShape shape{mb(), st.s, s_k, heads_.query, heads_.kv, heads_.dim, cross ? false : st.causal,
                         !cross && m_.style.position == PositionKind::relative && st.relative_table.has_value(),
                         share(shard_.replicas.heads)};
    AttentionSaved use = saved;
    if (!cross && shard_.context_shards > 1 && w_.memory.remat != Remat::full) {
      // Context parallelism: only this chip's keys and values were kept; gathered again, started once this
      // block's backward has started (its first op done), so it overlaps the MLP's backward.
      const std::size_t before = b_.graph().ops().size();
      const std::vector<TensorId> kv = points_.gather_keys_values(b_.graph(), l, ph, {f.attn.k_local, f.attn.v_local});
      auto& ops = b_.graph().ops();
      for (std::size_t i = before; i < ops.size(); ++i) {
        if (block_start < before) ops[i].after.push_back(block_start);
      }
      use.k = kv[0], use.v = kv[1];
    }
    if (!cross && w_.memory.remat == Remat::selective && w_.kernels.attention == AttentionImpl::unfused) {
      // Selective rematerialization: recompute the attention core (scores, softmax, P) instead of keeping it.
      use = attention_forward(b_, OpName{Phase::recompute, scope, "attention"}, w_.kernels.attention, shape, saved.q,
                              saved.k, saved.v);
      use.o = saved.o;
    }
    const AttentionGrads g = attention_backward(b_, OpName{ph, scope, std::string(tag) + "attention"},
                                                w_.kernels.attention, shape, use, d_o);
    if (cross) {
      // Queries from the decoder; keys and values from the encoder output, whose gradient accumulates over layers.
      const TensorId dh_q = b_.activation(sc + ".dxq", td);
      Builder::Matmul mm;
      mm.m = t, mm.k = hd, mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {g.dq}, mm.b = {weights(l, ph, p.cross.q)};
      mm.outputs = {dh_q};
      mm.flops.model_share = p.cross.q.model_share;
      b_.matmul(OpName{ph, scope, "xq.dx"}, ir::OpClass::matmul, mm);
      weight_gradient(OpName{ph, scope, "xq.dw"}, ir::OpClass::matmul, d_, t, hd, 1, {h}, {g.dq}, p.cross.q, nullptr);
      const double enc_tokens = static_cast<double>(mb()) * static_cast<double>(stacks_.front().s);
      const auto te = static_cast<std::int64_t>(enc_tokens);
      const std::int64_t kvw = 2 * static_cast<std::int64_t>(heads_.kv) * heads_.dim;
      const TensorId de = b_.activation(sc + ".denc_part", enc_tokens * static_cast<double>(d_));
      Builder::Matmul kvm;
      kvm.m = te, kvm.k = kvw, kvm.n = d_, kvm.dtype = dtypes_.matmul, kvm.a = {g.dk, g.dv},
      kvm.b = {weights(l, ph, p.cross.kv)};
      kvm.outputs = {de};
      kvm.flops.model_share = p.cross.kv.model_share;
      b_.matmul(OpName{ph, scope, "xkv.dx"}, ir::OpClass::matmul, kvm);
      weight_gradient(OpName{ph, scope, "xkv.dw"}, ir::OpClass::matmul, d_, te, kvw, 1, {*enc_out}, {g.dk, g.dv},
                      p.cross.kv, nullptr);
      if (d_enc) {
        const TensorId sum = b_.activation(sc + ".denc", enc_tokens * static_cast<double>(d_));
        b_.vector(OpName{ph, scope, "denc_sum"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
                  enc_tokens * static_cast<double>(d_), kAdd, {{de, 1}, {*d_enc, 1}}, {{sum, 1}}, de);
        d_enc = sum;
      } else {
        d_enc = de;
      }
      return norm_backward(OpName{ph, scope, "norm_x"}, dh_q, x_in, stats, tokens, norm_w);
    }
    TensorId dq = g.dq, dk = g.dk, dv = g.dv;
    if (shard_.context_shards > 1) {
      // Every position's key and value gradients, summed over the sequence group into this chip's positions.
      const std::vector<TensorId> dkv = points_.scatter_key_value_gradients(b_.graph(), l, {dk, dv});
      dk = dkv[0], dv = dkv[1];
    }
    if (m_.style.position == PositionKind::rotary) {
      const TensorId dq2 = b_.activation(sc + ".dq_rotary", tokens * hd);
      const TensorId dk2 = b_.activation(sc + ".dk_rotary", tokens * heads_.kv * heads_.dim);
      b_.vector(OpName{ph, scope, "rotary"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
                tokens * (heads_.query + heads_.kv) * heads_.dim, kRotary, {{dq, 1}, {dk, 1}}, {{dq2, 1}, {dk2, 1}},
                dq);
      dq = dq2, dk = dk2;
    }
    const TensorId dh1 = b_.activation(sc + ".dh_attn", td);
    std::optional<TensorId> ring;
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = qkv_width(), mm.n = d_, mm.dtype = dtypes_.matmul, mm.a = {dq, dk, dv};
      mm.b = {weights(l, ph, p.qkv)}, mm.outputs = {dh1};
      mm.flops.model_share = p.qkv.model_share;
      if (ring_blocks(l, mm) > 0) ring = ring_row_parallel(OpName{ph, scope, "qkv.dx"}, l, mm, nullptr);
      else b_.matmul(OpName{ph, scope, "qkv.dx"}, ir::OpClass::matmul, mm);
    }
    weight_gradient(OpName{ph, scope, "qkv.dw"}, ir::OpClass::matmul, d_, t, qkv_width(), 1, {h}, {dq, dk, dv},
                    p.qkv, &p.qkv_bias);
    return ring ? *ring : points_.after_row_parallel(b_.graph(), l, ph, dh1);
  };

  const double nt = norm_tokens(tokens);
  if (m_.style.block == TransformerBlock::parallel && !st.cross) {
    // out = x + attn(h) + mlp(h), h = norm1(x): dh = dh_attn + dh_mlp, dx = dout + norm1'(dh).
    const TensorId dout_all = gather(l, ph, dout), h1 = all_tokens(f.attn.norm, f.attn.gathered);
    const TensorId dh_mlp = mlp_backward(OpName{ph, scope, "mlp"}, l, dout_all, h1, tokens, p, f);
    const TensorId dh_attn = attention_backward_sub(dout_all, h1, f.x, f.attn.norm_stats, p.norm1, false);
    const TensorId dh = b_.activation(sc + ".dh", tdn);
    b_.vector(OpName{ph, scope, "dh_sum"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
              {{dh_attn, 1}, {dh_mlp, 1}}, {{dh, 1}}, dh_attn);
    const TensorId dxn = norm_backward(OpName{ph, scope, "norm1"}, dh, f.x, f.attn.norm_stats, nt, p.norm1);
    const TensorId dx = b_.activation(sc + ".dx", tdn);
    b_.vector(OpName{ph, scope, "residual"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
              {{dxn, 1}, {dout, 1}}, {{dx, 1}}, dxn);
    return dx;
  }
  const TensorId mlp_in = st.cross ? f.cross.residual : f.attn.residual;
  if (!p.moe) prefetch(l, ph, p.down);
  const TensorId dout_all = gather(l, ph, dout), h2 = all_tokens(f.mlp.norm, f.mlp.gathered);
  const TensorId dh2 = mlp_backward(OpName{ph, scope, "mlp"}, l, dout_all, h2, tokens, p, f);
  const TensorId dn2 = norm_backward(OpName{ph, scope, "norm2"}, dh2, mlp_in, f.mlp.norm_stats, nt, p.norm2);
  TensorId dmid = b_.activation(sc + ".residual2", tdn);
  b_.vector(OpName{ph, scope, "residual2"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
            {{dn2, 1}, {dout, 1}}, {{dmid, 1}}, dn2);
  if (st.cross) {
    const TensorId dnx =
        attention_backward_sub(dmid, f.cross.norm, f.attn.residual, f.cross.norm_stats, p.cross.norm, true);
    const TensorId d1 = b_.activation(sc + ".residual_x", td);
    b_.vector(OpName{ph, scope, "residual_x"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
              {{dnx, 1}, {dmid, 1}}, {{d1, 1}}, dnx);
    dmid = d1;
  }
  prefetch(l, ph, p.out);
  const TensorId dmid_all = gather(l, ph, dmid), h1 = all_tokens(f.attn.norm, f.attn.gathered);
  const TensorId dh1 = attention_backward_sub(dmid_all, h1, f.x, f.attn.norm_stats, p.norm1, false);
  const TensorId dn1 = norm_backward(OpName{ph, scope, "norm1"}, dh1, f.x, f.attn.norm_stats, nt, p.norm1);
  const TensorId dx = b_.activation(sc + ".dx", tdn);
  b_.vector(OpName{ph, scope, "residual1"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
            {{dn1, 1}, {dmid, 1}}, {{dx, 1}}, dn1);
  return dx;
}

}  // namespace tpusim::kernels::transformer
