#pragma once
// What the SVG drawings share (svg.cpp, svg_charts.cpp, svg_heatmap.cpp); not part of svg.h.
#include <ostream>
#include <string>

namespace tpusim::tools {

// A perceptually ordered colour ramp for a value u in [0, 1] (clamped), from dark blue (idle) through green to
// yellow (saturated), after viridis: "#rrggbb".
[[nodiscard]] std::string svg_ramp(double u);

// A colour scale's bar: svg_ramp in 40 steps, 12 px high, from x = 10 over `width` px at height `y`.
void write_colour_bar(double y, double width, std::ostream& out);

}  // namespace tpusim::tools
