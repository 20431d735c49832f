#include "tools/src/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/svg.h"
#include "tools/src/sweep_analysis.h"
#include "tools/src/sweep_runner.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/scenario.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/units.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

namespace {

// What a point reads from its run's summary.json (docs/summary-format.md).
enum class Metric { step_time, collective_time, gathered_bandwidth };

struct MetricInfo {
  Metric metric;
  const char* name;
  Dimension dimension;
  const char* what;  // for the report
};

constexpr MetricInfo kMetrics[] = {
    {Metric::step_time, "step_time", Dimension::seconds, "step time"},
    {Metric::collective_time, "collective_time", Dimension::seconds, "collective time"},
    {Metric::gathered_bandwidth, "gathered_bandwidth", Dimension::bytes_per_second, "S / runtime"},
};

struct Tolerance {
  bool factor = false;  // "x1.5": predicted / measured in [1/v, v]; else "10%": |predicted / measured - 1| <= v
  double value = 0;
  std::string text;
};

struct CalibrationPoint {
  std::string id, label, source;
  fs::path scenario;
  const MetricInfo* metric = nullptr;
  std::vector<std::string> overrides;  // the point's own, then the command line's
  std::vector<Override> located;       // the point's own with where the calibration file writes them
  double measured = 0;                 // SI units of the metric
  std::string measured_text;
  Tolerance bound;
  bool plot = false;
};

struct Outcome {
  int exit_code = 0;
  double predicted = 0;
  double size = 0;  // gathered_bandwidth: S, the gathered bytes (the plot's x)
};

// Reads the calibration file; every problem is reported at once (ConfigError, exit 2).
std::vector<CalibrationPoint> load_calibration(const std::string& name_or_path, std::string& set_name) {
  Diagnostics diags;
  const auto file =
      resolve_data_file("calibration", name_or_path, {}, SourceLoc{"(command line)", 0, 0}, "calibration set", diags);
  diags.throw_if_any();
  const ConfigNode root = load_yaml_file(*file, diags);
  diags.throw_if_any();
  const auto check_keys = [&](const ConfigNode& map, const std::string& path, const std::vector<std::string>& known) {
    for (const auto& e : map.entries()) {
      if (std::find(known.begin(), known.end(), e.key) == known.end()) {
        diags.error(e.key_loc, path + e.key, fmt::format("unknown key '{}'", e.key), "a known key", e.key,
                    suggestion(e.key, known));
      }
    }
  };
  const auto text = [&](const ConfigNode& map, const std::string& path, const std::string& key,
                        bool required) -> std::string {
    const ConfigNode* n = map.find(key);
    if (n == nullptr) {
      if (required) diags.error(map.loc(), path + key, "missing required key", "a text value", "nothing");
      return {};
    }
    if (!n->is_scalar()) {
      diags.error(n->loc(), path + key, "wrong type", "a text value", n->describe());
      return {};
    }
    return n->scalar();
  };
  if (!root.is_map()) {
    diags.error(SourceLoc{file->string(), 1, 1}, "", "wrong type", "a calibration map (name, entries)",
                root.describe());
    diags.throw_if_any();
  }
  check_keys(root, "", {"name", "entries"});
  set_name = text(root, "", "name", true);
  std::vector<CalibrationPoint> points;
  const ConfigNode* entries = root.find("entries");
  if (entries == nullptr || !entries->is_seq() || entries->items().empty()) {
    diags.error(entries ? entries->loc() : root.loc(), "entries", entries ? "wrong type" : "missing required key",
                "a non-empty list of entries", entries ? entries->describe() : "nothing");
    diags.throw_if_any();
  }
  std::vector<std::string> metric_names;
  for (const MetricInfo& m : kMetrics) metric_names.emplace_back(m.name);
  const auto metric_of = [&](const ConfigNode& at, const std::string& path,
                             const std::string& name) -> const MetricInfo* {
    for (const MetricInfo& m : kMetrics) {
      if (name == m.name) return &m;
    }
    diags.error(at.loc(), path, fmt::format("unknown metric '{}'", name), fmt::format("one of {}", fmt::join(metric_names, ", ")),
                name, suggestion(name, metric_names));
    return nullptr;
  };
  for (std::size_t e = 0; e < entries->items().size(); ++e) {
    const ConfigNode& entry = entries->items()[e];
    const std::string ep = fmt::format("entries[{}].", e);
    if (!entry.is_map()) {
      diags.error(entry.loc(), ep, "wrong type", "an entry map (id, title, scenario, metric, points)", entry.describe());
      continue;
    }
    check_keys(entry, ep, {"id", "title", "source", "scenario", "metric", "plot", "points"});
    CalibrationPoint base;
    base.id = text(entry, ep, "id", true);
    base.source = text(entry, ep, "source", false);
    (void)text(entry, ep, "title", false);
    const std::string scenario = text(entry, ep, "scenario", true);
    if (!scenario.empty()) {
      // A path (it ends in .yaml), relative to the calibration file.
      if (auto p = resolve_data_file("scenarios", scenario, file->parent_path(), entry.find("scenario")->loc(),
                                     ep + "scenario", diags)) {
        base.scenario = *p;
      }
    }
    const std::string metric = text(entry, ep, "metric", true);
    if (!metric.empty()) base.metric = metric_of(*entry.find("metric"), ep + "metric", metric);
    const std::string plot = text(entry, ep, "plot", false);
    base.plot = plot == "true";
    if (!plot.empty() && plot != "true" && plot != "false") {
      diags.error(entry.find("plot")->loc(), ep + "plot", "wrong value", "true or false", plot);
    }
    if (base.plot && base.metric != nullptr && base.metric->metric != Metric::gathered_bandwidth) {
      diags.error(entry.find("plot")->loc(), ep + "plot", "plots are drawn against the gathered size",
                  "plot only with metric gathered_bandwidth", base.metric->name);
    }
    const ConfigNode* list = entry.find("points");
    if (list == nullptr || !list->is_seq() || list->items().empty()) {
      diags.error(list ? list->loc() : entry.loc(), ep + "points", list ? "wrong type" : "missing required key",
                  "a non-empty list of points", list ? list->describe() : "nothing");
      continue;
    }
    for (std::size_t i = 0; i < list->items().size(); ++i) {
      const ConfigNode& pt = list->items()[i];
      const std::string pp = fmt::format("{}points[{}].", ep, i);
      if (!pt.is_map()) {
        diags.error(pt.loc(), pp, "wrong type", "a point map (label, set, measured, within)", pt.describe());
        continue;
      }
      check_keys(pt, pp, {"label", "set", "measured", "within"});
      CalibrationPoint p = base;
      p.label = text(pt, pp, "label", true);
      if (const ConfigNode* set = pt.find("set")) {
        if (!set->is_map()) {
          diags.error(set->loc(), pp + "set", "wrong type", "a map from a field path to a value", set->describe());
        } else {
          for (const auto& kv : set->entries()) {
            p.overrides.push_back(kv.key + "=" + flow_text(kv.value));
            p.located.push_back(Override{p.overrides.back(), kv.key_loc, kv.value.loc()});
          }
        }
      }
      p.measured_text = text(pt, pp, "measured", true);
      if (!p.measured_text.empty() && p.metric != nullptr) {
        const auto q = parse_quantity(p.measured_text);
        if (!q || q->dimension != p.metric->dimension || q->si <= 0) {
          diags.error(pt.find("measured")->loc(), pp + "measured", "wrong value",
                      fmt::format("a positive {} such as {} (metric {})", dimension_name(p.metric->dimension),
                                  dimension_example(p.metric->dimension), p.metric->name),
                      p.measured_text);
        } else {
          p.measured = q->si;
        }
      }
      p.bound.text = text(pt, pp, "within", true);
      const std::string& b = p.bound.text;
      char* end = nullptr;
      if (!b.empty() && b.front() == 'x') {
        p.bound.factor = true;
        p.bound.value = std::strtod(b.c_str() + 1, &end);
      } else if (!b.empty() && b.back() == '%') {
        p.bound.value = std::strtod(b.c_str(), &end) / 100.0;
      }
      const bool ok = end != nullptr && (p.bound.factor ? *end == '\0' && p.bound.value >= 1
                                                        : *end == '%' && p.bound.value > 0);
      if (!b.empty() && !ok) {
        diags.error(pt.find("within")->loc(), pp + "within", "wrong value",
                    "a relative error such as 10% or a factor such as x1.5", b);
      }
      points.push_back(std::move(p));
    }
  }
  diags.throw_if_any();
  return points;
}

// The point's metric from its summary.json; nullopt when the run did not produce it.
std::optional<Outcome> read_outcome(const CalibrationPoint& p, const fs::path& summary_path) {
  std::ifstream in(summary_path);
  const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
  if (s.is_discarded()) return std::nullopt;
  Outcome o;
  const auto number = [](const nlohmann::json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  if (p.metric->metric == Metric::step_time) {
    o.predicted = number(s["metrics"], "step_time_s");
  } else {
    if (!s.contains("collectives") || !s["collectives"].is_array() || s["collectives"].empty()) return std::nullopt;
    const nlohmann::json& c = s["collectives"][0];
    const double time = number(c, "time_s");
    o.size = number(c, "bytes_per_chip") * number(c, "participants");
    o.predicted = p.metric->metric == Metric::collective_time ? time : (time > 0 ? o.size / time : 0.0);
  }
  if (!(o.predicted > 0)) return std::nullopt;
  return o;
}

double error_of(const CalibrationPoint& p, double predicted) { return predicted / p.measured - 1; }

bool within(const CalibrationPoint& p, double predicted) {
  const double ratio = predicted / p.measured;
  return p.bound.factor ? ratio <= p.bound.value && ratio >= 1 / p.bound.value
                        : std::fabs(ratio - 1) <= p.bound.value;
}

// `v` (SI) in the unit the point's measured value is written in ("0.35 GB/s" -> "0.5204 GB/s").
std::string in_measured_unit(const CalibrationPoint& p, double v) {
  char* end = nullptr;
  const double number = std::strtod(p.measured_text.c_str(), &end);
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  return fmt::format("{:.4g} {}", v / (p.measured / number), unit);
}

}  // namespace

int calibrate_command(const CalibrateArgs& args, const std::string& self_exe) {
  std::vector<CalibrationPoint> points;
  std::string name;
  try {
    points = load_calibration(args.set, name);
    // Every point must resolve before anything runs: a typo in an override is bad input, not a failed run.
    // An error in a point's `set:` names the calibration file's line; one in a --set names the argument.
    for (CalibrationPoint& p : points) {
      p.overrides.insert(p.overrides.end(), args.overrides.begin(), args.overrides.end());
      std::vector<Override> located = p.located;
      for (const std::string& o : args.overrides) located.push_back(Override{o, {}, {}});
      (void)load_scenario_with_overrides(p.scenario.string(), located);
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\ntpusim calibrate: bad input; nothing was run\n";
    return 2;
  }
  // The output folder is updated in place, under the rules of every output folder (output_folder.h): new, or
  // one tpusim wrote; never the current folder or an ancestor of it.
  fs::path out;
  try {
    out = check_output_folder(args.out_dir);
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim calibrate: " << e.what() << "\ntpusim calibrate: bad input; nothing was run\n";
    return 2;
  }
  const fs::path points_dir = out / "points";
  try {
    (void)claim_output_folder(out);
    fs::create_directories(points_dir);
    nlohmann::json plan = nlohmann::json::array();
    for (const CalibrationPoint& p : points) plan.push_back({{"id", p.id}, {"label", p.label}, {"set", p.overrides}});
    write_file_atomically(out / "calibration.json", [&](std::ostream& f) {
      f << nlohmann::json{{"calibration", name}, {"points", plan}}.dump(2) << "\n";
    });

    std::cout << fmt::format("calibration {}: {} points, predicted against measured\n", name, points.size());
    std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12} {:>8} {:>6}\n", "id", "point", "measured", "predicted",
                             "error", "bound");
    // Every point as its own `tpusim run` (sweep_runner.h), on every core; no progress line (a few seconds).
    std::vector<PointTask> tasks;
    for (std::size_t i = 0; i < points.size(); ++i) {
      PointTask t{i, {self_exe, "run", points[i].scenario.string(), "-q", "-o"}, points_dir / point_dir_name(i)};
      t.argv.push_back(t.dir.string());
      for (const std::string& o : points[i].overrides) {
        t.argv.emplace_back("--set");
        t.argv.push_back(o);
      }
      tasks.push_back(std::move(t));
    }
    std::ostream quiet(nullptr);
    Progress progress(name, tasks.size(), quiet, false);
    const RunSummary run = run_points(tasks, static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))),
                                      points_dir, progress);
    if (run.interrupted != 0) {
      std::cerr << fmt::format("tpusim calibrate: {}; no table was written\n", Interrupted(run.interrupted).what());
      return 128 + run.interrupted;
    }

    std::vector<std::optional<Outcome>> outcomes;
    std::size_t failed = 0, outside = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      const std::optional<PointFailure> failure = read_failure(points_dir, i);
      std::optional<Outcome> o = failure ? std::nullopt : read_outcome(p, tasks[i].dir / "summary.json");
      if (!o) {
        ++failed;
        std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12}  run failed: {} (see {})\n", p.id, p.label,
                                 p.measured_text, "-", failure ? failure->error : "no result in summary.json",
                                 (points_dir / (point_dir_name(i) + ".log")).string());
      } else {
        const bool ok = within(p, o->predicted);
        if (!ok) ++outside;
        std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12} {:>+7.1f}% {:>6}  {}\n", p.id, p.label, p.measured_text,
                                 in_measured_unit(p, o->predicted), 100 * error_of(p, o->predicted), p.bound.text,
                                 ok ? "ok" : "OUTSIDE");
      }
      outcomes.push_back(o);
    }

    write_file_atomically(out / "table.csv", [&](std::ostream& f) {
      f << "id,point,metric,measured,predicted,error,bound,within_bound,scenario\n";
      for (std::size_t i = 0; i < points.size(); ++i) {
        const CalibrationPoint& p = points[i];
        const std::optional<Outcome>& o = outcomes[i];
        f << fmt::format("{},\"{}\",{},{:.6g},{},{},{},{},\"{}\"\n", p.id, p.label, p.metric->name, p.measured,
                         o ? fmt::format("{:.6g}", o->predicted) : "", o ? fmt::format("{:.4f}", error_of(p, o->predicted)) : "",
                         p.bound.text, o && within(p, o->predicted) ? "yes" : "no", p.scenario.filename().string());
      }
    });
    // One chart per plotted entry id: measured and predicted against the gathered size S.
    std::map<std::string, std::vector<Series>> charts;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      if (!p.plot || !outcomes[i]) continue;
      std::vector<Series>& s = charts[p.id];
      if (s.empty()) s = {Series{"measured", {}, {}, {}}, Series{"predicted (tpusim)", {}, {}, {}}};
      s[0].x.push_back(outcomes[i]->size);
      s[0].y.push_back(p.measured / 1e9);
      s[1].x.push_back(outcomes[i]->size);
      s[1].y.push_back(outcomes[i]->predicted / 1e9);
    }
    for (const auto& chart : charts) {  // not a structured binding: a lambda cannot capture one in C++17
      const std::string& id = chart.first;
      const std::vector<Series>& series = chart.second;
      write_file_atomically(out / (id + ".svg"), [&](std::ostream& f) {
        write_line_chart_svg(series, fmt::format("{}: measured and predicted bandwidth", id),
                             "gathered size S (bytes)", "bandwidth S / runtime (GB/s)", true, true, f);
      });
    }
    std::cout << fmt::format("{} within bound, {} outside, {} failed; table: {}\n", points.size() - outside - failed,
                             outside, failed, (out / "table.csv").string());
    return failed > 0 || outside > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "tpusim calibrate: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tpusim::tools
