#pragma once
// SVG plots written by hand (no plotting dependency): the link-utilization heatmap over the torus, and line
// charts, scatter charts with a Pareto front and value heatmaps for sweeps. Output is deterministic text, like every other output.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/src/charts/plot_axis.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// What a link heatmap marks apart from the load: the chips and links that failed in the step, and those that
// ran degraded (slower, still carrying their load).
struct LinkMapMarks {
  std::vector<ChipId> failed_chips;
  std::vector<LinkId> failed_links;
  std::vector<ChipId> degraded_chips;  // stragglers, degraded HBM
  std::vector<LinkId> degraded_links;
};

// One segment per directed ICI link, coloured by its utilization, laid out on the torus: chips are squares at
// their (x, y) coordinates, the +x link of a chip in the upper half of the gap to its right and the -x link in
// the lower half of the gap to its left (+y / -y alike, below / above), so that the gap between two neighbours
// holds both directions of their cable and a wraparound link is a stub at the panel's edge; a 3D pod has one
// panel per z plane, its +z / -z links the chip square's left / right half. Failed chips and links are
// hatched in red; degraded ones keep their colour (a degraded link still carries its load) inside a thick
// dashed blue outline (class "link degraded" / "chip degraded"); the legend names both. The colour scale runs from 0 to a round value at or above the busiest link (1% to 100%), so that
// a lightly loaded step is not drawn all dark. `link_utilization` is indexed by LinkId.
void write_link_heatmap_svg(const Topology& topo, const std::vector<double>& link_utilization,
                            const std::string& title, const LinkMapMarks& marks, std::ostream& out);

// The topology as `tpusim topo --svg` draws it: one panel per z plane (and pod), chips as squares at their
// (x, y) coordinates, each in-plane cable a line between neighbours, a wraparound cable a short stub at both
// edges of the panel, optical (OCS) cables dashed and coloured apart from electrical ones, OCS cubes outlined;
// the z links are named below the panels, not drawn. Its size follows the plane's, not the chip count.
void write_topology_svg(const Topology& topo, std::ostream& out);

// Text made safe for SVG/XML content and attributes (<, >, &).
[[nodiscard]] std::string svg_escape(const std::string& s);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> err;  // optional: a bar of y - err .. y + err at each point (noise over seeds)
  // Where the series goes in the legend: series are listed by this key (compared element by element, e.g. the
  // numeric value of each axis the series stands for), ties and empty keys in the order given.
  std::vector<double> order;
};

// The series in legend order (Series::order).
[[nodiscard]] std::vector<const Series*> legend_order(const std::vector<Series>& series);

// A line chart with a marker on each point and optional error bars; the legend, titled `legend_title` (the
// axes the series vary, empty for none), lists the series in legend_order.
void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const PlotAxis& x,
                          const PlotAxis& y, const std::string& legend_title, std::ostream& out);

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;
  bool highlighted = false;  // drawn in colour, joined in x order and labelled (a Pareto front)
};

// A scatter chart; the highlighted points are joined and labelled.
void write_scatter_svg(const std::vector<ScatterPoint>& points, const std::string& title, const PlotAxis& x,
                       const PlotAxis& y, std::ostream& out);

// A roofline on log-log axes: per roof the chip's peak compute (a horizontal line) and its HBM bandwidth (the
// slope FLOP/s = intensity x bandwidth) meeting at the ridge point, which is marked and labelled; the measured
// points as markers, labelled, one colour per group (in legend_order).
struct Roof {
  std::string name;
  double peak_flops_per_s = 0, hbm_bytes_per_s = 0;
};
void write_roofline_svg(const std::vector<Roof>& roofs, const std::vector<Series>& groups,
                        const std::vector<std::vector<std::string>>& point_labels, const std::string& title,
                        const std::string& legend_title, std::ostream& out);

// A heatmap of one value over two axes, one panel per combination of the other axes; cells print their value in
// its unit (readable(): "12.35 ms", "41.2%"), missing cells (failed or filtered points) are grey. A colour scale
// with round ticks in the same unit is drawn below; it is logarithmic when the values span a factor of 100 or
// more.
struct HeatmapPanel {
  std::string title;                                   // the other axes' values; empty for a single panel
  std::vector<std::vector<std::optional<double>>> cells;  // [y][x]
};
struct Heatmap {
  std::string title, x_label, y_label, value_label;  // labels carry their units
  Quantity quantity = Quantity::count;               // of the cells' values
  int better = 0;  // -1: the lowest value of each panel is outlined as its best, +1: the highest, 0: none
  std::vector<std::string> x_ticks, y_ticks;
  std::vector<HeatmapPanel> panels;
};
void write_heatmap_svg(const Heatmap& map, std::ostream& out);
// A heatmap cell's text.
[[nodiscard]] std::string heatmap_cell_text(const std::optional<double>& v, Quantity q);

}  // namespace tpusim::tools
