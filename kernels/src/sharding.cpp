// Logical-axis rules, and the per-chip ShardView (contract in sharding.h).
#include "tpusim/kernels/sharding.h"

#include <algorithm>

#include <fmt/format.h>

namespace tpusim::kernels {
namespace {

// The default rules, by logical axis (sharding.h).
const std::array<std::vector<std::string>, kLogicalAxes>& default_rules() {
  static const std::array<std::vector<std::string>, kLogicalAxes> rules{{
      {"data", "fsdp", "expert"},  // batch
      {"sequence"},                // length
      {"fsdp"},                    // embed
      {"tensor", "tensor_sequence"},  // heads
      {"tensor", "tensor_sequence"},  // kv_heads
      {"tensor", "tensor_sequence"},  // mlp
      {"tensor", "tensor_sequence"},  // vocab
      {"expert"},                     // expert
      {"pipeline"},                   // layers
      {"tensor_sequence"},            // norm_length
  }};
  return rules;
}

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

// Megatron sequence parallelism splits the norm regions' tokens over the tensor group: it needs the tensor
// group (the same axes for heads, mlp and vocab, and more than one chip) and a step over whole sequences.
void check_sequence_parallel(const WorkloadSpec& w, const ShardingPlan& plan) {
  const auto [at, key] = loc_of_rule(w, plan, LogicalAxis::norm_length);
  auto sorted = [&](LogicalAxis a) {
    std::vector<int> v;
    for (int i : plan.axes(a)) {
      if (plan.mesh.axes()[static_cast<std::size_t>(i)].size > 1) v.push_back(i);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<int> sp = sorted(LogicalAxis::norm_length);
  const std::string heads = axis_names(plan, sorted(LogicalAxis::heads));
  std::string problem, expected, found;
  std::string hint = key.rfind("workload.sharding", 0) == 0
                         ? "remove the norm_length rule (tensor parallelism alone)"
                         : "name the axis tensor instead of tensor_sequence (tensor parallelism alone)";
  if (w.model.kind != ModelKind::transformer || w.model.transformer.architecture == Architecture::encoder_decoder) {
    problem = "sequence parallelism (norm_length) applies to decoder-only and encoder-only transformers";
    expected = "a decoder-only or encoder-only transformer", found = std::string(model_kind_name(w.model.kind));
  } else if (w.step != StepKind::train && w.step != StepKind::forward) {
    problem = "sequence parallelism (norm_length) splits whole sequences: it applies to train and forward steps";
    expected = "step train or forward", found = w.step == StepKind::prefill ? "prefill" : "decode";
  } else if (sp != sorted(LogicalAxis::heads) || sp != sorted(LogicalAxis::mlp) || sp != sorted(LogicalAxis::vocab)) {
    problem = "sequence parallelism runs over the tensor group: norm_length must shard over the heads, mlp and "
              "vocab axes";
    expected = fmt::format("norm_length over the heads axes ({})", heads);
    found = axis_names(plan, sp);
    hint = fmt::format("workload.sharding: {{norm_length: [{}]}}, or a tensor_sequence mesh axis", heads);
  }
  if (!problem.empty()) throw ConfigError({Diagnostic{at, key, problem, expected, found, hint}});
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

}  // namespace

int ShardingPlan::shards(LogicalAxis a) const {
  int n = 1;
  for (int i : axes(a)) n *= mesh.axes()[static_cast<std::size_t>(i)].size;
  return n;
}

std::vector<int> ShardingPlan::gradient_axes(bool expert_param) const {
  std::vector<int> out;
  for (int i : axes(LogicalAxis::batch)) {
    if (expert_param && std::find(axes(LogicalAxis::expert).begin(), axes(LogicalAxis::expert).end(), i) !=
                            axes(LogicalAxis::expert).end()) {
      continue;
    }
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
    std::vector<std::string> axes = default_rules()[static_cast<std::size_t>(l)];
    for (const ShardingRuleSpec& r : w.mesh.rules) {
      if (r.logical == names[static_cast<std::size_t>(l)]) axes = r.mesh_axes;
    }
    for (const std::string& a : axes) {
      const int i = plan.mesh.find(a);
      if (i >= 0) plan.rules[static_cast<std::size_t>(l)].push_back(i);
    }
  }
  if (plan.shards(LogicalAxis::length) > 1) check_context_parallel(w, plan);
  if (plan.shards(LogicalAxis::norm_length) > 1) check_sequence_parallel(w, plan);
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
  s.stages = plan.shards(LogicalAxis::layers);
  if (s.stages > 1) {
    s.stage = stage;
    if (s.layers % s.stages != 0) {
      diags.error(w.mesh.loc, "workload.mesh", "the layers do not split evenly over the pipeline stages",
                  fmt::format("a divisor of the {} layers", s.layers), std::to_string(s.stages));
    } else {
      s.layers /= s.stages;
      s.first_layer = stage * s.layers;
    }
    s.embedding = stage == 0;
    s.head = stage == s.stages - 1;
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
    s.heads = divide(s.heads, plan.shards(LogicalAxis::heads), LogicalAxis::heads, "the heads", "workload.mesh", model_at);
    // Fewer kv heads than the tensor axis: each chip keeps one (replicated), as Megatron and MaxText do.
    const int kv_shards = plan.shards(LogicalAxis::kv_heads);
    if (kv_shards > t.kv() && kv_shards % t.kv() == 0) s.kv_heads = 1;
    else s.kv_heads = divide(s.kv_heads, kv_shards, LogicalAxis::kv_heads, "the kv heads", "workload.mesh", model_at);
    const int mlp = plan.shards(LogicalAxis::mlp);
    s.d_ff = divide(s.d_ff, mlp, LogicalAxis::mlp, "d_ff", "workload.mesh", model_at);
    s.expert_d_ff = divide(s.expert_d_ff, mlp, LogicalAxis::mlp, "the expert d_ff", "workload.mesh", model_at);
    // The vocabulary is padded up to a multiple of its shards (Megatron pads it likewise).
    const int v = plan.shards(LogicalAxis::vocab);
    s.vocab = (s.vocab + v - 1) / v;
    s.vocab_shards = v;
    // Context parallelism: each chip holds 1 / c of every sequence's tokens (attention gathers the keys).
    const int c = plan.shards(LogicalAxis::length);
    if (c > 1) {
      s.seq_len = divide(s.seq_len, c, LogicalAxis::length, "seq_len", "workload.seq_len",
                         origin_of(w.origins, "seq_len"));
      s.context_shards = c;
    }
    s.sequence_shards = plan.shards(LogicalAxis::norm_length);
    const std::int64_t tokens = s.microbatch() * s.seq_len;
    if (s.sequence_shards > 1 && tokens % s.sequence_shards != 0) {
      diags.error(origin_of(w.origins, "seq_len"), "workload.seq_len",
                  "the tokens of a microbatch do not split over the sequence-parallel tensor group",
                  fmt::format("batch per microbatch x seq_len a multiple of {}", s.sequence_shards),
                  std::to_string(tokens));
    }
    if (s.experts > 0) {
      s.experts = divide(s.experts, plan.shards(LogicalAxis::expert), LogicalAxis::expert, "the experts",
                         "workload.mesh", model_at);
      s.expert_group = plan.shards(LogicalAxis::expert);
    }
  } else if (plan.shards(LogicalAxis::heads) > 1 || plan.shards(LogicalAxis::mlp) > 1 ||
             plan.shards(LogicalAxis::expert) > 1) {
    diags.error(w.mesh.loc, "workload.mesh", "tensor and expert parallelism apply to transformers",
                "data and fsdp axes only for this model", std::string(model_kind_name(w.model.kind)));
  }
  diags.throw_if_any();
  return s;
}

}  // namespace tpusim::kernels
