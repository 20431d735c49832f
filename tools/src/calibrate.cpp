#include "tools/src/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/charts/svg.h"
#include "tools/src/sweep/sweep_analysis.h"
#include "tools/src/sweep/sweep_runner.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/scenario.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/units.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

namespace {

// What a point reads from its run's summary.json (docs/summary-format.md), or, for a ratio point, from two
// other points of its entry.
enum class Metric { step_time, collective_time, gathered_bandwidth, mfu, flops_per_chip, ratio };

struct MetricInfo {
  Metric metric;
  const char* name;
  std::optional<Dimension> dimension;  // none: a fraction, written "56.0%" or 0.56
};

constexpr MetricInfo kMetrics[] = {
    {Metric::step_time, "step_time", Dimension::seconds},
    {Metric::collective_time, "collective_time", Dimension::seconds},
    {Metric::gathered_bandwidth, "gathered_bandwidth", Dimension::bytes_per_second},
    {Metric::mfu, "mfu", std::nullopt},
    {Metric::flops_per_chip, "flops_per_chip", Dimension::flops_per_second},
};
constexpr MetricInfo kRatio{Metric::ratio, "ratio", std::nullopt};

// "10%": |predicted / measured - 1| <= v; "x1.5": predicted / measured in [1/v, v]; "5 points" (fractions
// only): |predicted - measured| <= v / 100.
enum class BoundKind { relative, factor, points };

struct Tolerance {
  BoundKind kind = BoundKind::relative;
  double value = 0;
  std::string text;
};

struct CalibrationPoint {
  std::string id, label, source;
  fs::path scenario;
  const MetricInfo* metric = nullptr;
  std::vector<std::string> overrides;  // the point's own, then the command line's
  std::vector<Override> located;       // the point's own with where the calibration file writes them
  double measured = 0;                 // SI units of the metric; a fraction for mfu and ratio
  std::string measured_text;
  Tolerance bound;
  bool plot = false;
  std::size_t run = 0;                            // the run it reads (points of one scenario and overrides share one)
  std::optional<std::array<std::size_t, 2>> ratio;  // a ratio point: the indices of its numerator and denominator
};

bool is_fraction(const CalibrationPoint& p) { return !p.metric->dimension.has_value(); }

// "56.0%" or "0.56" as a fraction; nullopt for anything else.
std::optional<double> parse_fraction(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) return std::nullopt;
  const std::string rest(end);
  if (rest.empty()) return v;
  if (rest == "%") return v / 100;
  return std::nullopt;
}

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
    // The entry's metric is the default of its points; a point may name its own, or be a ratio of two others.
    const std::string metric = text(entry, ep, "metric", false);
    if (!metric.empty()) base.metric = metric_of(*entry.find("metric"), ep + "metric", metric);
    const std::string plot = text(entry, ep, "plot", false);
    base.plot = plot == "true";
    if (!plot.empty() && plot != "true" && plot != "false") {
      diags.error(entry.find("plot")->loc(), ep + "plot", "wrong value", "true or false", plot);
    }
    if (base.plot && (base.metric == nullptr || base.metric->metric != Metric::gathered_bandwidth)) {
      diags.error(entry.find("plot")->loc(), ep + "plot", "plots are drawn against the gathered size",
                  "plot only with metric gathered_bandwidth", base.metric != nullptr ? base.metric->name : "no metric");
    }
    const ConfigNode* list = entry.find("points");
    if (list == nullptr || !list->is_seq() || list->items().empty()) {
      diags.error(list ? list->loc() : entry.loc(), ep + "points", list ? "wrong type" : "missing required key",
                  "a non-empty list of points", list ? list->describe() : "nothing");
      continue;
    }
    const std::size_t first = points.size();  // this entry's points start here
    std::vector<std::pair<std::size_t, const ConfigNode*>> ratios;  // resolved once the entry's labels are known
    for (std::size_t i = 0; i < list->items().size(); ++i) {
      const ConfigNode& pt = list->items()[i];
      const std::string pp = fmt::format("{}points[{}].", ep, i);
      if (!pt.is_map()) {
        diags.error(pt.loc(), pp, "wrong type", "a point map (label, set, measured, within)", pt.describe());
        continue;
      }
      check_keys(pt, pp, {"label", "set", "metric", "ratio", "measured", "within"});
      CalibrationPoint p = base;
      p.label = text(pt, pp, "label", true);
      const ConfigNode* ratio = pt.find("ratio");
      const std::string own_metric = text(pt, pp, "metric", false);
      if (ratio != nullptr) {
        if (pt.find("metric") != nullptr || pt.find("set") != nullptr) {
          diags.error(ratio->loc(), pp + "ratio", "a ratio point runs nothing: it divides two other points",
                      "ratio without metric or set", pt.find("metric") != nullptr ? "metric" : "set");
        }
        p.metric = &kRatio;
        ratios.emplace_back(points.size(), ratio);
      } else if (!own_metric.empty()) {
        p.metric = metric_of(*pt.find("metric"), pp + "metric", own_metric);
      } else if (p.metric == nullptr && metric.empty()) {
        diags.error(pt.loc(), pp + "metric", "no metric for the point",
                    fmt::format("a metric here or in the entry (one of {}), or a ratio", fmt::join(metric_names, ", ")),
                    "nothing");
      }
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
        if (is_fraction(p)) {
          const auto f = parse_fraction(p.measured_text);
          if (!f || *f <= 0) {
            diags.error(pt.find("measured")->loc(), pp + "measured", "wrong value",
                        fmt::format("a positive fraction such as 56.0% or 0.56 (metric {})", p.metric->name),
                        p.measured_text);
          } else {
            p.measured = *f;
          }
        } else {
          const Dimension dim = *p.metric->dimension;
          const auto q = parse_quantity(p.measured_text);
          if (!q || q->dimension != dim || q->si <= 0) {
            diags.error(pt.find("measured")->loc(), pp + "measured", "wrong value",
                        fmt::format("a positive {} such as {} (metric {})", dimension_name(dim), dimension_example(dim),
                                    p.metric->name),
                        p.measured_text);
          } else {
            p.measured = q->si;
          }
        }
      }
      p.bound.text = text(pt, pp, "within", true);
      const std::string& b = p.bound.text;
      char* end = nullptr;
      const std::string points_suffix = " points";
      bool ok = false;
      if (!b.empty() && b.front() == 'x') {
        p.bound.kind = BoundKind::factor;
        p.bound.value = std::strtod(b.c_str() + 1, &end);
        ok = end != b.c_str() + 1 && *end == '\0' && p.bound.value >= 1;
      } else if (!b.empty() && b.back() == '%') {
        p.bound.value = std::strtod(b.c_str(), &end) / 100.0;
        ok = end != b.c_str() && *end == '%' && end + 1 == b.c_str() + b.size() && p.bound.value > 0;
      } else if (b.size() > points_suffix.size() && b.compare(b.size() - points_suffix.size(), std::string::npos,
                                                              points_suffix) == 0) {
        p.bound.kind = BoundKind::points;
        p.bound.value = std::strtod(b.c_str(), &end) / 100.0;
        ok = end == b.c_str() + b.size() - points_suffix.size() && p.bound.value > 0;
      }
      if (!b.empty() && !ok) {
        diags.error(pt.find("within")->loc(), pp + "within", "wrong value",
                    "a relative error such as 10%, a factor such as x1.5, or for a fraction points such as 5 points",
                    b);
      } else if (ok && p.bound.kind == BoundKind::points && p.metric != nullptr && !is_fraction(p)) {
        diags.error(pt.find("within")->loc(), pp + "within", "a bound in points applies to fractions",
                    "a relative error such as 10% or a factor such as x1.5 (metric " + std::string(p.metric->name) + ")",
                    b);
      }
      points.push_back(std::move(p));
    }
    // A ratio names two points of its entry, by label, that read the same metric.
    for (const auto& [index, node] : ratios) {
      const std::string rp = fmt::format("{}points[{}].ratio", ep, index - first);
      std::vector<std::string> labels;
      for (std::size_t i = first; i < points.size(); ++i) {
        if (!points[i].ratio && points[i].metric != &kRatio) labels.push_back(points[i].label);
      }
      if (!node->is_seq() || node->items().size() != 2 || !node->items()[0].is_scalar() ||
          !node->items()[1].is_scalar()) {
        diags.error(node->loc(), rp, "wrong type", "[numerator label, denominator label]", node->describe());
        continue;
      }
      std::array<std::size_t, 2> of{};
      bool found = true;
      for (std::size_t k = 0; k < 2; ++k) {
        const ConfigNode& item = node->items()[k];
        const auto it = std::find(labels.begin(), labels.end(), item.scalar());
        if (it == labels.end()) {
          diags.error(item.loc(), rp, "no such point in the entry", "the label of another point of the entry",
                      item.scalar(), suggestion(item.scalar(), labels));
          found = false;
          continue;
        }
        for (std::size_t i = first; i < points.size(); ++i) {
          if (points[i].label == *it && points[i].metric != &kRatio) of[k] = i;
        }
      }
      if (!found) continue;
      const MetricInfo* a = points[of[0]].metric;
      const MetricInfo* b = points[of[1]].metric;
      if (a != nullptr && b != nullptr && a != b) {
        diags.error(node->loc(), rp, "a ratio of two different metrics", "two points of one metric",
                    fmt::format("{} / {}", a->name, b->name));
        continue;
      }
      points[index].ratio = of;
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
  const nlohmann::json& metrics = s.contains("metrics") ? s["metrics"] : nlohmann::json();
  if (p.metric->metric == Metric::step_time) {
    o.predicted = number(metrics, "step_time_s");
  } else if (p.metric->metric == Metric::mfu) {
    o.predicted = number(metrics, "mfu");
  } else if (p.metric->metric == Metric::flops_per_chip) {
    // MaxText's TFLOP/s per chip: model FLOPs (6 N + 12 L H Q T per token, as tpusim counts them) / step time
    // / chips.
    const double time = number(metrics, "step_time_s"), chips = number(metrics, "chips");
    o.predicted = time > 0 && chips > 0 ? number(metrics, "model_flops") / time / chips : 0.0;
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
  switch (p.bound.kind) {
    case BoundKind::factor: return ratio <= p.bound.value && ratio >= 1 / p.bound.value;
    case BoundKind::points: return std::fabs(predicted - p.measured) <= p.bound.value;
    case BoundKind::relative: break;
  }
  return std::fabs(ratio - 1) <= p.bound.value;
}

// The report's error column: percentage points for a fraction ("-3.2 pt"), else the relative error ("+6.2%").
std::string error_text(const CalibrationPoint& p, double predicted) {
  if (is_fraction(p)) return fmt::format("{:+.1f} pt", 100 * (predicted - p.measured));
  return fmt::format("{:+.1f}%", 100 * error_of(p, predicted));
}

// `v` (SI) in the unit the point's measured value is written in ("0.35 GB/s" -> "0.5204 GB/s"); a fraction as a
// percentage ("54.31%").
std::string in_measured_unit(const CalibrationPoint& p, double v) {
  if (is_fraction(p)) return fmt::format("{:.2f}%", 100 * v);
  char* end = nullptr;
  const double number = std::strtod(p.measured_text.c_str(), &end);
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  return fmt::format("{:.4g} {}", v / (p.measured / number), unit);
}

// The memory plan's refusal (kernels' does_not_fit: "... the step does not fit in HBM: 33.1 GiB per chip, chip
// v6e has 29.8 GiB", then "found: activations 12.2 GiB, ...") as one line: "33.1 GiB per chip, chip v6e has
// 29.8 GiB: activations 12.2 GiB, ...".
constexpr std::string_view kDoesNotFit = "does not fit in HBM: ";

std::string does_not_fit_text(const fs::path& log) {
  std::ifstream in(log);
  std::string total, found;
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = line.find(kDoesNotFit);
    if (total.empty() && at != std::string::npos) {
      total = line.substr(at + kDoesNotFit.size());
      continue;
    }
    const std::size_t f = line.find("found:");
    if (!total.empty() && f != std::string::npos) {
      found = line.substr(line.find_first_not_of(' ', f + 6));
      break;
    }
  }
  return found.empty() ? total : total + ": " + found;
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
    out = check_output_folder(args.out_dir, "calibrate");
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim calibrate: " << e.what() << "\ntpusim calibrate: bad input; nothing was run\n";
    return 2;
  }
  const fs::path points_dir = out / "points";
  try {
    (void)claim_output_folder(out, "calibrate");
    const PointsLock lock(out, PointsLock::every);  // until the table is written
    fs::create_directories(points_dir);
    // One `tpusim run` per distinct scenario and overrides (sweep_runner.h), on every core: the points that read
    // several metrics of one run (a pod step's MFU and its FLOP/s per chip) share it, and a ratio runs nothing.
    std::vector<PointTask> tasks;
    std::map<std::vector<std::string>, std::size_t> run_of;
    for (CalibrationPoint& p : points) {
      if (p.ratio) continue;
      std::vector<std::string> key{p.scenario.string()};
      key.insert(key.end(), p.overrides.begin(), p.overrides.end());
      const auto [it, added] = run_of.emplace(key, tasks.size());
      p.run = it->second;
      if (!added) continue;
      const std::size_t i = tasks.size();
      PointTask t{i, {self_exe, "run", p.scenario.string(), "-q", "-o"}, points_dir / point_dir_name(i)};
      t.argv.push_back(t.dir.string());
      for (const std::string& o : p.overrides) {
        t.argv.emplace_back("--set");
        t.argv.push_back(o);
      }
      tasks.push_back(std::move(t));
    }
    nlohmann::json plan = nlohmann::json::array();
    for (const CalibrationPoint& p : points) {
      nlohmann::json j{{"id", p.id}, {"label", p.label}, {"metric", p.metric->name}};
      if (p.ratio) {
        j["ratio"] = {points[(*p.ratio)[0]].label, points[(*p.ratio)[1]].label};
      } else {
        j["set"] = p.overrides;
        j["run"] = point_dir_name(p.run);
      }
      plan.push_back(std::move(j));
    }
    write_file_atomically(out / "calibration.json", [&](std::ostream& f) {
      f << nlohmann::json{{"calibration", name}, {"points", plan}}.dump(2) << "\n";
    });

    std::cout << fmt::format("calibration {}: {} points in {} runs, predicted against measured\n", name,
                             points.size(), tasks.size());
    std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12} {:>8} {:>9}\n", "id", "point", "measured", "predicted",
                             "error", "bound");
    std::ostream quiet(nullptr);
    Progress progress(name, tasks.size(), quiet, false);
    const RunSummary run = run_points(tasks, static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))),
                                      points_dir, progress);
    if (run.interrupted != 0) {
      std::cerr << fmt::format("tpusim calibrate: {}; no table was written\n", Interrupted(run.interrupted).what());
      return 128 + run.interrupted;
    }

    // Each point's outcome, or why it has none: its run failed, or (a whole model) the step does not fit in the
    // chip's HBM, which the memory plan refuses before simulating (the error names the plan's numbers).
    enum class Status { ok, outside, does_not_fit, failed };
    constexpr const char* kStatusText[] = {"ok", "outside", "does not fit", "failed"};
    std::vector<std::optional<Outcome>> outcomes(points.size());
    std::vector<Status> status(points.size(), Status::failed);
    std::vector<std::string> why(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      if (p.ratio) continue;
      const std::optional<PointFailure> failure = read_failure(points_dir, p.run);
      if (failure && failure->error.find(kDoesNotFit) != std::string::npos) {
        status[i] = Status::does_not_fit;
        why[i] = does_not_fit_text(points_dir / (point_dir_name(p.run) + ".log"));
        continue;
      }
      outcomes[i] = failure ? std::nullopt : read_outcome(p, tasks[p.run].dir / "summary.json");
      if (!outcomes[i]) {
        why[i] = fmt::format("run failed: {} (see {})", failure ? failure->error : "no result in summary.json",
                             (points_dir / (point_dir_name(p.run) + ".log")).string());
      }
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      if (!p.ratio) continue;
      const std::size_t num = (*p.ratio)[0], den = (*p.ratio)[1];
      if (outcomes[num] && outcomes[den]) {
        outcomes[i] = Outcome{0, outcomes[num]->predicted / outcomes[den]->predicted, 0};
      } else {
        // No ratio without both: it takes the missing one's status (does not fit, or failed).
        const std::size_t missing = outcomes[num] ? den : num;
        status[i] = status[missing];
        why[i] = fmt::format("no ratio: '{}' {}", points[missing].label,
                             status[missing] == Status::does_not_fit ? "does not fit" : "failed");
      }
    }
    std::size_t count[4] = {0, 0, 0, 0};
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      const std::optional<Outcome>& o = outcomes[i];
      if (o) status[i] = within(p, o->predicted) ? Status::ok : Status::outside;
      ++count[static_cast<int>(status[i])];
      if (o) {
        std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12} {:>8} {:>9}  {}\n", p.id, p.label, p.measured_text,
                                 in_measured_unit(p, o->predicted), error_text(p, o->predicted), p.bound.text,
                                 status[i] == Status::ok ? "ok" : "OUTSIDE");
      } else {
        std::cout << fmt::format("  {:<4} {:<32} {:>12} {:>12} {:>8} {:>9}  {}{}\n", p.id, p.label, p.measured_text,
                                 "-", "-", p.bound.text, status[i] == Status::does_not_fit ? "DOES NOT FIT: " : "",
                                 why[i]);
      }
    }

    write_file_atomically(out / "table.csv", [&](std::ostream& f) {
      f << "id,point,metric,measured,predicted,error,bound,within_bound,status,scenario\n";
      for (std::size_t i = 0; i < points.size(); ++i) {
        const CalibrationPoint& p = points[i];
        const std::optional<Outcome>& o = outcomes[i];
        f << fmt::format("{},\"{}\",{},{:.6g},{},{},{},{},{},\"{}\"\n", p.id, p.label, p.metric->name, p.measured,
                         o ? fmt::format("{:.6g}", o->predicted) : "", o ? fmt::format("{:.4f}", error_of(p, o->predicted)) : "",
                         p.bound.text, status[i] == Status::ok ? "yes" : "no", kStatusText[static_cast<int>(status[i])],
                         p.ratio ? "" : p.scenario.filename().string());
      }
    });
    // One chart per plotted entry id: measured and predicted against the gathered size S.
    std::map<std::string, std::vector<Series>> charts;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CalibrationPoint& p = points[i];
      if (!p.plot || p.ratio || !outcomes[i]) continue;
      std::vector<Series>& s = charts[p.id];
      if (s.empty()) s = {Series{"measured", {}, {}, {}, {}}, Series{"predicted (tpusim)", {}, {}, {}, {}}};
      s[0].x.push_back(outcomes[i]->size);
      s[0].y.push_back(p.measured);
      s[1].x.push_back(outcomes[i]->size);
      s[1].y.push_back(outcomes[i]->predicted);
    }
    for (const auto& chart : charts) {  // not a structured binding: a lambda cannot capture one in C++17
      const std::string& id = chart.first;
      const std::vector<Series>& series = chart.second;
      write_file_atomically(out / (id + ".svg"), [&](std::ostream& f) {
        write_line_chart_svg(series, fmt::format("{}: measured and predicted bandwidth", id),
                             PlotAxis{"gathered size S", Quantity::bytes, true, false},
                             PlotAxis{"bandwidth S / runtime", Quantity::bytes_per_s, true, false}, "", f);
      });
    }
    compact_manifest(out);
    std::cout << fmt::format("{} within bound, {} outside, {} do not fit, {} failed; table: {}\n", count[0], count[1],
                             count[2], count[3], (out / "table.csv").string());
    return count[0] == points.size() ? 0 : 1;
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim calibrate: " << e.what() << "\ntpusim calibrate: nothing was run\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tpusim calibrate: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tpusim::tools
