// The collectives a sharding plan implies (sharding_points.h; kernels/README.md "Sharding").
#include "sharding_points.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fused_ops.h"

namespace tpusim::kernels {

using fused::Access;
using fused::TensorId;
using fused::TensorKind;

ShardingPoints::ShardingPoints(const ShardingPlan& plan, const ChipSpec& chip, DType activation_dtype,
                               std::vector<ir::CollectiveGroup>& groups, bool collective_matmul)
    : plan_(plan), chip_(chip), act_(activation_dtype), groups_(groups), collective_matmul_(collective_matmul) {}

std::uint16_t ShardingPoints::group_index(const ir::CollectiveGroup& group) {
  const auto it = std::find(groups_.begin(), groups_.end(), group);
  if (it != groups_.end()) return static_cast<std::uint16_t>(it - groups_.begin());
  groups_.push_back(group);
  return static_cast<std::uint16_t>(groups_.size() - 1);
}

std::string ShardingPoints::scope(int layer, fused::Phase phase) const {
  return fmt::format("{}.{}", layer < 0 ? std::string("head") : fmt::format("layer{}", layer), fused::phase_name(phase));
}

void ShardingPoints::collective(fused::Graph& g, const std::string& label, fused::Phase phase, CollectiveKind kind,
                                double bytes, DType dtype, const std::vector<int>& axes,
                                const std::vector<Access>& reads, const std::vector<Access>& writes,
                                const std::vector<std::size_t>& after) {
  for (const ir::CollectiveGroup& group : plan_.mesh.groups(axes)) {
    fused::Op op;
    op.label = label;
    op.cls = ir::OpClass::communication;
    op.unit = fused::Unit::ici;
    op.phase = phase;
    op.collective = kind;
    op.group = group_index(group);
    op.dtype = dtype;
    op.collective_bytes = static_cast<std::uint64_t>(std::llround(bytes));
    op.reads = reads;
    op.writes = writes;
    op.after = after;
    g.add(std::move(op));
  }
}

TensorId ShardingPoints::weights_before_use(fused::Graph& g, int layer, fused::Phase phase, TensorId weight) {
  const std::vector<int>& axes = plan_.axes(LogicalAxis::embed);
  const int shards = plan_.shards(LogicalAxis::embed);
  if (shards <= 1) return weight;
  // Gathered in the compute type: the f32 master weights are cast before the gather (kernels/README.md).
  const fused::Tensor w = g.tensor(weight);
  const TensorId gathered = g.tensor(fmt::format("{}.gathered.{}", w.name, fused::phase_name(phase)),
                                     w.elements * shards, act_, TensorKind::activation);
  // Placement (XLA's latency-hiding scheduler in spirit): a layer's gathers start once the previous layer's
  // compute has started (its first gathered weight was consumed), so they overlap the previous layer.
  if (layer != current_.layer || phase != current_.phase) {
    if (current_.layer != -2) {
      previous_ = current_;
      have_previous_ = true;
    }
    current_ = LayerGathers{layer, phase, gathered, g.ops().size()};
  }
  std::vector<std::size_t> after;
  if (have_previous_) {
    const auto& ops = g.ops();
    for (std::size_t i = previous_.first_op + 1; i < ops.size(); ++i) {
      const bool reads = std::any_of(ops[i].reads.begin(), ops[i].reads.end(),
                                     [&](const Access& a) { return a.tensor == previous_.first; });
      if (reads) {
        after.push_back(i);
        break;
      }
    }
  }
  if (w.dtype != act_) cast_before_gather(g, layer, phase, weight);
  collective(g, scope(layer, phase) + ".fsdp_all_gather", phase, CollectiveKind::all_gather,
             w.elements * static_cast<double>(dtype_bytes(act_)), act_, axes, {{weight, 1}}, {{gathered, 1}}, after);
  return gathered;
}

// A fusion of its own on the VPU (XLA moves the convert before the all-gather, which cannot run it): the shard
// is read in its stored type and written in the compute type, in the compute stream of the layer that uses it.
// The gather does not wait for it (an assumption: XLA's scheduler converts ahead of a gather it starts one layer
// early; the convert's place in the stream does not change what it costs).
void ShardingPoints::cast_before_gather(fused::Graph& g, int layer, fused::Phase phase, TensorId weight) {
  const fused::Tensor w = g.tensor(weight);
  const TensorId cast = g.tensor(w.name + ".cast." + std::string(fused::phase_name(phase)), w.elements, act_,
                                 TensorKind::activation);
  fused::Op op;
  op.label = scope(layer, phase) + ".fsdp_cast";
  op.cls = ir::OpClass::other;
  op.unit = fused::Unit::vpu;
  op.phase = phase;
  op.dtype = DType::f32;
  op.vector_op = ir::VectorOp::elementwise;
  op.vpu = kWeightCast.per_element.times(w.elements);
  op.reads = {{weight, 1}};
  op.writes = {{cast, 1}};
  const double bytes_per_element = static_cast<double>(dtype_bytes(w.dtype) + dtype_bytes(act_));
  op.grid_steps = vector_grid_steps(chip_, w.elements, bytes_per_element);
  g.add(std::move(op));
}

TensorId ShardingPoints::after_row_parallel(fused::Graph& g, int layer, fused::Phase phase, TensorId partial) {
  // Sequence parallelism (its axes are the tensor group's, make_sharding checks): each chip keeps the sum over
  // its tokens only, a reduce-scatter of the same input as the all-reduce it replaces.
  return reduce_partial(g, layer, phase, partial, plan_.residual_shards() > 1);
}

TensorId ShardingPoints::tensor_all_reduce(fused::Graph& g, int layer, fused::Phase phase, TensorId partial) {
  return reduce_partial(g, layer, phase, partial, false);
}

TensorId ShardingPoints::reduce_partial(fused::Graph& g, int layer, fused::Phase phase, TensorId partial,
                                        bool scatter) {
  const LogicalAxis axis = layer < 0 ? LogicalAxis::vocab : LogicalAxis::heads;
  if (plan_.shards(axis) <= 1) return partial;
  const fused::Tensor t = g.tensor(partial);
  const int sp = plan_.residual_shards();
  const TensorId out = g.tensor(t.name + ".reduced", t.elements / (scatter ? sp : 1), t.dtype, TensorKind::activation);
  collective(g, scope(layer, phase) + (scatter ? ".tp_reduce_scatter" : ".tp_all_reduce"), phase,
             scatter ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, t.bytes(), t.dtype,
             plan_.axes(axis), {{partial, 1}}, {{out, 1}});
  return out;
}

TensorId ShardingPoints::gather_sequence(fused::Graph& g, int layer, fused::Phase phase, TensorId shard) {
  const int sp = plan_.residual_shards();
  if (sp <= 1) return shard;
  const fused::Tensor t = g.tensor(shard);
  const TensorId out = g.tensor(fmt::format("{}.gathered.{}", t.name, fused::phase_name(phase)), t.elements * sp,
                                t.dtype, TensorKind::activation);
  if (!collective_matmul_) {
    collective(g, scope(layer, phase) + ".tp_all_gather", phase, CollectiveKind::all_gather, t.bytes(), t.dtype,
               plan_.residual_axes(), {{shard, 1}}, {{out, 1}});
    return out;
  }
  // Collective matmul: sp - 1 ring steps, each a permute of the shard that arrived last to the ring neighbour
  // (step s forwards step s-1's chunk, so the steps run back to back on the ICI while the matmul's partials
  // run on the chunks already here). The last step also completes `out`, the whole gathered tensor, for the
  // readers that are not decomposed (the backward's saved copy, a norm).
  std::vector<TensorId> chunks{shard};
  for (int s = 1; s < sp; ++s) {
    const TensorId chunk = g.tensor(fmt::format("{}.ring{}.{}", t.name, s, fused::phase_name(phase)), t.elements,
                                    t.dtype, TensorKind::activation);
    std::vector<Access> writes{{chunk, 1}};
    if (s == sp - 1) writes.push_back({out, 1});
    collective(g, scope(layer, phase) + ".tp_ring_permute", phase, CollectiveKind::permute,
               t.bytes(), t.dtype, plan_.residual_axes(), {{chunks.back(), 1}}, writes);
    chunks.push_back(chunk);
  }
  ring_chunks_[out] = std::move(chunks);
  return out;
}

std::vector<TensorId> ShardingPoints::ring_chunks(TensorId gathered) const {
  const auto it = ring_chunks_.find(gathered);
  return it == ring_chunks_.end() ? std::vector<TensorId>{} : it->second;
}

std::vector<TensorId> ShardingPoints::over_length_axes(fused::Graph& g, const std::string& label, fused::Phase phase,
                                                       CollectiveKind kind, const std::vector<TensorId>& tensors) {
  const int c = plan_.shards(LogicalAxis::length);
  if (c <= 1 || tensors.empty()) return tensors;
  // One collective of all of them (the keys and values together): an all-gather of this chip's positions, or
  // a reduce-scatter of every position's into this chip's.
  const bool gather = kind == CollectiveKind::all_gather;
  std::vector<TensorId> out;
  std::vector<Access> reads, writes;
  double bytes = 0;
  for (TensorId id : tensors) {
    const fused::Tensor t = g.tensor(id);
    out.push_back(gather ? g.tensor(fmt::format("{}.gathered.{}", t.name, fused::phase_name(phase)), t.elements * c,
                                    t.dtype, TensorKind::activation)
                         : g.tensor(t.name + ".reduced", t.elements / c, t.dtype, TensorKind::activation));
    reads.push_back({id, 1});
    writes.push_back({out.back(), 1});
    bytes += t.bytes();
  }
  collective(g, label, phase, kind, bytes, g.tensor(tensors.front()).dtype, plan_.axes(LogicalAxis::length), reads,
             writes);
  return out;
}

std::vector<TensorId> ShardingPoints::gather_keys_values(fused::Graph& g, int layer, fused::Phase phase,
                                                         const std::vector<TensorId>& shards) {
  return over_length_axes(g, scope(layer, phase) + ".cp_all_gather", phase, CollectiveKind::all_gather, shards);
}

std::vector<TensorId> ShardingPoints::scatter_key_value_gradients(fused::Graph& g, int layer,
                                                                  const std::vector<TensorId>& grads) {
  return over_length_axes(g, scope(layer, fused::Phase::backward) + ".cp_reduce_scatter", fused::Phase::backward,
                          CollectiveKind::reduce_scatter, grads);
}

void ShardingPoints::after_sequence_parallel_gradients(fused::Graph& g, int layer,
                                                       const std::vector<TensorId>& gradients) {
  if (plan_.residual_shards() <= 1 || gradients.empty()) return;
  std::vector<Access> grads;
  double bytes = 0;
  for (TensorId t : gradients) {
    grads.push_back({t, 1});
    bytes += g.tensor(t).bytes();
  }
  collective(g, scope(layer, fused::Phase::backward) + ".tp_norm_all_reduce", fused::Phase::backward,
             CollectiveKind::all_reduce, bytes, g.tensor(gradients.front()).dtype,
             plan_.residual_axes(), grads, grads);
}

TensorId ShardingPoints::vocab_reduction(fused::Graph& g, fused::Phase phase, const std::string& what, TensorId stat) {
  if (plan_.shards(LogicalAxis::vocab) <= 1) return stat;
  const fused::Tensor t = g.tensor(stat);
  const TensorId out = g.tensor(t.name + ".reduced", t.elements, t.dtype, TensorKind::activation);
  collective(g, fmt::format("{}.loss_{}_all_reduce", scope(-1, phase), what), phase, CollectiveKind::all_reduce,
             t.bytes(), t.dtype, plan_.axes(LogicalAxis::vocab), {{stat, 1}}, {{out, 1}});
  return out;
}

void ShardingPoints::after_weight_gradients(fused::Graph& g, int layer, const std::vector<GradientBuffer>& gradients,
                                            bool first, bool last) {
  const std::vector<int>& fsdp = plan_.axes(LogicalAxis::embed);
  const int shards = plan_.shards(LogicalAxis::embed);
  if (shards <= 1 && !last) return;
  // Dense and expert parameters reduce over different axes (experts are not replicated along `expert`).
  for (const bool expert : {false, true}) {
    std::vector<Access> stored, whole;
    double bytes = 0;
    DType dtype = DType::f32;
    for (const GradientBuffer& b : gradients) {
      const fused::Tensor& tensor = g.tensor(b.stored);
      if ((tensor.name.find(".experts_") != std::string::npos) != expert) continue;
      stored.push_back({b.stored, 1});
      whole.push_back({b.whole, 1});
      bytes += tensor.bytes();
      dtype = tensor.dtype;
    }
    if (stored.empty()) continue;
    // FSDP: each microbatch's whole gradients reduce-scattered over the embed axes into each chip's shard
    // (which accumulates them); after the last, the shards all-reduced over the remaining batch axes (plain
    // data parallelism).
    std::vector<int> data;
    for (int a : plan_.gradient_axes(expert)) {
      if (std::find(fsdp.begin(), fsdp.end(), a) == fsdp.end()) data.push_back(a);
    }
    const std::string scope_name = scope(layer, fused::Phase::backward) + (expert ? ".experts" : "");
    if (shards > 1) {
      std::vector<Access> reads = whole;
      if (!first) reads.insert(reads.end(), stored.begin(), stored.end());
      collective(g, scope_name + ".fsdp_reduce_scatter", fused::Phase::backward, CollectiveKind::reduce_scatter,
                 bytes * shards, dtype, fsdp, reads, stored);
    }
    if (last) {
      collective(g, scope_name + ".dp_all_reduce", fused::Phase::backward, CollectiveKind::all_reduce, bytes, dtype,
                 data, stored, stored);
    }
  }
}

TensorId ShardingPoints::expert_dispatch(fused::Graph& g, int layer, fused::Phase phase, TensorId tokens) {
  if (plan_.shards(LogicalAxis::expert) <= 1) return tokens;
  const fused::Tensor t = g.tensor(tokens);
  const TensorId out = g.tensor(t.name + ".dispatched", t.elements, t.dtype, TensorKind::activation);
  collective(g, scope(layer, phase) + ".expert_all_to_all", phase, CollectiveKind::all_to_all, t.bytes(), t.dtype,
             plan_.axes(LogicalAxis::expert), {{tokens, 1}}, {{out, 1}});
  return out;
}

TensorId ShardingPoints::expert_combine(fused::Graph& g, int layer, fused::Phase phase, TensorId tokens) {
  return expert_dispatch(g, layer, phase, tokens);
}

void ShardingPoints::point_to_point(fused::Graph& g, fused::Phase phase, ir::OpKind kind, TensorId tensor) {
  const auto groups = plan_.mesh.groups(plan_.axes(LogicalAxis::layers));
  if (groups.empty()) return;
  const bool forward = phase != fused::Phase::backward;
  const bool send = kind == ir::OpKind::send;
  fused::Op op;
  op.label = fmt::format("pipeline.{}.{}", forward ? "fwd" : "bwd", send ? "send" : "recv");
  op.cls = ir::OpClass::communication;
  op.unit = fused::Unit::ici;
  op.phase = phase;
  op.ici_kind = kind;
  // Activations go to the next stage, gradients to the previous; a recv names its source.
  op.peer = (forward == send) ? +1 : -1;
  op.group = group_index(groups.front());
  op.dtype = g.tensor(tensor).dtype;
  op.collective_bytes = static_cast<std::uint64_t>(std::llround(g.tensor(tensor).bytes()));
  if (send) {
    op.reads = {{tensor, 1}};
  } else {
    op.writes = {{tensor, 1}};
    // Posted when the stage reaches it in its schedule (after the op before it), so waiting receives never
    // hold every ICI slot ahead of the sends the other stages wait for.
    if (!g.ops().empty()) op.after = {g.ops().size() - 1};
  }
  g.add(std::move(op));
}

TensorId ShardingPoints::stage_input(fused::Graph& g, fused::Phase phase, TensorId placeholder) {
  point_to_point(g, phase, ir::OpKind::recv, placeholder);
  return placeholder;
}

void ShardingPoints::stage_output(fused::Graph& g, fused::Phase phase, TensorId output) {
  point_to_point(g, phase, ir::OpKind::send, output);
}

}  // namespace tpusim::kernels
