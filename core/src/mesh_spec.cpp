#include "tpusim/core/mesh_spec.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "tpusim/core/fields.h"

namespace tpusim {

namespace {

// The parallelism kinds, built-in then added (add_mesh_axis), and what is derived from them: their names and
// each logical axis's default rule.
struct Catalogue {
  std::vector<MeshAxisInfo> kinds;
  std::vector<std::string> names;
  std::vector<LogicalAxisInfo> logical;
  std::size_t built_in = 0;  // the first kinds, which remove_mesh_axis keeps
  void derive() {
    names.clear();
    for (const MeshAxisInfo& k : kinds) names.push_back(k.name);
    for (LogicalAxisInfo& l : logical) {
      l.default_mesh_axes.clear();
      for (const MeshAxisInfo& k : kinds) {
        const bool shards = std::find(k.shards.begin(), k.shards.end(), l.name) != k.shards.end();
        if (shards) l.default_mesh_axes.push_back(k.name);
      }
    }
  }
};

Catalogue built_in() {
  using S = MeshAxisInfo::Searched;
  Catalogue c;
  c.logical = {
      {"batch", {}, "the examples of a step (data parallelism; FSDP splits the batch too)"},
      {"length", {}, "the tokens of each sequence (context parallelism: attention gathers the keys)"},
      {"embed", {}, "d_model of the weights (FSDP / ZeRO-3 storage of weights, gradients, optimizer state)"},
      {"heads", {}, "attention heads (tensor parallelism)"},
      {"kv_heads", {}, "key/value heads; over the same axes as heads"},
      {"mlp", {}, "d_ff of the MLP and the experts (tensor parallelism)"},
      {"vocab", {}, "the vocabulary of the embedding and the head (padded to split)"},
      {"expert", {}, "the experts of a mixture-of-experts layer (expert parallelism)"},
      {"layers", {}, "the layers (pipeline stages); no other rule may use its axis"},
      {"norm_length", {}, "the residual stream's tokens in the norm regions (sequence parallelism)"},
      {"activation_embed", {}, "the residual stream's d_model (MaxText's activation_embed; opt-in)"},
  };
  // A logical axis's default rule lists the kinds that shard it in this order. Placement ranks: tensor
  // parallelism's per-layer all-reduces (or gathers and reduce-scatters) first, then sequence, expert
  // (all-to-all), FSDP (weights once per layer), data (gradients once per step), pipeline (activations between
  // stages). The layout search: data and FSDP for every whole model, tensor for transformers, expert where they
  // have experts, sequence (and tensor_sequence) for the training and forward steps of decoder-only or
  // encoder-only transformers; pipeline is not searched.
  const std::vector<std::string> tensor_parallel{"heads", "kv_heads", "mlp", "vocab"};
  c.kinds = {
      {"data", "replicas: each holds the whole model and its share of the batch; gradients all-reduced", {"batch"}, 5,
       true, S::always, 0},
      {"fsdp", "shards the weights (embed) and the batch: weights all-gathered per layer, gradients reduce-scattered",
       {"batch", "embed"}, 4, false, S::always, 1},
      // MaxText's second FSDP axis: it splits the batch and the weights' storage as fsdp does, but MaxText's
      // rules put it on the MLP weights' d_ff (mlp) rather than on their d_model. Which dimension of a stored
      // shard it splits changes neither the bytes each layer gathers and reduce-scatters nor the matmul, which
      // runs on the gathered weight, so here it shards embed beside fsdp (kernels/README.md, "FSDP-transpose").
      // Not searched: for the layout search it is fsdp over more chips. MaxText's mlp rule for it clashes with
      // the default embed rule on the MLP weights; its error says the defaults already do what that rule does.
      {"fsdp_transpose",
       "a second FSDP axis (MaxText's): shards the batch and the weights' storage; gathered and reduce-scattered "
       "with fsdp",
       {"batch", "embed"}, 4, false, S::never, 0, "", false, "mlp",
       "drop fsdp_transpose from the mlp rule: the default rules already shard the weights' storage over it "
       "(through embed), which moves the bytes MaxText's mlp rule does"},
      {"tensor", "splits heads, d_ff and the vocabulary (Megatron tensor parallelism)", tensor_parallel, 0, false,
       S::transformer, 2},
      {"tensor_sequence", "tensor parallelism that also splits the norm regions' tokens (sequence parallelism)",
       {"heads", "kv_heads", "mlp", "vocab", "norm_length"}, 1, false, S::whole_sequences, 5, "tensor", true},
      {"sequence", "splits each sequence's tokens (context parallelism)", {"length"}, 2, false, S::whole_sequences,
       4, "", true},
      {"pipeline", "splits the layers into stages (pipeline parallelism, workload.microbatches)", {"layers"}, 6},
      {"expert", "splits the experts of a mixture of experts, and the batch", {"batch", "expert"}, 3, false, S::moe,
       3},
  };
  c.built_in = c.kinds.size();
  c.derive();
  return c;
}

Catalogue& catalogue() {
  static Catalogue c = built_in();
  return c;
}

}  // namespace

const std::vector<LogicalAxisInfo>& logical_axes() { return catalogue().logical; }

const std::vector<MeshAxisInfo>& known_mesh_axes() { return catalogue().kinds; }

const MeshAxisInfo* find_mesh_axis(std::string_view name) {
  for (const MeshAxisInfo& a : known_mesh_axes()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void add_mesh_axis(MeshAxisInfo kind) {
  Catalogue& c = catalogue();
  if (kind.name.empty()) throw std::invalid_argument("add_mesh_axis: a parallelism kind with no name");
  if (find_mesh_axis(kind.name) != nullptr) {
    throw std::invalid_argument(fmt::format("add_mesh_axis: the catalogue has a kind named {}", kind.name));
  }
  for (const std::string& l : kind.shards) {
    const auto& names = logical_axis_names();
    if (std::find(names.begin(), names.end(), l) == names.end()) {
      throw std::invalid_argument(fmt::format("add_mesh_axis: {} shards {}, which is no logical axis ({})", kind.name,
                                              l, fmt::join(names, ", ")));
    }
  }
  c.kinds.push_back(std::move(kind));
  c.derive();
}

bool remove_mesh_axis(std::string_view name) {
  Catalogue& c = catalogue();
  const auto added = c.kinds.begin() + static_cast<std::ptrdiff_t>(c.built_in);
  const auto it = std::find_if(added, c.kinds.end(), [&](const MeshAxisInfo& k) { return k.name == name; });
  if (it == c.kinds.end()) return false;
  c.kinds.erase(it);
  c.derive();
  return true;
}

const std::vector<std::string>& logical_axis_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LogicalAxisInfo& a : logical_axes()) out.push_back(a.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& known_mesh_axis_names() { return catalogue().names; }

namespace {

// A torus axis named x, y, z or 0, 1, 2.
int torus_axis(const ConfigNode& n) {
  if (!n.is_scalar()) return -1;
  const std::string& s = n.scalar();
  if (s == "x" || s == "0") return 0;
  if (s == "y" || s == "1") return 1;
  if (s == "z" || s == "2") return 2;
  return -1;
}

}  // namespace

void parse_mesh(const ConfigNode& workload, MeshSpec& out, Diagnostics& diags) {
  out.loc = workload.loc();
  if (!workload.is_map()) return;
  if (const ConfigNode* mesh = workload.find("mesh")) {
    out.loc = mesh->loc();
    if (!mesh->is_map()) {
      diags.error(mesh->loc(), "workload.mesh", "wrong type", "a map of named axes to sizes, e.g. {data: 8, tensor: 4}",
                  mesh->describe());
    } else if (mesh->entries().empty()) {
      diags.error(mesh->loc(), "workload.mesh", "a mesh with no axis",
                  "at least one named axis with its size, e.g. {data: 8, tensor: 4}",
                  "an empty map");
    } else {
      for (const auto& e : mesh->entries()) {
        MeshAxisSpec a;
        a.name = e.key;
        a.loc = e.value.loc();
        std::string expected;
        if (!parse_scalar(e.value, a.size, expected) || a.size < 1) {
          // (`{fsdp:8}`, a key with no value, is refused where the YAML is read: config_tree.cpp.)
          diags.error(e.value.loc(), "workload.mesh." + e.key, "bad axis size", "a positive integer",
                      e.value.describe());
          continue;
        }
        out.axes.push_back(a);
      }
    }
  }
  if (const ConfigNode* mapping = workload.find("mesh_mapping")) {
    if (!mapping->is_map()) {
      diags.error(mapping->loc(), "workload.mesh_mapping", "wrong type",
                  "a map of mesh axes to lists of torus axes, e.g. {tensor: [z], data: [x, y]}", mapping->describe());
    } else {
      for (const auto& e : mapping->entries()) {
        MeshMappingSpec m;
        m.axis = e.key;
        m.loc = e.key_loc;
        const std::string key = "workload.mesh_mapping." + e.key;
        std::vector<const ConfigNode*> items;
        if (e.value.is_seq()) {
          for (const ConfigNode& i : e.value.items()) items.push_back(&i);
          // No torus axis at all: the default placement would replace it, and move the other axes' too.
          if (items.empty()) {
            diags.error(e.value.loc(), key, "an empty list of torus axes",
                        "the torus axes this mesh axis takes, e.g. [z]", "[]",
                        "list its torus axes, or drop the entry to let the default placement choose");
          }
        } else {
          items.push_back(&e.value);
        }
        for (const ConfigNode* i : items) {
          const int t = torus_axis(*i);
          if (t < 0) {
            diags.error(i->loc(), key, "not a torus axis", "x, y or z (or 0, 1, 2)", i->describe());
          } else if (std::find(m.torus_axes.begin(), m.torus_axes.end(), t) != m.torus_axes.end()) {
            diags.error(i->loc(), key, "a torus axis listed twice", "each torus axis once", i->describe());
          } else {
            m.torus_axes.push_back(t);
          }
        }
        out.mapping.push_back(m);
      }
    }
  }
  if (const ConfigNode* sharding = workload.find("sharding")) {
    if (!sharding->is_map()) {
      diags.error(sharding->loc(), "workload.sharding", "wrong type",
                  "a map of logical axes to lists of mesh axes, e.g. {batch: [data, fsdp], mlp: [tensor]}",
                  sharding->describe());
    } else {
      for (const auto& e : sharding->entries()) {
        const std::string key = "workload.sharding." + e.key;
        const auto& names = logical_axis_names();
        if (std::find(names.begin(), names.end(), e.key) == names.end()) {
          diags.error(e.key_loc, key, "unknown logical axis", fmt::format("one of {}", fmt::join(names, ", ")),
                      e.key, suggestion(e.key, names));
          continue;
        }
        ShardingRuleSpec r;
        r.logical = e.key;
        r.loc = e.value.loc();
        if (e.value.is_seq()) {
          for (const ConfigNode& i : e.value.items()) {
            if (i.is_scalar()) r.mesh_axes.push_back(i.scalar());
            else diags.error(i.loc(), key, "wrong type", "a mesh axis name", i.describe());
          }
        } else if (e.value.is_scalar()) {
          r.mesh_axes.push_back(e.value.scalar());
        } else if (!e.value.is_null()) {
          diags.error(e.value.loc(), key, "wrong type", "a list of mesh axis names ([] = replicated)",
                      e.value.describe());
        }
        out.rules.push_back(r);
      }
    }
  }
}

void check_mesh(const MeshSpec& mesh, const PodSpec& pod, Diagnostics& diags) {
  if (!mesh.given()) {
    if (!mesh.mapping.empty()) {
      diags.error(mesh.mapping.front().loc, "workload.mesh_mapping", "a mapping without a mesh",
                  "workload.mesh naming the axes it maps", "no workload.mesh");
    }
  }
  std::vector<std::string> names;
  long long product = 1;
  for (const MeshAxisSpec& a : mesh.axes) {
    if (std::find(names.begin(), names.end(), a.name) != names.end()) {
      diags.error(a.loc, "workload.mesh." + a.name, "a mesh axis named twice", "distinct axis names", a.name);
    }
    names.push_back(a.name);
    product *= a.size;
  }
  if (mesh.given() && product != pod.chip_count()) {
    std::vector<std::string> sizes;
    for (const MeshAxisSpec& a : mesh.axes) sizes.push_back(fmt::format("{} {}", a.name, a.size));
    diags.error(mesh.loc, "workload.mesh", "the mesh does not cover the pod",
                fmt::format("axis sizes whose product is the pod's {} chips ({}{})", pod.chip_count(), pod.name,
                            pod.pods > 1 ? fmt::format(", {} slices", pod.pods) : ""),
                fmt::format("{} = {}", fmt::join(sizes, " x "), product));
  }
  if (!mesh.given()) names = {kDefaultMeshAxis};
  for (const MeshMappingSpec& m : mesh.mapping) {
    if (std::find(names.begin(), names.end(), m.axis) == names.end()) {
      diags.error(m.loc, "workload.mesh_mapping." + m.axis, "not an axis of the mesh",
                  fmt::format("one of {}", fmt::join(names, ", ")), m.axis, suggestion(m.axis, names));
    }
    for (int t : m.torus_axes) {
      if (t >= static_cast<int>(pod.shape.size())) {
        diags.error(m.loc, "workload.mesh_mapping." + m.axis, "the pod has no such torus axis",
                    fmt::format("one of the pod's {} axes", pod.shape.size()), std::string(1, "xyz"[t]));
      }
    }
  }
  std::vector<std::string> seen;
  for (const ShardingRuleSpec& r : mesh.rules) {
    const std::string key = "workload.sharding." + r.logical;
    if (std::find(seen.begin(), seen.end(), r.logical) != seen.end()) {
      diags.error(r.loc, key, "a logical axis with two rules", "one rule per logical axis", r.logical);
    }
    seen.push_back(r.logical);
    for (const std::string& a : r.mesh_axes) {
      if (std::find(names.begin(), names.end(), a) == names.end()) {
        diags.error(r.loc, key, "not an axis of the mesh", fmt::format("one of {}", fmt::join(names, ", ")), a,
                    suggestion(a, names));
      }
    }
  }
}

}  // namespace tpusim

namespace tpusim {

std::vector<std::pair<std::string, std::string>> render_mesh(const MeshSpec& mesh) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> parts;
  for (const MeshAxisSpec& a : mesh.axes) parts.push_back(fmt::format("{} {}", a.name, a.size));
  if (!parts.empty()) out.emplace_back("mesh", fmt::format("{}", fmt::join(parts, ", ")));
  parts.clear();
  for (const MeshMappingSpec& m : mesh.mapping) {
    std::vector<std::string> dims;
    for (int t : m.torus_axes) dims.emplace_back(1, "xyz"[t]);
    parts.push_back(fmt::format("{}: {}", m.axis, fmt::join(dims, " ")));
  }
  if (!parts.empty()) out.emplace_back("mesh_mapping", fmt::format("{}", fmt::join(parts, "; ")));
  parts.clear();
  for (const ShardingRuleSpec& r : mesh.rules) parts.push_back(fmt::format("{}: {}", r.logical, fmt::join(r.mesh_axes, " ")));
  if (!parts.empty()) out.emplace_back("sharding", fmt::format("{}", fmt::join(parts, "; ")));
  return out;
}

}  // namespace tpusim
