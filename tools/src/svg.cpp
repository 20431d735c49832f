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

namespace {

// The frame of an x-y chart: data ranges (optionally logarithmic), the plot area, ticks and axis labels.
class PlotFrame {
 public:
  static constexpr double kW = 640, kH = 420, kLeft = 80, kRight = 170, kTop = 36, kBottom = 50;

  PlotFrame(bool log_x, bool log_y) : log_x_(log_x), log_y_(log_y) {}

  // Widens the ranges to include (x, y); points a log axis cannot show are skipped.
  void include(double x, double y) {
    if (!shown(x, y)) return;
    x0_ = std::min(x0_, tx(x));
    x1_ = std::max(x1_, tx(x));
    y0_ = std::min(y0_, ty(y));
    y1_ = std::max(y1_, ty(y));
  }
  [[nodiscard]] bool shown(double x, double y) const { return !((log_x_ && x <= 0) || (log_y_ && y <= 0)); }
  [[nodiscard]] double px(double v) const { return kLeft + (tx(v) - x0_) / (x1_ - x0_) * pw(); }
  [[nodiscard]] double py(double v) const { return kTop + ph() - (ty(v) - y0_) / (y1_ - y0_) * ph(); }

  // Fixes the ranges and writes the header, the frame, the ticks and the axis labels.
  // `pad` leaves 5% of the range free on each side, so that markers on the extremes are drawn whole.
  void begin(const std::string& title, const std::string& x_label, const std::string& y_label, bool y_from_zero,
             bool pad, std::ostream& out) {
    if (!std::isfinite(x0_)) x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
    if (x1_ == x0_) x1_ = x0_ + 1;
    if (y1_ == y0_) y1_ = y0_ + 1;
    if (!log_y_ && y_from_zero) y0_ = std::min(y0_, 0.0);
    if (pad) {  // never below zero for data that is not
      const double dx = 0.05 * (x1_ - x0_), dy = 0.05 * (y1_ - y0_);
      x0_ = log_x_ || x0_ < 0 ? x0_ - dx : std::max(0.0, x0_ - dx);
      y0_ = log_y_ || y0_ < 0 ? y0_ - dy : std::max(0.0, y0_ - dy);
      x1_ += dx, y1_ += dy;
    }
    auto tick = [](double v, bool log) { return log ? fmt::format("{:.3g}", std::pow(10.0, v)) : fmt::format("{:.3g}", v); };
    out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", kW, kH)
        << "\n";
    out << fmt::format(R"(<text x="{}" y="20" font-size="14">{}</text>)", kLeft, svg_escape(title)) << "\n";
    out << fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", kLeft, kTop, pw(), ph())
        << "\n";
    for (int i = 0; i <= 4; ++i) {
      const double xv = x0_ + (x1_ - x0_) * i / 4, yv = y0_ + (y1_ - y0_) * i / 4;
      const double gx = kLeft + pw() * i / 4, gy = kTop + ph() - ph() * i / 4;
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", gx, kTop + ph() + 16, tick(xv, log_x_))
          << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", kLeft - 6, gy + 4, tick(yv, log_y_))
          << fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", gx, kTop, gx, kTop + ph())
          << "\n";
    }
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", kLeft + pw() / 2, kH - 12, svg_escape(x_label))
        << fmt::format(R"svg(<text x="16" y="{:.1f}" transform="rotate(-90 16 {:.1f})" text-anchor="middle">{}</text>)svg",
                       kTop + ph() / 2, kTop + ph() / 2, svg_escape(y_label))
        << "\n";
  }

 private:
  [[nodiscard]] double tx(double v) const { return log_x_ ? std::log10(std::max(v, 1e-300)) : v; }
  [[nodiscard]] double ty(double v) const { return log_y_ ? std::log10(std::max(v, 1e-300)) : v; }
  [[nodiscard]] static double pw() { return kW - kLeft - kRight; }
  [[nodiscard]] static double ph() { return kH - kTop - kBottom; }

  bool log_x_, log_y_;
  double x0_ = INFINITY, x1_ = -INFINITY, y0_ = INFINITY, y1_ = -INFINITY;
};

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

void write_line_chart_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label, bool log_x, bool log_y, std::ostream& out) {
  PlotFrame frame(log_x, log_y);
  auto err = [](const Series& s, std::size_t i) { return i < s.err.size() ? s.err[i] : 0.0; };
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      frame.include(s.x[i], s.y[i] - err(s, i));
      frame.include(s.x[i], s.y[i] + err(s, i));
    }
  }
  frame.begin(title, x_label, y_label, true, false, out);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % 10];
    std::string points;
    for (std::size_t i = 0; i < series[s].x.size(); ++i) {
      const double x = series[s].x[i], y = series[s].y[i], e = err(series[s], i);
      if (!frame.shown(x, y)) continue;
      points += fmt::format("{:.1f},{:.1f} ", frame.px(x), frame.py(y));
      if (i < series[s].err.size() && frame.shown(x, y - e)) {
        out << fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)"
                           R"(<line x1="{4:.1f}" y1="{1:.1f}" x2="{5:.1f}" y2="{1:.1f}" stroke="{3}"/>)"
                           R"(<line x1="{4:.1f}" y1="{2:.1f}" x2="{5:.1f}" y2="{2:.1f}" stroke="{3}"/>)",
                           frame.px(x), frame.py(y - e), frame.py(y + e), color, frame.px(x) - 4, frame.px(x) + 4)
            << "\n";
      }
    }
    out << fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", color, points) << "\n";
    out << fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>)",
                       PlotFrame::kW - PlotFrame::kRight + 12, PlotFrame::kTop + 18 * s, color,
                       PlotFrame::kW - PlotFrame::kRight + 30, PlotFrame::kTop + 18 * s + 10, svg_escape(series[s].name))
        << "\n";
  }
  out << "</svg>\n";
}

void write_scatter_svg(const std::vector<ScatterPoint>& points, const std::string& title, const std::string& x_label,
                       const std::string& y_label, bool log_x, bool log_y, std::ostream& out) {
  PlotFrame frame(log_x, log_y);
  for (const auto& p : points) frame.include(p.x, p.y);
  frame.begin(title, x_label, y_label, false, true, out);
  // Every point in grey, then the highlighted ones joined in x order and labelled.
  std::vector<const ScatterPoint*> front;
  for (const auto& p : points) {
    if (!frame.shown(p.x, p.y)) continue;
    if (p.highlighted) front.push_back(&p);
    out << fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{}: {:.4g}, {:.4g}</title></circle>)",
                       frame.px(p.x), frame.py(p.y), p.highlighted ? "#d62728" : "#bbbbbb", svg_escape(p.label), p.x, p.y)
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
  auto position = [&](double v) {
    if (!(hi > lo)) return 0.5;
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
  };
  constexpr double kCellW = 64, kCellH = 26, kLeft = 130, kTop = 50;
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
                           v ? fmt::format("{:.6g}", *v) : std::string("no result"))
            << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}">{}</text>)", cx + kCellW / 2 - 1,
                           cy + kCellH / 2 + 3, v && u < 0.6 ? "#ffffff" : "#000000",
                           v ? fmt::format("{:.3g}", *v) : std::string("-"))
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
  const double ly = height - 56;
  for (int i = 0; i <= 10; ++i) {
    out << fmt::format(R"(<rect x="{}" y="{:.0f}" width="20" height="12" fill="{}"/>)", 10 + i * 20, ly, ramp(i / 10.0))
        << "\n";
  }
  const std::string lo_text = std::isfinite(lo) ? fmt::format("{:.4g}", lo) : "-";
  const std::string hi_text = std::isfinite(hi) ? fmt::format("{:.4g}", hi) : "-";
  out << fmt::format(R"(<text x="10" y="{:.0f}">{}</text><text x="230" y="{:.0f}" text-anchor="end">{}</text>)", ly + 26,
                     svg_escape(lo_text), ly + 26, svg_escape(hi_text))
      << fmt::format(R"(<text x="10" y="{:.0f}">{}{}; grey: no result (failed, not run or filtered out){}</text>)", ly + 44,
                     svg_escape(map.value_label), log ? " (log colour scale)" : "",
                     map.better == 0 ? "" : map.better < 0 ? "; red outline: lowest" : "; red outline: highest")
      << "\n</svg>\n";
}

}  // namespace tpusim::tools
