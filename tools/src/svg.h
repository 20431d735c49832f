#pragma once
// SVG plots written by hand (no plotting dependency): the link-utilization heatmap over the torus, and line
// charts, scatter charts with a Pareto front and value heatmaps for sweeps. Output is deterministic text, like every other output.
#include <optional>
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
  std::vector<double> err;  // optional: a bar of y - err .. y + err at each point (noise over seeds)
};

// A line chart with optional logarithmic axes and error bars.
void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label, bool log_x, bool log_y, std::ostream& out);

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;
  bool highlighted = false;  // drawn in colour, joined in x order and labelled (a Pareto front)
};

// A scatter chart; the highlighted points are joined and labelled.
void write_scatter_svg(const std::vector<ScatterPoint>& points, const std::string& title, const std::string& x_label,
                       const std::string& y_label, bool log_x, bool log_y, std::ostream& out);

// A heatmap of one value over two axes, one panel per combination of the other axes; cells print their value,
// missing cells (failed or filtered points) are grey. The colour scale is logarithmic when the values span a
// factor of 100 or more.
struct HeatmapPanel {
  std::string title;                                   // the other axes' values; empty for a single panel
  std::vector<std::vector<std::optional<double>>> cells;  // [y][x]
};
struct Heatmap {
  std::string title, x_label, y_label, value_label;  // labels carry their units
  int better = 0;  // -1: the lowest value of each panel is outlined as its best, +1: the highest, 0: none
  std::vector<std::string> x_ticks, y_ticks;
  std::vector<HeatmapPanel> panels;
};
void write_heatmap_svg(const Heatmap& map, std::ostream& out);

}  // namespace tpusim::tools
