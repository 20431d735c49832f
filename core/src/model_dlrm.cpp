// The dlrm model kind: a DLRM-style recommender (DlrmModel in model_spec.h).
#include <fmt/format.h>

#include "model_kinds.h"

namespace tpusim::detail {

const FieldTable<ModelSpec>& dlrm_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<int>("dense_features", [](S& s) -> int& { return s.dlrm.dense_features; }, std::nullopt,
               "dense (numerical) features per example: the bottom MLP's input width", in_range(1, 1 << 20));
    t.add<std::vector<int>>("bottom_mlp", [](S& s) -> std::vector<int>& { return s.dlrm.bottom_mlp; }, std::nullopt,
                            "output width of each bottom-MLP layer; the last must equal embedding_dim",
                            positive_list(1, 64));
    t.add<std::vector<int>>("top_mlp", [](S& s) -> std::vector<int>& { return s.dlrm.top_mlp; }, std::nullopt,
                            "output width of each top-MLP layer (the last is the prediction)", positive_list(1, 64));
    t.add<int>("tables", [](S& s) -> int& { return s.dlrm.tables; }, std::nullopt,
               "embedding tables (one per categorical feature)", in_range(1, 1 << 12));
    t.add<std::int64_t>("rows_per_table", [](S& s) -> std::int64_t& { return s.dlrm.rows_per_table; }, std::nullopt,
                        "rows of each embedding table", in_range(std::int64_t{1}, std::int64_t{1} << 36));
    t.add<int>("embedding_dim", [](S& s) -> int& { return s.dlrm.embedding_dim; }, std::nullopt,
               "values per embedding row", in_range(1, 1 << 12));
    t.add<int>("lookups_per_table", [](S& s) -> int& { return s.dlrm.lookups_per_table; }, "1",
               "rows looked up and sum-pooled per table and example (the pooling factor)", in_range(1, kMaxRepeat));
    return t;
  }();
  return table;
}

void check_dlrm(const ModelSpec& spec, const std::string& path, Diagnostics& diags) {
  if (spec.dlrm.bottom_mlp.back() != spec.dlrm.embedding_dim) {
    // At the user's field of the two (blamed_field).
    if (blamed_field(spec.origins, "bottom_mlp", "embedding_dim") == "embedding_dim") {
      diags.error(origin_of(spec.origins, "embedding_dim"), key_path(path, "embedding_dim"),
                  "the bottom MLP's output interacts with the embeddings, so its last width is embedding_dim",
                  fmt::format("{} (the bottom MLP's last width), or bottom_mlp set too", spec.dlrm.bottom_mlp.back()),
                  fmt::format("{}", spec.dlrm.embedding_dim));
      return;
    }
    diags.error(origin_of(spec.origins, "bottom_mlp"), key_path(path, "bottom_mlp"),
                "the bottom MLP's output interacts with the embeddings, so its last width is embedding_dim",
                fmt::format("a last width of {}", spec.dlrm.embedding_dim),
                fmt::format("{}", spec.dlrm.bottom_mlp.back()));
  }
}

}  // namespace tpusim::detail
