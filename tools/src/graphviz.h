#pragma once
// Lays out a DOT graph with Graphviz (`dot -Tsvg`, installed by scripts/install-deps.sh), run directly (no
// shell, so no path or name is ever interpreted by one).
#include <string>

namespace tpusim::tools {

// The SVG Graphviz draws for `dot`. Throws std::runtime_error when Graphviz is missing or fails.
[[nodiscard]] std::string graphviz_svg(const std::string& dot);

}  // namespace tpusim::tools
