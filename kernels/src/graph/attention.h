#pragma once
// Internal: the attention core, softmax(Q K^T / sqrt(d_head) + mask) V over `batch` sequences, as fused ops.
//
// Shapes: queries [batch, s_q, heads, d_head], keys and values [batch, s_k, kv_heads, d_head]; the heads of
// a key/value group (heads / kv_heads of them) share its keys and values.
//
// unfused: the scores S = Q K^T (batch x heads products of s_q x d_head x s_k), the scale, the mask and a
//   relative-position bias as elementwise ops on S, the softmax as a reduction writing P, then P V; S and P
//   live in HBM (fusion merges the scale/mask/bias into the scores matmul's epilogue; the softmax, a
//   reduction, stays its own op).
// flash (Dao et al. 2022): one kernel per direction, tiled in blocks of bq queries by bk keys held in VMEM:
//   forward, Q K^T then P V with the online softmax on the VPU between them (the scale applied to Q, the
//   normalization to the output rows; S and P never reach HBM), K and
//   V read once per query block, O and the softmax statistics (log-sum-exp per row, f32) written. Backward
//   recomputes S and P from Q, K and the statistics (hardware FLOPs, not model FLOPs), then dP = dO V^T,
//   dV = P^T dO, dS = P (dP - D), dQ = dS K, dK = dS^T Q; Q and dO are read once per key block.
// Decode (s_q = 1): the heads of a group form the rows of one product against the group's cached keys.
// FLOPs: the full s_q x s_k product counts (model and hardware), causal or not, as PaLM's appendix B counts it
// (no skipping of masked blocks).
#include <cstdint>

#include "graph/fused_ops.h"
#include "tpusim/core/scenario.h"

namespace tpusim::kernels {

struct AttentionShape {
  std::int64_t batch = 0;  // sequences
  std::int64_t s_q = 0, s_k = 0;
  int heads = 0, kv_heads = 0, d_head = 0;
  bool causal = true;
  bool relative_bias = false;  // T5's per-head position bias added to the scores
  double model_share = 1;      // of its FLOPs, model FLOPs on this chip (Builder::Matmul::flops.model_share)
};

// The flash kernel's blocks: bk = min(s_k, 512) (assumption: the key block of JAX's splash attention
// kernels), and bq the largest power of two up to s_q whose working set (Q block and f32 accumulator, the
// double-buffered K and V blocks, the f32 score block, the row statistics) fits kGemmVmemFraction of a
// TensorCore's VMEM.
struct FlashBlocks {
  std::int64_t bq = 0, bk = 0;
};
[[nodiscard]] FlashBlocks flash_blocks(const ChipSpec& chip, const AttentionShape& s, DType dtype);
inline constexpr std::int64_t kFlashKeyBlock = 512;

// What the backward pass reads of the forward.
struct AttentionSaved {
  fused::TensorId q = 0, k = 0, v = 0, o = 0;
  fused::TensorId stats = 0;  // flash: the log-sum-exp rows (f32); unfused: the probabilities P
};

// Appends the forward attention core reading q, k, v (k and v may be KV-cache tensors read with `kv_times`,
// the fraction of them the step's keys cover) and returns what the backward needs, with o the output
// [batch, s_q, heads x d_head].
AttentionSaved attention_forward(Builder& b, const OpName& name, AttentionImpl impl, const AttentionShape& s,
                                 fused::TensorId q, fused::TensorId k, fused::TensorId v, double kv_times = 1.0);

struct AttentionGrads {
  fused::TensorId dq = 0, dk = 0, dv = 0;
};
// Appends the backward attention core given the output gradient d_o. `saved` comes from attention_forward in
// the forward phase, or, for selective rematerialization of unfused attention, from a recompute-phase
// attention_forward just before (the caller's choice).
AttentionGrads attention_backward(Builder& b, const OpName& name, AttentionImpl impl, const AttentionShape& s,
                                  const AttentionSaved& saved, fused::TensorId d_o);

}  // namespace tpusim::kernels
