#pragma once
#include <string_view>

namespace tpusim {
// The release version, also written into every summary.json.
[[nodiscard]] std::string_view version();
}  // namespace tpusim
