#pragma once
// Internal: the field table and cross-field check of each model kind, one file per kind (model_spec.cpp holds
// gemm, mlp and collective; model_transformer.cpp; model_resnet.cpp; model_dlrm.cpp). model_kinds() lists them.
#include <string>

#include "tpusim/core/model_spec.h"

namespace tpusim::detail {

// The fields every kind shares (name, kind), to start a kind's table with.
[[nodiscard]] FieldTable<ModelSpec> model_base_fields();

[[nodiscard]] const FieldTable<ModelSpec>& gemm_fields();
[[nodiscard]] const FieldTable<ModelSpec>& mlp_fields();
[[nodiscard]] const FieldTable<ModelSpec>& collective_fields();
[[nodiscard]] const FieldTable<ModelSpec>& transformer_fields();
[[nodiscard]] const FieldTable<ModelSpec>& resnet_fields();
[[nodiscard]] const FieldTable<ModelSpec>& dlrm_fields();

void check_transformer(const ModelSpec& spec, const std::string& path, Diagnostics& diags);
void check_resnet(const ModelSpec& spec, const std::string& path, Diagnostics& diags);
void check_dlrm(const ModelSpec& spec, const std::string& path, Diagnostics& diags);

// "path.key" (or "key" when path is empty).
[[nodiscard]] std::string key_path(const std::string& path, const std::string& key);

}  // namespace tpusim::detail
