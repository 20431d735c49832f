#pragma once
// What the transformer step's files share (transformer.cpp: parameters, embedding, head and the step's order;
// transformer_blocks.cpp: a block's forward; transformer_backward.cpp: its backward, rematerialization and host
// offload): the per-block tensors and the TransformerStep builder. Private to kernels/src; the entry point is
// build_transformer_step (model_lowering.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/attention.h"
#include "graph/fused_ops.h"
#include "zoo/model_lowering.h"


namespace tpusim::kernels::transformer {

using fused::Access;
using fused::Phase;
using fused::TensorId;
using fused::TensorKind;

// A decoder block's cross-attention over the encoder output (encoder_decoder): its norm and projections.
struct CrossAttentionParams {
  Param norm, q, kv, out;
};

// A mixture-of-experts MLP: the router and the chip's experts' up and down projections (one batched matrix each).
struct ExpertParams {
  Param router, up, down;
};

// A block's parameters; those it does not have (no bias, no cross-attention, a dense MLP) have no elements.
struct BlockParams {
  Param norm1, qkv, qkv_bias, out, out_bias, norm2, up, up_bias, down, down_bias;
  CrossAttentionParams cross;  // decoder of an encoder-decoder
  ExpertParams experts;        // mixture of experts (`moe`), in place of up and down
  bool moe = false;
  [[nodiscard]] std::vector<const Param*> all() const {
    std::vector<const Param*> out_list;
    for (const Param* p : {&norm1, &qkv, &qkv_bias, &out, &out_bias, &norm2, &up, &up_bias, &down, &down_bias,
                           &cross.norm, &cross.q, &cross.kv, &cross.out, &experts.router, &experts.up,
                           &experts.down}) {
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

// A block's self-attention. In each part of BlockFwd a norm's output comes with its statistics and, under
// sequence parallelism, with every token's output gathered (else `gathered` is the output itself).
struct SelfAttentionFwd {
  TensorId norm = 0, norm_stats = 0, gathered = 0;
  AttentionSaved core;
  TensorId q_pre = 0, k_pre = 0;  // before rotary (for its backward: none needed beyond the op)
  TensorId k_local = 0, v_local = 0;  // context parallelism: this chip's positions' keys and values (core.k, core.v
                                      // are every position's, gathered)
  TensorId out = 0;       // after its row-parallel reduction
  TensorId residual = 0;  // the block input plus `out` (none in a parallel block)
};

// A decoder block's cross-attention over the encoder output.
struct CrossAttentionFwd {
  TensorId norm = 0, norm_stats = 0;
  AttentionSaved core;
  TensorId residual = 0;  // the self-attention's residual plus the cross-attention's output
};

// The MLP: its norm and output (after its row-parallel reduction) in both kinds; a dense one's up-projection
// and activation.
struct MlpFwd {
  TensorId norm = 0, norm_stats = 0, gathered = 0;
  TensorId u = 0, g = 0;
  TensorId out = 0;
};

// A mixture of experts' router logits, gates and dispatched tokens, and its experts' up-projection, activation
// and down-projection.
struct ExpertsFwd {
  TensorId router_logits = 0, gates = 0, dispatched = 0, up = 0, act = 0, down = 0;
};

// What a block's backward reads of its forward, by part of the block.
struct BlockFwd {
  TensorId x = 0;  // the block input
  SelfAttentionFwd attn;
  CrossAttentionFwd cross;  // decoder of an encoder-decoder
  MlpFwd mlp;
  ExpertsFwd experts;  // mixture of experts (`moe`)
  TensorId out = 0;
};

// Calls fn on every tensor field of f (keep in step with BlockFwd).
template <class F>
void for_each_tensor(BlockFwd& f, F fn) {
  for (TensorId* t : {&f.x, &f.attn.norm, &f.attn.norm_stats, &f.attn.gathered, &f.attn.core.q, &f.attn.core.k,
                      &f.attn.core.v, &f.attn.core.o, &f.attn.core.stats, &f.attn.q_pre, &f.attn.k_pre,
                      &f.attn.k_local, &f.attn.v_local, &f.attn.out, &f.attn.residual, &f.cross.norm,
                      &f.cross.norm_stats, &f.cross.core.q, &f.cross.core.k, &f.cross.core.v, &f.cross.core.o,
                      &f.cross.core.stats, &f.cross.residual, &f.mlp.norm, &f.mlp.norm_stats, &f.mlp.gathered,
                      &f.mlp.u, &f.mlp.g, &f.mlp.out, &f.experts.router_logits, &f.experts.gates,
                      &f.experts.dispatched, &f.experts.up, &f.experts.act, &f.experts.down, &f.out}) {
    fn(*t);
  }
}

// The tensor of each RematTag in a block's forward (MaxText's checkpoint names): the block input; the
// self-attention's queries, keys and values as the attention core reads them (after bias and rotary, which
// recompute in the projection's epilogue; this chip's positions under context parallelism); the attention
// core's output (context); the attention's and the MLP's outputs after their row-parallel reduction
// (out_proj, mlpwo); the MLP's input projection (mlpwi: both halves of a gated one; a mixture of experts'
// expert up-projections).
inline std::array<TensorId, kRematTags> tagged(const BlockFwd& f, bool moe) {
  std::array<TensorId, kRematTags> t{};
  t[static_cast<std::size_t>(RematTag::decoder_layer_input)] = f.x;
  t[static_cast<std::size_t>(RematTag::query_proj)] = f.attn.core.q;
  t[static_cast<std::size_t>(RematTag::key_proj)] = f.attn.k_local;
  t[static_cast<std::size_t>(RematTag::value_proj)] = f.attn.v_local;
  t[static_cast<std::size_t>(RematTag::context)] = f.attn.core.o;
  t[static_cast<std::size_t>(RematTag::out_proj)] = f.attn.out;
  t[static_cast<std::size_t>(RematTag::mlpwi)] = moe ? f.experts.up : f.mlp.u;
  t[static_cast<std::size_t>(RematTag::mlpwo)] = f.mlp.out;
  return t;
}

// The placement of each tag under a named policy (kernels/README.md, "Rematerialization"); nullopt for none,
// full and selective, which do not go by tags. MaxText's policies name which tags are saved
// (jax.checkpoint_policies.save_only_these_names) or offloaded; `minimal` saves the outputs of the dots
// without batch dimensions (checkpoint_dots_with_no_batch_dims), in a block the four projections;
// save_dot_except_logits_ffn1 saves, as its name says, every dot of the block but the attention logits and
// the MLP's first projection. The block input is always kept: it is the scan carry every recomputation starts from.
inline std::optional<RematPlacements> policy_placements(const WorkloadSpec& w) {
  using T = RematTag;
  auto only = [](std::initializer_list<T> saved, RematPlacement how) {
    RematPlacements p;
    p.fill(RematPlacement::remat);
    p[static_cast<std::size_t>(T::decoder_layer_input)] = RematPlacement::device;
    for (const T t : saved) p[static_cast<std::size_t>(t)] = how;
    return p;
  };
  constexpr RematPlacement dev = RematPlacement::device, host = RematPlacement::offload;
  switch (w.memory.remat) {
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
    case Remat::custom: return w.memory.remat_custom;
  }
  return std::nullopt;
}

class TransformerStep {
 public:
  TransformerStep(const WorkloadSpec& w, const ChipSpec& chip, const ShardView& shard, CollectivePoints& points)
      : w_(w), m_(w.model.transformer), shard_(shard), points_(points), b_(chip, w.numerics.dtype) {
    mode_.train = w.step == StepKind::train;
    mode_.decode = w.step == StepKind::decode;
    mode_.inference = w.inference();
    heads_.query = shard.heads;
    heads_.kv = shard.kv_heads;
    heads_.dim = m_.head_dim();
    d_ = m_.d_model;
    dtypes_.weights = w.weights();
    // Matmuls against weights run in the weight type when it is quantized (int8 / fp8: the chip has the rate,
    // load_scenario checks it), in the activation type otherwise.
    const bool quantized = dtypes_.weights == DType::int8 || dtypes_.weights == DType::fp8;
    dtypes_.matmul = quantized ? dtypes_.weights : w.numerics.dtype;
    dtypes_.weight_grad = w.numerics.dtype;
    // AQT (workload.quantization: int8): every dense-layer matmul, weight gradients too, in int8, its operands
    // quantized inside the kernel (Builder::quantize_int8); the attention core keeps w.dtype.
    if (w.numerics.quantization == Quantization::int8) {
      dtypes_.matmul = dtypes_.weight_grad = DType::int8;
      b_.quantize_int8();
    }
    if (mode_.train) memory_.policy = policy_placements(w);
  }

  fused::Graph build();

 private:
  // ---- parameters ----
  // A parameter whose products count `model_share` of their FLOPs as model FLOPs (Param::model_share).
  Param param(const std::string& name, std::int64_t rows, std::int64_t cols, double model_share = 1);
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
  // ---- remat policies (memory_.policy) ----
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
  // tokens x top_k / experts)), of which `routed` (tokens x top_k x local / experts, at most local x capacity:
  // the rest are dropped) carry tokens.
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
    if (m_.style.norm == NormKind::rmsnorm) return backward ? kRmsNormBackward : kRmsNormForward;
    return backward ? kLayerNormBackward : kLayerNormForward;
  }
  [[nodiscard]] std::int64_t norm_params() const {
    return m_.style.norm == NormKind::layernorm && m_.style.bias ? 2 * d_ : d_;
  }
  // The share of a matmul's FLOPs that are model FLOPs on this chip (Builder::Matmul::flops.model_share): `split` (the
  // ways sequence parallelism splits its tokens, where it does) over the chips computing the same products.
  [[nodiscard]] static double share(int replicas, double split = 1) { return split / std::max(1, replicas); }
  // The fused QKV projection's: its query part repeats over replicas.heads chips, its key/value part over
  // replicas.kv_heads (more when kv heads fewer than the tensor axis are repeated).
  [[nodiscard]] double qkv_share() const {
    const double q = heads_.query, kv = 2.0 * heads_.kv;
    return (q * share(shard_.replicas.heads) + kv * share(shard_.replicas.kv_heads)) / (q + kv);
  }
  // The vocabulary projection's: the real rows among this chip's (the vocabulary padded to its shards), over its
  // replicas.
  [[nodiscard]] double vocab_share() const {
    const double rows = static_cast<double>(shard_.vocab.rows) * shard_.vocab.shards;
    return static_cast<double>(m_.vocab) / rows * share(shard_.replicas.vocab);
  }
  [[nodiscard]] std::int64_t qkv_width() const {
    return static_cast<std::int64_t>(heads_.query + 2 * heads_.kv) * heads_.dim;
  }
  [[nodiscard]] std::int64_t up_width(bool expert) const {
    const std::int64_t f = expert ? shard_.moe.d_ff : shard_.d_ff;
    return m_.gated() ? 2 * f : f;
  }

  const WorkloadSpec& w_;
  const TransformerModel& m_;
  const ShardView& shard_;
  CollectivePoints& points_;
  Builder b_;
  struct Mode {
    bool train = false, decode = false, inference = false;
  } mode_;
  // The backward being built: its microbatch (Builder::gradient) and the first op of its latest block's.
  struct Backward {
    int micro = 0;
    std::optional<std::size_t> last_start;
  } backward_;
  std::map<TensorId, TensorId> prefetched_;  // prefetch: parameter -> its gathered weights, used once
  // What the memory policy keeps apart: a named remat policy's placement of each tag (nullopt: none, full or
  // selective, or not training) and the host-memory copy of each offloaded activation.
  struct MemoryPolicy {
    std::optional<RematPlacements> policy;
    std::map<TensorId, TensorId> host_copies;
  } memory_;
  struct Heads {  // on this chip
    int query = 0, kv = 0, dim = 0;
  } heads_;
  std::int64_t d_ = 0;
  struct DTypes {
    DType weights = DType::f32;
    DType matmul = DType::bf16;       // matmuls against weights
    DType weight_grad = DType::bf16;  // weight-gradient matmuls
  } dtypes_;
  // The parameters outside the blocks: the embedding, the head, the encoder-decoder's encoder final norm and
  // T5's per-stack position-bias tables.
  struct OuterParams {
    Param table, positions, types, final_norm, out_proj, lm_dense, lm_bias, lm_norm, pooler, pooler_bias;
    Param enc_final;
    std::vector<Param> relative;
    [[nodiscard]] std::vector<const Param*> all() const {
      std::vector<const Param*> out{&table,   &positions, &types,  &final_norm,  &out_proj, &lm_dense,
                                    &lm_bias, &lm_norm,   &pooler, &pooler_bias, &enc_final};
      for (const Param& p : relative) out.push_back(&p);
      return out;
    }
  } outer_;
  std::vector<Stack> stacks_;
  // KV caches (inference): per stack and layer, keys and values (and the cross-attention's).
  struct KvCaches {
    std::map<std::pair<int, int>, std::pair<TensorId, TensorId>> self, cross;
  } kv_caches_;
  [[nodiscard]] std::vector<const Param*> embedding_and_head() const { return outer_.all(); }
};

}  // namespace tpusim::kernels::transformer
