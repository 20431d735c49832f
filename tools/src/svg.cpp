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
                            const std::string& title, std::ostream& out) {
  const auto& shape = topo.shape();
  const int nx = shape[0], ny = topo.axes() >= 2 ? shape[1] : 1, nz = topo.axes() >= 3 ? shape[2] : 1;
  const int panels = nz * topo.pods();
  const int cols = std::max(1, std::min(panels, static_cast<int>(std::ceil(std::sqrt(panels * 1.0)))));
  const int rows = (panels + cols - 1) / cols;
  const double cell = std::clamp(360.0 / std::max(nx, ny), 4.0, 40.0);
  const double panel_w = nx * cell + 20, panel_h = ny * cell + 34;
  const double width = std::max(cols * panel_w + 20, 360.0), height = rows * panel_h + 100;

  std::vector<double> sum(topo.chip_count(), 0.0);
  std::vector<int> count(topo.chip_count(), 0);
  for (std::size_t i = 0; i < link_utilization.size() && i < topo.link_count(); ++i) {
    const Link& l = topo.link(LinkId(static_cast<std::uint32_t>(i)));
    sum[l.src.value()] += link_utilization[i];
    ++count[l.src.value()];
  }

  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height)
      << "\n";
  out << fmt::format(R"(<text x="10" y="18" font-size="14">{}</text>)", svg_escape(title)) << "\n";
  for (int p = 0; p < panels; ++p) {
    const int pod = p / nz, z = p % nz;
    const double ox = 10 + (p % cols) * panel_w, oy = 30 + (p / cols) * panel_h;
    const std::string label = topo.axes() >= 3 ? fmt::format("z = {}", z) : std::string("chips");
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}{}</text>)", ox, oy + 12,
                       topo.pods() > 1 ? fmt::format("pod {} ", pod) : std::string(), label)
        << "\n";
    for (int y = 0; y < ny; ++y) {
      for (int x = 0; x < nx; ++x) {
        ChipCoord c;
        c.pod = pod;
        c.pos = {x, y, z};
        const ChipId chip = topo.chip_at(c);
        const double u = count[chip.value()] > 0 ? sum[chip.value()] / count[chip.value()] : 0.0;
        out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>chip {} ({},{},{}): {:.1f}%</title></rect>)",
                           ox + x * cell, oy + 18 + y * cell, cell - 1, cell - 1, ramp(u), chip.value(), x, y, z,
                           100 * u)
            << "\n";
      }
    }
  }
  const double ly = height - 52;
  for (int i = 0; i <= 10; ++i) {
    out << fmt::format(R"(<rect x="{}" y="{:.0f}" width="20" height="12" fill="{}"/>)", 10 + i * 20, ly, ramp(i / 10.0))
        << "\n";
  }
  out << fmt::format(R"(<text x="10" y="{:.0f}">0%</text><text x="210" y="{:.0f}">100%</text>)", ly + 26, ly + 26)
      << "\n";
  out << fmt::format(R"(<text x="10" y="{:.0f}">colour: mean utilization of each chip's outgoing ICI links</text>)", ly + 42)
      << "\n</svg>\n";
}

void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label, bool log_x, bool log_y, std::ostream& out) {
  constexpr double kW = 640, kH = 420, kLeft = 80, kRight = 170, kTop = 36, kBottom = 50;
  auto tx = [&](double v) { return log_x ? std::log10(std::max(v, 1e-300)) : v; };
  auto ty = [&](double v) { return log_y ? std::log10(std::max(v, 1e-300)) : v; };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if ((log_x && s.x[i] <= 0) || (log_y && s.y[i] <= 0)) continue;
      x0 = std::min(x0, tx(s.x[i]));
      x1 = std::max(x1, tx(s.x[i]));
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  if (!log_y) y0 = std::min(y0, 0.0);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double v) { return kLeft + (tx(v) - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return kTop + ph - (ty(v) - y0) / (y1 - y0) * ph; };
  auto tick = [](double v, bool log) { return log ? fmt::format("{:.3g}", std::pow(10.0, v)) : fmt::format("{:.3g}", v); };

  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", kW, kH)
      << "\n";
  out << fmt::format(R"(<text x="{}" y="20" font-size="14">{}</text>)", kLeft, svg_escape(title)) << "\n";
  out << fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", kLeft, kTop, pw, ph)
      << "\n";
  for (int i = 0; i <= 4; ++i) {
    const double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    const double gx = kLeft + pw * i / 4, gy = kTop + ph - ph * i / 4;
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", gx, kTop + ph + 16, tick(xv, log_x))
        << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", kLeft - 6, gy + 4, tick(yv, log_y))
        << fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", gx, kTop, gx, kTop + ph)
        << "\n";
  }
  out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", kLeft + pw / 2, kH - 12, svg_escape(x_label))
      << fmt::format(R"svg(<text x="16" y="{:.1f}" transform="rotate(-90 16 {:.1f})" text-anchor="middle">{}</text>)svg",
                     kTop + ph / 2, kTop + ph / 2, svg_escape(y_label))
      << "\n";
  static constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % 10];
    std::string points;
    for (std::size_t i = 0; i < series[s].x.size(); ++i) {
      if ((log_x && series[s].x[i] <= 0) || (log_y && series[s].y[i] <= 0)) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(series[s].x[i]), py(series[s].y[i]));
    }
    out << fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", color, points) << "\n";
    out << fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>)",
                       kW - kRight + 12, kTop + 18 * s, color, kW - kRight + 30, kTop + 18 * s + 10,
                       svg_escape(series[s].name))
        << "\n";
  }
  out << "</svg>\n";
}

}  // namespace tpusim::tools
