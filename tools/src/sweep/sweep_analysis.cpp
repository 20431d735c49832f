#include "tools/src/sweep/sweep_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tools/src/output_folder.h"
#include "tools/src/charts/svg.h"
#include "tpusim/core/units.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }

// The label of a row's group: its values on every axis but `skip` (by default the innermost), leaving out axes
// with a single value (the same for every point, they say nothing).
std::string group_key(const SweepPlan& plan, const Config& c, std::vector<std::size_t> skip = {}) {
  if (skip.empty() && !plan.axes.empty()) skip.push_back(plan.axes.size() - 1);
  std::string key;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end() || plan.axes[i].values.size() < 2) continue;
    key += (key.empty() ? "" : " ") + plan.axes[i].label(c.choice[i]);
  }
  return key;
}

std::string column_label(const TableColumn& c) { return c.name + unit_suffix(c.dim); }

// A value as a number for plotting ("4096", "1 MiB", "2 TB/s"), or nullopt.
std::optional<double> numeric(const std::string& v) {
  const Value x = value_from_text(v);
  if (x.kind != Value::Kind::number) return std::nullopt;
  return x.si;
}

// The axes a group_key names, in the same order: the legend's title ("chip.ici.link_bandwidth").
std::string group_axes(const SweepPlan& plan, std::vector<std::size_t> skip = {}) {
  if (skip.empty() && !plan.axes.empty()) skip.push_back(plan.axes.size() - 1);
  std::string names;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end() || plan.axes[i].values.size() < 2) continue;
    names += (names.empty() ? "" : ", ") + plan.axes[i].name;
  }
  return names;
}

// A group's place in a legend: per axis of its key, the value as a number where every value of the axis is
// one (a single-path axis), else the value's position in the plan; "45 GB/s" before "180 GB/s".
std::vector<double> group_order(const SweepPlan& plan, const Config& c, std::vector<std::size_t> skip = {}) {
  if (skip.empty() && !plan.axes.empty()) skip.push_back(plan.axes.size() - 1);
  std::vector<double> key;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    const Axis& a = plan.axes[i];
    if (std::find(skip.begin(), skip.end(), i) != skip.end() || a.values.size() < 2) continue;
    const bool numbers = a.paths.size() == 1 && std::all_of(a.values.begin(), a.values.end(), [](const auto& v) {
                           return numeric(v[0]).has_value();
                         });
    key.push_back(numbers ? *numeric(a.values[c.choice[i]][0]) : static_cast<double>(c.choice[i]));
  }
  return key;
}

// The axis of a chart that shows a table column: its label with the unit, its quantity, integer for chips.
PlotAxis column_axis(const TableColumn& c, const std::string& label, bool log) {
  return PlotAxis{label, quantity_of(c.dim, c.name), log, c.name == "chips"};
}

// Per group of points (all axes but the last), the measured ridge point: best achieved FLOP/s over best
// achieved HBM bandwidth, against the chip's peak / achievable HBM bandwidth (hbm.bandwidth x hbm.efficiency).
void roofline(const SweepPlan& plan, const SweepTable& table, const fs::path& dir, std::ostream& out) {
  std::map<std::string, std::vector<const TableRow*>> groups;
  for (const auto& r : table.rows) {
    if (r.first_ok == nullptr) continue;
    const std::string key = group_key(plan, *r.config);
    groups[key.empty() ? "all" : key].push_back(&r);
  }
  std::vector<Series> series;
  std::vector<std::vector<std::string>> point_labels;
  std::vector<Roof> roofs;
  const bool inner_varies = !plan.axes.empty() && plan.axes.back().values.size() > 1;
  write_file_atomically(dir / "roofline.csv", [&](std::ostream& csv) {
    csv << "group,chip,peak_flops_per_s,hbm_bytes_per_s,expected_ridge,best_flops_per_s,best_hbm_bytes_per_s,"
           "measured_ridge,ridge_error\n";
    out << fmt::format("  {:<22} {:>14} {:>14} {:>8}\n", "roofline group", "expected ridge", "measured ridge", "error");
    for (const auto& [group, members] : groups) {
      Series line{group, {}, {}, {}, group_order(plan, *members.front()->config)};
      std::vector<std::string> labels;
      double best_flops = 0, best_bw = 0, peak = 0, hbm = 0;
      std::string chip;
      for (const TableRow* r : members) {
        const json& s = r->first_ok->summary;
        const json& m = s["metrics"];
        const double step = num(m, "step_time_s");
        const double bytes = num(s["bytes"], "hbm_read") + num(s["bytes"], "hbm_written");
        const double chips = std::max(1.0, num(m, "chips"));
        if (step <= 0) continue;
        best_flops = std::max(best_flops, num(m, "model_flops") / step / chips);
        if (bytes > 0) {
          line.x.push_back(num(m, "model_flops") / bytes);
          line.y.push_back(num(m, "model_flops") / step / chips);
          labels.push_back(inner_varies ? plan.axes.back().label(r->config->choice.back()) : std::string());
        }
        best_bw = std::max(best_bw, bytes / step / chips);
        peak = num(m, "peak_flops_per_s") / chips;
        const json& h = s["scenario"]["chip"]["hbm"];
        const auto q = h["bandwidth"].is_string() ? parse_quantity(h["bandwidth"].get<std::string>()) : std::nullopt;
        const double efficiency =
            h.contains("efficiency") && h["efficiency"].is_string() ? std::atof(h["efficiency"].get<std::string>().c_str())
                                                                    : 1.0;
        hbm = q ? q->si * (efficiency > 0 ? efficiency : 1.0) : 0.0;
        chip = s["scenario"]["chip"]["name"].get<std::string>();
      }
      const double expected = hbm > 0 ? peak / hbm : 0;
      const double measured = best_bw > 0 ? best_flops / best_bw : 0;
      const double error = expected > 0 ? measured / expected - 1 : 0;
      csv << fmt::format("\"{}\",{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.4f}\n", group, chip, peak, hbm,
                         expected, best_flops, best_bw, measured, error);
      out << fmt::format("  {:<22} {:>9.1f} F/B {:>9.1f} F/B {:>7.1f}%\n", group, expected, measured, 100 * error);
      series.push_back(std::move(line));
      point_labels.push_back(std::move(labels));
      const bool known = std::any_of(roofs.begin(), roofs.end(), [&](const Roof& r) {
        return r.name == chip && r.peak_flops_per_s == peak && r.hbm_bytes_per_s == hbm;
      });
      if (!known && peak > 0 && hbm > 0) roofs.push_back(Roof{chip, peak, hbm});
    }
  });
  write_file_atomically(dir / "roofline.svg", [&](std::ostream& svg) {
    write_roofline_svg(roofs, series, point_labels,
                       fmt::format("{}: roofline, achieved FLOP/s per chip{}", plan.name,
                                   inner_varies ? " (points: " + plan.axes.back().name + ")" : std::string()),
                       group_axes(plan), svg);
  });
  out << "  roofline: " << (dir / "roofline.csv").string() << ", " << (dir / "roofline.svg").string() << "\n";
}

// When the innermost axis is a single numeric path: a metric (or column) against it, one line per combination of
// the other axes; with seeds the mean with bars of one standard deviation. step_time.svg is this for step_time_s.
// Returns why nothing was drawn, or nothing once the chart is written.
std::optional<std::string> plot_against_inner_axis(const SweepPlan& plan, const SweepTable& table,
                                                   const std::string& metric, const fs::path& path) {
  if (plan.axes.empty()) return std::string("the sweep has no axis");
  const Axis& inner = plan.axes.back();
  if (inner.paths.size() != 1) {
    return fmt::format("its innermost axis, {}, zips {} paths", inner.name, inner.paths.size());
  }
  std::map<std::string, Series> groups;
  std::vector<double> xs;  // the axis's values as numbers
  for (const auto& v : inner.values) {
    const std::optional<double> x = numeric(v[0]);
    if (!x) return fmt::format("its innermost axis, {}, is not numeric ({})", inner.name, v[0]);
    xs.push_back(*x);
  }
  const std::size_t col = *table.column(metric);
  for (const auto& r : table.rows) {
    if (!r.mean[col]) continue;
    const double x = xs[r.config->choice.back()];
    const std::string key = group_key(plan, *r.config);
    Series& s = groups[key];
    s.name = key.empty() ? plan.name : key;
    s.order = group_order(plan, *r.config);
    s.x.push_back(x);
    s.y.push_back(*r.mean[col]);
    if (!plan.seeds.empty()) s.err.push_back(r.spread[col].value_or(0.0));
  }
  std::vector<Series> series;
  for (auto& [k, s] : groups) series.push_back(std::move(s));
  const bool log = wants_log_axis(xs);
  const Value unit_probe = value_from_text(inner.values.front()[0]);
  const TableColumn& c = table.columns[col];
  const std::string what = metric == "step_time_s" ? "step time" : c.name;
  // The ticks print each axis's unit, so a title repeats it only for a unit they do not (FLOP/B).
  const Quantity xq = quantity_of(unit_probe.dim, inner.name), yq = quantity_of(c.dim, c.name);
  const std::string x_title = inner.name + (xq == Quantity::count ? unit_suffix(unit_probe.dim) : std::string());
  const std::string y_title =
      metric == "step_time_s" ? what : c.name + (yq == Quantity::count ? unit_suffix(c.dim) : std::string());
  write_file_atomically(path, [&](std::ostream& out) {
    const std::string title =
        plan.seeds.empty() ? fmt::format("{}: {}", plan.name, what)
                           : fmt::format("{}: {}, mean of {} seeds, bars +/- 1 sd", plan.name, what,
                                         plan.seeds.size());
    const bool integer = std::all_of(xs.begin(), xs.end(), [](double x) { return x == std::floor(x); });
    PlotAxis x_axis{x_title, xq, log, integer && unit_probe.dim.none()};
    x_axis.binary = log && xq == Quantity::count && all_powers_of_two(xs);
    write_line_chart_svg(series, title, x_axis, column_axis(c, y_title, log && metric == "step_time_s"),
                         group_axes(plan), out);
  });
  return std::nullopt;
}

std::size_t axis_index(const SweepPlan& plan, const std::string& name) {
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    if (plan.axes[i].name == name) return i;
  }
  return 0;  // checked when the plan was read
}

void heatmap(const SweepPlan& plan, const SweepTable& table, const AnalysisSpec& a, const fs::path& dir,
             std::ostream& out) {
  const std::size_t xi = axis_index(plan, a.x), yi = axis_index(plan, a.y);
  const std::size_t col = *table.column(a.metric);
  const Axis& ax = plan.axes[xi];
  const Axis& ay = plan.axes[yi];
  Heatmap map;
  map.title = fmt::format("{}: {}", plan.name, table.columns[col].description);
  map.value_label = column_label(table.columns[col]) + (plan.seeds.empty() ? "" : ", mean over seeds");
  map.quantity = quantity_of(table.columns[col].dim, table.columns[col].name);
  map.better = table.columns[col].better == Better::lower ? -1 : table.columns[col].better == Better::higher ? 1 : 0;
  map.x_label = ax.name;
  map.y_label = ay.name;
  for (std::size_t i = 0; i < ax.values.size(); ++i) map.x_ticks.push_back(ax.label(i));
  for (std::size_t i = 0; i < ay.values.size(); ++i) map.y_ticks.push_back(ay.label(i));
  std::map<std::string, std::size_t> panel_of;
  for (const auto& r : table.rows) {
    const std::string key = group_key(plan, *r.config, {xi, yi});
    auto [it, inserted] = panel_of.emplace(key, map.panels.size());
    if (inserted) {
      map.panels.push_back(HeatmapPanel{key, std::vector<std::vector<std::optional<double>>>(
                                                 ay.values.size(), std::vector<std::optional<double>>(ax.values.size()))});
    }
    map.panels[it->second].cells[r.config->choice[yi]][r.config->choice[xi]] = r.mean[col];
  }
  const fs::path file = dir / (a.file + ".svg");
  write_file_atomically(file, [&](std::ostream& svg) { write_heatmap_svg(map, svg); });
  out << fmt::format("  heatmap of {} over {} x {}: {}\n", a.metric, a.x, a.y, file.string());
}

struct Objective {
  std::size_t column;
  bool higher;
};

Objective objective(const SweepTable& table, const std::string& spec) {
  std::string name = spec;
  std::optional<bool> higher;
  if (name.rfind("min ", 0) == 0 || name.rfind("max ", 0) == 0) {
    higher = name[1] == 'a';
    name = name.substr(4);
    name.erase(0, name.find_first_not_of(' '));
  }
  const std::size_t c = *table.column(name);
  return {c, higher.value_or(table.columns[c].better == Better::higher)};
}

void pareto(const SweepPlan& plan, const SweepTable& table, const AnalysisSpec& a, const fs::path& dir,
            std::ostream& out) {
  const Objective x = objective(table, a.x), y = objective(table, a.y);
  const auto front = pareto_front(table, x.column, x.higher, y.column, y.higher);
  auto label = [&](const TableRow& r) {
    std::string s;
    for (std::size_t i = 0; i < plan.axes.size(); ++i) {
      if (plan.axes[i].values.size() < 2) continue;
      s += (s.empty() ? "" : ", ") + plan.axes[i].label(r.config->choice[i]);
    }
    return s.empty() ? fmt::format("point {}", r.config->index) : s;
  };
  std::vector<ScatterPoint> points;
  double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
  for (const auto& r : table.rows) {
    if (!r.mean[x.column] || !r.mean[y.column]) continue;
    const bool on = std::find(front.begin(), front.end(), &r) != front.end();
    points.push_back({*r.mean[x.column], *r.mean[y.column], label(r), on});
    xlo = std::min(xlo, points.back().x), xhi = std::max(xhi, points.back().x);
    ylo = std::min(ylo, points.back().y), yhi = std::max(yhi, points.back().y);
  }
  const TableColumn& cx = table.columns[x.column];
  const TableColumn& cy = table.columns[y.column];
  const fs::path csv = dir / (a.file + ".csv"), svg = dir / (a.file + ".svg");
  write_file_atomically(csv, [&](std::ostream& o) {
    o << "point,label," << cx.name << "," << cy.name << "\n";
    for (const TableRow* r : front) {
      o << r->config->index << ",\"" << label(*r) << "\"," << fmt::format(fmt::runtime(cx.format), *r->mean[x.column])
        << "," << fmt::format(fmt::runtime(cy.format), *r->mean[y.column]) << "\n";
    }
  });
  auto direction = [](bool higher) { return higher ? "higher is better" : "lower is better"; };
  write_file_atomically(svg, [&](std::ostream& o) {
    write_scatter_svg(points, fmt::format("{}: Pareto front of {} and {}", plan.name, cx.name, cy.name),
                      column_axis(cx, fmt::format("{} ({})", column_label(cx), direction(x.higher)),
                                  xlo > 0 && xhi / xlo >= 100),
                      column_axis(cy, fmt::format("{} ({})", column_label(cy), direction(y.higher)),
                                  ylo > 0 && yhi / ylo >= 100),
                      o);
  });
  out << fmt::format("  Pareto front of {} and {}: {} of {} points; {}, {}\n", cx.name, cy.name, front.size(),
                     points.size(), csv.string(), svg.string());
}

}  // namespace

std::vector<const TableRow*> pareto_front(const SweepTable& table, std::size_t x, bool x_higher, std::size_t y,
                                          bool y_higher) {
  auto better_or_equal = [](double a, double b, bool higher) { return higher ? a >= b : a <= b; };
  auto strictly_better = [](double a, double b, bool higher) { return higher ? a > b : a < b; };
  std::vector<const TableRow*> front;
  for (const auto& r : table.rows) {
    if (!r.mean[x] || !r.mean[y]) continue;
    bool dominated = false;
    for (const auto& o : table.rows) {
      if (&o == &r || !o.mean[x] || !o.mean[y]) continue;
      const double ox = *o.mean[x], oy = *o.mean[y], rx = *r.mean[x], ry = *r.mean[y];
      if (better_or_equal(ox, rx, x_higher) && better_or_equal(oy, ry, y_higher) &&
          (strictly_better(ox, rx, x_higher) || strictly_better(oy, ry, y_higher))) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(&r);
  }
  return front;
}

void write_analyses(const SweepPlan& plan, const SweepTable& table, const fs::path& out_dir, std::ostream& report) {
  (void)plot_against_inner_axis(plan, table, "step_time_s", out_dir / "step_time.svg");  // drawn where it can be
  for (const auto& a : plan.analyses) {
    switch (a.kind) {
      case AnalysisKind::roofline: roofline(plan, table, out_dir, report); break;
      case AnalysisKind::heatmap: heatmap(plan, table, a, out_dir, report); break;
      case AnalysisKind::pareto: pareto(plan, table, a, out_dir, report); break;
      case AnalysisKind::line:
        // A chart asked for and not drawn says why, rather than naming a file that was not written.
        if (const auto why = plot_against_inner_axis(plan, table, a.metric, out_dir / (a.file + ".svg"))) {
          report << "  line: " << a.file << ".svg not drawn: " << *why << "\n";
        } else {
          report << "  line: " << (out_dir / (a.file + ".svg")).string() << "\n";
        }
        break;
    }
  }
}

}  // namespace tpusim::tools
