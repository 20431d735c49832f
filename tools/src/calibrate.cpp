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
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tools/src/calibration_set.h"
#include "tools/src/output_folder.h"
#include "tools/src/run_check.h"
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

struct Outcome {
  int exit_code = 0;
  double predicted = 0;
  double size = 0;  // gathered_bandwidth: S, the gathered bytes (the plot's x)
};

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

// The memory plan's refusal (kDoesNotFitInHbm, then "found: activations 12.2 GiB, ...") as one line: "33.1 GiB
// per chip, chip v6e has 29.8 GiB: activations 12.2 GiB, ...".
constexpr std::string_view kDoesNotFit = kDoesNotFitInHbm;

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

// Every point must pass what `run` checks before simulating (run_check.h) before any runs: a typo in an override,
// a VMEM too small for a tile, a collective over pods without DCN bandwidth are bad input, not failed runs. An
// error a point's `set:` causes names the calibration file's line; one a --set causes names the argument. A step
// that does not fit in HBM is not an error here: the point runs and is reported as not fitting. Throws every
// error at once.
void check_points(const std::vector<CalibrationPoint>& points, const std::vector<std::string>& cli_overrides,
                  const Limits& limits) {
  std::vector<Diagnostic> all;
  std::set<std::string> seen, checked;
  const auto add = [&](const Diagnostic& d) {
    if (seen.insert(d.str()).second) all.push_back(d);
  };
  for (const CalibrationPoint& p : points) {
    if (p.ratio || p.scenario.empty()) continue;
    std::string key = p.scenario.string();
    for (const std::string& o : p.overrides) key += "\n" + o;
    if (!checked.insert(key).second) continue;  // points of one run share its check
    std::vector<Override> located = p.located;
    for (const std::string& o : cli_overrides) located.push_back(Override{o, {}, {}, std::nullopt});
    try {
      (void)check_run(load_scenario_with_overrides(p.scenario.string(), located), limits);
    } catch (const ConfigError& e) {
      for (const Diagnostic& d : e.diagnostics()) {
        if (d.message.find(kDoesNotFit) == std::string::npos) add(d);
      }
    } catch (const ResourceRefused& e) {
      add(Diagnostic{p.loc, "", fmt::format("point '{}' would be refused", p.label), "", e.what(), ""});
    }
  }
  if (!all.empty()) throw ConfigError(std::move(all));
}

}  // namespace

int calibrate_command(const CalibrateArgs& args, const std::string& self_exe) {
  std::vector<CalibrationPoint> points;
  std::string name;
  try {
    points = load_calibration(args.set, name);
    for (CalibrationPoint& p : points) {
      p.overrides.insert(p.overrides.end(), args.overrides.begin(), args.overrides.end());
    }
    check_points(points, args.overrides, args.limits.limits);
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
      PointTask t{i, {self_exe}, points_dir / point_dir_name(i)};
      t.argv.insert(t.argv.end(), args.limits.flags.begin(), args.limits.flags.end());
      t.argv.insert(t.argv.end(), {"run", p.scenario.string(), "-q", "-o"});
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
