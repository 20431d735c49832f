#pragma once
// Internal: the points of a lowered step where a sharding plan inserts collectives (issue 9). The single-chip
// lowering calls every point with the default implementation, which inserts nothing and returns the tensor
// it was given. A sharding plan overrides them: each may add ops to the graph (a collective is an op on the
// ICI unit, fused::Op::unit = ici, reading and writing tensors like any other, so dependencies follow) and
// returns the tensor the lowering continues with.
#include <functional>
#include <string>
#include <vector>

#include "graph/fused_graph.h"

namespace tpusim::kernels {

// A parameter's gradient of one microbatch: the stored gradient, and the tensor the backward wrote it into
// (`whole`: the full-size buffer under FSDP, Builder::gradient; else the stored gradient itself).
struct GradientBuffer {
  fused::TensorId stored = 0;
  fused::TensorId whole = 0;
};

class CollectivePoints {
 public:
  virtual ~CollectivePoints() = default;
  // Before a block's weights are used in `phase` (forward, recompute, backward): an FSDP all-gather of
  // `weight` (stored 1/weight_shards per chip). Returns the tensor the matmul reads.
  virtual fused::TensorId weights_before_use(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId weight) {
    return weight;
  }
  // After a row-parallel matmul (attention output projection, MLP down-projection; in the backward the input
  // gradients of the column-parallel ones; layer -1: the vocabulary-parallel embedding and head): the
  // tensor-parallel all-reduce of the partial sums `partial`, or, with sequence parallelism
  // (ShardView::sequence_shards), their reduce-scatter into this chip's tokens.
  virtual fused::TensorId after_row_parallel(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId partial) {
    return partial;
  }
  // The tensor-parallel all-reduce of partial sums every chip needs whole even under sequence parallelism
  // (the mixture-of-experts gates' gradients, which feed the router's backward on every token).
  virtual fused::TensorId tensor_all_reduce(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId partial) {
    return partial;
  }
  // Sequence parallelism: the all-gather of this chip's tokens `shard` over the tensor group where a
  // tensor-parallel op needs every token (before a column-parallel matmul; in the backward, the output gradient
  // before the row-parallel matmul's and the norm output again for the weight gradient). Without it, `shard`.
  virtual fused::TensorId gather_sequence(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId shard) {
    return shard;
  }
  // Collective matmul (workload.collective_matmul): the pieces a gather_sequence result arrives in, one per ring
  // step in arrival order (the first this chip's own shard); empty when it arrives whole.
  [[nodiscard]] virtual std::vector<fused::TensorId> ring_chunks(fused::TensorId /*gathered*/) const { return {}; }
  // MaxText's activation_embed splits d_model over the tensor group: a norm's per-token sums (`stats`, this
  // chip's part over its d_model slice) are all-reduced over the group before `out` (the norm's output, or its
  // input gradient in the backward) is complete. Nothing without that split.
  virtual void norm_statistics(fused::Graph&, const std::string& /*label*/, fused::Phase, fused::TensorId /*stats*/,
                               fused::TensorId /*out*/) {}
  // Collective matmul, the reduce-scatter side: the row blocks N a row-parallel matmul of `layer` is cut into
  // when after_row_parallel would reduce-scatter its output (0: not decomposed, one matmul then the reduction).
  [[nodiscard]] virtual int ring_scatter_blocks(int /*layer*/) const { return 0; }
  // Adds the partial matmul of one row block of the output (the `order`-th of the ring, 0 .. N - 1, the last
  // this chip's own block) and the sum of it and the partial sums `received` from the neighbours, into `out`.
  using PartialMatmul =
      std::function<void(int order, const std::vector<fused::TensorId>& received, fused::TensorId out)>;
  // The ring steps of that reduce-scatter over the output `name` (`elements` of `dtype` in all), each step's
  // partial matmuls built by `partial`; returns this chip's reduced block (after_row_parallel's result).
  virtual fused::TensorId ring_reduce_scatter(fused::Graph&, int /*layer*/, fused::Phase, const std::string& /*name*/,
                                              double /*elements*/, DType /*dtype*/, const PartialMatmul& /*partial*/) {
    return 0;
  }
  // Context parallelism (ShardView::context_shards): the all-gather over the sequence group of this chip's
  // keys and values `shards` (rotary applied) before the attention reads every position's. Returns the
  // gathered tensors, in order.
  virtual std::vector<fused::TensorId> gather_keys_values(fused::Graph&, int /*layer*/, fused::Phase,
                                                          const std::vector<fused::TensorId>& shards) {
    return shards;
  }
  // Its mirror in the backward: the reduce-scatter of the gradients of every position's keys and values
  // `grads` into this chip's positions.
  virtual std::vector<fused::TensorId> scatter_key_value_gradients(fused::Graph&, int /*layer*/,
                                                                   const std::vector<fused::TensorId>& grads) {
    return grads;
  }
  // After a block's weight gradients of a microbatch are complete: under FSDP the reduce-scatter of each
  // whole gradient into the stored shard (adding to it after the first microbatch); after the last microbatch
  // the data-parallel all-reduce of the stored gradients.
  virtual void after_weight_gradients(fused::Graph&, int /*layer*/, const std::vector<GradientBuffer>& /*gradients*/,
                                      bool /*first_microbatch*/, bool /*last_microbatch*/) {}
  // Before the optimizer reads the gradients: the data-parallel all-reduces after_weight_gradients left for later
  // (one behind an FSDP reduce-scatter waits for the next block's, see ShardingPoints) are added now.
  virtual void flush_gradient_reductions(fused::Graph&) {}
  // Then, of those, the gradients of parameters applied to this chip's tokens under sequence parallelism (the
  // norm gains): partial sums over the tensor group, all-reduced over it.
  virtual void after_sequence_parallel_gradients(fused::Graph&, int /*layer*/,
                                                 const std::vector<fused::TensorId>& /*gradients*/) {}
  // A vocabulary-parallel cross-entropy: the all-reduce over the vocabulary's chips of a per-token statistic
  // `stat` (the row max, the sum of exponentials, the target logit) computed over this chip's logits.
  virtual fused::TensorId vocab_reduction(fused::Graph&, fused::Phase, const std::string& /*what*/,
                                          fused::TensorId stat) {
    return stat;
  }
  // Around the experts of a mixture-of-experts layer: the expert-parallel all-to-all of the dispatched tokens
  // (before the expert MLPs) and of their outputs (after).
  virtual fused::TensorId expert_dispatch(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId tokens) {
    return tokens;
  }
  virtual fused::TensorId expert_combine(fused::Graph&, int /*layer*/, fused::Phase, fused::TensorId tokens) {
    return tokens;
  }
  // Pipeline parallelism: a stage's input from the neighbouring stage (the previous one's activations in the
  // forward, the next one's gradients in the backward) received into `placeholder`, and its output sent on.
  virtual fused::TensorId stage_input(fused::Graph&, fused::Phase, fused::TensorId placeholder) { return placeholder; }
  virtual void stage_output(fused::Graph&, fused::Phase, fused::TensorId /*output*/) {}
};

}  // namespace tpusim::kernels
