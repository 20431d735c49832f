#pragma once
// SVG plots written by hand (no plotting dependency): the link-utilization heatmap over the torus and line
// charts for sweeps. Output is deterministic text, like every other output.
#include <ostream>
#include <string>
#include <vector>

#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// One square per chip, coloured by the mean utilization of the chip's outgoing ICI links; 3D pods are drawn as
// one panel per coordinate of the last axis. `link_utilization` is indexed by LinkId.
void write_link_heatmap_svg(const Topology& topo, const std::vector<double>& link_utilization,
                            const std::string& title, std::ostream& out);

// Text made safe for SVG/XML content and attributes (<, >, &).
[[nodiscard]] std::string svg_escape(const std::string& s);

struct Series {
  std::string name;
  std::vector<double> x, y;
};

// A line chart with optional logarithmic axes.
void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label, bool log_x, bool log_y, std::ostream& out);

}  // namespace tpusim::tools
