// The attention core as fused ops (contract in attention.h).
#include "graph/attention.h"

#include <algorithm>
#include <cmath>

namespace tpusim::kernels {
namespace {

using fused::Access;
using fused::TensorId;

OpName sub(const OpName& base, const char* what) { return OpName{base.phase, base.scope, base.name + "." + what}; }

double scores(const AttentionShape& s) {
  return static_cast<double>(s.batch) * s.heads * static_cast<double>(s.s_q) * static_cast<double>(s.s_k);
}

std::int64_t group(const AttentionShape& s) { return s.heads / std::max(1, s.kv_heads); }

// Flash forward: the scale applied to the queries, then per score the causal mask, the relative bias and the
// online softmax.
fused::VpuWork flash_forward_work(const AttentionShape& s) {
  fused::VpuWork w;
  if (s.causal) w += kMask.per_element;
  if (s.relative_bias) w += kAdd.per_element;
  w += kOnlineSoftmax.per_element;
  w = w.times(scores(s));
  w += kScale.per_element.times(static_cast<double>(s.batch) * static_cast<double>(s.s_q) * s.heads * s.d_head);
  return w;
}

}  // namespace

FlashBlocks flash_blocks(const ChipSpec& chip, const AttentionShape& s, DType dtype) {
  const double a = dtype_bytes(dtype), dh = s.d_head;
  const std::int64_t bk = std::min<std::int64_t>(s.s_k, kFlashKeyBlock);
  const double budget = vmem_budget(chip, kGemmVmemFraction);
  auto working_set = [&](double bq) {
    return bq * dh * a + bq * dh * 4 + 2 * bq * 4 + 2.0 * 2.0 * static_cast<double>(bk) * dh * a +
           bq * static_cast<double>(bk) * 4;
  };
  std::int64_t bq = 1;
  while (bq * 2 <= s.s_q) bq *= 2;
  if (bq < s.s_q && s.s_q < 128) bq = s.s_q;
  while (bq > 8 && working_set(static_cast<double>(bq)) > budget) bq /= 2;
  return FlashBlocks{std::max<std::int64_t>(1, bq), std::max<std::int64_t>(1, bk)};
}

AttentionSaved attention_forward(Builder& b, const OpName& name, AttentionImpl impl, const AttentionShape& s,
                                 TensorId q, TensorId k, TensorId v, double kv_times) {
  const DType dt = b.activation_dtype();
  const std::int64_t g = group(s), rows = g * s.s_q, bkv = s.batch * s.kv_heads;
  AttentionSaved saved{q, k, v, 0, 0};
  saved.o = b.activation(name.scope + "." + name.name + ".o",
                         static_cast<double>(s.batch) * static_cast<double>(s.s_q) * s.heads * s.d_head);
  if (impl == AttentionImpl::flash) {
    const FlashBlocks blocks = flash_blocks(b.chip(), s, dt);
    const double nq = std::ceil(static_cast<double>(s.s_q) / static_cast<double>(blocks.bq));
    saved.stats = b.activation(name.scope + "." + name.name + ".lse",
                               static_cast<double>(s.batch) * s.heads * static_cast<double>(s.s_q), DType::f32);
    const TensorId p = b.on_chip(name.scope + "." + name.name + ".p");
    Builder::Matmul qk;
    qk.m = rows, qk.k = s.d_head, qk.n = s.s_k, qk.batch = bkv, qk.dtype = dt;
    qk.a = {q}, qk.b = {k}, qk.outputs = {p};
    qk.a_times = 1.0, qk.b_times = nq * kv_times;
    qk.epilogue = flash_forward_work(s);
    qk.flops.model_share = s.model_share;
    b.matmul(sub(name, "qk"), ir::OpClass::attention, qk);
    Builder::Matmul pv;
    pv.m = rows, pv.k = s.s_k, pv.n = s.d_head, pv.batch = bkv, pv.dtype = dt;
    pv.a = {p}, pv.b = {v}, pv.outputs = {saved.o, saved.stats};
    pv.a_times = 0.0, pv.b_times = nq * kv_times;
    pv.flops.model_share = s.model_share;
    b.matmul(sub(name, "pv"), ir::OpClass::attention, pv);
    return saved;
  }
  // Unfused: S and P in HBM; scale, mask and bias are elementwise ops fusion can fold into the scores matmul.
  const std::string base = name.scope + "." + name.name;
  TensorId sc = b.activation(base + ".scores", scores(s));
  Builder::Matmul qk;
  qk.m = rows, qk.k = s.d_head, qk.n = s.s_k, qk.batch = bkv, qk.dtype = dt;
  qk.a = {q}, qk.b = {k}, qk.outputs = {sc};
  qk.flops.model_share = s.model_share;
  if (kv_times < 1.0) {
    const GemmTiling t = b.tiling(qk);
    qk.b_times = std::ceil(static_cast<double>(rows) / static_cast<double>(t.tm)) * kv_times;
  }
  b.matmul(sub(name, "scores"), ir::OpClass::attention, qk);
  auto elementwise = [&](const char* what, const VpuCost& cost) {
    const TensorId next = b.activation(base + "." + what, scores(s));
    b.vector(sub(name, what), ir::OpClass::attention, ir::VectorOp::elementwise, scores(s), cost, {{sc, 1}},
             {{next, 1}}, sc);
    sc = next;
  };
  elementwise("scale", kScale);
  if (s.causal) elementwise("mask", kMask);
  if (s.relative_bias) elementwise("position_bias", kAdd);
  const TensorId p = b.activation(base + ".probs", scores(s));
  b.vector(sub(name, "softmax"), ir::OpClass::attention, ir::VectorOp::reduction, scores(s), kSoftmax, {{sc, 1}},
           {{p, 1}});
  saved.stats = p;
  Builder::Matmul pv;
  pv.m = rows, pv.k = s.s_k, pv.n = s.d_head, pv.batch = bkv, pv.dtype = dt;
  pv.a = {p}, pv.b = {v}, pv.outputs = {saved.o};
  pv.flops.model_share = s.model_share;
  if (kv_times < 1.0) {
    const GemmTiling t = b.tiling(pv);
    pv.b_times = std::ceil(static_cast<double>(rows) / static_cast<double>(t.tm)) * kv_times;
  }
  b.matmul(sub(name, "pv"), ir::OpClass::attention, pv);
  return saved;
}

AttentionGrads attention_backward(Builder& b, const OpName& name, AttentionImpl impl, const AttentionShape& s,
                                  const AttentionSaved& saved, TensorId d_o) {
  const DType dt = b.activation_dtype();
  const std::int64_t g = group(s), rows = g * s.s_q, bkv = s.batch * s.kv_heads;
  const std::string base = name.scope + "." + name.name;
  const double q_elems = static_cast<double>(s.batch) * static_cast<double>(s.s_q) * s.heads * s.d_head;
  const double kv_elems = static_cast<double>(s.batch) * static_cast<double>(s.s_k) * s.kv_heads * s.d_head;
  AttentionGrads grads;
  grads.dq = b.activation(base + ".dq", q_elems);
  grads.dk = b.activation(base + ".dk", kv_elems);
  grads.dv = b.activation(base + ".dv", kv_elems);
  auto product = [&](const char* what, std::int64_t m, std::int64_t k, std::int64_t n, std::vector<TensorId> a,
                     std::vector<TensorId> bb, std::vector<TensorId> out, std::optional<double> a_times,
                     std::optional<double> b_times, bool recompute, fused::VpuWork epilogue = {}) {
    Builder::Matmul mm;
    mm.m = m, mm.k = k, mm.n = n, mm.batch = bkv, mm.dtype = dt;
    mm.a = std::move(a), mm.b = std::move(bb), mm.outputs = std::move(out);
    mm.a_times = a_times, mm.b_times = b_times;
    mm.flops.given = Builder::matmul_flops(m, k, n, bkv, recompute);
    mm.flops.model_share = s.model_share;
    mm.epilogue = epilogue;
    b.matmul(sub(name, what), ir::OpClass::attention, mm);
  };
  if (impl == AttentionImpl::flash) {
    const FlashBlocks blocks = flash_blocks(b.chip(), s, dt);
    const double nk = std::ceil(static_cast<double>(s.s_k) / static_cast<double>(blocks.bk));
    const TensorId rows_d = b.activation(base + ".rowsum",
                                         static_cast<double>(s.batch) * s.heads * static_cast<double>(s.s_q),
                                         DType::f32);
    b.vector(sub(name, "rowsum"), ir::OpClass::attention, ir::VectorOp::reduction, q_elems, kAttentionBackwardRows,
             {{saved.o, 1}, {d_o, 1}}, {{rows_d, 1}});
    const TensorId p = b.on_chip(base + ".p"), ds = b.on_chip(base + ".ds");
    // Recompute P (hardware FLOPs only), then dS = P (dO V^T - D) in the next product's epilogue.
    fused::VpuWork recompute;
    if (s.causal) recompute += kMask.per_element;
    if (s.relative_bias) recompute += kAdd.per_element;
    recompute += kSoftmaxRecompute.per_element;
    {
      Builder::Matmul mm;
      mm.m = rows, mm.k = s.d_head, mm.n = s.s_k, mm.batch = bkv, mm.dtype = dt;
      mm.a = {saved.q}, mm.b = {saved.k}, mm.outputs = {p};
      mm.a_times = nk, mm.b_times = 1.0;
      mm.extra_reads = {{saved.stats, nk}, {rows_d, nk}};
      mm.flops.given = Builder::matmul_flops(rows, s.d_head, s.s_k, bkv, true);
      mm.epilogue = recompute.times(scores(s));
      b.matmul(sub(name, "recompute"), ir::OpClass::attention, mm);
    }
    product("dp", rows, s.d_head, s.s_k, {d_o}, {saved.v}, {ds}, nk, 1.0, false,
            kSoftmaxBackward.per_element.times(scores(s)));
    // dV, dQ, dK take their other operand from the blocks already in VMEM.
    product("dv", s.s_k, rows, s.d_head, {p}, {d_o}, {grads.dv}, 0.0, 0.0, false);
    product("dq", rows, s.s_k, s.d_head, {ds}, {saved.k}, {grads.dq}, 0.0, 0.0, false);
    product("dk", s.s_k, rows, s.d_head, {ds}, {saved.q}, {grads.dk}, 0.0, 0.0, false);
    return grads;
  }
  const TensorId dp = b.activation(base + ".dprobs", scores(s));
  const TensorId ds0 = b.activation(base + ".dscores_raw", scores(s));
  const TensorId ds = b.activation(base + ".dscores", scores(s));
  product("dv", s.s_k, rows, s.d_head, {saved.stats}, {d_o}, {grads.dv}, std::nullopt, std::nullopt, false);
  product("dp", rows, s.d_head, s.s_k, {d_o}, {saved.v}, {dp}, std::nullopt, std::nullopt, false);
  b.vector(sub(name, "softmax"), ir::OpClass::attention, ir::VectorOp::reduction, scores(s), kSoftmaxBackwardRows,
           {{saved.stats, 1}, {dp, 1}}, {{ds0, 1}});
  b.vector(sub(name, "scale"), ir::OpClass::attention, ir::VectorOp::elementwise, scores(s), kScale, {{ds0, 1}},
           {{ds, 1}}, ds0);
  product("dq", rows, s.s_k, s.d_head, {ds}, {saved.k}, {grads.dq}, std::nullopt, std::nullopt, false);
  product("dk", s.s_k, rows, s.d_head, {ds}, {saved.q}, {grads.dk}, std::nullopt, std::nullopt, false);
  return grads;
}

}  // namespace tpusim::kernels
