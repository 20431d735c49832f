#pragma once
// Sharding a whole model over a device mesh by logical-axis rules (MaxText style), and the per-chip ShardView
// the lowering builds each role's program from.
//
// Logical axes and their default mesh axes (workload.sharding overrides any of them; [] replicates):
//   batch    -> data, fsdp, expert   examples per chip = batch / (their sizes' product)
//   embed    -> fsdp                 FSDP / ZeRO-3: weights, gradients and optimizer state stored 1/n per
//                                    chip, each weight all-gathered before use, gradients reduce-scattered
//   heads, kv_heads, mlp, vocab -> tensor, tensor_sequence   Megatron column / row parallel matmuls (kv heads
//                                    replicated when fewer than the tensor axis), vocabulary-parallel embedding
//                                    and head, and a vocabulary-parallel cross-entropy
//   norm_length -> tensor_sequence   Megatron sequence parallelism (MaxText's activation_norm_length): the
//                                    tokens outside the attention and MLP blocks (norms, residual adds, the
//                                    block inputs kept for the backward) split over the tensor group; its
//                                    axes must be the heads / mlp / vocab axes. The tensor all-reduce becomes
//                                    an all-gather before the column-parallel matmul and a reduce-scatter after
//                                    the row-parallel one (the mirror in the backward)
//   activation_embed -> (none)       MaxText's activation_embed: the residual stream between the blocks split
//                                    along d_model over the tensor group (opt-in: workload.sharding:
//                                    {activation_embed: [tensor]}). The same bytes kept and moved as
//                                    norm_length (an all-gather before the column-parallel matmuls, a
//                                    reduce-scatter after the row-parallel ones), and the same checks
//   expert   -> expert               experts per chip (all-to-all dispatch and combine)
//   length   -> sequence             context parallelism: every sequence's tokens split over the sequence
//                                    group; the attention all-gathers the keys and values over it (their
//                                    gradients reduce-scattered); parameters replicated over it (unless embed
//                                    names it too), their gradients reduced over it like the batch axes
//   layers   -> pipeline             stages: layers / stages blocks each, the first with the embedding, the
//                                    last with the head; activations and gradients sent between neighbours,
//                                    the microbatches in workload.pipeline_schedule's order (shard.h)
// The collectives the sharding implies, over the groups of the mesh axes (mesh.h), are listed in
// kernels/README.md ("Sharding").
#include <array>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/mesh.h"
#include "tpusim/kernels/shard.h"

namespace tpusim::kernels {

// In the order of logical_axis_names() (core/mesh_spec.h).
enum class LogicalAxis : std::uint8_t {
  batch, length, embed, heads, kv_heads, mlp, vocab, expert, layers, norm_length, activation_embed
};
inline constexpr int kLogicalAxes = 11;

struct ShardingPlan {
  DeviceMesh mesh;
  std::array<std::vector<int>, kLogicalAxes> rules;  // mesh axis indices per logical axis
  [[nodiscard]] const std::vector<int>& axes(LogicalAxis a) const { return rules[static_cast<std::size_t>(a)]; }
  [[nodiscard]] int shards(LogicalAxis a) const;  // product of the sizes of axes(a)
  // The mesh axes a gradient of a (dense or expert) parameter is reduced over: the batch axes, less `expert`
  // for expert parameters, and the length axes (FSDP reduce-scatters over those of them that embed names).
  [[nodiscard]] std::vector<int> gradient_axes(bool expert_param) const;
  // The tensor group the residual stream is split over between the blocks: norm_length's axes (split along
  // the tokens) or activation_embed's (along d_model), never both (make_sharding checks); empty when neither.
  [[nodiscard]] const std::vector<int>& residual_axes() const;
  [[nodiscard]] int residual_shards() const;
};

// The plan of a workload on a pod: mesh placed on the torus, rules resolved. Throws ConfigError for a mesh
// that cannot be placed or a parallelism not lowered yet.
[[nodiscard]] ShardingPlan make_sharding(const WorkloadSpec& workload, const PodSpec& pod);

// Every check of a workload's mesh, mesh mapping and sharding rules against its model and the pod, made when
// a scenario is resolved for a run (the tools call it right after load_scenario), so that sharding that cannot
// be right is bad input at the user's file:line and never reaches the lowering: the mesh placed, the rules
// (no mesh axis twice in a rule or in two dimensions of one tensor, a pipeline axis for the layers alone, the
// kv heads over the heads' axes, every mesh axis used by a rule), and the sizes that must divide. A workload
// that is not sharded (gemm, mlp, dlrm, collective, a program file) must name no mesh, mapping or rule.
// Throws ConfigError with every error found.
void check_sharding(const WorkloadSpec& workload, const PodSpec& pod);

// What one chip holds. Throws ConfigError when a sharded size does not divide (the batch over the batch axes,
// heads, layers, experts).
// (of pipeline stage `stage`).
[[nodiscard]] ShardView shard_view(const WorkloadSpec& workload, const ShardingPlan& plan, int stage = 0);

}  // namespace tpusim::kernels
