#include "tools/src/charts/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tools/src/charts/svg_parts.h"

namespace tpusim::tools {
namespace {

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

std::string svg_ramp(double u) {
  static constexpr double kStops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  u = std::clamp(u, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(u));
  const double f = u - i;
  auto mix = [&](int c) { return static_cast<int>(std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c]))); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}

void write_colour_bar(double y, double width, std::ostream& out) {
  for (int i = 0; i < 40; ++i) {
    out << fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="{:.0f}" height="12" fill="{}"/>)", 10 + i * width / 40, y,
                       width / 40 + 1, svg_ramp((i + 0.5) / 40))
        << "\n";
  }
}

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
                       failed ? "url(#failed)" : svg_ramp(u / top), degraded ? std::string(" ") + kDegraded : "", i,
                       c.pos[0], c.pos[1], c.pos[2], "xyz"[std::clamp<int>(l.axis, 0, 2)], plus ? "+" : "-", d.pos[0],
                       d.pos[1], d.pos[2], l.wraparound ? " (wraparound)" : "", readable(u, Quantity::fraction),
                       failed ? ", failed" : degraded ? ", degraded" : "")
        << "\n";
  }
  // The legend: the colour scale with round ticks, the failed and degraded marks, how to read a chip's links.
  const double ly = height - 126, bar = 240;
  write_colour_bar(ly, bar, out);
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

}  // namespace tpusim::tools
