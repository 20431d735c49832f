#include "tools/src/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tpusim::tools {
namespace {

// A perceptually ordered ramp from dark blue (idle) through green to yellow (saturated), after viridis.
std::string ramp(double u) {
  static constexpr double kStops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  u = std::clamp(u, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(u));
  const double f = u - i;
  auto mix = [&](int c) { return static_cast<int>(std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c]))); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}


// How the torus drawings (links.svg, topo --svg) lay a pod out: one panel per z plane and pod, in a near-square
// grid of panels; each panel is an x-by-y grid of chips.
struct TorusPanels {
  explicit TorusPanels(const Topology& topo)
      : nx(topo.shape()[0]),
        ny(topo.axes() >= 2 ? topo.shape()[1] : 1),
        nz(topo.axes() >= 3 ? topo.shape()[2] : 1),
        pods(topo.pods()),
        panels(nz * pods),
        cols(std::max(1, std::min(panels, static_cast<int>(std::ceil(std::sqrt(panels * 1.0)))))),
        rows((panels + cols - 1) / cols) {}

  // "pod 1, z = 2"; empty for a single plane of a single pod.
  [[nodiscard]] std::string label(int pod, int z) const {
    std::string s = pods > 1 ? fmt::format("pod {}", pod) : std::string();
    if (nz > 1) s += (s.empty() ? "" : ", ") + fmt::format("z = {}", z);
    return s;
  }
  // Every chip of panel `p`, row by row: its coordinate and id.
  [[nodiscard]] std::vector<std::pair<ChipCoord, ChipId>> chips(const Topology& topo, int p) const {
    std::vector<std::pair<ChipCoord, ChipId>> out;
    for (int y = 0; y < ny; ++y) {
      for (int x = 0; x < nx; ++x) {
        ChipCoord c;
        c.pod = p / nz;
        c.pos = {x, y, p % nz};
        out.emplace_back(c, topo.chip_at(c));
      }
    }
    return out;
  }

  int nx, ny, nz, pods, panels, cols, rows;
};

}  // namespace

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

void write_link_heatmap_svg(const Topology& topo, const std::vector<double>& link_utilization,
                            const std::string& title, const LinkMapMarks& marks, std::ostream& out) {
  const TorusPanels grid(topo);
  const int nx = grid.nx, ny = grid.ny, nz = grid.nz, panels = grid.panels, cols = grid.cols, rows = grid.rows;
  // A chip square and the gap after it, where its links are drawn.
  const double pitch = std::clamp(480.0 / std::max(nx, ny), 14.0, 64.0);
  const double chip = std::round(pitch * 0.55), gap = pitch - chip;
  const double panel_w = nx * pitch + gap + 30, panel_h = ny * pitch + gap + 40;
  const double title_w = 8.0 * static_cast<double>(title.size()) + 20;
  const double width = std::max({cols * panel_w + 20, title_w, 880.0}), height = rows * panel_h + 166;

  // Per chip (link) id: whether the marks list it.
  const auto flags = [](std::size_t count, const auto& ids) {
    std::vector<bool> out(count, false);
    for (const auto id : ids) {
      if (id.value() < count) out[id.value()] = true;
    }
    return out;
  };
  const std::vector<bool> chip_failed = flags(topo.chip_count(), marks.failed_chips);
  const std::vector<bool> link_failed = flags(topo.link_count(), marks.failed_links);
  const std::vector<bool> chip_degraded = flags(topo.chip_count(), marks.degraded_chips);
  const std::vector<bool> link_degraded = flags(topo.link_count(), marks.degraded_links);
  // A degraded chip or link: a thick dashed outline, its fill (the load) kept.
  constexpr const char* kDegraded = R"(stroke="#1f5fd6" stroke-width="2.5" stroke-dasharray="4 2")";
  double busiest = 0;
  for (double u : link_utilization) busiest = std::max(busiest, u);
  // The colour scale's top: a round value at or above the busiest link, from 1% (a step stopped by a chip fault
  // and run to its detection loads its links by millionths: drawn as idle, not stretched) to 100%.
  const double top = std::clamp(nice_ticks(0, std::max(busiest, 0.01), Quantity::fraction, false, 4).back(), 0.01, 1.0);

  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height)
      << "\n";
  out << R"svg(<defs><pattern id="failed" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">)svg"
         R"(<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#d62728" stroke-width="3"/>)"
         R"(</pattern></defs>)"
      << "\n";
  out << fmt::format(R"(<text x="10" y="18" font-size="14">{}</text>)", svg_escape(title)) << "\n";
  const auto origin = [&](int pod, int z) {
    const int p = pod * nz + z;
    return std::make_pair(10 + (p % cols) * panel_w + 30, 30 + (p / cols) * panel_h + 30);
  };
  const auto chip_box = [&](const ChipCoord& c) {
    const auto [ox, oy] = origin(c.pod, topo.axes() >= 3 ? c.pos[2] : 0);
    return std::make_pair(ox + gap + c.pos[0] * pitch, oy + gap + (topo.axes() >= 2 ? c.pos[1] : 0) * pitch);
  };
  for (int p = 0; p < panels; ++p) {
    const int pod = p / nz, z = p % nz;
    const auto [ox, oy] = origin(pod, z);
    const std::string label = grid.label(pod, z);
    if (!label.empty()) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-weight="bold">{}</text>)", ox - 30, oy - 16, label) << "\n";
    }
    for (int x = 0; x < nx; ++x) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="#555">{}</text>)",
                         ox + gap + x * pitch + chip / 2, oy - 2, x)
          << "\n";
    }
    for (int y = 0; y < ny && topo.axes() >= 2; ++y) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="#555">{}</text>)", ox - 4,
                         oy + gap + y * pitch + chip / 2 + 4, y)
          << "\n";
    }
    for (const auto& [c, id] : grid.chips(topo, p)) {
      const auto [cx, cy] = chip_box(c);
      const bool failed = chip_failed[id.value()], degraded = !failed && chip_degraded[id.value()];
      out << fmt::format(R"(<rect class="chip{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" {}><title>chip {} ({},{},{}){}</title></rect>)",
                         degraded ? " degraded" : "", cx, cy, chip, chip, failed ? "url(#failed)" : "#f2f2f2",
                         degraded ? kDegraded : R"(stroke="#444")", id.value(), c.pos[0], c.pos[1], c.pos[2],
                         failed ? ": failed" : degraded ? ": degraded" : "")
          << "\n";
    }
  }
  for (std::size_t i = 0; i < topo.link_count(); ++i) {
    const Link& l = topo.link(LinkId(static_cast<std::uint32_t>(i)));
    const ChipCoord c = topo.coord(l.src), d = topo.coord(l.dst);
    const auto [cx, cy] = chip_box(c);
    const double half = chip / 2;
    double x = cx, y = cy, w = half, h = half;
    const bool plus = l.direction > 0;
    if (l.axis == 0) {
      x = plus ? cx + chip : cx - gap, y = plus ? cy : cy + half, w = gap, h = half;
    } else if (l.axis == 1) {
      x = plus ? cx : cx + half, y = plus ? cy + chip : cy - gap, w = half, h = gap;
    } else {
      x = plus ? cx + 2 : cx + half, y = cy + 2, w = half - 2, h = chip - 4;
    }
    const double u = i < link_utilization.size() ? link_utilization[i] : 0.0;
    const bool failed = link_failed[i] || chip_failed[l.src.value()] || chip_failed[l.dst.value()];
    const bool degraded = !failed && link_degraded[i];
    out << fmt::format(R"(<rect class="link{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"{}><title>link {}: chip ({},{},{}) {}{} to ({},{},{}){}: {}{}</title></rect>)",
                       degraded ? " degraded" : "", x, y, std::max(1.0, w - 1), std::max(1.0, h - 1),
                       failed ? "url(#failed)" : ramp(u / top), degraded ? std::string(" ") + kDegraded : "", i,
                       c.pos[0], c.pos[1], c.pos[2], "xyz"[std::clamp<int>(l.axis, 0, 2)], plus ? "+" : "-", d.pos[0],
                       d.pos[1], d.pos[2], l.wraparound ? " (wraparound)" : "", readable(u, Quantity::fraction),
                       failed ? ", failed" : degraded ? ", degraded" : "")
        << "\n";
  }
  // The legend: the colour scale with round ticks, the failed and degraded marks, how to read a chip's links.
  const double ly = height - 126, bar = 240;
  for (int i = 0; i < 40; ++i) {
    out << fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="{:.0f}" height="12" fill="{}"/>)", 10 + i * bar / 40, ly,
                       bar / 40 + 1, ramp((i + 0.5) / 40))
        << "\n";
  }
  for (double v : nice_ticks(0, top, Quantity::fraction, false, 4)) {
    if (v > top * (1 + 1e-9)) break;
    const double tx = 10 + bar * v / top;
    out << fmt::format(R"(<line x1="{0:.1f}" y1="{1:.0f}" x2="{0:.1f}" y2="{2:.0f}" stroke="#000"/>)"
                       R"(<text x="{0:.1f}" y="{3:.0f}" text-anchor="middle">{4}</text>)",
                       tx, ly + 12, ly + 16, ly + 28, readable(v, Quantity::fraction))
        << "\n";
  }
  out << fmt::format(R"(<text x="{}" y="{:.0f}">colour: utilization of each directed ICI link</text>)", 10 + bar + 16, ly + 10)
      << "\n";
  out << fmt::format(R"svg(<rect x="10" y="{0:.0f}" width="24" height="12" fill="url(#failed)" stroke="#444"/><text x="40" y="{1:.0f}">failed link, or a link of a failed chip; a hatched square: a failed chip</text>)svg",
                     ly + 38, ly + 48)
      << "\n";
  out << fmt::format(R"svg(<rect x="10" y="{0:.0f}" width="24" height="12" fill="#f2f2f2" {2}/><text x="40" y="{1:.0f}">degraded link or chip (a slower link, a straggler, degraded HBM): dashed blue outline, the fill still its load</text>)svg",
                     ly + 56, ly + 66, kDegraded)
      << "\n";
  out << fmt::format(R"(<text x="10" y="{:.0f}">each square a chip at (x, y): its +x link right of it (upper half of the gap), -x left (lower half), +y below (left half), -y above (right half)</text>)",
                     ly + 86)
      << "\n";
  if (nz > 1) {
    out << fmt::format(R"(<text x="10" y="{:.0f}">+z and -z links: the left and right half inside the square; a link at the edge of a panel wraps around</text>)",
                       ly + 102)
        << "\n";
  } else {
    out << fmt::format(R"(<text x="10" y="{:.0f}">a link at the edge of the panel wraps around</text>)", ly + 102) << "\n";
  }
  out << "</svg>\n";
}

void write_topology_svg(const Topology& topo, std::ostream& out) {
  const TorusPanels grid(topo);
  const int nx = grid.nx, ny = grid.ny, nz = grid.nz, panels = grid.panels, cols = grid.cols, rows = grid.rows;
  const double pitch = std::clamp(360.0 / std::max(nx, ny), 26.0, 72.0), chip = std::round(pitch * 0.5);
  const double panel_w = nx * pitch + pitch, panel_h = ny * pitch + pitch + 24;
  const std::string title = fmt::format("{}: {} chips ({}), {} links", topo.name(), topo.chip_count(),
                                        topo.chip_name(), topo.link_count());
  const double width = std::max({cols * panel_w + 20, 8.0 * static_cast<double>(title.size()) + 20, 640.0});
  const double height = rows * panel_h + 110;
  out << R"(<?xml version="1.0" encoding="UTF-8"?>)" << "\n";
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height)
      << "\n";
  out << fmt::format(R"(<text x="10" y="18" font-size="14">{}</text>)", svg_escape(title)) << "\n";
  const auto origin = [&](int pod, int z) {
    const int p = pod * nz + z;
    return std::make_pair(10 + (p % cols) * panel_w + pitch / 2, 40 + (p / cols) * panel_h + 24);
  };
  // The centre of a chip's square.
  const auto centre = [&](const ChipCoord& c) {
    const auto o = origin(c.pod, topo.axes() >= 3 ? c.pos[2] : 0);
    return std::make_pair(o.first + c.pos[0] * pitch + pitch / 2, o.second + (topo.axes() >= 2 ? c.pos[1] : 0) * pitch + pitch / 2);
  };
  int z_cables = 0, optical = 0;
  for (std::size_t i = 0; i < topo.link_count(); ++i) {
    const LinkId id(static_cast<std::uint32_t>(i));
    const Link& l = topo.link(id);
    if (l.reverse.value() < i) continue;  // one line per cable
    const bool ocs = l.kind == LinkKind::optical;
    optical += ocs ? 1 : 0;
    const ChipCoord a = topo.coord(l.src), b = topo.coord(l.dst);
    if (l.axis >= 2 || a.pod != b.pod) {
      ++z_cables;
      continue;
    }
    const char* style = ocs ? R"(stroke="#e6550d" stroke-width="2" stroke-dasharray="5 3")" : R"(stroke="#3182bd" stroke-width="2")";
    const auto [x1, y1] = centre(a);
    const auto [x2, y2] = centre(b);
    if (!l.wraparound) {
      out << fmt::format(R"(<line class="cable" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/>)", x1, y1, x2, y2, style)
          << "\n";
      continue;
    }
    // A wraparound cable: a stub leaving each end's square outwards, towards the panel's edge.
    const double dx = l.axis == 0 ? 1 : 0, dy = l.axis == 1 ? 1 : 0, sign = l.direction;
    const double reach = chip / 2 + (pitch - chip) / 2 + 4;
    out << fmt::format(R"(<g class="cable wraparound"><line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/>)", x1, y1,
                       x1 + sign * dx * reach, y1 + sign * dy * reach, style)
        << fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/></g>)", x2, y2,
                       x2 - sign * dx * reach, y2 - sign * dy * reach, style)
        << "\n";
  }
  for (int p = 0; p < panels; ++p) {
    const int pod = p / nz, z = p % nz;
    const auto [ox, oy] = origin(pod, z);
    const std::string label = grid.label(pod, z);
    if (!label.empty()) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-weight="bold">{}</text>)", ox, oy - 12, label) << "\n";
    }
    if (!topo.cube().empty()) {  // the OCS cubes' outlines in this plane
      const int cx = topo.cube()[0], cy = topo.axes() >= 2 ? topo.cube()[1] : 1;
      for (int y = 0; y < ny; y += cy) {
        for (int x = 0; x < nx; x += cx) {
          out << fmt::format(R"(<rect class="cube" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#999" stroke-dasharray="2 2"/>)",
                             ox + x * pitch + 3, oy + y * pitch + 3, cx * pitch - 6, cy * pitch - 6)
              << "\n";
        }
      }
    }
    for (const auto& [c, id] : grid.chips(topo, p)) {
      const auto [cx, cy] = centre(c);
      out << fmt::format(R"(<rect class="chip" x="{:.1f}" y="{:.1f}" width="{:.0f}" height="{:.0f}" fill="#f2f2f2" stroke="#444"><title>chip {} ({},{},{})</title></rect>)",
                         cx - chip / 2, cy - chip / 2, chip, chip, id.value(), c.pos[0], c.pos[1], c.pos[2])
          << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="{}">{}</text>)", cx, cy + 3,
                         chip >= 30 ? 10 : 8,
                         topo.axes() >= 2 ? fmt::format("{},{}", c.pos[0], c.pos[1]) : fmt::format("{}", c.pos[0]))
          << "\n";
    }
  }
  const double ly = height - 70;
  out << fmt::format(R"(<line x1="10" y1="{0:.0f}" x2="34" y2="{0:.0f}" stroke="#3182bd" stroke-width="2"/><text x="40" y="{1:.0f}">electrical ICI cable</text>)",
                     ly, ly + 4);
  if (optical > 0) {
    out << fmt::format(R"(<line x1="200" y1="{0:.0f}" x2="224" y2="{0:.0f}" stroke="#e6550d" stroke-width="2" stroke-dasharray="5 3"/><text x="230" y="{1:.0f}">optical cable through an OCS</text>)",
                       ly, ly + 4);
  }
  out << "\n"
      << fmt::format(R"(<text x="10" y="{:.0f}">squares: chips, labelled x,y; a stub at a panel's edge: a wraparound cable to the chip at the other edge{}</text>)",
                     ly + 24, topo.cube().empty() ? "" : "; dotted outlines: OCS cubes")
      << "\n";
  if (z_cables > 0) {
    out << fmt::format(R"(<text x="10" y="{:.0f}">{} more cables join each chip to the same (x, y) in the neighbouring z planes{}{}</text>)",
                       ly + 42, z_cables, topo.axes() >= 3 && topo.wraps(2) ? " (z wraps around)" : "",
                       topo.pods() > 1 ? " or pods" : "")
        << "\n";
  }
  out << "</svg>\n";
}

namespace {

// The frame of an x-y chart: the data ranges, widened to round ticks (plot_axis.h), the plot area, the tick
// labels in each axis's unit and the axis titles.
class PlotFrame {
 public:
  static constexpr double kW = 680, kH = 430, kLeft = 90, kRight = 190, kTop = 36, kBottom = 50;

  PlotFrame(PlotAxis x, PlotAxis y) : x_(std::move(x)), y_(std::move(y)) {}

  // Widens the ranges to include (x, y); points a log axis cannot show are skipped.
  void include(double x, double y) {
    if (!shown(x, y)) return;
    x0_ = std::min(x0_, x), x1_ = std::max(x1_, x);
    y0_ = std::min(y0_, y), y1_ = std::max(y1_, y);
  }
  [[nodiscard]] bool shown(double x, double y) const { return !((x_.log && x <= 0) || (y_.log && y <= 0)); }
  [[nodiscard]] double px(double v) const { return kLeft + (t(v, x_) - t(xt_.front(), x_)) / span(xt_, x_) * pw(); }
  [[nodiscard]] double py(double v) const {
    return kTop + ph() - (t(v, y_) - t(yt_.front(), y_)) / span(yt_, y_) * ph();
  }
  [[nodiscard]] double x_min() const { return xt_.front(); }
  [[nodiscard]] double x_max() const { return xt_.back(); }
  [[nodiscard]] double y_min() const { return yt_.front(); }
  [[nodiscard]] double y_max() const { return yt_.back(); }

  // Fixes the ranges (to the outer ticks) and writes the header, the frame, the ticks and the axis titles.
  // `pad` widens the data by 5% on each side first, so that markers on the extremes are drawn whole.
  void begin(const std::string& title, bool y_from_zero, bool pad, std::ostream& out) {
    if (!std::isfinite(x0_)) x0_ = x_.log ? 1 : 0, x1_ = x_.log ? 10 : 1, y0_ = y_.log ? 1 : 0, y1_ = y_.log ? 10 : 1;
    if (!y_.log && y_from_zero) y0_ = std::min(y0_, 0.0);
    if (pad) {
      widen(x0_, x1_, x_.log);
      widen(y0_, y1_, y_.log);
    }
    xt_ = x_.log ? log_ticks(x0_, x1_, x_.quantity, x_.binary) : nice_ticks(x0_, x1_, x_.quantity, x_.integer);
    yt_ = y_.log ? log_ticks(y0_, y1_, y_.quantity, y_.binary) : nice_ticks(y0_, y1_, y_.quantity, y_.integer);
    out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", kW, kH)
        << "\n";
    out << fmt::format(R"(<text x="{}" y="20" font-size="14">{}</text>)", 10, svg_escape(title)) << "\n";
    out << fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", kLeft, kTop, pw(), ph())
        << "\n";
    for (double v : xt_) {
      const double gx = px(v);
      out << fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", gx, kTop, gx, kTop + ph())
          << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", gx, kTop + ph() + 16,
                         svg_escape(tick_label(v, x_.quantity)))
          << "\n";
    }
    for (double v : yt_) {
      const double gy = py(v);
      out << fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", kLeft, gy, kLeft + pw(), gy)
          << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", kLeft - 6, gy + 4,
                         svg_escape(tick_label(v, y_.quantity)))
          << "\n";
    }
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", kLeft + pw() / 2, kH - 12,
                       svg_escape(x_.label))
        << fmt::format(R"svg(<text x="16" y="{:.1f}" transform="rotate(-90 16 {:.1f})" text-anchor="middle">{}</text>)svg",
                       kTop + ph() / 2, kTop + ph() / 2, svg_escape(y_.label))
        << "\n";
  }

  [[nodiscard]] static double pw() { return kW - kLeft - kRight; }
  [[nodiscard]] static double ph() { return kH - kTop - kBottom; }

 private:
  static double t(double v, const PlotAxis& a) { return a.log ? std::log10(std::max(v, 1e-300)) : v; }
  static double span(const std::vector<double>& ticks, const PlotAxis& a) {
    const double d = t(ticks.back(), a) - t(ticks.front(), a);
    return d > 0 ? d : 1;
  }
  static void widen(double& lo, double& hi, bool log) {
    if (log) {
      const double f = std::pow(hi / lo, 0.05);
      lo /= f, hi *= f;
      return;
    }
    const double d = 0.05 * (hi - lo);
    lo = lo < 0 ? lo - d : std::max(0.0, lo - d);  // never below zero for data that is not
    hi += d;
  }

  PlotAxis x_, y_;
  double x0_ = INFINITY, x1_ = -INFINITY, y0_ = INFINITY, y1_ = -INFINITY;
  std::vector<double> xt_, yt_;
};

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// A legend entry's text in lines that fit the right margin (about 26 characters of 11 px type in its 160 px):
// broken after the last ", " that fits, else at the last space, mid-word only where a word alone is longer than a
// line.
std::vector<std::string> legend_lines(const std::string& text, std::size_t width = 26) {
  std::vector<std::string> lines;
  std::string rest = text;
  while (rest.size() > width) {
    std::size_t cut = rest.rfind(", ", width - 1);
    if (cut != std::string::npos && cut > 0) {
      ++cut;  // the comma stays on its line
    } else {
      cut = rest.rfind(' ', width);
      if (cut == std::string::npos || cut == 0) cut = width;
    }
    lines.push_back(rest.substr(0, cut));
    rest.erase(0, cut);
    rest.erase(0, rest.find_first_not_of(' '));
  }
  if (!rest.empty() || lines.empty()) lines.push_back(rest);
  return lines;
}

// The legend in the right margin: its title, then one entry per name (its text in lines that fit the margin),
// each with its colour's key.
void write_legend(const std::string& title, const std::vector<std::pair<std::string, std::string>>& entries,
                  bool markers, std::ostream& out) {
  const double x = PlotFrame::kW - PlotFrame::kRight + 12;
  double y = PlotFrame::kTop;
  if (!title.empty()) {
    for (const std::string& line : legend_lines(title)) {
      out << fmt::format(R"(<text x="{}" y="{}" font-weight="bold">{}</text>)", x, y + 10, svg_escape(line)) << "\n";
      y += 14;
    }
    y += 4;
  }
  for (const auto& [name, color] : entries) {
    out << fmt::format(R"(<g class="legend-entry"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>)",
                       x, y + 6, x + 16, y + 6, color);
    if (markers) out << fmt::format(R"(<circle cx="{}" cy="{}" r="3" fill="{}"/>)", x + 8, y + 6, color);
    const std::vector<std::string> lines = legend_lines(name);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out << fmt::format(R"(<text x="{}" y="{}">{}</text>)", x + 22, y + 10 + 14 * static_cast<double>(i),
                         svg_escape(lines[i]));
    }
    out << "</g>\n";
    y += 18 + 14 * static_cast<double>(lines.size() - 1);
  }
}

}  // namespace

std::vector<const Series*> legend_order(const std::vector<Series>& series) {
  std::vector<const Series*> out;
  for (const auto& s : series) out.push_back(&s);
  std::stable_sort(out.begin(), out.end(), [](const Series* a, const Series* b) { return a->order < b->order; });
  return out;
}

void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const PlotAxis& x,
                          const PlotAxis& y, const std::string& legend_title, std::ostream& out) {
  PlotFrame frame(x, y);
  auto err = [](const Series& s, std::size_t i) { return i < s.err.size() ? s.err[i] : 0.0; };
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      frame.include(s.x[i], s.y[i] - err(s, i));
      frame.include(s.x[i], s.y[i] + err(s, i));
    }
  }
  frame.begin(title, true, false, out);
  std::vector<std::pair<std::string, std::string>> legend;
  const auto ordered = legend_order(series);
  for (std::size_t k = 0; k < ordered.size(); ++k) {
    const Series& s = *ordered[k];
    const char* color = kColors[k % 10];
    std::string points, markers;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      const double px = s.x[i], py = s.y[i], e = err(s, i);
      if (!frame.shown(px, py)) continue;
      points += fmt::format("{:.1f},{:.1f} ", frame.px(px), frame.py(py));
      markers += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{}: {}, {}</title></circle>)",
                             frame.px(px), frame.py(py), color, svg_escape(s.name),
                             svg_escape(tick_label(px, x.quantity)), svg_escape(tick_label(py, y.quantity)));
      if (i < s.err.size() && frame.shown(px, py - e)) {
        out << fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)"
                           R"(<line x1="{4:.1f}" y1="{1:.1f}" x2="{5:.1f}" y2="{1:.1f}" stroke="{3}"/>)"
                           R"(<line x1="{4:.1f}" y1="{2:.1f}" x2="{5:.1f}" y2="{2:.1f}" stroke="{3}"/>)",
                           frame.px(px), frame.py(py - e), frame.py(py + e), color, frame.px(px) - 4, frame.px(px) + 4)
            << "\n";
      }
    }
    out << fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", color, points) << "\n"
        << markers << "\n";
    legend.emplace_back(s.name, color);
  }
  // One line under no axis needs no key: the title names it.
  if (series.size() > 1 || !legend_title.empty()) write_legend(legend_title, legend, true, out);
  out << "</svg>\n";
}

void write_scatter_svg(const std::vector<ScatterPoint>& points, const std::string& title, const PlotAxis& x,
                       const PlotAxis& y, std::ostream& out) {
  PlotFrame frame(x, y);
  for (const auto& p : points) frame.include(p.x, p.y);
  frame.begin(title, false, true, out);
  // Every point in grey, then the highlighted ones joined in x order and labelled.
  std::vector<const ScatterPoint*> front;
  for (const auto& p : points) {
    if (!frame.shown(p.x, p.y)) continue;
    if (p.highlighted) front.push_back(&p);
    out << fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{}: {}, {}</title></circle>)",
                       frame.px(p.x), frame.py(p.y), p.highlighted ? "#d62728" : "#bbbbbb", svg_escape(p.label),
                       svg_escape(tick_label(p.x, x.quantity)), svg_escape(tick_label(p.y, y.quantity)))
        << "\n";
  }
  std::stable_sort(front.begin(), front.end(), [](const ScatterPoint* a, const ScatterPoint* b) { return a->x < b->x; });
  std::string line;
  for (const ScatterPoint* p : front) line += fmt::format("{:.1f},{:.1f} ", frame.px(p->x), frame.py(p->y));
  if (front.size() > 1) {
    out << fmt::format(R"(<polyline fill="none" stroke="#d62728" stroke-width="1.5" points="{}"/>)", line) << "\n";
  }
  for (const ScatterPoint* p : front) {
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{}</text>)", frame.px(p->x) + 6, frame.py(p->y) - 6,
                       svg_escape(p->label))
        << "\n";
  }
  const double lx = PlotFrame::kW - PlotFrame::kRight + 12;
  out << fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="#d62728"/><text x="{}" y="{}">Pareto front</text>)", lx + 6,
                     PlotFrame::kTop + 6, lx + 18, PlotFrame::kTop + 10)
      << fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="#bbbbbb"/><text x="{}" y="{}">dominated</text>)", lx + 6,
                     PlotFrame::kTop + 24, lx + 18, PlotFrame::kTop + 28)
      << "\n</svg>\n";
}

void write_roofline_svg(const std::vector<Roof>& roofs, const std::vector<Series>& groups,
                        const std::vector<std::vector<std::string>>& point_labels, const std::string& title,
                        const std::string& legend_title, std::ostream& out) {
  PlotFrame frame(PlotAxis{"arithmetic intensity (FLOP per HBM byte)", Quantity::count, true, false},
                  PlotAxis{"achieved FLOP/s per chip", Quantity::flops_per_s, true, false});
  for (const auto& g : groups) {
    for (std::size_t i = 0; i < g.x.size(); ++i) frame.include(g.x[i], g.y[i]);
  }
  for (const auto& r : roofs) {
    if (r.peak_flops_per_s <= 0 || r.hbm_bytes_per_s <= 0) continue;
    const double ridge = r.peak_flops_per_s / r.hbm_bytes_per_s;
    frame.include(ridge / 10, r.peak_flops_per_s / 10);
    frame.include(ridge * 10, r.peak_flops_per_s);
  }
  frame.begin(title, false, true, out);
  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t k = 0; k < roofs.size(); ++k) {
    const Roof& r = roofs[k];
    if (r.peak_flops_per_s <= 0 || r.hbm_bytes_per_s <= 0) continue;
    const double ridge = r.peak_flops_per_s / r.hbm_bytes_per_s;
    const double x0 = std::max(frame.x_min(), frame.y_min() / r.hbm_bytes_per_s);
    const char* color = k == 0 ? "#333333" : "#999999";
    out << fmt::format(R"(<polyline class="roof" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}" points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}"/>)",
                       color, k == 0 ? "none" : "6 3", frame.px(x0), frame.py(x0 * r.hbm_bytes_per_s), frame.px(ridge),
                       frame.py(r.peak_flops_per_s), frame.px(frame.x_max()), frame.py(r.peak_flops_per_s))
        << "\n";
    out << fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="none" stroke="{}" stroke-width="2"/>)",
                       frame.px(ridge), frame.py(r.peak_flops_per_s), color)
        << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="{}">ridge {} FLOP/B</text>)", frame.px(ridge) + 6,
                       frame.py(r.peak_flops_per_s) + 14, color, readable(ridge, Quantity::count))
        << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="end" fill="{}">peak {}</text>)",
                       frame.px(frame.x_max()) - 4, frame.py(r.peak_flops_per_s) - 4, color,
                       readable(r.peak_flops_per_s, Quantity::flops_per_s))
        << "\n";
    legend.emplace_back(fmt::format("{}: {}, HBM {}", r.name, readable(r.peak_flops_per_s, Quantity::flops_per_s),
                                    readable(r.hbm_bytes_per_s, Quantity::bytes_per_s)),
                        color);
  }
  // A point's label goes above right of its marker, or below right when that would cover a label already
  // drawn (or the ridge's), and is left to the marker's tooltip when both would.
  struct Box {
    double x0, y0, x1, y1;
    [[nodiscard]] bool meets(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  };
  std::vector<Box> placed;
  for (const auto& r : roofs) {
    if (r.peak_flops_per_s <= 0 || r.hbm_bytes_per_s <= 0) continue;
    const double rx = frame.px(r.peak_flops_per_s / r.hbm_bytes_per_s), ry = frame.py(r.peak_flops_per_s);
    placed.push_back(Box{rx - 5, ry - 5, rx + 5, ry + 5});
    placed.push_back(Box{rx + 6, ry + 4, rx + 6 + 5.5 * 20, ry + 16});  // "ridge N FLOP/B"
  }
  const auto ordered = legend_order(groups);
  for (std::size_t k = 0; k < ordered.size(); ++k) {
    const Series& g = *ordered[k];
    const char* color = kColors[k % 10];
    const std::size_t gi = static_cast<std::size_t>(ordered[k] - groups.data());
    for (std::size_t i = 0; i < g.x.size(); ++i) {
      if (!frame.shown(g.x[i], g.y[i])) continue;
      const std::string label = gi < point_labels.size() && i < point_labels[gi].size() ? point_labels[gi][i] : "";
      const double cx = frame.px(g.x[i]), cy = frame.py(g.y[i]);
      out << fmt::format(R"(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{}{}: {} FLOP/B, {}</title></circle>)",
                         cx, cy, color, svg_escape(g.name), label.empty() ? "" : " " + svg_escape(label),
                         readable(g.x[i], Quantity::count), readable(g.y[i], Quantity::flops_per_s))
          << "\n";
      if (label.empty()) continue;
      const double width = 5.0 * static_cast<double>(label.size());  // 9 px type
      for (const double dy : {-6.0, 14.0}) {
        const Box box{cx + 6, cy + dy - 9, cx + 6 + width, cy + dy + 1};
        if (std::any_of(placed.begin(), placed.end(), [&](const Box& b) { return b.meets(box); })) continue;
        out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{}</text>)", cx + 6, cy + dy, svg_escape(label))
            << "\n";
        placed.push_back(box);
        break;
      }
    }
    legend.emplace_back(g.name, color);
  }
  write_legend(legend_title, legend, true, out);
  out << "</svg>\n";
}

void write_heatmap_svg(const Heatmap& map, std::ostream& out) {
  const std::size_t nx = map.x_ticks.size(), ny = map.y_ticks.size();
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : map.panels) {
    for (const auto& row : p.cells) {
      for (const auto& c : row) {
        if (c) lo = std::min(lo, *c), hi = std::max(hi, *c);
      }
    }
  }
  const bool log = lo > 0 && hi / lo >= 100;
  // The colour scale runs over round ticks covering the values.
  const std::vector<double> scale = !std::isfinite(lo) ? std::vector<double>{0, 1}
                                    : log                ? log_ticks(lo, hi, map.quantity)
                                                         : nice_ticks(lo, hi, map.quantity, false, 4);
  const double s0 = scale.front(), s1 = scale.back();
  auto position = [&](double v) {
    if (!(s1 > s0)) return 0.5;
    return log ? (std::log10(v) - std::log10(s0)) / (std::log10(s1) - std::log10(s0)) : (v - s0) / (s1 - s0);
  };
  std::size_t longest = 0;
  for (const auto& p : map.panels) {
    for (const auto& row : p.cells) {
      for (const auto& c : row) longest = std::max(longest, heatmap_cell_text(c, map.quantity).size());
    }
  }
  for (const auto& t : map.x_ticks) longest = std::max(longest, t.size());
  const double kCellW = std::max(64.0, 6.5 * static_cast<double>(longest) + 10);
  constexpr double kCellH = 26, kLeft = 130, kTop = 50;
  const double panel_w = kLeft + nx * kCellW + 30, panel_h = ny * kCellH + 70;
  const std::size_t cols = std::min<std::size_t>(map.panels.size(), 3);
  const std::size_t rows = (map.panels.size() + cols - 1) / std::max<std::size_t>(cols, 1);
  const double width = std::max(cols * panel_w + 20, 560.0), height = rows * panel_h + kTop + 70;
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height)
      << "\n";
  out << fmt::format(R"(<text x="10" y="20" font-size="14">{}</text>)", svg_escape(map.title)) << "\n";
  out << fmt::format(R"(<text x="10" y="38">colour: {}</text>)", svg_escape(map.value_label)) << "\n";
  for (std::size_t p = 0; p < map.panels.size(); ++p) {
    const double ox = 10 + (p % cols) * panel_w, oy = kTop + (p / cols) * panel_h;
    if (!map.panels[p].title.empty()) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-weight="bold">{}</text>)", ox, oy + 12,
                         svg_escape(map.panels[p].title))
          << "\n";
    }
    const double gx = ox + kLeft, gy = oy + 20;
    std::optional<std::pair<std::size_t, std::size_t>> best;  // (y, x) of the panel's best cell
    for (std::size_t y = 0; y < ny && map.better != 0; ++y) {
      for (std::size_t x = 0; x < nx; ++x) {
        const auto& v = map.panels[p].cells[y][x];
        if (!v) continue;
        const auto& b = best ? map.panels[p].cells[best->first][best->second] : std::optional<double>();
        if (!b || (map.better < 0 ? *v < *b : *v > *b)) best = std::make_pair(y, x);
      }
    }
    for (std::size_t y = 0; y < ny; ++y) {
      // The first y value at the bottom, as on a chart.
      const double cy = gy + (ny - 1 - y) * kCellH;
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", gx - 6, cy + kCellH / 2 + 4,
                         svg_escape(map.y_ticks[y]))
          << "\n";
      for (std::size_t x = 0; x < nx; ++x) {
        const auto& v = map.panels[p].cells[y][x];
        const double cx = gx + x * kCellW;
        const double u = v ? position(*v) : 0;
        out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} = {}, {} = {}: {}</title></rect>)",
                           cx, cy, kCellW - 2, kCellH - 2, v ? ramp(u) : "#dddddd", svg_escape(map.x_label),
                           svg_escape(map.x_ticks[x]), svg_escape(map.y_label), svg_escape(map.y_ticks[y]),
                           v ? svg_escape(heatmap_cell_text(v, map.quantity)) : std::string("no result"))
            << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}">{}</text>)", cx + kCellW / 2 - 1,
                           cy + kCellH / 2 + 3, v && u < 0.6 ? "#ffffff" : "#000000",
                           svg_escape(heatmap_cell_text(v, map.quantity)))
            << "\n";
        if (best && best->first == y && best->second == x) {
          out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#d62728" stroke-width="3"/>)",
                             cx + 1, cy + 1, kCellW - 4, kCellH - 4)
              << "\n";
        }
      }
    }
    const double by = gy + ny * kCellH;
    for (std::size_t x = 0; x < nx; ++x) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", gx + x * kCellW + kCellW / 2,
                         by + 14, svg_escape(map.x_ticks[x]))
          << "\n";
    }
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", gx + nx * kCellW / 2, by + 32,
                       svg_escape(map.x_label))
        << fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}" transform="rotate(-90 {:.1f} {:.1f})" text-anchor="middle">{}</text>)svg",
                       ox + 12, gy + ny * kCellH / 2, ox + 12, gy + ny * kCellH / 2, svg_escape(map.y_label))
        << "\n";
  }
  // The colour scale: a bar of 40 steps, its round ticks labelled in the value's unit.
  const double ly = height - 64, bar = 240;
  for (int i = 0; i < 40; ++i) {
    out << fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="{:.0f}" height="12" fill="{}"/>)", 10 + i * bar / 40, ly,
                       bar / 40 + 1, ramp((i + 0.5) / 40))
        << "\n";
  }
  for (double v : scale) {
    const double tx = 10 + bar * position(v);
    out << fmt::format(R"(<g class="scale-tick"><line x1="{0:.1f}" y1="{1:.0f}" x2="{0:.1f}" y2="{2:.0f}" stroke="#000"/>)"
                       R"(<text x="{0:.1f}" y="{3:.0f}" text-anchor="middle">{4}</text></g>)",
                       tx, ly + 12, ly + 16, ly + 28, svg_escape(tick_label(v, map.quantity)))
        << "\n";
  }
  out << fmt::format(R"(<text x="10" y="{:.0f}">{}{}; grey: no result (failed, not run or filtered out){}</text>)", ly + 46,
                     svg_escape(map.value_label), log ? " (log colour scale)" : "",
                     map.better == 0 ? "" : map.better < 0 ? "; red outline: lowest" : "; red outline: highest")
      << "\n</svg>\n";
}

std::string heatmap_cell_text(const std::optional<double>& v, Quantity q) { return v ? readable(*v, q) : "-"; }

}  // namespace tpusim::tools
