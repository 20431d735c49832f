// Logical-axis rules, and the per-chip ShardView (contract in sharding.h).
#include "tpusim/kernels/sharding.h"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "zoo/model_lowering.h"

namespace tpusim::kernels {
namespace {

SourceLoc loc_of_axis(const WorkloadSpec& w, const std::string& axis) {
  for (const MeshAxisSpec& a : w.mesh.axes) {
    if (a.name == axis) return a.loc;
  }
  return w.mesh.loc;
}

// Where a logical axis's rule is written (workload.sharding.<axis>), else where its first mesh axis is.
std::pair<SourceLoc, std::string> loc_of_rule(const WorkloadSpec& w, const ShardingPlan& plan, LogicalAxis axis) {
  const std::string& logical = logical_axis_names()[static_cast<std::size_t>(axis)];
  for (const ShardingRuleSpec& r : w.mesh.rules) {
    if (r.logical == logical) return {r.loc, "workload.sharding." + logical};
  }
  const std::string name = plan.mesh.axes()[static_cast<std::size_t>(plan.axes(axis).front())].name;
  return {loc_of_axis(w, name), "workload.mesh." + name};
}

std::string axis_names(const ShardingPlan& plan, const std::vector<int>& axes) {
  std::vector<std::string> names;
  for (int i : axes) names.push_back(plan.mesh.axes()[static_cast<std::size_t>(i)].name);
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

// Megatron sequence parallelism splits the norm regions' tokens over the tensor group, MaxText's
// activation_embed their d_model: either needs the tensor group (the same axes for heads, mlp and vocab, and
// more than one chip) and a step over whole sequences, and the residual stream is split one way, not both.
void check_residual_split(const WorkloadSpec& w, const ShardingPlan& plan, LogicalAxis axis) {
  const auto [at, key] = loc_of_rule(w, plan, axis);
  const std::string name = logical_axis_names()[static_cast<std::size_t>(axis)];
  const std::string what = axis == LogicalAxis::norm_length ? "sequence parallelism (norm_length)"
                                                            : "the d_model split (activation_embed)";
  auto sorted = [&](LogicalAxis a) {
    std::vector<int> v;
    for (int i : plan.axes(a)) {
      if (plan.mesh.axes()[static_cast<std::size_t>(i)].size > 1) v.push_back(i);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<int> sp = sorted(axis);
  const std::string heads = axis_names(plan, sorted(LogicalAxis::heads));
  std::string problem, expected, found;
  std::string hint = key.rfind("workload.sharding", 0) == 0
                         ? fmt::format("remove the {} rule (tensor parallelism alone)", name)
                         : "name the axis tensor instead of tensor_sequence (tensor parallelism alone)";
  if (w.model.kind != ModelKind::transformer || w.model.transformer.architecture == Architecture::encoder_decoder) {
    problem = what + " applies to decoder-only and encoder-only transformers";
    expected = "a decoder-only or encoder-only transformer", found = std::string(model_kind_name(w.model.kind));
  } else if (w.step != StepKind::train && w.step != StepKind::forward) {
    problem = what + " splits the activations of whole sequences: it applies to train and forward steps";
    expected = "step train or forward", found = w.step == StepKind::prefill ? "prefill" : "decode";
  } else if (sp != sorted(LogicalAxis::heads) || sp != sorted(LogicalAxis::mlp) || sp != sorted(LogicalAxis::vocab)) {
    problem = what + " runs over the tensor group: " + name + " must shard over the heads, mlp and vocab axes";
    expected = fmt::format("{} over the heads axes ({})", name, heads);
    found = axis_names(plan, sp);
    hint = axis == LogicalAxis::norm_length
               ? fmt::format("workload.sharding: {{norm_length: [{}]}}, or a tensor_sequence mesh axis", heads)
               : fmt::format("workload.sharding: {{activation_embed: [{}]}}", heads);
  } else if (axis == LogicalAxis::activation_embed && plan.shards(LogicalAxis::norm_length) > 1) {
    problem = "the residual stream is split along the tokens (norm_length) or along d_model (activation_embed), "
              "not both";
    expected = "one of norm_length and activation_embed";
    found = fmt::format("norm_length over {}, activation_embed over {}",
                        axis_names(plan, plan.axes(LogicalAxis::norm_length)), axis_names(plan, sp));
    hint = "name the tensor axis tensor instead of tensor_sequence, or drop the activation_embed rule";
  }
  if (!problem.empty()) throw ConfigError({Diagnostic{at, key, problem, expected, found, hint}});
}

// Collective matmul decomposes the tensor group's gathers of the split residual stream (sequence parallelism or
// activation_embed, which check_residual_split allows only over the heads' axes of a transformer): with no such
// split there is nothing to decompose, and `on` would change nothing while saying it did.
void check_collective_matmul(const WorkloadSpec& w, const ShardingPlan& plan) {
  if (plan.residual_shards() > 1) return;
  const int tensor = plan.shards(LogicalAxis::heads);
  throw ConfigError({Diagnostic{
      origin_of(w.origins, "collective_matmul"), "workload.collective_matmul",
      tensor > 1 ? "collective matmul decomposes the all-gathers of a split residual stream, and this tensor group "
                   "does not split it (each chip holds every token at full width): nothing to decompose"
                 : "collective matmul decomposes the tensor group's all-gathers, and this step has no tensor split",
      "a residual stream split over the tensor group (activation_embed or norm_length over heads' axes)",
      tensor > 1 ? fmt::format("tensor group of {} chips, residual stream not split", tensor)
                 : "no tensor axis larger than 1",
      tensor > 1 ? "add workload.sharding: {activation_embed: [tensor]}, or name the axis tensor_sequence; or set "
                   "collective_matmul: off"
                 : "set workload.collective_matmul: off, or shard the model over a tensor axis with activation_embed"}});
}

// Context parallelism splits every sequence over the length axes: whole sequences of a decoder-only or
// encoder-only transformer in a train or forward step (a decode step has one token per sequence; prefill
// would split the KV cache, not lowered).
void check_context_parallel(const WorkloadSpec& w, const ShardingPlan& plan) {
  const auto [at, key] = loc_of_rule(w, plan, LogicalAxis::length);
  std::string problem, expected, found;
  if (w.model.kind != ModelKind::transformer || w.model.transformer.architecture == Architecture::encoder_decoder) {
    problem = "context parallelism (length) applies to decoder-only and encoder-only transformers";
    expected = "a decoder-only or encoder-only transformer", found = std::string(model_kind_name(w.model.kind));
    if (w.model.kind == ModelKind::transformer) found = "encoder_decoder";
  } else if (w.step != StepKind::train && w.step != StepKind::forward) {
    problem = "context parallelism (length) splits whole sequences: it applies to train and forward steps";
    expected = "step train or forward", found = w.step == StepKind::prefill ? "prefill" : "decode";
  }
  if (!problem.empty()) {
    throw ConfigError({Diagnostic{at, key, problem, expected, found,
                                  "drop the sequence axis (or the length rule); for Megatron sequence parallelism "
                                  "name the tensor axis tensor_sequence"}});
  }
}

// The rule the user wrote for a logical axis, if any.
const ShardingRuleSpec* written_rule(const WorkloadSpec& w, LogicalAxis axis) {
  const std::string& logical = logical_axis_names()[static_cast<std::size_t>(axis)];
  for (const ShardingRuleSpec& r : w.mesh.rules) {
    if (r.logical == logical) return &r;
  }
  return nullptr;
}

// Whether logical axis `a` is sharded over mesh axis `i`.
bool plan_uses(const ShardingPlan& plan, LogicalAxis a, int i) {
  const std::vector<int>& v = plan.axes(a);
  return std::find(v.begin(), v.end(), i) != v.end();
}

// The tensors of a step by their logical dimensions: a mesh axis may shard at most one dimension of each
// (two would give each chip a part of the tensor that no chip's work covers, as one axis dividing both the
// batch and the heads of an activation leaves half the heads of every example unprocessed).
struct TensorDims {
  const char* name;
  std::vector<LogicalAxis> dims;
};
const std::vector<TensorDims>& step_tensors() {
  using L = LogicalAxis;
  static const std::vector<TensorDims> tensors{
      {"the attention's query and output weights", {L::embed, L::heads}},
      {"the attention's key and value weights", {L::embed, L::kv_heads}},
      {"the MLP weights", {L::embed, L::mlp}},
      {"the expert MLP weights", {L::expert, L::embed, L::mlp}},
      {"the embedding table and head", {L::vocab, L::embed}},
      {"the attention activations", {L::batch, L::length, L::heads}},
      {"the key and value activations", {L::batch, L::length, L::kv_heads}},
      {"the MLP activations", {L::batch, L::length, L::mlp}},
      {"the logits", {L::batch, L::length, L::vocab}},
      {"the activations outside the blocks", {L::batch, L::length, L::norm_length, L::activation_embed}},
  };
  return tensors;
}

// The rules resolved against the mesh, checked before anything is lowered: no mesh axis twice in one rule,
// at most once per tensor, a pipeline (layers) axis for the layers alone, the key/value heads over the query
// heads' axes, and every mesh axis of more than one chip used by some rule (an unused one replicates the
// whole step over it, which is never what a mesh means: mostly a misspelt name).
void check_rules(const WorkloadSpec& w, const ShardingPlan& plan) {
  Diagnostics diags;
  const auto& names = logical_axis_names();
  const auto& mesh_axes = plan.mesh.axes();
  auto name_of = [&](LogicalAxis a) { return names[static_cast<std::size_t>(a)]; };
  auto big = [&](int i) { return mesh_axes[static_cast<std::size_t>(i)].size > 1; };
  auto uses = [&](LogicalAxis a, int i) { return plan_uses(plan, a, i); };
  // Where an error about logical axis l and mesh axis `axis` belongs: l's written rule, else the mesh axis.
  auto place = [&](LogicalAxis l, int axis) -> std::pair<SourceLoc, std::string> {
    if (const ShardingRuleSpec* r = written_rule(w, l)) return {r->loc, "workload.sharding." + r->logical};
    const std::string& m = mesh_axes[static_cast<std::size_t>(axis)].name;
    return {loc_of_axis(w, m), "workload.mesh." + m};
  };
  for (int l = 0; l < kLogicalAxes; ++l) {
    const auto axis = static_cast<LogicalAxis>(l);
    std::vector<int> seen;
    for (int i : plan.axes(axis)) {
      if (std::find(seen.begin(), seen.end(), i) != seen.end()) {
        const auto [at, key] = place(axis, i);
        diags.error(at, key, "a mesh axis listed twice in one rule", "each mesh axis once",
                    mesh_axes[static_cast<std::size_t>(i)].name);
      }
      seen.push_back(i);
    }
  }
  // One error per mesh axis: the first tensor it shards twice, and every rule that shares it with another
  // dimension of some tensor.
  for (std::size_t m = 0; m < mesh_axes.size(); ++m) {
    const int i = static_cast<int>(m);
    if (!big(i)) continue;
    std::vector<LogicalAxis> clash;
    const TensorDims* first = nullptr;
    std::pair<LogicalAxis, LogicalAxis> pair{};
    auto note = [&](LogicalAxis a) {
      if (std::find(clash.begin(), clash.end(), a) == clash.end()) clash.push_back(a);
    };
    for (const TensorDims& t : step_tensors()) {
      for (std::size_t x = 0; x < t.dims.size(); ++x) {
        for (std::size_t y = x + 1; y < t.dims.size(); ++y) {
          if (!uses(t.dims[x], i) || !uses(t.dims[y], i)) continue;
          if (first == nullptr) first = &t, pair = {t.dims[x], t.dims[y]};
          note(t.dims[x]);
          note(t.dims[y]);
        }
      }
    }
    if (first == nullptr) continue;
    std::sort(clash.begin(), clash.end());
    // At the first of them the user wrote a rule for (else at the mesh axis).
    LogicalAxis at_axis = pair.second;
    for (LogicalAxis a : clash) {
      if (written_rule(w, a) != nullptr) {
        at_axis = a;
        break;
      }
    }
    std::vector<std::string> rules;
    for (LogicalAxis a : clash) rules.push_back(name_of(a));
    const std::string& name = mesh_axes[m].name;
    const auto [at, key] = place(at_axis, i);
    // A rule another framework writes for this axis (MeshAxisInfo::foreign_rule) gets the catalogue's hint.
    const MeshAxisInfo* kind = find_mesh_axis(name);
    const bool foreign = kind != nullptr && !kind->foreign_rule.empty() && [&] {
      const auto& all = logical_axis_names();
      const auto l = std::find(all.begin(), all.end(), kind->foreign_rule) - all.begin();
      const auto rule = static_cast<LogicalAxis>(l);
      return written_rule(w, rule) != nullptr && uses(rule, i);
    }();
    diags.error(at, key, fmt::format("mesh axis {} shards two dimensions of {} ({} and {})", name, first->name,
                                     name_of(pair.first), name_of(pair.second)),
                "each mesh axis at most once per tensor",
                fmt::format("{} in the rules of {}", name, fmt::join(rules, ", ")),
                foreign ? kind->foreign_rule_hint
                        : fmt::format("keep {} in one of these rules (workload.sharding)", name));
  }
  for (int i : plan.axes(LogicalAxis::layers)) {
    if (!big(i)) continue;
    std::vector<std::string> others;
    LogicalAxis at_axis = LogicalAxis::layers;
    for (int l = 0; l < kLogicalAxes; ++l) {
      const auto other = static_cast<LogicalAxis>(l);
      if (other == LogicalAxis::layers || !uses(other, i)) continue;
      others.push_back(name_of(other));
      if (written_rule(w, LogicalAxis::layers) == nullptr && written_rule(w, other) != nullptr) at_axis = other;
    }
    if (others.empty()) continue;
    const std::string& m = mesh_axes[static_cast<std::size_t>(i)].name;
    const auto [at, key] = place(at_axis, i);
    diags.error(at, key, fmt::format("mesh axis {} splits the layers into pipeline stages and also shards {}", m,
                                     fmt::join(others, ", ")),
                "a pipeline axis that shards the layers alone",
                fmt::format("{} in the rules of layers and {}", m, fmt::join(others, ", ")),
                "a mesh axis of its own for the stages (pipeline), or remove it from the other rules");
  }
  if (w.model.kind == ModelKind::transformer) {
    auto sharded = [&](LogicalAxis a) {
      std::vector<int> v;
      for (int i : plan.axes(a)) {
        if (big(i)) v.push_back(i);
      }
      std::sort(v.begin(), v.end());
      return v;
    };
    if (sharded(LogicalAxis::kv_heads) != sharded(LogicalAxis::heads)) {
      const auto [at, key] = loc_of_rule(w, plan, written_rule(w, LogicalAxis::kv_heads) != nullptr
                                                      ? LogicalAxis::kv_heads
                                                      : LogicalAxis::heads);
      diags.error(at, key, "the key and value heads shard over other mesh axes than the query heads",
                  fmt::format("kv_heads over the heads axes ({})", axis_names(plan, sharded(LogicalAxis::heads))),
                  axis_names(plan, sharded(LogicalAxis::kv_heads)),
                  "give kv_heads and heads the same rule: fewer kv heads than the tensor axis are replicated by "
                  "the lowering itself");
    }
  }
  for (std::size_t i = 0; i < mesh_axes.size(); ++i) {
    if (!big(static_cast<int>(i))) continue;
    bool used = false;
    for (int l = 0; l < kLogicalAxes && !used; ++l) used = uses(static_cast<LogicalAxis>(l), static_cast<int>(i));
    if (used) continue;
    const std::string& m = mesh_axes[i].name;
    const auto& known = known_mesh_axis_names();
    const std::string close = closest_match(m, known);
    std::string hint = fmt::format("name a known axis ({}) or add a workload.sharding rule over {}",
                                   fmt::join(known, ", "), m);
    if (std::find(known.begin(), known.end(), m) != known.end()) {
      hint = fmt::format("the workload.sharding rules given replace every default that named {}: add it to one",
                         m);
    } else if (!close.empty()) {
      hint = fmt::format("did you mean '{}'?", close);
    }
    diags.error(loc_of_axis(w, m), "workload.mesh." + m,
                "no sharding rule uses this mesh axis: the whole step would be replicated over it",
                "a mesh axis some rule shards over", m, hint);
  }
  diags.throw_if_any();
}

// The expert group's all-to-all sends each chip's tokens to the chips of their experts, so the lowering takes
// the group's tokens to be its chips' distinct ones (ShardView::moe.group). An expert axis that splits neither
// the batch nor the sequences leaves every chip of the group holding the same tokens: each expert would run
// each token once per chip of the group (4 x the expert FLOPs, counted as model FLOPs, on expert 4 with
// sharding.batch: []). Refused until such a step is lowered as a local dispatch.
void check_expert_tokens(const WorkloadSpec& w, const ShardingPlan& plan, Diagnostics& diags) {
  std::vector<std::string> replicated;
  for (const int i : plan.axes(LogicalAxis::expert)) {
    const auto& axis = plan.mesh.axes()[static_cast<std::size_t>(i)];
    const bool splits_tokens = plan_uses(plan, LogicalAxis::batch, i) || plan_uses(plan, LogicalAxis::length, i);
    if (axis.size > 1 && !splits_tokens) replicated.push_back(axis.name);
  }
  if (replicated.empty()) return;
  // At the batch rule when it is written, else at the expert axis (the default batch rule names no axis given).
  const bool batch_written = written_rule(w, LogicalAxis::batch) != nullptr;
  const auto [at, key] = loc_of_rule(w, plan, batch_written ? LogicalAxis::batch : LogicalAxis::expert);
  diags.error(at, key,
              fmt::format("the expert axis {} does not split the batch: every chip of the expert group would "
                          "dispatch the same tokens, and each expert would run them once per chip",
                          fmt::join(replicated, ", ")),
              fmt::format("sharding.batch over the expert axes ({})", fmt::join(replicated, ", ")),
              fmt::format("batch over {}", axis_names(plan, plan.axes(LogicalAxis::batch))),
              fmt::format("add {} to workload.sharding.batch (its default holds the expert axis), or shard the "
                          "experts' d_ff over it instead (sharding.mlp: [{}], sharding.expert: [])",
                          fmt::join(replicated, ", "), fmt::join(replicated, ", ")));
}

// ShardView::replicas: a stage's chips (every mesh axis but the pipeline's) over the chips that split a
// matmul's products, its tokens (batch, length) and its other dimension, each mesh axis counted once; kv heads
// fewer than their shards repeat each head on kv_shards / kv_heads of them.
Replicas replicas_of(const ShardingPlan& plan, int kv_heads) {
  using L = LogicalAxis;
  const auto& axes = plan.mesh.axes();
  const auto in = [](const std::vector<int>& v, int i) { return std::find(v.begin(), v.end(), i) != v.end(); };
  int chips = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (!in(plan.axes(L::layers), static_cast<int>(i))) chips *= axes[i].size;
  }
  const auto replicas = [&](std::initializer_list<L> dims) {
    std::vector<int> used;
    for (const std::vector<L>& group : {std::vector<L>{L::batch, L::length}, std::vector<L>(dims)}) {
      for (const L d : group) {
        for (const int i : plan.axes(d)) {
          if (!in(used, i)) used.push_back(i);
        }
      }
    }
    int split = 1;
    for (const int i : used) split *= axes[static_cast<std::size_t>(i)].size;
    return std::max(1, chips / split);
  };
  const int kv_shards = plan.shards(L::kv_heads);
  const int kv_copies = kv_heads > 0 && kv_shards > kv_heads && kv_shards % kv_heads == 0 ? kv_shards / kv_heads : 1;
  Replicas r;
  r.tokens = replicas({});
  r.heads = replicas({L::heads});
  r.kv_heads = replicas({L::kv_heads}) * kv_copies;
  r.mlp = replicas({L::mlp});
  r.vocab = replicas({L::vocab});
  r.experts = replicas({L::expert, L::mlp});
  return r;
}

}  // namespace

int ShardingPlan::shards(LogicalAxis a) const {
  int n = 1;
  for (int i : axes(a)) n *= mesh.axes()[static_cast<std::size_t>(i)].size;
  return n;
}

const std::vector<int>& ShardingPlan::residual_axes() const {
  return shards(LogicalAxis::norm_length) > 1 ? axes(LogicalAxis::norm_length) : axes(LogicalAxis::activation_embed);
}

int ShardingPlan::residual_shards() const {
  return std::max(shards(LogicalAxis::norm_length), shards(LogicalAxis::activation_embed));
}

std::vector<int> ShardingPlan::gradient_axes(bool expert_param) const {
  std::vector<int> out;
  for (int i : axes(LogicalAxis::batch)) {
    if (expert_param && plan_uses(*this, LogicalAxis::expert, i)) continue;
    out.push_back(i);
  }
  // Context parallelism: each chip's gradients are sums over its part of every sequence.
  for (int i : axes(LogicalAxis::length)) {
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  return out;
}

ShardingPlan make_sharding(const WorkloadSpec& w, const PodSpec& pod) {
  ShardingPlan plan;
  plan.mesh = build_mesh(w.mesh, pod);
  const auto& names = logical_axis_names();
  for (int l = 0; l < kLogicalAxes; ++l) {
    // The default rule (core's logical axes, which follow the catalogue of parallelism kinds), unless a
    // workload.sharding rule replaces it.
    std::vector<std::string> axes = logical_axes().at(static_cast<std::size_t>(l)).default_mesh_axes;
    for (const ShardingRuleSpec& r : w.mesh.rules) {
      if (r.logical == names[static_cast<std::size_t>(l)]) axes = r.mesh_axes;
    }
    for (const std::string& a : axes) {
      const int i = plan.mesh.find(a);
      if (i >= 0) plan.rules[static_cast<std::size_t>(l)].push_back(i);
    }
  }
  check_rules(w, plan);
  if (plan.shards(LogicalAxis::length) > 1) check_context_parallel(w, plan);
  if (plan.shards(LogicalAxis::norm_length) > 1) check_residual_split(w, plan, LogicalAxis::norm_length);
  if (plan.shards(LogicalAxis::activation_embed) > 1) check_residual_split(w, plan, LogicalAxis::activation_embed);
  if (w.schedule.collective_matmul == CollectiveMatmul::on) check_collective_matmul(w, plan);
  if (plan.shards(LogicalAxis::layers) > 1) {
    const std::string name = plan.mesh.axes()[static_cast<std::size_t>(plan.axes(LogicalAxis::layers).front())].name;
    const auto groups = plan.mesh.groups(plan.axes(LogicalAxis::layers));
    const ir::CollectiveGroup& g = groups.front();
    const int torus_axes = static_cast<int>(std::count_if(g.size.begin(), g.size.end(), [](std::uint32_t n) { return n > 1; }));
    std::string problem;
    if (w.model.kind != ModelKind::transformer || w.model.transformer.architecture == Architecture::encoder_decoder) {
      problem = "pipeline parallelism applies to decoder-only and encoder-only transformers";
    } else if (groups.size() != 1 || torus_axes != 1 || g.pods != 1) {
      problem = "the pipeline axis must lie along one torus axis of one slice (stage s + 1 next to stage s)";
    }
    if (!problem.empty()) {
      throw ConfigError({Diagnostic{loc_of_axis(w, name), "workload.mesh." + name, problem,
                                    "a pipeline axis that fits", std::to_string(plan.shards(LogicalAxis::layers)),
                                    "workload.mesh_mapping can place it on one torus axis"}});
    }
  }
  return plan;
}

ShardView shard_view(const WorkloadSpec& w, const ShardingPlan& plan, int stage) {
  ShardView s = full_shard(w);
  Diagnostics diags;
  s.pipeline.stages = plan.shards(LogicalAxis::layers);
  if (s.pipeline.stages > 1) {
    s.pipeline.stage = stage;
    if (s.pipeline.layers % s.pipeline.stages != 0) {
      diags.error(w.mesh.loc, "workload.mesh", "the layers do not split evenly over the pipeline stages",
                  fmt::format("a divisor of the {} layers", s.pipeline.layers), std::to_string(s.pipeline.stages));
    } else {
      s.pipeline.layers /= s.pipeline.stages;
      s.pipeline.first_layer = stage * s.pipeline.layers;
    }
    s.pipeline.embedding = stage == 0;
    s.pipeline.head = stage == s.pipeline.stages - 1;
  }
  auto divide = [&](auto total, int by, LogicalAxis axis, const std::string& what, const std::string& key,
                    SourceLoc at) -> decltype(total) {
    if (by <= 1) return total;
    if (total % by != 0) {
      std::vector<std::string> axes;
      for (int i : plan.axes(axis)) axes.push_back(plan.mesh.axes()[static_cast<std::size_t>(i)].name);
      diags.error(at, key, fmt::format("{} does not split evenly over mesh axes {}", what, fmt::join(axes, ", ")),
                  fmt::format("a multiple of {}", by), std::to_string(total));
      return total;
    }
    return total / by;
  };
  const int batch_shards = plan.shards(LogicalAxis::batch);
  s.batch = divide(w.batch, batch_shards, LogicalAxis::batch, "the batch", "workload.batch",
                   origin_of(w.origins, "batch"));
  if (w.step == StepKind::train && s.batch % std::max(1, s.microbatches) != 0) {
    diags.error(origin_of(w.origins, "microbatches"), "workload.microbatches",
                "the batch per chip does not split into the microbatches",
                fmt::format("a divisor of the batch per chip ({})", s.batch), std::to_string(s.microbatches));
  }
  s.weight_shards = plan.shards(LogicalAxis::embed);
  if (w.model.kind == ModelKind::transformer) {
    const TransformerModel& t = w.model.transformer;
    const SourceLoc model_at = w.mesh.loc;
    s.heads = divide(s.heads, plan.shards(LogicalAxis::heads), LogicalAxis::heads, "the number of heads",
                     "workload.mesh", model_at);
    // Fewer kv heads than the tensor axis: each chip keeps one (replicated), as Megatron and MaxText do.
    const int kv_shards = plan.shards(LogicalAxis::kv_heads);
    if (kv_shards > t.kv() && kv_shards % t.kv() == 0) s.kv_heads = 1;
    else s.kv_heads = divide(s.kv_heads, kv_shards, LogicalAxis::kv_heads, "the number of kv heads",
                             "workload.mesh", model_at);
    const int mlp = plan.shards(LogicalAxis::mlp);
    s.d_ff = divide(s.d_ff, mlp, LogicalAxis::mlp, "d_ff", "workload.mesh", model_at);
    s.moe.d_ff = divide(s.moe.d_ff, mlp, LogicalAxis::mlp, "the expert d_ff", "workload.mesh", model_at);
    // The vocabulary is padded up to a multiple of its shards (Megatron pads it likewise).
    const int v = plan.shards(LogicalAxis::vocab);
    s.vocab.rows = (s.vocab.rows + v - 1) / v;
    s.vocab.shards = v;
    // Context parallelism: each chip holds 1 / c of every sequence's tokens (attention gathers the keys).
    const int c = plan.shards(LogicalAxis::length);
    if (c > 1) {
      s.seq_len = divide(s.seq_len, c, LogicalAxis::length, "seq_len", "workload.seq_len",
                         origin_of(w.origins, "seq_len"));
      s.context_shards = c;
    }
    s.sequence_shards = plan.residual_shards();
    const std::int64_t tokens = s.microbatch() * s.seq_len;
    if (plan.shards(LogicalAxis::activation_embed) > 1) {
      // activation_embed splits d_model, not the tokens (the per-chip bytes are the same either way).
      (void)divide(t.d_model, s.sequence_shards, LogicalAxis::activation_embed, "d_model", "workload.mesh", model_at);
    } else if (s.sequence_shards > 1 && tokens % s.sequence_shards != 0) {
      diags.error(origin_of(w.origins, "seq_len"), "workload.seq_len",
                  "the tokens of a microbatch do not split over the sequence-parallel tensor group",
                  fmt::format("batch per microbatch x seq_len a multiple of {}", s.sequence_shards),
                  std::to_string(tokens));
    }
    if (s.moe.experts > 0) {
      s.moe.experts = divide(s.moe.experts, plan.shards(LogicalAxis::expert), LogicalAxis::expert,
                             "the number of experts", "workload.mesh", model_at);
      s.moe.group = plan.shards(LogicalAxis::expert);
      check_expert_tokens(w, plan, diags);
    } else if (plan.shards(LogicalAxis::expert) > 1) {
      // A dense model has no experts to split: the axis would shard only the batch, as data parallelism.
      const auto [at, key] = loc_of_rule(w, plan, LogicalAxis::expert);
      diags.error(at, key, "expert parallelism splits the experts, and the model has none (moe.experts is 0)",
                  "no expert axis for a dense model", fmt::format("{} chips over the experts",
                                                                  plan.shards(LogicalAxis::expert)),
                  "name the axis data (or fsdp) to split the batch, or give the model moe.experts");
    }
  } else if (plan.shards(LogicalAxis::heads) > 1 || plan.shards(LogicalAxis::mlp) > 1 ||
             plan.shards(LogicalAxis::expert) > 1) {
    diags.error(w.mesh.loc, "workload.mesh", "tensor and expert parallelism apply to transformers",
                "data and fsdp axes only for this model", std::string(model_kind_name(w.model.kind)));
  }
  diags.throw_if_any();
  s.replicas = replicas_of(plan, w.model.kind == ModelKind::transformer ? w.model.transformer.kv() : 1);
  return s;
}

void check_sharding(const WorkloadSpec& w, const PodSpec& pod) {
  if (w.program.empty() && step_builder(w.model.kind) != nullptr) {
    const ShardingPlan plan = make_sharding(w, pod);
    (void)shard_view(w, plan);  // the sizes that must divide are the same on every pipeline stage
    return;
  }
  // Every chip runs the same one-chip program (or a program file's own groups): a mesh would change nothing.
  const std::string found = w.program.empty() ? fmt::format("a model of kind {}", model_kind_name(w.model.kind))
                                              : "a program file (its groups place its collectives)";
  const std::string expected = "no mesh, mapping or sharding: only transformer and resnet models are sharded";
  const std::string hint = "remove it: every chip runs the same program";
  Diagnostics diags;
  if (w.mesh.given()) diags.error(w.mesh.loc, "workload.mesh", "a mesh on a workload that is not sharded", expected, found, hint);
  for (const MeshMappingSpec& m : w.mesh.mapping) {
    diags.error(m.loc, "workload.mesh_mapping." + m.axis, "a mesh mapping on a workload that is not sharded",
                expected, found, hint);
  }
  for (const ShardingRuleSpec& r : w.mesh.rules) {
    diags.error(r.loc, "workload.sharding." + r.logical, "a sharding rule on a workload that is not sharded",
                expected, found, hint);
  }
  diags.throw_if_any();
}

}  // namespace tpusim::kernels
