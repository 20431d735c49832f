#pragma once
// What the SVG drawings share (svg.cpp, svg_charts.cpp, svg_heatmap.cpp); not part of svg.h.
#include <string>

namespace tpusim::tools {

// A perceptually ordered colour ramp for a value u in [0, 1] (clamped), from dark blue (idle) through green to
// yellow (saturated), after viridis: "#rrggbb".
[[nodiscard]] std::string svg_ramp(double u);

}  // namespace tpusim::tools
