// The collectives a sharding plan implies (sharding_points.h; kernels/README.md "Sharding").
#include "sharding/sharding_points.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "graph/fused_ops.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

using fused::Access;
using ir::CollectiveAlgorithm;
using fused::TensorId;
using fused::TensorKind;

ShardingPoints::ShardingPoints(const ShardingPlan& plan, const ChipSpec& chip, DType activation_dtype,
                               std::vector<ir::CollectiveGroup>& groups, bool collective_matmul, bool run_ahead)
    : plan_(plan),
      chip_(chip),
      act_(activation_dtype),
      groups_(groups),
      collective_matmul_(collective_matmul),
      run_ahead_(run_ahead) {}

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
    op.ici.comm.collective = kind;
    op.ici.comm.group = group_index(group);
    op.dtype = dtype;
    // Whole elements of its dtype, a shard that does not split evenly padded up to the next (a third of a 2048 x
    // 2048 bf16 weight: 1,398,102 elements): a collective's plan counts in elements, and the program-file reader
    // takes whole elements only. A count within rounding of a whole one is that one.
    const double elements = bytes / dtype_bytes(dtype), whole = std::round(elements);
    const double padded = std::abs(elements - whole) <= 1e-9 * std::max(1.0, whole) ? whole : std::ceil(elements);
    op.ici.bytes = static_cast<std::uint64_t>(padded) * static_cast<std::uint64_t>(dtype_bytes(dtype));
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
  if (!run_ahead_) {
    if (!g.ops().empty()) after.push_back(g.ops().size() - 1);
  } else if (have_previous_) {
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
  op.grid.steps = vector_grid_steps(chip_, w.elements, bytes_per_element);
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
  const std::vector<std::size_t> after = statistics_before(g, shard);
  if (!collective_matmul_) {
    collective(g, scope(layer, phase) + ".tp_all_gather", phase, CollectiveKind::all_gather, t.bytes(), t.dtype,
               plan_.residual_axes(), {{shard, 1}}, {{out, 1}}, after);
    return out;
  }
  ring_chunks_[out] = ring_steps(g, scope(layer, phase) + ".tp_ring_permute", phase, shard, out, after);
  return out;
}

// Collective matmul, bidirectional as XLA runs it on TPU (kernels/README.md "Collective matmul"): the shards
// travel both ways round the tensor group's ring at once. Step s (1 <= s < N/2) is one exchange (a
// ring_bidirectional permute of two shards: the one that came from -1 in step s - 1 goes on to +1, the one
// that came from +1 goes on to -1; this chip's own both ways at s = 1), so each link direction carries one
// shard per step; for even N the last step (s = N/2) brings the opposite chip's shard, half from each side.
// N/2 steps for the N - 1 shards, (N - 1) / 2 shards per link direction: the bidirectional all-gather's
// bandwidth on a ring. A 2-chip group is one +1 shift. The chunks come back in arrival order (this chip's
// first), and the last step also completes `whole` for the readers that are not decomposed.
std::vector<TensorId> ShardingPoints::ring_steps(fused::Graph& g, const std::string& label, fused::Phase phase,
                                                 TensorId shard, TensorId whole, const std::vector<std::size_t>& after) {
  const int n = plan_.residual_shards();
  const fused::Tensor t = g.tensor(shard);
  const auto chunk = [&](const std::string& what) {
    return g.tensor(fmt::format("{}.ring_{}.{}", t.name, what, fused::phase_name(phase)), t.elements, t.dtype,
                    TensorKind::activation);
  };
  bool first_step = true;
  const auto exchange = [&](double shards, const std::vector<Access>& reads, std::vector<Access> writes, bool last) {
    if (last) writes.push_back({whole, 1});
    const std::size_t first = g.ops().size();
    collective(g, label, phase, CollectiveKind::permute, shards * t.bytes(), t.dtype, plan_.residual_axes(), reads,
               writes, first_step ? after : std::vector<std::size_t>{});
    first_step = false;
    const CollectiveAlgorithm a =
        n == 2 ? CollectiveAlgorithm::ring_unidirectional : CollectiveAlgorithm::ring_bidirectional;
    for (std::size_t i = first; i < g.ops().size(); ++i) g.ops()[i].ici.comm.algorithm = static_cast<std::uint8_t>(a);
  };
  std::vector<TensorId> chunks{shard};
  if (n == 2) {
    chunks.push_back(chunk("1"));
    exchange(1, {{shard, 1}}, {{chunks.back(), 1}}, true);
    return chunks;
  }
  TensorId from_minus = shard, from_plus = shard;  // what goes on to +1 and to -1 next
  const int both_ways = (n - 1) / 2;               // steps bringing a shard from each side
  for (int s = 1; s <= both_ways; ++s) {
    const TensorId cw = chunk(fmt::format("{}m", s)), ccw = chunk(fmt::format("{}p", s));
    std::vector<Access> reads{{from_minus, 1}};
    if (from_plus != from_minus) reads.push_back({from_plus, 1});
    exchange(2, reads, {{cw, 1}, {ccw, 1}}, s == both_ways && n % 2 == 1);
    chunks.push_back(cw);
    chunks.push_back(ccw);
    from_minus = cw, from_plus = ccw;
  }
  if (n % 2 == 0) {
    const TensorId opposite = chunk(fmt::format("{}", n / 2));
    exchange(1, {{from_minus, 0.5}, {from_plus, 0.5}}, {{opposite, 1}}, true);
    chunks.push_back(opposite);
  }
  return chunks;
}

std::vector<TensorId> ShardingPoints::ring_chunks(TensorId gathered) const {
  const auto it = ring_chunks_.find(gathered);
  return it == ring_chunks_.end() ? std::vector<TensorId>{} : it->second;
}

// The lowering runs a norm under activation_embed on 1/N of the elements as under sequence parallelism (the
// same work), its `stats` tensor 1/N of the tokens' statistics; the all-reduce carries every token's: N x its
// bytes (f32: 1 per token for RMSNorm, 2 for LayerNorm, forward; as many sums in the backward). It starts when
// the norm's op is done (it reads `out` for no bytes) and the next tensor-group gather, the first reader of
// the norm's output (or of the backward's residual add after it), waits for it (gather_sequence).
void ShardingPoints::norm_statistics(fused::Graph& g, const std::string& label, fused::Phase phase, TensorId stats,
                                     TensorId out) {
  const int n = plan_.shards(LogicalAxis::activation_embed);
  if (n <= 1) return;
  const fused::Tensor t = g.tensor(stats);
  const TensorId sums = g.tensor(label + ".stats_sum", t.elements * n, t.dtype, TensorKind::activation);
  pending_statistics_[out] = g.ops().size();
  collective(g, label + ".tp_stats_all_reduce", phase, CollectiveKind::all_reduce, t.bytes() * n, t.dtype,
             plan_.axes(LogicalAxis::activation_embed), {{stats, 1}, {out, 0}}, {{sums, 1}});
}

// The statistics all-reduces a gather of `shard` waits for: the one completing `shard` itself (a norm's
// output), or one completing a tensor the op writing `shard` reads (the backward's residual add after the norm).
std::vector<std::size_t> ShardingPoints::statistics_before(const fused::Graph& g, TensorId shard) {
  std::vector<std::size_t> after;
  const auto take = [&](TensorId t) {
    const auto it = pending_statistics_.find(t);
    if (it == pending_statistics_.end()) return;
    after.push_back(it->second);
    pending_statistics_.erase(it);
  };
  take(shard);
  const auto& ops = g.ops();
  for (std::size_t i = ops.size(); after.empty() && i-- > 0;) {
    const bool writes = std::any_of(ops[i].writes.begin(), ops[i].writes.end(),
                                    [&](const Access& w) { return w.tensor == shard; });
    if (!writes) continue;
    for (const Access& r : ops[i].reads) take(r.tensor);
    break;
  }
  return after;
}

int ShardingPoints::ring_scatter_blocks(int layer) const {
  // The blocks' row-parallel outputs (the head's vocabulary-parallel one stays one reduce-scatter).
  if (!collective_matmul_ || layer < 0 || plan_.shards(LogicalAxis::heads) <= 1) return 0;
  return plan_.residual_shards() > 1 ? plan_.residual_shards() : 0;
}

// Collective matmul, the reduce-scatter side (kernels/README.md "Collective matmul"): the partial sums of each
// row block travel to the block's owner, each chip on the way adding its own partial matmul of that block to
// the sum that came in and passing it on. Both ways at once: the sum of block j comes from -1 over the
// floor(N/2) chips before j and from +1 over the ceil(N/2) - 1 after it, so step s (1 <= s <= floor(N/2)) sends
// one block each way (at the last step of an even N one block, half each way: half of every block's rows take
// the mirror image of these chains, so each direction carries (N - 1)/2 blocks), and this chip's own block,
// computed last, adds the two sums that arrived. The partial matmuls do not wait for the ring (only the adds after them do), so each
// step's transfer overlaps the next blocks' matmuls.
TensorId ShardingPoints::ring_reduce_scatter(fused::Graph& g, int layer, fused::Phase phase, const std::string& name,
                                             double elements, DType dtype, const PartialMatmul& partial) {
  const int n = plan_.residual_shards();
  const double block = elements / n;
  const auto tensor = [&](const std::string& what) {
    return g.tensor(fmt::format("{}.{}", name, what), block, dtype, TensorKind::activation);
  };
  const int plus = n / 2, minus = n - 1 - plus;  // chain lengths: sends to +1 and to -1
  std::vector<TensorId> in_plus, in_minus;       // the sums received from -1 (sent +1) and from +1
  int order = 0;
  for (int s = 1; s <= plus; ++s) {
    std::vector<Access> reads, writes;
    const TensorId up = tensor(fmt::format("ring_sum{}m", s));
    partial(order++, in_plus, up);
    reads.push_back({up, 1});
    in_plus = {tensor(fmt::format("ring_in{}m", s))};
    writes.push_back({in_plus.front(), 1});
    if (s <= minus) {
      const TensorId down = tensor(fmt::format("ring_sum{}p", s));
      partial(order++, in_minus, down);
      reads.push_back({down, 1});
      in_minus = {tensor(fmt::format("ring_in{}p", s))};
      writes.push_back({in_minus.front(), 1});
    }
    const std::size_t first = g.ops().size();
    collective(g, scope(layer, phase) + ".tp_ring_scatter", phase, CollectiveKind::permute,
               static_cast<double>(reads.size()) * block * static_cast<double>(dtype_bytes(dtype)), dtype,
               plan_.residual_axes(), reads, writes);
    // The last step of an even N sends one block: half its rows took the mirror image of the chains (the long
    // one from +1), so it goes half each way, as every other step loads both directions (a 2-chip group: +1).
    const CollectiveAlgorithm a =
        n == 2 ? CollectiveAlgorithm::ring_unidirectional : CollectiveAlgorithm::ring_bidirectional;
    for (std::size_t i = first; i < g.ops().size(); ++i) g.ops()[i].ici.comm.algorithm = static_cast<std::uint8_t>(a);
  }
  const TensorId out = g.tensor(name + ".reduced", block, dtype, TensorKind::activation);
  std::vector<TensorId> received = in_plus;
  received.insert(received.end(), in_minus.begin(), in_minus.end());
  partial(order, received, out);
  return out;
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
  // Under FSDP these are the shards the block's reduce-scatter writes.
  gradient_all_reduce(g,
                      {scope(layer, fused::Phase::backward) + ".tp_norm_all_reduce", bytes,
                       g.tensor(gradients.front()).dtype, plan_.residual_axes(), grads},
                      plan_.shards(LogicalAxis::embed) > 1);
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
  flush_gradient_reductions(g);
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
    if (!last) continue;
    gradient_all_reduce(g, {scope_name + ".dp_all_reduce", bytes, dtype, data, stored}, shards > 1);
  }
}

void ShardingPoints::gradient_all_reduce(fused::Graph& g, PendingAllReduce reduce, bool behind_scatter) {
  // Behind a reduce-scatter the all-reduce is added after the next block's collectives: a chip issues its
  // collectives in program order, and one waiting here for the scatter would hold back the next block's
  // weight gathers. XLA's scheduler places such a start after the gathers the next compute needs.
  if (behind_scatter) {
    pending_all_reduces_.push_back(std::move(reduce));
    return;
  }
  collective(g, reduce.label, fused::Phase::backward, CollectiveKind::all_reduce, reduce.bytes, reduce.dtype,
             reduce.axes, reduce.stored, reduce.stored);
}

void ShardingPoints::flush_gradient_reductions(fused::Graph& g) {
  for (PendingAllReduce& p : pending_all_reduces_) gradient_all_reduce(g, std::move(p), false);
  pending_all_reduces_.clear();
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
  op.ici.kind = kind;
  // Activations go to the next stage, gradients to the previous; a recv names its source.
  op.ici.comm.peer = (forward == send) ? +1 : -1;
  op.ici.comm.group = group_index(groups.front());
  op.dtype = g.tensor(tensor).dtype;
  op.ici.bytes = static_cast<std::uint64_t>(std::llround(g.tensor(tensor).bytes()));
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
