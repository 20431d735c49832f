#include "tools/src/charts/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>


namespace tpusim::tools {
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

}  // namespace tpusim::tools
