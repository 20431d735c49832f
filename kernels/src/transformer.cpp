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
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "attention.h"
#include "fused_ops.h"
#include "model_lowering.h"

namespace tpusim::kernels {
namespace {

using fused::Access;
using fused::Phase;
using fused::TensorId;
using fused::TensorKind;

struct BlockParams {
  Param norm1, qkv, qkv_bias, out, out_bias, norm2, up, up_bias, down, down_bias;
  // decoder of an encoder-decoder: cross-attention
  Param norm_x, q_x, kv_x, out_x;
  // mixture of experts
  Param router, experts_up, experts_down;
  bool moe = false;
  [[nodiscard]] std::vector<const Param*> all() const {
    std::vector<const Param*> out_list;
    for (const Param* p : {&norm1, &qkv, &qkv_bias, &out, &out_bias, &norm2, &up, &up_bias, &down, &down_bias,
                           &norm_x, &q_x, &kv_x, &out_x, &router, &experts_up, &experts_down}) {
      if (p->elements > 0) out_list.push_back(p);
    }
    return out_list;
  }
};

// One stack of blocks: the decoder (or encoder-only) stack, or an encoder-decoder's encoder or decoder.
struct Stack {
  std::string name;  // scope prefix: "layer", "enc.layer", "dec.layer"
  int first = 0, count = 0;
  bool causal = true;
  bool cross = false;   // blocks attend to the encoder output
  std::int64_t s = 0;   // query tokens per sequence in this step
  std::int64_t s_k = 0; // key tokens per sequence (the KV cache length when decoding)
  std::vector<BlockParams> params;
  std::optional<TensorId> relative_table;  // T5: the stack's position-bias table
};

// What a block's backward reads of its forward.
struct BlockFwd {
  TensorId x = 0, h1 = 0, stats1 = 0;
  TensorId h1g = 0, h2g = 0;  // the norm outputs with every token (sequence parallelism: gathered; else h1, h2)
  AttentionSaved attn;
  TensorId q_pre = 0, k_pre = 0;  // before rotary (for its backward: none needed beyond the op)
  TensorId k_local = 0, v_local = 0;  // context parallelism: this chip's positions' keys and values (attn.k, attn.v
                                      // are every position's, gathered)
  TensorId x1 = 0, h2 = 0, stats2 = 0;
  TensorId hx = 0, statsx = 0, x1x = 0;  // cross-attention
  AttentionSaved xattn;
  TensorId u = 0, g = 0;                                      // dense MLP
  TensorId router_logits = 0, gates = 0, dispatched = 0, eu = 0, eg = 0, eo = 0;  // mixture of experts
  TensorId attn_out = 0, mlp_out = 0;  // the sub-blocks' outputs (after their row-parallel reduction)
  TensorId out = 0;
};

// Calls fn on every tensor field of f (keep in step with BlockFwd).
template <class F>
void for_each_tensor(BlockFwd& f, F fn) {
  for (TensorId* t : {&f.x, &f.h1, &f.stats1, &f.h1g, &f.h2g, &f.attn.q, &f.attn.k, &f.attn.v, &f.attn.o,
                      &f.attn.stats, &f.q_pre, &f.k_pre, &f.k_local, &f.v_local, &f.x1, &f.h2, &f.stats2, &f.hx,
                      &f.statsx, &f.x1x, &f.xattn.q, &f.xattn.k, &f.xattn.v, &f.xattn.o, &f.xattn.stats, &f.u, &f.g,
                      &f.router_logits, &f.gates, &f.dispatched, &f.eu, &f.eg, &f.eo, &f.attn_out, &f.mlp_out,
                      &f.out}) {
    fn(*t);
  }
}

// The tensor of each RematTag in a block's forward (MaxText's checkpoint names): the block input; the
// self-attention's queries, keys and values as the attention core reads them (after bias and rotary, which
// recompute in the projection's epilogue; this chip's positions under context parallelism); the attention
// core's output (context); the attention's and the MLP's outputs after their row-parallel reduction
// (out_proj, mlpwo); the MLP's input projection (mlpwi: both halves of a gated one; a mixture of experts'
// expert up-projections).
std::array<TensorId, kRematTags> tagged(const BlockFwd& f, bool moe) {
  std::array<TensorId, kRematTags> t{};
  t[static_cast<std::size_t>(RematTag::decoder_layer_input)] = f.x;
  t[static_cast<std::size_t>(RematTag::query_proj)] = f.attn.q;
  t[static_cast<std::size_t>(RematTag::key_proj)] = f.k_local;
  t[static_cast<std::size_t>(RematTag::value_proj)] = f.v_local;
  t[static_cast<std::size_t>(RematTag::context)] = f.attn.o;
  t[static_cast<std::size_t>(RematTag::out_proj)] = f.attn_out;
  t[static_cast<std::size_t>(RematTag::mlpwi)] = moe ? f.eu : f.u;
  t[static_cast<std::size_t>(RematTag::mlpwo)] = f.mlp_out;
  return t;
}

// The placement of each tag under a named policy (kernels/README.md, "Rematerialization"); nullopt for none,
// full and selective, which do not go by tags. MaxText's policies name which tags are saved
// (jax.checkpoint_policies.save_only_these_names) or offloaded; `minimal` saves the outputs of the dots
// without batch dimensions (checkpoint_dots_with_no_batch_dims), in a block the four projections;
// save_dot_except_logits_ffn1 saves, as its name says, every dot of the block but the attention logits and
// the MLP's first projection. The block input is always kept: it is the scan carry every recomputation starts from.
std::optional<RematPlacements> policy_placements(const WorkloadSpec& w) {
  using T = RematTag;
  auto only = [](std::initializer_list<T> saved, RematPlacement how) {
    RematPlacements p;
    p.fill(RematPlacement::remat);
    p[static_cast<std::size_t>(T::decoder_layer_input)] = RematPlacement::device;
    for (const T t : saved) p[static_cast<std::size_t>(t)] = how;
    return p;
  };
  constexpr RematPlacement dev = RematPlacement::device, host = RematPlacement::offload;
  switch (w.remat) {
    case Remat::none:
    case Remat::full:
    case Remat::selective: return std::nullopt;
    case Remat::minimal: return only({T::query_proj, T::key_proj, T::value_proj, T::out_proj, T::mlpwi, T::mlpwo}, dev);
    case Remat::save_dot_except_mlpwi:
      return only({T::query_proj, T::key_proj, T::value_proj, T::out_proj, T::mlpwo}, dev);
    case Remat::save_dot_except_mlp: return only({T::query_proj, T::key_proj, T::value_proj, T::out_proj}, dev);
    case Remat::save_dot_with_context_except_mlp:
      return only({T::query_proj, T::key_proj, T::value_proj, T::context, T::out_proj}, dev);
    case Remat::save_dot_except_logits_ffn1:
      return only({T::query_proj, T::key_proj, T::value_proj, T::context, T::out_proj, T::mlpwo}, dev);
    case Remat::save_qkv_proj: return only({T::query_proj, T::key_proj, T::value_proj}, dev);
    case Remat::save_out_proj: return only({T::out_proj}, dev);
    case Remat::qkv_proj_offloaded: return only({T::query_proj, T::key_proj, T::value_proj}, host);
    case Remat::minimal_offloaded:
      return only({T::query_proj, T::key_proj, T::value_proj, T::out_proj, T::mlpwi, T::mlpwo}, host);
    case Remat::custom: return w.remat_custom;
  }
  return std::nullopt;
}

class TransformerStep {
 public:
  TransformerStep(const WorkloadSpec& w, const ChipSpec& chip, const ShardView& shard, CollectivePoints& points)
      : w_(w), m_(w.model.transformer), shard_(shard), points_(points), b_(chip, w.dtype) {
    train_ = w.step == StepKind::train;
    decode_ = w.step == StepKind::decode;
    inference_ = w.inference();
    heads_ = shard.heads;
    kv_ = shard.kv_heads;
    dh_ = m_.head_dim();
    d_ = m_.d_model;
    wdt_ = w.weights();
    // Matmuls against weights run in the weight type when it is quantized (int8 / fp8: the chip has the rate,
    // load_scenario checks it), in the activation type otherwise.
    mm_dtype_ = wdt_ == DType::int8 || wdt_ == DType::fp8 ? wdt_ : w.dtype;
    dw_dtype_ = w.dtype;
    // AQT (workload.quantization: int8): every dense-layer matmul, weight gradients too, in int8, its operands
    // quantized inside the kernel (Builder::quantize_int8); the attention core keeps w.dtype.
    if (w.quantization == Quantization::int8) {
      mm_dtype_ = dw_dtype_ = DType::int8;
      b_.quantize_int8();
    }
    if (train_) policy_ = policy_placements(w);
  }

  fused::Graph build();

 private:
  // ---- parameters ----
  Param param(const std::string& name, std::int64_t rows, std::int64_t cols);
  BlockParams block_params(const std::string& scope, bool cross, bool moe);
  // ---- forward ----
  TensorId embed(const std::string& mbp, std::int64_t tokens, std::int64_t s, Phase phase);
  BlockFwd forward_block(const Stack& st, int l, TensorId x, Phase phase, const std::string& mbp,
                         std::optional<TensorId> enc_out);
  TensorId norm(const OpName& name, TensorId x, double tokens, const Param& gamma, TensorId* stats,
                double x_times = 1.0);
  TensorId mlp_forward(const OpName& base, int layer, TensorId h, double tokens, const BlockParams& p, BlockFwd& f);
  TensorId attention_sub(const OpName& base, const Stack& st, int layer, TensorId h, double tokens,
                         const BlockParams& p, BlockFwd& f, std::optional<TensorId> enc_out);
  // ---- remat policies (policy_) ----
  // A DMA copying `from` into `to` between HBM and host memory (the direction from their kinds).
  std::size_t host_copy(const std::string& label, Phase phase, TensorId from, TensorId to);
  // The offloaded tags of a block's forward, each copied to host memory after the block (a DMA over PCIe).
  void offload(const BlockFwd& f, bool moe, const std::string& scope);
  // The block's forward again in phase recompute with every kept tensor (and every offloaded one, fetched
  // back from host memory once the backward of the block after it has started) read in place of its
  // recomputation; returns what the backward reads. Ops from `start` on are the recomputation.
  BlockFwd rematerialize(const Stack& st, int l, const BlockFwd& kept, const std::string& mbp,
                         std::optional<TensorId> enc_out, std::size_t& start);
  // Drops the ops of [start, end) whose writes no op from `end` on reads (transitively within the range).
  void drop_unread(std::size_t start, std::size_t end);
  // ---- backward ----
  TensorId backward_block(const Stack& st, int l, const BlockFwd& f, TensorId dout, const std::string& mbp,
                          std::optional<TensorId> enc_out, std::optional<TensorId>& d_enc);
  TensorId norm_backward(const OpName& name, TensorId dy, TensorId x, TensorId stats, double tokens,
                         const Param& gamma);
  // `dout` and `h` (the MLP's input) with every token; returns the gradient of h, reduced into this chip's tokens.
  TensorId mlp_backward(const OpName& base, int layer, TensorId dout, TensorId h, double tokens,
                        const BlockParams& p, const BlockFwd& f);
  // Mixture of experts: each local expert's buffer of `capacity` token rows (capacity = ceil(capacity_factor x
  // tokens x top_k / experts)), of which `routed` (tokens x top_k x local / experts) carry tokens.
  struct ExpertShape {
    int experts = 0, local = 0, top_k = 0;
    std::int64_t capacity = 0, fe = 0, fu = 0;
    double routed = 0, buffer = 0;  // buffer: local x capacity x d_model elements
  };
  [[nodiscard]] ExpertShape expert_shape(double tokens) const;
  // One batched matmul over the local experts; model FLOPs count the routed rows (useful_macs), hardware FLOPs
  // the whole capacity. With `grad`, it writes that gradient (accumulating after the first microbatch).
  void expert_matmul(const OpName& name, std::int64_t m, std::int64_t k, std::int64_t n, DType dtype,
                     TensorId a, TensorId b, TensorId out, double useful_macs, const Param* grad);
  // dW = A^T dY as a matmul writing (or, after the first microbatch, accumulating into) the gradient.
  void weight_gradient(const OpName& name, ir::OpClass cls, std::int64_t m, std::int64_t k, std::int64_t n,
                       std::int64_t batch, std::vector<TensorId> a, std::vector<TensorId> dy, const Param& weight,
                       const Param* bias) {
    b_.matmul(name, cls, weight_gradient_matmul(m, k, n, batch, std::move(a), std::move(dy), weight, bias));
  }
  Builder::Matmul weight_gradient_matmul(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t batch,
                                         std::vector<TensorId> a, std::vector<TensorId> dy, const Param& weight,
                                         const Param* bias);
  // An input gradient `dx` whose `a` is a ring-gathered dY (collective matmul) with the weight gradient reading
  // the same dY: both run chunk by chunk, interleaved (Builder::matmul_with_gradient). False, building nothing,
  // when dx does not run on ring chunks: the caller builds the two as before.
  bool input_and_weight_gradient(const OpName& dx_name, const Builder::Matmul& dx, const OpName& dw_name,
                                 std::int64_t m, std::int64_t k, std::int64_t n, std::vector<TensorId> a,
                                 std::vector<TensorId> dy, const Param& weight, const Param* bias) {
    if (b_.ring_split(dx).empty()) return false;
    b_.matmul_with_gradient(dx_name, ir::OpClass::matmul, dx, dw_name, ir::OpClass::matmul,
                            weight_gradient_matmul(m, k, n, 1, std::move(a), std::move(dy), weight, bias));
    return true;
  }
  TensorId weights(int layer, Phase phase, const Param& p) {
    const auto it = prefetched_.find(p.w);
    if (it == prefetched_.end()) return points_.weights_before_use(b_.graph(), layer, phase, p.w);
    const TensorId w = it->second;
    prefetched_.erase(it);
    return w;
  }
  // Collective matmul: the weights of the matmul a ring gather feeds are gathered (FSDP) before the ring's
  // steps are issued, so their all-gather does not queue behind the ring on the ICI and the first partial
  // matmul (this chip's own shard) can start at once; the next weights() of `p` returns them.
  void prefetch(int layer, Phase phase, const Param& p) {
    if (points_.ring_scatter_blocks(layer) > 0) prefetched_[p.w] = points_.weights_before_use(b_.graph(), layer, phase, p.w);
  }
  // Collective matmul, the reduce-scatter side: the row blocks of a row-parallel matmul whose output
  // after_row_parallel would reduce-scatter (0: one matmul, then the reduction).
  [[nodiscard]] int ring_blocks(int layer, const Builder::Matmul& mm) const {
    const int n = points_.ring_scatter_blocks(layer);
    return n > 1 && mm.batch == 1 && mm.m % n == 0 && mm.outputs.size() == 1 ? n : 0;
  }
  // Its ring steps (CollectivePoints::ring_reduce_scatter): this chip's reduced block of mm's output, `bias`
  // added by the epilogue of the last partial (this chip's own block).
  TensorId ring_row_parallel(const OpName& name, int layer, const Builder::Matmul& mm, const Param* bias) {
    const int n = ring_blocks(layer, mm);
    const fused::Tensor out = b_.graph().tensor(mm.outputs.front());
    Builder::Matmul last = mm;
    if (bias != nullptr && bias->elements > 0) {
      last.extra_reads.push_back({bias->w, 1});
      last.epilogue += kAdd.per_element.times(static_cast<double>(mm.m) * static_cast<double>(mm.n));
    }
    return points_.ring_reduce_scatter(
        b_.graph(), layer, name.phase, out.name, out.elements, out.dtype,
        [&](int order, const std::vector<TensorId>& received, TensorId block) {
          const Builder::Matmul& part = order == n - 1 ? last : mm;
          if (received.empty()) {
            b_.partial_rows(name, ir::OpClass::matmul, part, n, order, block);
            return;
          }
          // The matmul does not wait for the sums: it runs while they travel, and a VPU add (its own fusion,
          // as the collectives' reductions) then adds what arrived.
          const fused::Tensor bt = b_.graph().tensor(block);
          const TensorId mine = b_.activation(fmt::format("{}.ring{}", bt.name, order), bt.elements, bt.dtype);
          b_.partial_rows(name, ir::OpClass::matmul, part, n, order, mine);
          std::vector<Access> reads{{mine, 1}};
          for (TensorId r : received) reads.push_back({r, 1});
          OpName add = name;
          add.name = fmt::format("{}.ring_add{}", name.name, order);
          b_.vector(add, ir::OpClass::other, ir::VectorOp::elementwise,
                    bt.elements * static_cast<double>(received.size()), kAdd, reads, {{block, 1}});
        });
  }
  TensorId gather(int layer, Phase phase, TensorId shard) {
    const TensorId out = points_.gather_sequence(b_.graph(), layer, phase, shard);
    std::vector<TensorId> chunks = points_.ring_chunks(out);
    if (!chunks.empty()) b_.ring_gathered(out, std::move(chunks));  // collective matmul: matmuls split per step
    return out;
  }
  // Tokens outside the attention and MLP blocks on this chip (sequence parallelism splits them).
  [[nodiscard]] double norm_tokens(double tokens) const { return tokens / shard_.sequence_shards; }
  // ---- head, loss, optimizer ----
  struct HeadFwd {
    TensorId x = 0, hf = 0, statsf = 0, ht0 = 0, ht1 = 0, ht = 0, statst = 0, logits = 0, dlogits = 0;
    double tokens = 0;
    double x_times = 1;
  };
  HeadFwd head_forward(const std::string& mbp, TensorId x, double tokens, double x_times, Phase phase);
  void cross_entropy(const std::string& scope, HeadFwd& h, double logits, Phase phase);
  TensorId head_backward(const std::string& mbp, const HeadFwd& h);

  [[nodiscard]] std::int64_t mb() const { return shard_.microbatch(); }
  [[nodiscard]] const VpuCost& norm_cost(bool backward) const {
    if (m_.norm == NormKind::rmsnorm) return backward ? kRmsNormBackward : kRmsNormForward;
    return backward ? kLayerNormBackward : kLayerNormForward;
  }
  [[nodiscard]] std::int64_t norm_params() const { return m_.norm == NormKind::layernorm && m_.bias ? 2 * d_ : d_; }
  [[nodiscard]] std::int64_t qkv_width() const { return static_cast<std::int64_t>(heads_ + 2 * kv_) * dh_; }
  [[nodiscard]] std::int64_t up_width(bool expert) const {
    const std::int64_t f = expert ? shard_.expert_d_ff : shard_.d_ff;
    return m_.gated() ? 2 * f : f;
  }

  const WorkloadSpec& w_;
  const TransformerModel& m_;
  const ShardView& shard_;
  CollectivePoints& points_;
  Builder b_;
  bool train_ = false, decode_ = false, inference_ = false;
  int micro_ = 0;  // the microbatch whose backward is being built (Builder::gradient)
  std::map<TensorId, TensorId> prefetched_;  // prefetch: parameter -> its gathered weights, used once
  // A named remat policy: each tag's placement (nullopt: none, full or selective, or not training).
  std::optional<RematPlacements> policy_;
  std::map<TensorId, TensorId> host_copies_;      // an offloaded activation -> its copy in host memory
  std::optional<std::size_t> last_backward_start_;  // the first op of the latest block backward
  int heads_ = 0, kv_ = 0, dh_ = 0;
  std::int64_t d_ = 0;
  DType wdt_ = DType::f32, mm_dtype_ = DType::bf16, dw_dtype_ = DType::bf16;  // dw: weight-gradient matmuls
  // Embedding and head parameters.
  Param table_, positions_, types_, final_norm_, out_proj_, lm_dense_, lm_bias_, lm_norm_, pooler_, pooler_bias_;
  std::vector<Stack> stacks_;
  // KV caches (inference): per stack and layer, keys and values (and the cross-attention's).
  std::map<std::pair<int, int>, std::pair<TensorId, TensorId>> caches_, cross_caches_;
  std::vector<Param> relative_;  // T5's per-stack position-bias tables
  Param enc_final_;              // encoder-decoder: the encoder's final norm
  // The parameters outside the blocks: the embedding, the head, the encoder's final norm, T5's bias tables.
  [[nodiscard]] std::vector<const Param*> embedding_and_head() const {
    std::vector<const Param*> out{&table_,   &positions_, &types_,  &final_norm_, &out_proj_, &lm_dense_,
                                  &lm_bias_, &lm_norm_,   &pooler_, &pooler_bias_, &enc_final_};
    for (const Param& p : relative_) out.push_back(&p);
    return out;
  }
};

Param TransformerStep::param(const std::string& name, std::int64_t rows, std::int64_t cols) {
  return b_.parameter(name, rows, cols, ParamStorage{wdt_, train_, w_.optimizer, shard_.weight_shards});
}

BlockParams TransformerStep::block_params(const std::string& scope, bool cross, bool moe) {
  BlockParams p;
  const std::int64_t hd = static_cast<std::int64_t>(heads_) * dh_;
  p.norm1 = param(scope + ".norm1", 1, norm_params());
  p.qkv = param(scope + ".qkv", d_, qkv_width());
  p.out = param(scope + ".out", hd, d_);
  if (m_.block == TransformerBlock::serial) p.norm2 = param(scope + ".norm2", 1, norm_params());
  if (m_.bias) {
    p.qkv_bias = param(scope + ".qkv_bias", 1, qkv_width());
    p.out_bias = param(scope + ".out_bias", 1, d_);
  }
  if (cross) {
    p.norm_x = param(scope + ".norm_x", 1, norm_params());
    p.q_x = param(scope + ".q_x", d_, hd);
    p.kv_x = param(scope + ".kv_x", d_, 2 * static_cast<std::int64_t>(kv_) * dh_);
    p.out_x = param(scope + ".out_x", hd, d_);
  }
  p.moe = moe;
  if (moe) {
    p.router = param(scope + ".router", d_, m_.moe.experts);
    p.experts_up = param(scope + ".experts_up", static_cast<std::int64_t>(shard_.experts) * d_, up_width(true));
    p.experts_down = param(scope + ".experts_down", static_cast<std::int64_t>(shard_.experts) * shard_.expert_d_ff, d_);
  } else {
    p.up = param(scope + ".up", d_, up_width(false));
    p.down = param(scope + ".down", shard_.d_ff, d_);
    if (m_.bias) {
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
  *stats = b_.activation(base + ".stats", tokens * (m_.norm == NormKind::layernorm ? 2 : 1), DType::f32);
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
  std::vector<Access> reads{{weights(-1, phase, table_), std::min(1.0, rows / static_cast<double>(shard_.vocab))}};
  VpuCost cost{"embedding", {0, 0}, ""};
  if (positions_.elements > 0) {
    reads.push_back({weights(-1, phase, positions_),
                     std::min(1.0, static_cast<double>(s) / static_cast<double>(m_.context))});
    cost.per_element.elementwise += 1;
  }
  if (types_.elements > 0) {
    reads.push_back({weights(-1, phase, types_), 1});
    cost.per_element.elementwise += 1;
  }
  b_.vector(OpName{phase, mbp + "embedding", "lookup"}, ir::OpClass::embedding, ir::VectorOp::elementwise,
            rows * static_cast<double>(d_), cost, reads, {{x, 1}});
  // A vocabulary-parallel table: each chip looked up the rows it holds; the partial rows add up (layer -1: the
  // embedding and head), into this chip's tokens under sequence parallelism.
  return points_.after_row_parallel(b_.graph(), -1, phase, x);
}

TensorId TransformerStep::attention_sub(const OpName& base, const Stack& st, int layer, TensorId h, double tokens,
                                        const BlockParams& p, BlockFwd& f, std::optional<TensorId> enc_out) {
  const std::string sc = base.scope + "." + std::string(fused::phase_name(base.phase));
  const double q_elems = tokens * heads_ * dh_, kv_elems = tokens * kv_ * dh_;
  const Phase ph = base.phase;
  // QKV projection, bias and rotary as elementwise ops that fusion folds into the projection's epilogue.
  TensorId q = b_.activation(sc + ".q", q_elems), k = b_.activation(sc + ".k", kv_elems),
           v = b_.activation(sc + ".v", kv_elems);
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(tokens), mm.k = d_, mm.n = qkv_width(), mm.dtype = mm_dtype_;
    mm.a = {h}, mm.b = {weights(layer, ph, p.qkv)}, mm.outputs = {q, k, v};
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
  f.q_pre = q, f.k_pre = k;
  if (m_.position == PositionKind::rotary) {
    const TensorId q2 = b_.activation(sc + ".q_rotary", q_elems), k2 = b_.activation(sc + ".k_rotary", kv_elems);
    b_.vector(OpName{ph, base.scope, "rotary"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              q_elems + kv_elems, kRotary, {{q, 1}, {k, 1}}, {{q2, 1}, {k2, 1}}, q);
    q = q2, k = k2;
  }
  AttentionShape shape{mb(), st.s, st.s_k, heads_, kv_, dh_, st.causal,
                       m_.position == PositionKind::relative && st.relative_table.has_value()};
  TensorId keys = k, values = v;
  double kv_times = 1.0;
  f.k_local = k, f.v_local = v;
  if (shard_.context_shards > 1) {
    // Context parallelism: this chip's queries attend to every position's keys and values, all-gathered over
    // the sequence group (MaxText's all-gather context parallelism).
    const std::vector<TensorId> kv = points_.gather_keys_values(b_.graph(), layer, ph, {k, v});
    keys = kv[0], values = kv[1];
  }
  if (inference_) {
    // The new keys and values go into this layer's cache; attention reads the cache.
    const auto [kc, vc] = caches_.at({static_cast<int>(&st - stacks_.data()), layer});
    const double fraction = static_cast<double>(st.s) / static_cast<double>(st.s_k);
    b_.vector(OpName{ph, base.scope, "kv_cache_write"}, ir::OpClass::attention, ir::VectorOp::elementwise,
              2 * kv_elems, VpuCost{"copy", {0, 0}, ""}, {{k, 1}, {v, 1}}, {{kc, fraction}, {vc, fraction}}, k);
    keys = kc, values = vc;
  }
  f.attn = attention_forward(b_, OpName{ph, base.scope, "attention"}, w_.attention, shape, q, keys, values, kv_times);
  // Output projection, bias, the tensor-parallel reduction point, and the residual add.
  TensorId a = b_.activation(sc + ".attn_out", tokens * static_cast<double>(d_));
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(tokens), mm.k = static_cast<std::int64_t>(heads_) * dh_, mm.n = d_;
    mm.dtype = mm_dtype_;
    mm.a = {f.attn.o}, mm.b = {weights(layer, ph, p.out)}, mm.outputs = {a};
    if (ring_blocks(layer, mm) > 0) {
      f.attn_out = ring_row_parallel(OpName{ph, base.scope, "out"}, layer, mm, &p.out_bias);
      return f.attn_out;
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
  f.attn_out = a;
  return a;
}

TensorId TransformerStep::mlp_forward(const OpName& base, int layer, TensorId h, double tokens, const BlockParams& p,
                                      BlockFwd& f) {
  const std::string sc = base.scope + "." + std::string(fused::phase_name(base.phase));
  const Phase ph = base.phase;
  const VpuCost& act = m_.mlp == MlpKind::gelu     ? kGeluForward
                       : m_.mlp == MlpKind::relu   ? kReluForward
                       : m_.mlp == MlpKind::swiglu ? kSwigluForward
                                                   : kGegluForward;
  const double td = tokens * static_cast<double>(d_);
  if (!p.moe) {
    const double f_elems = tokens * static_cast<double>(shard_.d_ff);
    TensorId u = b_.activation(sc + ".up", tokens * static_cast<double>(up_width(false)));
    Builder::Matmul up;
    up.m = static_cast<std::int64_t>(tokens), up.k = d_, up.n = up_width(false), up.dtype = mm_dtype_;
    up.a = {h}, up.b = {weights(layer, ph, p.up)}, up.outputs = {u};
    b_.matmul(OpName{ph, base.scope, "up"}, ir::OpClass::matmul, up);
    if (p.up_bias.elements > 0) {
      const TensorId u1 = b_.activation(sc + ".up_biased", tokens * static_cast<double>(up_width(false)));
      b_.vector(OpName{ph, base.scope, "up_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise,
                tokens * static_cast<double>(up_width(false)), kAdd, {{u, 1}, {p.up_bias.w, 1}}, {{u1, 1}}, u);
      u = u1;
    }
    f.u = u;
    f.g = b_.activation(sc + ".act", f_elems);
    b_.vector(OpName{ph, base.scope, "act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, f_elems, act,
              {{u, 1}}, {{f.g, 1}}, u);
    TensorId o = b_.activation(sc + ".down", td);
    Builder::Matmul down;
    down.m = static_cast<std::int64_t>(tokens), down.k = shard_.d_ff, down.n = d_, down.dtype = mm_dtype_;
    down.a = {f.g}, down.b = {weights(layer, ph, p.down)}, down.outputs = {o};
    if (ring_blocks(layer, down) > 0) {
      f.mlp_out = ring_row_parallel(OpName{ph, base.scope, "down"}, layer, down, &p.down_bias);
      return f.mlp_out;
    }
    b_.matmul(OpName{ph, base.scope, "down"}, ir::OpClass::matmul, down);
    if (p.down_bias.elements > 0) {
      const TensorId o1 = b_.activation(sc + ".down_biased", td);
      b_.vector(OpName{ph, base.scope, "down_bias"}, ir::OpClass::matmul, ir::VectorOp::elementwise, td, kAdd,
                {{o, 1}, {p.down_bias.w, 1}}, {{o1, 1}}, o);
      o = o1;
    }
    f.mlp_out = points_.after_row_parallel(b_.graph(), layer, ph, o);
    return f.mlp_out;
  }
  // Mixture of experts: router, top-k, dispatch into per-expert buffers of `capacity` tokens, the expert MLPs
  // as batched matmuls (one product per local expert), combine. Model FLOPs count the routed tokens (top_k
  // per token); hardware FLOPs the full capacity (padding included).
  const ExpertShape e = expert_shape(tokens);
  const int experts = e.experts, local = e.local, k = e.top_k;
  const std::int64_t capacity = e.capacity, fe = e.fe, fu = e.fu;
  const double buffer = e.buffer;
  f.router_logits = b_.activation(sc + ".router", tokens * experts, DType::f32);
  {
    Builder::Matmul r;
    r.m = static_cast<std::int64_t>(tokens), r.k = d_, r.n = experts, r.dtype = mm_dtype_;
    r.a = {h}, r.b = {weights(layer, ph, p.router)}, r.outputs = {f.router_logits};
    b_.matmul(OpName{ph, base.scope, "router"}, ir::OpClass::matmul, r);
  }
  f.gates = b_.activation(sc + ".gates", tokens * k * 2, DType::f32);  // weights and expert indices
  b_.vector(OpName{ph, base.scope, "top_k"}, ir::OpClass::other, ir::VectorOp::reduction, tokens * experts, kRouter,
            {{f.router_logits, 1}}, {{f.gates, 1}});
  f.dispatched = b_.activation(sc + ".dispatched", buffer);
  b_.vector(OpName{ph, base.scope, "dispatch"}, ir::OpClass::other, ir::VectorOp::elementwise, buffer, kDispatch,
            {{h, std::min<double>(k, static_cast<double>(local))}, {f.gates, 1}}, {{f.dispatched, 1}});
  const TensorId disp = points_.expert_dispatch(b_.graph(), layer, ph, f.dispatched);
  f.eu = b_.activation(sc + ".experts_up", static_cast<double>(local) * capacity * fu);
  expert_matmul(OpName{ph, base.scope, "experts_up"}, capacity, d_, fu, mm_dtype_, disp,
                weights(layer, ph, p.experts_up), f.eu, e.routed * d_ * fu, nullptr);
  const double ge = static_cast<double>(local) * capacity * fe;
  f.eg = b_.activation(sc + ".experts_act", ge);
  b_.vector(OpName{ph, base.scope, "experts_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, ge, act,
            {{f.eu, 1}}, {{f.eg, 1}}, f.eu);
  f.eo = b_.activation(sc + ".experts_down", buffer);
  expert_matmul(OpName{ph, base.scope, "experts_down"}, capacity, fe, d_, mm_dtype_, f.eg,
                weights(layer, ph, p.experts_down), f.eo, e.routed * fe * d_, nullptr);
  const TensorId eo = points_.expert_combine(b_.graph(), layer, ph, f.eo);
  const TensorId o = b_.activation(sc + ".combined", td);
  b_.vector(OpName{ph, base.scope, "combine"}, ir::OpClass::other, ir::VectorOp::elementwise, tokens * k * d_,
            kCombine, {{eo, 1}, {f.gates, 1}}, {{o, 1}});
  // The expert down-projections are row parallel over the tensor group (their d_ff is split): partial sums.
  f.mlp_out = points_.after_row_parallel(b_.graph(), layer, ph, o);
  return f.mlp_out;
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
  f.h1 = norm(OpName{phase, scope, "norm1"}, x, norm_tokens(tokens), p.norm1, &f.stats1);
  prefetch(l, phase, p.qkv);
  f.h1g = gather(l, phase, f.h1);
  const TensorId a = attention_sub(OpName{phase, scope, "attn"}, st, l, f.h1g, tokens, p, f, enc_out);
  if (m_.block == TransformerBlock::parallel && !st.cross) {
    const TensorId o = mlp_forward(OpName{phase, scope, "mlp"}, l, f.h1g, tokens, p, f);
    f.out = b_.activation(sc + ".out", td);
    b_.vector(OpName{phase, scope, "residual"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td,
              VpuCost{"two residual adds", {2, 0}, ""}, {{x, 1}, {a, 1}, {o, 1}}, {{f.out, 1}}, o);
    return f;
  }
  f.x1 = b_.activation(sc + ".residual1", td);
  b_.vector(OpName{phase, scope, "residual1"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
            {{a, 1}, {x, 1}}, {{f.x1, 1}}, a);
  TensorId mlp_in = f.x1;
  if (st.cross) {
    // Cross-attention over the encoder output: queries from the decoder, keys and values from the encoder.
    f.hx = norm(OpName{phase, scope, "norm_x"}, f.x1, tokens, p.norm_x, &f.statsx);
    const double q_elems = tokens * heads_ * dh_;
    const double enc_tokens = static_cast<double>(mb()) * static_cast<double>(stacks_.front().s);
    const TensorId q = b_.activation(sc + ".xq", q_elems);
    {
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(tokens), mm.k = d_, mm.n = static_cast<std::int64_t>(heads_) * dh_;
      mm.dtype = mm_dtype_, mm.a = {f.hx}, mm.b = {weights(l, phase, p.q_x)}, mm.outputs = {q};
      b_.matmul(OpName{phase, scope, "xq"}, ir::OpClass::matmul, mm);
    }
    TensorId kx = 0, vx = 0;
    if (decode_) {
      std::tie(kx, vx) = cross_caches_.at({1, l});
    } else {
      const double kv_elems = enc_tokens * kv_ * dh_;
      kx = b_.activation(sc + ".xk", kv_elems);
      vx = b_.activation(sc + ".xv", kv_elems);
      std::vector<TensorId> outs{kx, vx};
      if (inference_) {  // prefill fills the cross-attention cache once
        std::tie(kx, vx) = cross_caches_.at({1, l});
        outs = {kx, vx};
      }
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(enc_tokens), mm.k = d_, mm.n = 2 * static_cast<std::int64_t>(kv_) * dh_;
      mm.dtype = mm_dtype_, mm.a = {*enc_out}, mm.b = {weights(l, phase, p.kv_x)}, mm.outputs = outs;
      b_.matmul(OpName{phase, scope, "xkv"}, ir::OpClass::matmul, mm);
    }
    const AttentionShape shape{mb(), st.s, stacks_.front().s, heads_, kv_, dh_, false, false};
    f.xattn = attention_forward(b_, OpName{phase, scope, "xattn"}, w_.attention, shape, q, kx, vx);
    const TensorId ax = b_.activation(sc + ".xattn_out", tokens * static_cast<double>(d_));
    {
      Builder::Matmul mm;
      mm.m = static_cast<std::int64_t>(tokens), mm.k = static_cast<std::int64_t>(heads_) * dh_, mm.n = d_;
      mm.dtype = mm_dtype_, mm.a = {f.xattn.o}, mm.b = {weights(l, phase, p.out_x)}, mm.outputs = {ax};
      b_.matmul(OpName{phase, scope, "xout"}, ir::OpClass::matmul, mm);
    }
    const TensorId axr = points_.after_row_parallel(b_.graph(), l, phase, ax);
    f.x1x = b_.activation(sc + ".residual_x", td);
    b_.vector(OpName{phase, scope, "residual_x"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
              {{axr, 1}, {f.x1, 1}}, {{f.x1x, 1}}, axr);
    mlp_in = f.x1x;
  }
  f.h2 = norm(OpName{phase, scope, "norm2"}, mlp_in, norm_tokens(tokens), p.norm2, &f.stats2);
  if (!p.moe) prefetch(l, phase, p.up);
  f.h2g = gather(l, phase, f.h2);
  const TensorId o = mlp_forward(OpName{phase, scope, "mlp"}, l, f.h2g, tokens, p, f);
  f.out = b_.activation(sc + ".residual2", td);
  b_.vector(OpName{phase, scope, "residual2"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
            {{o, 1}, {mlp_in, 1}}, {{f.out, 1}}, o);
  return f;
}

TransformerStep::ExpertShape TransformerStep::expert_shape(double tokens) const {
  ExpertShape e;
  e.experts = m_.moe.experts;
  e.local = shard_.experts;
  e.top_k = m_.moe.top_k;
  e.capacity = static_cast<std::int64_t>(
      std::ceil(m_.moe.capacity_factor * tokens * shard_.expert_group * e.top_k / static_cast<double>(e.experts) -
                1e-9));
  e.routed = tokens * shard_.expert_group * e.top_k * static_cast<double>(e.local) / e.experts;
  e.fe = shard_.expert_d_ff;
  e.fu = up_width(true);
  e.buffer = static_cast<double>(e.local) * static_cast<double>(e.capacity) * static_cast<double>(d_);
  return e;
}

void TransformerStep::expert_matmul(const OpName& name, std::int64_t m, std::int64_t k, std::int64_t n, DType dtype,
                                    TensorId a, TensorId b, TensorId out, double useful_macs, const Param* grad) {
  Builder::Matmul mm;
  mm.m = m, mm.k = k, mm.n = n, mm.batch = shard_.experts, mm.dtype = dtype;
  const GradientWrite gw = grad != nullptr ? b_.gradient(*grad, micro_) : GradientWrite{out, false};
  mm.a = {a}, mm.b = {b}, mm.outputs = {gw.tensor};
  const bool recompute = name.phase == Phase::recompute;
  mm.flops = Builder::Flops{recompute ? 0.0 : 2.0 * useful_macs,
                            Builder::matmul_flops(m, k, n, shard_.experts, recompute).hardware};
  if (gw.accumulate) mm.extra_reads.push_back({gw.tensor, 1});
  b_.matmul(name, ir::OpClass::matmul, mm);
}

Builder::Matmul TransformerStep::weight_gradient_matmul(std::int64_t m, std::int64_t k, std::int64_t n,
                                                       std::int64_t batch, std::vector<TensorId> a,
                                                       std::vector<TensorId> dy, const Param& weight,
                                                       const Param* bias) {
  Builder::Matmul mm;
  mm.m = m, mm.k = k, mm.n = n, mm.batch = batch, mm.dtype = dw_dtype_;
  mm.gathered_along_k = true;  // A^T's contraction runs over the tokens
  // The whole gradient (under FSDP a full-size buffer, Builder::gradient), or the stored one accumulated into.
  const GradientWrite gw = b_.gradient(weight, micro_);
  mm.a = std::move(a), mm.b = std::move(dy), mm.outputs = {gw.tensor};
  if (gw.accumulate) {
    // Gradient accumulation: the epilogue adds into the gradient of the earlier microbatches.
    mm.extra_reads.push_back({gw.tensor, 1});
    mm.epilogue += kGradientAccumulate.per_element.times(weight.elements);
  }
  if (bias != nullptr && bias->elements > 0) {
    // The bias gradient is the column sum of dY, done on the VPU in the same kernel.
    const GradientWrite bw = b_.gradient(*bias, micro_);
    mm.extra_writes.push_back({bw.tensor, 1});
    mm.epilogue += kAdd.per_element.times(static_cast<double>(k) * static_cast<double>(n));
    if (bw.accumulate) mm.extra_reads.push_back({bw.tensor, 1});
  }
  return mm;
}

TensorId TransformerStep::norm_backward(const OpName& name, TensorId dy, TensorId x, TensorId stats, double tokens,
                                        const Param& gamma) {
  const std::string base = name.scope + "." + std::string(fused::phase_name(name.phase)) + "." + name.name;
  const TensorId dx = b_.activation(base, tokens * static_cast<double>(d_));
  std::vector<Access> reads{{dy, 1}, {x, 1}, {stats, 1}, {gamma.w, 1}};
  const GradientWrite gw = b_.gradient(gamma, micro_);
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
  const VpuCost& act = m_.mlp == MlpKind::gelu     ? kGeluBackward
                       : m_.mlp == MlpKind::relu   ? kReluBackward
                       : m_.mlp == MlpKind::swiglu ? kSwigluBackward
                                                   : kGegluBackward;
  const auto t = static_cast<std::int64_t>(tokens);
  const double td = tokens * static_cast<double>(d_);
  if (!p.moe) {
    const std::int64_t fu = up_width(false), fd = shard_.d_ff;
    const TensorId dg = b_.activation(sc + ".dact", tokens * static_cast<double>(fd));
    bool together = false;  // down.dx and down.dw run chunk by chunk on the gathered dY
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = d_, mm.n = fd, mm.dtype = mm_dtype_, mm.a = {dout}, mm.b = {weights(layer, ph, p.down)};
      mm.outputs = {dg};
      const OpName dw{ph, base.scope, "down.dw"};
      together = input_and_weight_gradient(OpName{ph, base.scope, "down.dx"}, mm, dw, fd, t, d_, {f.g}, {dout},
                                           p.down, &p.down_bias);
      if (!together) b_.matmul(OpName{ph, base.scope, "down.dx"}, ir::OpClass::matmul, mm);
    }
    const TensorId du = b_.activation(sc + ".dup", tokens * static_cast<double>(fu));
    b_.vector(OpName{ph, base.scope, "act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              tokens * static_cast<double>(fd), act, {{dg, 1}, {f.u, 1}}, {{du, 1}}, dg);
    if (!together) {
      weight_gradient(OpName{ph, base.scope, "down.dw"}, ir::OpClass::matmul, fd, t, d_, 1, {f.g}, {dout}, p.down,
                      &p.down_bias);
    }
    const TensorId dh = b_.activation(sc + ".dh_mlp", td);
    std::optional<TensorId> ring;
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = fu, mm.n = d_, mm.dtype = mm_dtype_, mm.a = {du}, mm.b = {weights(layer, ph, p.up)};
      mm.outputs = {dh};
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
            kCombine, {{dout, 1}, {f.eo, 1}, {f.gates, 1}}, {{deo, 1}, {dgates, 1}});
  // A gate's gradient is the dot product of the output gradient with its expert's output, of which a
  // tensor-parallel expert holds partial sums: all-reduced over the tensor group (every token's, for the router).
  const TensorId dgates_sum = points_.tensor_all_reduce(b_.graph(), layer, ph, dgates);
  const TensorId deo_local = points_.expert_combine(b_.graph(), layer, ph, deo);
  const TensorId deg = b_.activation(sc + ".dexperts_act", static_cast<double>(local) * capacity * fe);
  expert_matmul(OpName{ph, base.scope, "experts_down.dx"}, capacity, d_, fe, mm_dtype_, deo_local,
                weights(layer, ph, p.experts_down), deg, e.routed * d_ * fe, nullptr);
  const TensorId deu = b_.activation(sc + ".dexperts_up", static_cast<double>(local) * capacity * fu);
  b_.vector(OpName{ph, base.scope, "experts_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
            static_cast<double>(local) * capacity * fe, act, {{deg, 1}, {f.eu, 1}}, {{deu, 1}}, deg);
  expert_matmul(OpName{ph, base.scope, "experts_down.dw"}, fe, capacity, d_, dw_dtype_, f.eg, deo_local,
                *p.experts_down.grad, e.routed * d_ * fe, &p.experts_down);
  const TensorId ddisp = b_.activation(sc + ".ddispatched", buffer);
  expert_matmul(OpName{ph, base.scope, "experts_up.dx"}, capacity, fu, d_, mm_dtype_, deu,
                weights(layer, ph, p.experts_up), ddisp, e.routed * d_ * fu, nullptr);
  expert_matmul(OpName{ph, base.scope, "experts_up.dw"}, d_, capacity, fu, dw_dtype_, f.dispatched, deu,
                *p.experts_up.grad, e.routed * d_ * fu, &p.experts_up);
  const TensorId ddisp_local = points_.expert_dispatch(b_.graph(), layer, ph, ddisp);
  const TensorId dh_experts = b_.activation(sc + ".dh_experts", td);
  b_.vector(OpName{ph, base.scope, "dispatch"}, ir::OpClass::other, ir::VectorOp::elementwise, buffer, kDispatch,
            {{ddisp_local, 1}, {f.gates, 1}}, {{dh_experts, 1}});
  const TensorId dh_experts_sum = points_.after_row_parallel(b_.graph(), layer, ph, dh_experts);
  const TensorId drl = b_.activation(sc + ".drouter", tokens * experts, DType::f32);
  b_.vector(OpName{ph, base.scope, "top_k"}, ir::OpClass::other, ir::VectorOp::reduction, tokens * experts, kRouter,
            {{dgates_sum, 1}, {f.router_logits, 1}}, {{drl, 1}});
  // The router's input gradient for this chip's tokens only (sequence parallelism: its shard of the rows).
  const double tdn = norm_tokens(tokens) * static_cast<double>(d_);
  const TensorId dh_router = b_.activation(sc + ".dh_router", tdn);
  {
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(norm_tokens(tokens)), mm.k = experts, mm.n = d_, mm.dtype = mm_dtype_;
    mm.a = {drl}, mm.b = {weights(layer, ph, p.router)};
    mm.outputs = {dh_router};
    b_.matmul(OpName{ph, base.scope, "router.dx"}, ir::OpClass::matmul, mm);
  }
  weight_gradient(OpName{ph, base.scope, "router.dw"}, ir::OpClass::matmul, d_, t, experts, 1, {h}, {drl}, p.router,
                  nullptr);
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
    if ((*policy_)[i] != RematPlacement::offload || host_copies_.count(t[i]) > 0) continue;
    const fused::Tensor& src = b_.graph().tensor(t[i]);
    const std::string name = fmt::format("{}.offload.{}", scope, remat_tag_name(static_cast<RematTag>(i)));
    const TensorId copy = b_.tensor(name + ".host", src.elements, src.dtype, TensorKind::host_offload);
    host_copy(name, Phase::forward, t[i], copy);
    host_copies_[t[i]] = copy;
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
    if ((*policy_)[i] == RematPlacement::device) held[i] = kept_tags[i];
    if ((*policy_)[i] != RematPlacement::offload) continue;
    const auto copy = host_copies_.find(kept_tags[i]);
    if (copy == host_copies_.end()) throw std::logic_error("remat: " + scope + " fetches a tensor never offloaded");
    const fused::Tensor& src = b_.graph().tensor(kept_tags[i]);
    const std::string name = fmt::format("{}.fetch.{}", scope, remat_tag_name(static_cast<RematTag>(i)));
    const TensorId back = b_.activation(name, src.elements, src.dtype);
    const std::size_t fetch = host_copy(name, Phase::backward, copy->second, back);
    // Prefetched: started with the backward of the block after this one, so the copy overlaps its compute.
    if (last_backward_start_) b_.graph().ops()[fetch].after = {*last_backward_start_};
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
    if (ops[i].fuse_into && use.count(*ops[i].fuse_into) > 0) ops[i].fuse_into.reset();
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
      ops[i].dropped = true;
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
  const std::int64_t hd = static_cast<std::int64_t>(heads_) * dh_;
  const std::size_t block_start = b_.graph().ops().size();  // this block's first backward op
  // A norm output with every token for a weight gradient: the rematerialized forward's, else gathered again
  // from the kept shard (sequence parallelism; without it the kept tensor itself). Called right after the
  // output gradient's gather, it starts when that one is done (Megatron-LM launches it then, overlapped with
  // the input-gradient matmul) instead of sharing the links with it on the critical path.
  auto all_tokens = [&](TensorId shard, TensorId recomputed) {
    if (w_.remat == Remat::full) return recomputed;
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
    const Param& out_w = cross ? p.out_x : p.out;
    const AttentionSaved& saved = cross ? f.xattn : f.attn;
    const char* tag = cross ? "x" : "";
    const TensorId d_o = b_.activation(sc + "." + tag + "dattn", tokens * hd);
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = d_, mm.n = hd, mm.dtype = mm_dtype_, mm.a = {dy}, mm.b = {weights(l, ph, out_w)};
      mm.outputs = {d_o};
      const OpName dx{ph, scope, std::string(tag) + "out.dx"}, dw{ph, scope, std::string(tag) + "out.dw"};
      if (!input_and_weight_gradient(dx, mm, dw, hd, t, d_, {saved.o}, {dy}, out_w, cross ? nullptr : &p.out_bias)) {
        b_.matmul(dx, ir::OpClass::matmul, mm);
        weight_gradient(dw, ir::OpClass::matmul, hd, t, d_, 1, {saved.o}, {dy}, out_w, cross ? nullptr : &p.out_bias);
      }
    }
    const std::int64_t s_k = cross ? stacks_.front().s : st.s_k;
    AttentionShape shape{mb(), st.s, s_k, heads_, kv_, dh_, cross ? false : st.causal,
                         !cross && m_.position == PositionKind::relative && st.relative_table.has_value()};
    AttentionSaved use = saved;
    if (!cross && shard_.context_shards > 1 && w_.remat != Remat::full) {
      // Context parallelism: only this chip's keys and values were kept; gathered again, started once this
      // block's backward has started (its first op done), so it overlaps the MLP's backward.
      const std::size_t before = b_.graph().ops().size();
      const std::vector<TensorId> kv = points_.gather_keys_values(b_.graph(), l, ph, {f.k_local, f.v_local});
      auto& ops = b_.graph().ops();
      for (std::size_t i = before; i < ops.size(); ++i) {
        if (block_start < before) ops[i].after.push_back(block_start);
      }
      use.k = kv[0], use.v = kv[1];
    }
    if (!cross && w_.remat == Remat::selective && w_.attention == AttentionImpl::unfused) {
      // Selective rematerialization: recompute the attention core (scores, softmax, P) instead of keeping it.
      use = attention_forward(b_, OpName{Phase::recompute, scope, "attention"}, w_.attention, shape, saved.q, saved.k,
                              saved.v);
      use.o = saved.o;
    }
    const AttentionGrads g =
        attention_backward(b_, OpName{ph, scope, std::string(tag) + "attention"}, w_.attention, shape, use, d_o);
    if (cross) {
      // Queries from the decoder; keys and values from the encoder output, whose gradient accumulates over layers.
      const TensorId dh_q = b_.activation(sc + ".dxq", td);
      Builder::Matmul mm;
      mm.m = t, mm.k = hd, mm.n = d_, mm.dtype = mm_dtype_, mm.a = {g.dq}, mm.b = {weights(l, ph, p.q_x)};
      mm.outputs = {dh_q};
      b_.matmul(OpName{ph, scope, "xq.dx"}, ir::OpClass::matmul, mm);
      weight_gradient(OpName{ph, scope, "xq.dw"}, ir::OpClass::matmul, d_, t, hd, 1, {h}, {g.dq}, p.q_x, nullptr);
      const double enc_tokens = static_cast<double>(mb()) * static_cast<double>(stacks_.front().s);
      const auto te = static_cast<std::int64_t>(enc_tokens);
      const std::int64_t kvw = 2 * static_cast<std::int64_t>(kv_) * dh_;
      const TensorId de = b_.activation(sc + ".denc_part", enc_tokens * static_cast<double>(d_));
      Builder::Matmul kvm;
      kvm.m = te, kvm.k = kvw, kvm.n = d_, kvm.dtype = mm_dtype_, kvm.a = {g.dk, g.dv}, kvm.b = {weights(l, ph, p.kv_x)};
      kvm.outputs = {de};
      b_.matmul(OpName{ph, scope, "xkv.dx"}, ir::OpClass::matmul, kvm);
      weight_gradient(OpName{ph, scope, "xkv.dw"}, ir::OpClass::matmul, d_, te, kvw, 1, {*enc_out}, {g.dk, g.dv},
                      p.kv_x, nullptr);
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
    if (m_.position == PositionKind::rotary) {
      const TensorId dq2 = b_.activation(sc + ".dq_rotary", tokens * hd);
      const TensorId dk2 = b_.activation(sc + ".dk_rotary", tokens * kv_ * dh_);
      b_.vector(OpName{ph, scope, "rotary"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
                tokens * (heads_ + kv_) * dh_, kRotary, {{dq, 1}, {dk, 1}}, {{dq2, 1}, {dk2, 1}}, dq);
      dq = dq2, dk = dk2;
    }
    const TensorId dh1 = b_.activation(sc + ".dh_attn", td);
    std::optional<TensorId> ring;
    {
      Builder::Matmul mm;
      mm.m = t, mm.k = qkv_width(), mm.n = d_, mm.dtype = mm_dtype_, mm.a = {dq, dk, dv};
      mm.b = {weights(l, ph, p.qkv)}, mm.outputs = {dh1};
      if (ring_blocks(l, mm) > 0) ring = ring_row_parallel(OpName{ph, scope, "qkv.dx"}, l, mm, nullptr);
      else b_.matmul(OpName{ph, scope, "qkv.dx"}, ir::OpClass::matmul, mm);
    }
    weight_gradient(OpName{ph, scope, "qkv.dw"}, ir::OpClass::matmul, d_, t, qkv_width(), 1, {h}, {dq, dk, dv},
                    p.qkv, &p.qkv_bias);
    return ring ? *ring : points_.after_row_parallel(b_.graph(), l, ph, dh1);
  };

  const double nt = norm_tokens(tokens);
  if (m_.block == TransformerBlock::parallel && !st.cross) {
    // out = x + attn(h) + mlp(h), h = norm1(x): dh = dh_attn + dh_mlp, dx = dout + norm1'(dh).
    const TensorId dout_all = gather(l, ph, dout), h1 = all_tokens(f.h1, f.h1g);
    const TensorId dh_mlp = mlp_backward(OpName{ph, scope, "mlp"}, l, dout_all, h1, tokens, p, f);
    const TensorId dh_attn = attention_backward_sub(dout_all, h1, f.x, f.stats1, p.norm1, false);
    const TensorId dh = b_.activation(sc + ".dh", tdn);
    b_.vector(OpName{ph, scope, "dh_sum"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
              {{dh_attn, 1}, {dh_mlp, 1}}, {{dh, 1}}, dh_attn);
    const TensorId dxn = norm_backward(OpName{ph, scope, "norm1"}, dh, f.x, f.stats1, nt, p.norm1);
    const TensorId dx = b_.activation(sc + ".dx", tdn);
    b_.vector(OpName{ph, scope, "residual"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
              {{dxn, 1}, {dout, 1}}, {{dx, 1}}, dxn);
    return dx;
  }
  const TensorId mlp_in = st.cross ? f.x1x : f.x1;
  if (!p.moe) prefetch(l, ph, p.down);
  const TensorId dout_all = gather(l, ph, dout), h2 = all_tokens(f.h2, f.h2g);
  const TensorId dh2 = mlp_backward(OpName{ph, scope, "mlp"}, l, dout_all, h2, tokens, p, f);
  const TensorId dn2 = norm_backward(OpName{ph, scope, "norm2"}, dh2, mlp_in, f.stats2, nt, p.norm2);
  TensorId dmid = b_.activation(sc + ".residual2", tdn);
  b_.vector(OpName{ph, scope, "residual2"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
            {{dn2, 1}, {dout, 1}}, {{dmid, 1}}, dn2);
  if (st.cross) {
    const TensorId dnx = attention_backward_sub(dmid, f.hx, f.x1, f.statsx, p.norm_x, true);
    const TensorId d1 = b_.activation(sc + ".residual_x", td);
    b_.vector(OpName{ph, scope, "residual_x"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, td, kAdd,
              {{dnx, 1}, {dmid, 1}}, {{d1, 1}}, dnx);
    dmid = d1;
  }
  prefetch(l, ph, p.out);
  const TensorId dmid_all = gather(l, ph, dmid), h1 = all_tokens(f.h1, f.h1g);
  const TensorId dh1 = attention_backward_sub(dmid_all, h1, f.x, f.stats1, p.norm1, false);
  const TensorId dn1 = norm_backward(OpName{ph, scope, "norm1"}, dh1, f.x, f.stats1, nt, p.norm1);
  const TensorId dx = b_.activation(sc + ".dx", tdn);
  b_.vector(OpName{ph, scope, "residual1"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, tdn, kAdd,
            {{dn1, 1}, {dmid, 1}}, {{dx, 1}}, dn1);
  return dx;
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
  h.hf = norm(OpName{phase, scope, "norm"}, x, nt, final_norm_, &h.statsf, x_times);
  TensorId in = h.hf;
  if (lm_dense_.elements > 0) {
    // BERT's masked-LM transform: dense + bias + gelu, then a norm.
    h.ht0 = b_.activation(sc + ".transform", nt * static_cast<double>(d_));
    Builder::Matmul mm;
    mm.m = static_cast<std::int64_t>(nt), mm.k = d_, mm.n = d_, mm.dtype = mm_dtype_, mm.a = {h.hf};
    mm.b = {lm_dense_.w}, mm.outputs = {h.ht0};
    b_.matmul(OpName{phase, scope, "transform"}, ir::OpClass::matmul, mm);
    h.ht1 = b_.activation(sc + ".transform_act", nt * static_cast<double>(d_));
    b_.vector(OpName{phase, scope, "transform_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              nt * static_cast<double>(d_), VpuCost{"bias and gelu", {9, 1}, ""}, {{h.ht0, 1}, {lm_bias_.w, 1}},
              {{h.ht1, 1}}, h.ht0);
    h.ht = norm(OpName{phase, scope, "transform_norm"}, h.ht1, nt, lm_norm_, &h.statst);
    in = h.ht;
  }
  const std::int64_t vocab = shard_.vocab;
  h.logits = b_.activation(sc + ".logits", tokens * static_cast<double>(vocab));
  {
    Builder::Matmul mm;
    mm.m = t, mm.k = d_, mm.n = vocab, mm.dtype = mm_dtype_, mm.a = {gather(-1, phase, in)};
    mm.b = {points_.weights_before_use(b_.graph(), -1, phase, m_.tied_embeddings ? table_.w : out_proj_.w)};
    mm.outputs = {h.logits};
    b_.matmul(OpName{phase, scope, "logits"}, ir::OpClass::loss, mm);
  }
  cross_entropy(scope, h, tokens * static_cast<double>(vocab), phase);
  return h;
}

void TransformerStep::cross_entropy(const std::string& scope, HeadFwd& h, double logits, Phase phase) {
  const std::string sc = scope + "." + std::string(fused::phase_name(phase));
  const double tokens = h.tokens;
  if (inference_) {
    // Greedy sampling; over a vocabulary-parallel head, each chip's best (logit, index) pair is all-reduced.
    const TensorId next = b_.activation(sc + ".next_token", tokens * (shard_.vocab_shards > 1 ? 2 : 1), DType::f32);
    b_.vector(OpName{phase, scope, "sample"}, ir::OpClass::loss, ir::VectorOp::reduction, logits, kSampling,
              {{h.logits, 1}}, {{next, 1}});
    (void)points_.vocab_reduction(b_.graph(), phase, "argmax", next);
    return;
  }
  if (train_) h.dlogits = b_.activation(sc + ".dlogits", logits);
  const TensorId loss = b_.activation(sc + ".loss", tokens, DType::f32);
  if (shard_.vocab_shards <= 1) {
    // One fused pass over the logits: the row max, the sums, the loss (and its gradient).
    if (train_) {
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
  if (train_) {
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
  const std::int64_t vocab = shard_.vocab;
  const Param& proj = m_.tied_embeddings ? table_ : out_proj_;
  const TensorId in = lm_dense_.elements > 0 ? h.ht : h.hf;
  TensorId dh = b_.activation(sc + ".dh", h.tokens * static_cast<double>(d_));
  {
    Builder::Matmul mm;
    mm.m = t, mm.k = vocab, mm.n = d_, mm.dtype = mm_dtype_, mm.a = {h.dlogits};
    mm.b = {points_.weights_before_use(b_.graph(), -1, ph, proj.w)}, mm.outputs = {dh};
    b_.matmul(OpName{ph, scope, "logits.dx"}, ir::OpClass::loss, mm);
  }
  // Vocabulary-parallel: partial sums over the vocab (reduce-scattered into this chip's tokens under sequence
  // parallelism, whose projection input is gathered again for the weight gradient).
  dh = points_.after_row_parallel(b_.graph(), -1, ph, dh);
  weight_gradient(OpName{ph, scope, "logits.dw"}, ir::OpClass::loss, d_, t, vocab, 1, {gather(-1, ph, in)},
                  {h.dlogits}, proj, nullptr);
  if (lm_dense_.elements > 0) {
    const auto tn = static_cast<std::int64_t>(nt);
    const TensorId dn = norm_backward(OpName{ph, scope, "transform_norm"}, dh, h.ht1, h.statst, nt, lm_norm_);
    const TensorId da = b_.activation(sc + ".dtransform", nt * static_cast<double>(d_));
    b_.vector(OpName{ph, scope, "transform_act"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              nt * static_cast<double>(d_), kGeluBackward, {{dn, 1}, {h.ht0, 1}}, {{da, 1}}, dn);
    const TensorId dhf = b_.activation(sc + ".dtransform_in", nt * static_cast<double>(d_));
    Builder::Matmul mm;
    mm.m = tn, mm.k = d_, mm.n = d_, mm.dtype = mm_dtype_, mm.a = {da}, mm.b = {lm_dense_.w}, mm.outputs = {dhf};
    b_.matmul(OpName{ph, scope, "transform.dx"}, ir::OpClass::matmul, mm);
    weight_gradient(OpName{ph, scope, "transform.dw"}, ir::OpClass::matmul, d_, tn, d_, 1, {h.hf}, {da}, lm_dense_,
                    &lm_bias_);
    dh = dhf;
  }
  return norm_backward(OpName{ph, scope, "norm"}, dh, h.x, h.statsf, nt, final_norm_);
}

fused::Graph TransformerStep::build() {
  if (heads_ < 1 || kv_ < 1 || dh_ < 1 || d_ < 1 || mb() < 1 || shard_.seq_len < 1) {
    throw std::invalid_argument(fmt::format("transformer {}: needs heads, a head width, a batch and a sequence",
                                            w_.model.name));
  }
  const bool enc_dec = m_.architecture == Architecture::encoder_decoder;
  // Stacks: the encoder (encoder-only, or the first of an encoder-decoder), then the decoder.
  const std::int64_t s_enc = shard_.seq_len, s_dec = enc_dec ? shard_.decoder_seq_len : shard_.seq_len;
  const std::int64_t s_new = decode_ ? 1 : s_dec;                              // decoder queries this step
  // Decoder keys this step; context parallelism: every position's (the sequence group's).
  const std::int64_t s_keys = decode_ ? shard_.context + 1 : s_dec * shard_.context_shards;
  if (m_.architecture == Architecture::encoder) {
    stacks_.push_back(Stack{"layer", shard_.first_layer, shard_.layers, false, false, s_enc,
                            s_enc * shard_.context_shards, {}, {}});
  } else if (enc_dec) {
    if (!decode_) stacks_.push_back(Stack{"enc.layer", 0, shard_.encoder_layers, false, false, s_enc, s_enc, {}, {}});
    else stacks_.push_back(Stack{"enc.layer", 0, 0, false, false, s_enc, s_enc, {}, {}});  // encoder ran at prefill
    stacks_.push_back(Stack{"dec.layer", shard_.first_layer, shard_.layers, true, true, s_new, s_keys, {}, {}});
  } else {
    stacks_.push_back(Stack{"layer", shard_.first_layer, shard_.layers, true, false, s_new, s_keys, {}, {}});
  }

  // Parameters (the encoder of an encoder-decoder keeps its parameters even when decoding: they are stored).
  if (shard_.embedding || (shard_.head && m_.tied_embeddings)) table_ = param("embedding.table", shard_.vocab, d_);
  if (shard_.embedding && m_.position == PositionKind::learned) positions_ = param("embedding.positions", m_.context, d_);
  if (shard_.embedding && m_.token_types > 0) types_ = param("embedding.types", m_.token_types, d_);
  for (std::size_t si = 0; si < stacks_.size(); ++si) {
    Stack& st = stacks_[si];
    const int stored = enc_dec && si == 0 ? shard_.encoder_layers : st.count;
    for (int l = 0; l < stored; ++l) {
      const bool moe = m_.moe.is_moe_layer(st.first + l) && (!enc_dec || si == 1);
      st.params.push_back(block_params(fmt::format("{}{}", st.name, st.first + l), st.cross, moe));
    }
    if (m_.position == PositionKind::relative && stored > 0) {
      // T5: one bias table per stack, shared by its blocks (its gradient's scatter-add is not modelled).
      relative_.push_back(param(st.name + ".position_bias", m_.relative_buckets, heads_));
      st.relative_table = relative_.back().w;
    }
  }
  if (shard_.head) {
    final_norm_ = param("head.norm", 1, norm_params());
    if (!m_.tied_embeddings) out_proj_ = param("head.out", d_, shard_.vocab);
    if (m_.lm_head_transform) {
      lm_dense_ = param("head.transform", d_, d_);
      lm_bias_ = param("head.transform_bias", 1, d_);
      lm_norm_ = param("head.transform_norm", 1, norm_params());
    }
    if (m_.pooler) {
      // Stored and updated with the model; its compute (the next-sentence head) is not modelled.
      pooler_ = param("head.pooler", d_, d_);
      pooler_bias_ = param("head.pooler_bias", 1, d_);
    }
  }
  if (enc_dec) enc_final_ = param("enc.norm", 1, norm_params());
  const Param& enc_final = enc_final_;
  // KV caches: keys and values of every decoder (or encoder-decoder decoder) layer, and the cross-attention
  // keys and values of an encoder-decoder's decoder.
  if (inference_) {
    Stack& dec = stacks_.back();
    for (int l = dec.first; l < dec.first + dec.count; ++l) {
      const double elems = static_cast<double>(mb()) * static_cast<double>(dec.s_k) * kv_ * dh_;
      caches_[{static_cast<int>(stacks_.size() - 1), l}] = {
          b_.tensor(fmt::format("{}{}.kv_cache.k", dec.name, l), elems, w_.dtype, TensorKind::kv_cache),
          b_.tensor(fmt::format("{}{}.kv_cache.v", dec.name, l), elems, w_.dtype, TensorKind::kv_cache)};
      if (enc_dec) {
        const double xe = static_cast<double>(mb()) * static_cast<double>(s_enc) * kv_ * dh_;
        cross_caches_[{1, l}] = {
            b_.tensor(fmt::format("{}{}.cross_cache.k", dec.name, l), xe, w_.dtype, TensorKind::kv_cache),
            b_.tensor(fmt::format("{}{}.cross_cache.v", dec.name, l), xe, w_.dtype, TensorKind::kv_cache)};
      }
    }
  }

  const int microbatches = train_ ? std::max(1, shard_.microbatches) : 1;
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
        x = shard_.embedding ? embed(mbp + (enc_dec ? (si == 0 ? "enc." : "dec.") : ""),
                                     static_cast<std::int64_t>(tokens), st.s, Phase::forward)
                             : points_.stage_input(b_.graph(), Phase::forward,
                                                   b_.activation(mbp + st.name + ".input",
                                                                 norm_tokens(tokens) * static_cast<double>(d_)));
      }
      for (int l = st.first; l < st.first + st.count; ++l) {
        fwd[si].push_back(forward_block(st, l, x, Phase::forward, mbp, enc_out));
        if (policy_) {
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
    if (!shard_.head) points_.stage_output(b_.graph(), Phase::forward, x);  // to the next pipeline stage
    if (shard_.head) {
      const Stack& last = stacks_.back();
      // Inference needs the last position of each sequence only.
      const double tokens = static_cast<double>(mb()) * (inference_ ? 1.0 : static_cast<double>(last.s));
      head = head_forward(mbp, x, tokens, inference_ ? 1.0 / static_cast<double>(last.s) : 1.0, Phase::forward);
    }
  };
  auto backward = [&](int micro) {
    const std::string mbp = micro == 0 ? "" : fmt::format("mb{}.", micro);
    const bool first = micro == 0, last = micro == microbatches - 1;
    micro_ = micro;
    // ---- backward ----
    MicroState& ms = state[static_cast<std::size_t>(micro)];
    const auto& fwd = ms.fwd;
    const auto& enc_out = ms.enc_out;
    const TensorId enc_last = ms.enc_last, enc_stats = ms.enc_stats;
    TensorId dx = shard_.head
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
        if (w_.remat == Remat::full) {
          // Full rematerialization: only the block input was kept; run the block forward again first.
          use = forward_block(st, l, use.x, Phase::recompute, mbp, enc_out);
        }
        std::size_t recompute_start = 0;
        if (policy_) use = rematerialize(st, l, use, mbp, enc_out, recompute_start);
        const std::size_t backward_start = b_.graph().ops().size();
        dx = backward_block(st, l, use, dx, mbp, enc_out, d_enc);
        if (policy_) {
          drop_unread(recompute_start, backward_start);
          last_backward_start_ = backward_start;
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
      if (shard_.embedding && (si == 0 || decoder_of_enc_dec)) {
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
        scatter_add(table_, std::min(1.0, tokens / static_cast<double>(shard_.vocab)));
        if (positions_.elements > 0) {
          scatter_add(positions_, std::min(1.0, static_cast<double>(st.s) / static_cast<double>(m_.context)));
        }
        b_.vector(OpName{Phase::backward, mbp + (enc_dec ? (si == 0 ? "enc." : "dec.") : "") + "embedding", "lookup"},
                  ir::OpClass::embedding, ir::VectorOp::elementwise, tokens * static_cast<double>(d_), kAdd, reads,
                  writes);
      }
    }
    if (!shard_.embedding) points_.stage_output(b_.graph(), Phase::backward, dx);  // to the previous stage
    // The embedding and head gradients of a microbatch before the last (FSDP reduce-scatters them now); those
    // of the last are reduced after the blocks' updates, below.
    if (!last) points_.after_weight_gradients(b_.graph(), -1, b_.gradient_buffers(embedding_and_head(), micro), first, false);
  };
  // The order of the microbatches' passes: forward then backward of each in turn on one chip; a pipeline
  // stage follows its schedule (pipeline_order, shard.h).
  for (const auto& [is_forward, micro] : pipeline_order(shard_, w_.pipeline_schedule, train_)) {
    if (is_forward) forward(micro);
    else backward(micro);
  }
  if (train_) {
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
    for (const Param* p : {&final_norm_, &lm_dense_, &lm_bias_, &lm_norm_}) {
      if (p->elements > 0 && p->grad) sequence_partial.push_back(*p->grad);
    }
    points_.after_sequence_parallel_gradients(b_.graph(), -1, sequence_partial);
    b_.optimizer_update("embedding_and_head", rest, w_.optimizer);
  }
  return std::move(b_.graph());
}

}  // namespace

fused::Graph build_transformer_step(const WorkloadSpec& workload, const ChipSpec& chip, const ShardView& shard,
                                    CollectivePoints& points) {
  return TransformerStep(workload, chip, shard, points).build();
}

}  // namespace tpusim::kernels
