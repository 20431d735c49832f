// The model kinds' registry, the kinds without a file of their own (gemm, mlp, collective), and resolve_model.
#include "tpusim/core/model_spec.h"

#include <fmt/format.h>

#include "model_kinds.h"
#include "tpusim/core/data_paths.h"

namespace tpusim {

std::string_view collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::permute: return "permute";
  }
  return "?";
}

std::vector<CollectiveKind> all_collective_kinds() {
  return {CollectiveKind::all_reduce, CollectiveKind::reduce_scatter, CollectiveKind::all_gather,
          CollectiveKind::all_to_all, CollectiveKind::permute};
}

std::vector<std::pair<std::string, CollectiveKind>> collective_choices() {
  std::vector<std::pair<std::string, CollectiveKind>> out;
  for (CollectiveKind k : all_collective_kinds()) out.emplace_back(std::string(collective_name(k)), k);
  return out;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::bf16: return 2;
    case DType::f32: return 4;
    case DType::int8: return 1;
    case DType::fp8: return 1;
  }
  return 2;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::int8: return "int8";
    case DType::fp8: return "fp8";
  }
  return "?";
}

namespace detail {

std::string key_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

FieldTable<ModelSpec> model_base_fields() {
  using S = ModelSpec;
  FieldTable<ModelSpec> t;
  t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, "unnamed", "model name");
  std::vector<std::pair<std::string, ModelKind>> kinds;
  for (const ModelKindInfo& k : model_kinds()) kinds.emplace_back(k.name, k.kind);
  t.add_choice<ModelKind>("kind", [](S& s) -> ModelKind& { return s.kind; }, kinds, std::nullopt, "model family");
  return t;
}

const FieldTable<ModelSpec>& gemm_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<std::int64_t>("m", [](S& s) -> std::int64_t& { return s.gemm.m; }, std::nullopt, "rows of A and C",
                        in_range(std::int64_t{1}, kMaxDimension));
    t.add<std::int64_t>("k", [](S& s) -> std::int64_t& { return s.gemm.k; }, std::nullopt,
                        "contraction dimension", in_range(std::int64_t{1}, kMaxDimension));
    t.add<std::int64_t>("n", [](S& s) -> std::int64_t& { return s.gemm.n; }, std::nullopt, "columns of B and C",
                        in_range(std::int64_t{1}, kMaxDimension));
    t.add_choice<GemmGranularity>("lowering", [](S& s) -> GemmGranularity& { return s.gemm.lowering; },
                               {{"tiled", GemmGranularity::tiled}, {"fused", GemmGranularity::fused}}, "tiled",
                               "tiled: tile by tile with explicit DMAs; fused: one instruction per TensorCore "
                               "streaming its operands from HBM (the granularity of whole models)");
    return t;
  }();
  return table;
}

const FieldTable<ModelSpec>& mlp_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<std::vector<int>>("widths", [](S& s) -> std::vector<int>& { return s.mlp.widths; }, std::nullopt,
                            "input width, then the width of each layer", positive_list(2, 1024));
    t.add_choice<Activation>("activation", [](S& s) -> Activation& { return s.mlp.activation; },
                             {{"relu", Activation::relu}, {"gelu", Activation::gelu}}, "gelu",
                             "activation after each hidden layer");
    return t;
  }();
  return table;
}

const FieldTable<ModelSpec>& collective_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add_choice<CollectiveKind>("op", [](S& s) -> CollectiveKind& { return s.collective.op; },
                                 collective_choices(), std::nullopt, "the collective");
    t.add<Bytes>("bytes", [](S& s) -> Bytes& { return s.collective.bytes; }, std::nullopt,
                 "buffer size per chip, a whole number of elements of workload.dtype",
                 in_range(Bytes(1), Bytes(std::uint64_t{1} << 48)));
    t.add<std::vector<int>>("axes", [](S& s) -> std::vector<int>& { return s.collective.axes; }, "[]",
                            "torus axes taking part (0-based); [] = every axis; a group of at least two chips");
    t.add<std::string>("algorithm", [](S& s) -> std::string& { return s.collective.algorithm; }, "auto",
                       "collective algorithm by name; auto = the default for the op and topology");
    return t;
  }();
  return table;
}

}  // namespace detail

const std::vector<ModelKindInfo>& model_kinds() {
  static const std::vector<ModelKindInfo> kinds{
      {"gemm", ModelKind::gemm, &detail::gemm_fields, nullptr},
      {"mlp", ModelKind::mlp, &detail::mlp_fields, nullptr},
      {"collective", ModelKind::collective, &detail::collective_fields, nullptr},
      {"transformer", ModelKind::transformer, &detail::transformer_fields, &detail::check_transformer},
      {"resnet", ModelKind::resnet, &detail::resnet_fields, &detail::check_resnet},
      {"dlrm", ModelKind::dlrm, &detail::dlrm_fields, &detail::check_dlrm},
  };
  return kinds;
}

const ModelKindInfo& model_kind_info(ModelKind kind) {
  for (const ModelKindInfo& k : model_kinds()) {
    if (k.kind == kind) return k;
  }
  return model_kinds().front();
}

std::string_view model_kind_name(ModelKind kind) { return model_kind_info(kind).name; }

SourceLoc origin_of(const std::map<std::string, FieldOrigin>& origins, const std::string& key) {
  const auto it = origins.find(key);
  if (it != origins.end() && !it->second.defaulted) return it->second.loc;
  // A defaulted field: the map it would be written in (a workload's `workload:`, a model's own map).
  if (it != origins.end() && it->second.loc.line > 0) return it->second.loc;
  if (const auto kind = origins.find("kind"); kind != origins.end()) return kind->second.loc;
  return SourceLoc{"(model)", 0, 0};
}

bool user_wrote(const std::map<std::string, FieldOrigin>& origins, const std::string& key) {
  const auto it = origins.find(key);
  return it != origins.end() && !it->second.defaulted && !is_bundled_file(it->second.loc.file);
}

std::string blamed_field(const std::map<std::string, FieldOrigin>& origins, const std::string& key,
                         const std::string& other) {
  return !user_wrote(origins, key) && user_wrote(origins, other) ? other : key;
}

ModelSpec load_model(const std::string& name_or_path) {
  Diagnostics diags;
  const auto file = resolve_data_file("configs/models", name_or_path, {}, SourceLoc{"(command line)", 0, 0}, "model",
                                      diags);
  diags.throw_if_any();
  const ConfigNode root = load_yaml_file(*file, diags);
  diags.throw_if_any();
  ModelSpec spec = resolve_model(root, "", diags);
  diags.throw_if_any();
  return spec;
}

ModelSpec resolve_model(const ConfigNode& node, const std::string& path, Diagnostics& diags) {
  ModelSpec spec;
  std::vector<std::string> names;
  for (const ModelKindInfo& k : model_kinds()) names.push_back(k.name);
  const std::string expected = fmt::format("one of: {}", fmt::join(names, ", "));
  if (!node.is_map()) {
    diags.error(node.loc(), path, "wrong type", "a model name or a map with 'kind'", node.describe());
    return spec;
  }
  const ConfigNode* kind = node.find("kind");
  if (kind == nullptr || !kind->is_scalar()) {
    diags.error(kind ? kind->loc() : node.loc(), detail::key_path(path, "kind"), "missing required key", expected,
                kind ? kind->describe() : "nothing");
    return spec;
  }
  for (const ModelKindInfo& k : model_kinds()) {
    if (k.name != kind->scalar()) continue;
    const std::size_t before = diags.size();
    k.fields().resolve(node, path, spec, diags, &spec.origins);
    if (diags.size() == before && k.check != nullptr) k.check(spec, path, diags);
    return spec;
  }
  diags.error(kind->loc(), detail::key_path(path, "kind"), fmt::format("unknown model kind '{}'", kind->scalar()),
              expected, kind->scalar(), suggestion(kind->scalar(), names));
  return spec;
}

}  // namespace tpusim
