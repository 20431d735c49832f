#include "tools/src/charts/svg.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "tools/src/charts/svg_parts.h"

namespace tpusim::tools {

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
                           cx, cy, kCellW - 2, kCellH - 2, v ? svg_ramp(u) : "#dddddd", svg_escape(map.x_label),
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
  write_colour_bar(ly, bar, out);
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
