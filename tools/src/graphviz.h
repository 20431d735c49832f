#pragma once
// Lays out a DOT graph with Graphviz (`dot -Tsvg`, installed by scripts/install-deps.sh), run directly (no
// shell, so no path or name is ever interpreted by one).
#include <string>

namespace tpusim::tools {

// The SVG Graphviz draws for `dot`. Throws std::runtime_error when Graphviz is missing or fails.
[[nodiscard]] std::string graphviz_svg(const std::string& dot);

// `text` (a DOT graph or an SVG document) with a comment saying tpusim wrote it, after its first line, so
// that a later run recognises the file as its own (output_folder.h).
[[nodiscard]] std::string sign_drawing(const std::string& text, bool svg);

}  // namespace tpusim::tools
