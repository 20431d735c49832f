#pragma once
// Internal: the collectives a ShardingPlan implies, inserted at the lowering's CollectivePoints (sharding.h,
// kernels/README.md "Sharding"). Each collective is an op on the ICI unit over a group of the program set.
#include <map>
#include <vector>

#include "graph/collective_points.h"
#include "tpusim/kernels/sharding.h"

namespace tpusim::kernels {

class ShardingPoints : public CollectivePoints {
 public:
  // `groups` collects the groups the collectives name (ProgramSet::groups).
  // `chip` times the weight casts before the FSDP gathers (weights_before_use).
  // `collective_matmul` (workload.collective_matmul): gather_sequence runs as ring steps (ring_chunks).
  // `run_ahead`: a layer's FSDP all-gathers start with the previous layer's compute (XLA's latency-hiding
  // scheduler); without, each waits for the op before its first reader, as a scheduler short of memory would
  // hold it back (build_stages' fallback when the step with them run ahead does not fit).
  ShardingPoints(const ShardingPlan& plan, const ChipSpec& chip, DType activation_dtype,
                 std::vector<ir::CollectiveGroup>& groups, bool collective_matmul = false, bool run_ahead = true);

  fused::TensorId weights_before_use(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId weight) override;
  fused::TensorId after_row_parallel(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId partial) override;
  fused::TensorId tensor_all_reduce(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId partial) override;
  fused::TensorId gather_sequence(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId shard) override;
  [[nodiscard]] std::vector<fused::TensorId> ring_chunks(fused::TensorId gathered) const override;
  void norm_statistics(fused::Graph& g, const std::string& label, fused::Phase phase, fused::TensorId stats,
                       fused::TensorId out) override;
  [[nodiscard]] int ring_scatter_blocks(int layer) const override;
  fused::TensorId ring_reduce_scatter(fused::Graph& g, int layer, fused::Phase phase, const std::string& name,
                                      double elements, DType dtype, const PartialMatmul& partial) override;
  std::vector<fused::TensorId> gather_keys_values(fused::Graph& g, int layer, fused::Phase phase,
                                                  const std::vector<fused::TensorId>& shards) override;
  std::vector<fused::TensorId> scatter_key_value_gradients(fused::Graph& g, int layer,
                                                           const std::vector<fused::TensorId>& grads) override;
  void after_weight_gradients(fused::Graph& g, int layer, const std::vector<GradientBuffer>& gradients, bool first,
                              bool last) override;
  void flush_gradient_reductions(fused::Graph& g) override;
  void after_sequence_parallel_gradients(fused::Graph& g, int layer,
                                         const std::vector<fused::TensorId>& gradients) override;
  fused::TensorId vocab_reduction(fused::Graph& g, fused::Phase phase, const std::string& what,
                                  fused::TensorId stat) override;
  fused::TensorId expert_dispatch(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId tokens) override;
  fused::TensorId expert_combine(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId tokens) override;
  fused::TensorId stage_input(fused::Graph& g, fused::Phase phase, fused::TensorId placeholder) override;
  void stage_output(fused::Graph& g, fused::Phase phase, fused::TensorId output) override;

 private:
  // Adds `kind` of `bytes` per chip over the mesh axes `axes` (one op per group when they do not combine),
  // reading `reads` and writing `writes`; returns the index of the last op.
  void collective(fused::Graph& g, const std::string& label, fused::Phase phase, CollectiveKind kind,
                  double bytes, DType dtype, const std::vector<int>& axes, const std::vector<fused::Access>& reads,
                  const std::vector<fused::Access>& writes, const std::vector<std::size_t>& after = {});
  // The weight-cast fusion before weight's FSDP all-gather (weights_before_use).
  void cast_before_gather(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId weight);
  std::uint16_t group_index(const ir::CollectiveGroup& group);
  // The tensor group's reduction of `partial`: all-reduced, or reduce-scattered into this chip's tokens.
  fused::TensorId reduce_partial(fused::Graph& g, int layer, fused::Phase phase, fused::TensorId partial, bool scatter);
  // Collective matmul: the ring steps that bring the tensor group's shards of `shard` (gather_sequence);
  // returns the chunks in arrival order, this chip's first; the last step also writes `whole`.
  std::vector<fused::TensorId> ring_steps(fused::Graph& g, const std::string& label, fused::Phase phase,
                                          fused::TensorId shard, fused::TensorId whole,
                                          const std::vector<std::size_t>& after);
  // Context parallelism: one all-gather (or reduce-scatter) of `tensors` over the length axes; returns the
  // gathered (reduced) tensors.
  std::vector<fused::TensorId> over_length_axes(fused::Graph& g, const std::string& label, fused::Phase phase,
                                                CollectiveKind kind, const std::vector<fused::TensorId>& tensors);
  // A send (+1: forward to the next stage) or recv over the pipeline axis.
  void point_to_point(fused::Graph& g, fused::Phase phase, ir::OpKind kind, fused::TensorId tensor);
  [[nodiscard]] std::string scope(int layer, fused::Phase phase) const;

  const ShardingPlan& plan_;
  const ChipSpec& chip_;
  DType act_;
  std::vector<ir::CollectiveGroup>& groups_;
  // FSDP prefetch: the first gathered weight of the current (layer, phase) and of the previous one.
  struct LayerGathers {
    int layer = -2;
    fused::Phase phase = fused::Phase::other;
    fused::TensorId first = 0;
    std::size_t first_op = 0;
  };
  LayerGathers current_, previous_;
  bool collective_matmul_ = false;
  bool run_ahead_ = true;
  // norm_statistics: the all-reduce (op index) completing each norm output or input gradient, until a gather
  // waits for it (statistics_before).
  std::map<fused::TensorId, std::size_t> pending_statistics_;
  std::vector<std::size_t> statistics_before(const fused::Graph& g, fused::TensorId shard);
  std::map<fused::TensorId, std::vector<fused::TensorId>> ring_chunks_;  // gathered -> its ring steps' chunks
  bool have_previous_ = false;
  // All-reduces of FSDP gradient shards not yet added (after_weight_gradients, after_sequence_parallel_gradients).
  struct PendingAllReduce {
    std::string label;
    double bytes = 0;
    DType dtype = DType::f32;
    std::vector<int> axes;
    std::vector<fused::Access> stored;
  };
  std::vector<PendingAllReduce> pending_all_reduces_;
  // A gradient all-reduce: added now, or, behind an FSDP reduce-scatter, at the next flush_gradient_reductions
  // (after_weight_gradients calls it first).
  void gradient_all_reduce(fused::Graph& g, PendingAllReduce reduce, bool behind_scatter);
};

}  // namespace tpusim::kernels
