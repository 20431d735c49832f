#include "tools/src/sweep.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/scenario.h"
#include "tools/src/child_process.h"
#include "tools/src/svg.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

enum class Analysis { none, roofline };

struct Axis {
  std::string key;                  // a --set path
  std::vector<std::string> values;  // YAML text of each value
};

struct SweepSpec {
  std::string name;
  std::string description;
  fs::path scenario;  // resolved path of the base scenario
  std::vector<Axis> grid;
  Analysis analysis = Analysis::none;
};

struct Point {
  std::size_t index = 0;
  std::vector<std::string> overrides;  // "key=value"
  std::vector<std::string> values;     // one per axis, for the table
};

// Renders a grid value back to YAML text for `--set` (scalars as they are; lists in flow style).
std::string yaml_text(const ConfigNode& n) {
  if (n.is_scalar()) return n.scalar();
  if (n.is_seq()) {
    std::string s = "[";
    for (std::size_t i = 0; i < n.items().size(); ++i) s += (i ? ", " : "") + yaml_text(n.items()[i]);
    return s + "]";
  }
  return "";
}

SweepSpec load_sweep(const std::string& name_or_path) {
  Diagnostics diags;
  const auto file = resolve_data_file("sweeps", name_or_path, {}, SourceLoc{"(command line)", 0, 0}, "sweep", diags);
  diags.throw_if_any();
  const ConfigNode root = load_yaml_file(*file, diags);
  diags.throw_if_any();
  SweepSpec spec;
  if (!root.is_map()) {
    diags.error(SourceLoc{file->string(), 1, 1}, "", "wrong type", "a sweep map (name, scenario, grid)",
                root.describe());
    diags.throw_if_any();
  }
  const std::vector<std::string> known{"name", "description", "scenario", "grid", "analysis"};
  for (const auto& e : root.entries()) {
    if (std::find(known.begin(), known.end(), e.key) == known.end()) {
      diags.error(e.key_loc, e.key, fmt::format("unknown key '{}'", e.key), "a known key", e.key,
                  suggestion(e.key, known));
    }
  }
  auto text = [&](const std::string& key, bool required) -> std::string {
    const ConfigNode* n = root.find(key);
    if (n == nullptr) {
      if (required) diags.error(root.loc(), key, "missing required key", "a text value", "nothing");
      return {};
    }
    if (!n->is_scalar()) {
      diags.error(n->loc(), key, "wrong type", "a text value", n->describe());
      return {};
    }
    return n->scalar();
  };
  spec.name = text("name", true);
  spec.description = text("description", false);
  const std::string scenario = text("scenario", true);
  if (!scenario.empty()) {
    const ConfigNode* n = root.find("scenario");
    if (auto p = resolve_data_file("scenarios", scenario, file->parent_path(), n->loc(), "scenario", diags)) {
      spec.scenario = *p;
    }
  }
  const std::string analysis = text("analysis", false);
  if (analysis == "roofline") {
    spec.analysis = Analysis::roofline;
  } else if (!analysis.empty() && analysis != "none") {
    diags.error(root.find("analysis")->loc(), "analysis", fmt::format("unknown analysis '{}'", analysis),
                "none or roofline", analysis, suggestion(analysis, {"none", "roofline"}));
  }
  const ConfigNode* grid = root.find("grid");
  if (grid == nullptr || !grid->is_map() || grid->entries().empty()) {
    diags.error(grid ? grid->loc() : root.loc(), "grid", grid ? "wrong type" : "missing required key",
                "a map from a field path to a list of values", grid ? grid->describe() : "nothing");
  } else {
    for (const auto& e : grid->entries()) {
      if (!e.value.is_seq() || e.value.items().empty()) {
        diags.error(e.value.loc(), "grid." + e.key, "wrong type", "a non-empty list of values", e.value.describe());
        continue;
      }
      Axis axis{e.key, {}};
      for (const auto& v : e.value.items()) axis.values.push_back(yaml_text(v));
      spec.grid.push_back(std::move(axis));
    }
  }
  diags.throw_if_any();
  return spec;
}

std::vector<Point> expand(const SweepSpec& spec) {
  std::vector<Point> points(1);
  for (const auto& axis : spec.grid) {
    std::vector<Point> next;
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        Point q = p;
        q.overrides.push_back(axis.key + "=" + v);
        q.values.push_back(v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  for (std::size_t i = 0; i < points.size(); ++i) points[i].index = i;
  return points;
}

std::string point_dir_name(std::size_t index) { return fmt::format("{:05d}", index); }

std::vector<std::string> run_argv(const std::string& self, const SweepSpec& spec, const Point& p,
                                  const fs::path& dir) {
  std::vector<std::string> argv{self, "run", spec.scenario.string(), "-q", "-o", dir.string()};
  for (const auto& o : p.overrides) {
    argv.emplace_back("--set");
    argv.push_back(o);
  }
  return argv;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in, nullptr, false);
}

double num(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// The quantity in a resolved-scenario string such as "1.2 TB/s".
double quantity(const json& j) {
  if (!j.is_string()) return 0;
  const auto q = parse_quantity(j.get<std::string>());
  return q ? q->si : 0.0;
}

struct Row {
  const Point* point = nullptr;
  std::string status;  // "ok", or "failed (exit N)"
  json summary;
};

void write_table(const SweepSpec& spec, const std::vector<Row>& rows, const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  out << "point";
  for (const auto& a : spec.grid) out << "," << a.key;
  out << ",status,step_time_s,mfu,hfu,model_flops,hbm_bytes,arithmetic_intensity,achieved_flops_per_s,"
         "achieved_hbm_bytes_per_s,examples_per_s\n";
  for (const auto& r : rows) {
    out << r.point->index;
    for (const auto& v : r.point->values) out << ",\"" << v << "\"";
    out << "," << r.status;
    if (r.status != "ok") {
      out << ",,,,,,,,,\n";
      continue;
    }
    const json& m = r.summary["metrics"];
    const double step = num(m, "step_time_s");
    const double flops = num(m, "model_flops");
    const double bytes = num(r.summary["bytes"], "hbm_read") + num(r.summary["bytes"], "hbm_written");
    out << fmt::format(",{:.9g},{:.6f},{:.6f},{:.9g},{:.0f},{:.6g},{:.6g},{:.6g},{:.6g}\n", step, num(m, "mfu"),
                       num(m, "hfu"), flops, bytes, bytes > 0 ? flops / bytes : 0.0, step > 0 ? flops / step : 0.0,
                       step > 0 ? bytes / step : 0.0, num(m, "examples_per_s"));
  }
}

// The label of a point's group: its values on every axis but the innermost, leaving out axes with a single
// value (they are the same for every point and say nothing).
std::string group_key(const SweepSpec& spec, const Point& p) {
  std::string key;
  for (std::size_t i = 0; i + 1 < p.values.size(); ++i) {
    if (spec.grid[i].values.size() < 2) continue;
    key += (key.empty() ? "" : " ") + p.values[i];
  }
  return key;
}

// Per group of points (all axes but the last), the measured ridge point: best achieved FLOP/s over best
// achieved HBM bandwidth, against the chip's peak / achievable HBM bandwidth (hbm.bandwidth x hbm.efficiency).
void roofline(const SweepSpec& spec, const std::vector<Row>& rows, const fs::path& path, const fs::path& chart,
              std::ostream& out) {
  std::map<std::string, std::vector<const Row*>> groups;
  for (const auto& r : rows) {
    if (r.status != "ok") continue;
    const std::string key = group_key(spec, *r.point);
    groups[key.empty() ? "all" : key].push_back(&r);
  }
  std::ofstream csv(path, std::ios::binary);
  csv << "group,chip,peak_flops_per_s,hbm_bytes_per_s,expected_ridge,best_flops_per_s,best_hbm_bytes_per_s,"
         "measured_ridge,ridge_error\n";
  out << fmt::format("  {:<22} {:>14} {:>14} {:>8}\n", "roofline group", "expected ridge", "measured ridge", "error");
  std::vector<Series> series;
  for (const auto& [group, members] : groups) {
    Series line{group, {}, {}};
    double best_flops = 0, best_bw = 0, peak = 0, hbm = 0;
    std::string chip;
    for (const Row* r : members) {
      const json& m = r->summary["metrics"];
      const double step = num(m, "step_time_s");
      const double bytes = num(r->summary["bytes"], "hbm_read") + num(r->summary["bytes"], "hbm_written");
      const double chips = std::max(1.0, num(m, "chips"));
      if (step <= 0) continue;
      best_flops = std::max(best_flops, num(m, "model_flops") / step / chips);
      if (bytes > 0) {
        line.x.push_back(num(m, "model_flops") / bytes);
        line.y.push_back(num(m, "model_flops") / step / chips);
      }
      best_bw = std::max(best_bw, bytes / step / chips);
      peak = num(m, "peak_flops_per_s") / chips;
      const json& h = r->summary["scenario"]["chip"]["hbm"];
      const double efficiency =
          h.contains("efficiency") && h["efficiency"].is_string() ? std::atof(h["efficiency"].get<std::string>().c_str()) : 1.0;
      hbm = quantity(h["bandwidth"]) * (efficiency > 0 ? efficiency : 1.0);
      chip = r->summary["scenario"]["chip"]["name"].get<std::string>();
    }
    const double expected = hbm > 0 ? peak / hbm : 0;
    const double measured = best_bw > 0 ? best_flops / best_bw : 0;
    const double error = expected > 0 ? measured / expected - 1 : 0;
    csv << fmt::format("\"{}\",{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.4f}\n", group, chip, peak, hbm,
                       expected, best_flops, best_bw, measured, error);
    out << fmt::format("  {:<22} {:>9.1f} F/B {:>9.1f} F/B {:>7.1f}%\n", group, expected, measured, 100 * error);
    series.push_back(std::move(line));
  }
  std::ofstream svg(chart, std::ios::binary);
  write_line_chart_svg(series, "roofline: achieved FLOP/s per chip", "arithmetic intensity (FLOP per HBM byte)",
                       "FLOP/s per chip", true, true, svg);
}

// A grid value as a number for plotting ("4096", "1 MiB", "2 TB/s"), or nullopt.
std::optional<double> numeric(const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0') return d;
  if (const auto q = parse_quantity(v)) return q->si;
  return std::nullopt;
}

// When the innermost axis is numeric: step time against it, one line per combination of the other axes.
void plot_step_time(const SweepSpec& spec, const std::vector<Row>& rows, const fs::path& path) {
  std::map<std::string, Series> groups;
  double lo = INFINITY, hi = 0;
  for (const auto& r : rows) {
    const auto x = numeric(r.point->values.back());
    if (!x) return;
    if (r.status != "ok") continue;
    const std::string key = group_key(spec, *r.point);
    Series& s = groups[key];
    s.name = key.empty() ? spec.name : key;
    s.x.push_back(*x);
    s.y.push_back(num(r.summary["metrics"], "step_time_s"));
    lo = std::min(lo, *x);
    hi = std::max(hi, *x);
  }
  std::vector<Series> series;
  for (auto& [k, s] : groups) series.push_back(std::move(s));
  const bool log = lo > 0 && hi / lo >= 100;
  std::ofstream out(path, std::ios::binary);
  write_line_chart_svg(series, spec.name + ": step time", spec.grid.back().key, "step time (s)", log, log, out);
}

}  // namespace

int sweep_command(const SweepArgs& args, const std::string& self_exe) {
  SweepSpec spec;
  std::vector<Point> points;
  try {
    spec = load_sweep(args.sweep);
    points = expand(spec);
    // Every point must resolve before anything runs: a typo in the grid is bad input, not 40 failed runs.
    for (const auto& p : points) (void)load_scenario(spec.scenario.string(), p.overrides);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\ntpusim sweep: bad input; nothing was run\n";
    return 2;
  }
  const fs::path out = args.out_dir.empty() ? fs::path("out") / spec.name : fs::path(args.out_dir);
  const fs::path points_dir = out / "points";

  json plan = json::array();
  for (const auto& p : points) plan.push_back(p.overrides);
  const json plan_doc{{"sweep", spec.name}, {"scenario", spec.scenario.string()}, {"points", plan}};
  const fs::path plan_file = out / "plan.json";
  if (fs::exists(plan_file) && read_json(plan_file) != plan_doc) {
    std::cerr << fmt::format(
        "tpusim sweep: {} holds the results of a different sweep (plan.json differs); choose another -o or "
        "delete it\n", out.string());
    return 2;
  }
  fs::create_directories(points_dir);
  std::ofstream(plan_file, std::ios::binary) << plan_doc.dump(2) << "\n";

  auto done = [&](const Point& p) { return fs::exists(points_dir / point_dir_name(p.index) / "summary.json"); };

  if (args.emit_commands) {
    for (const auto& p : points) {
      if (done(p)) continue;
      std::string line;
      for (const auto& a : run_argv(self_exe, spec, p, points_dir / point_dir_name(p.index))) {
        line += (line.empty() ? "" : " ") + shell_quote(a);
      }
      std::cout << line << "\n";
    }
    return 0;
  }

  std::map<std::size_t, int> exit_codes;
  if (!args.collect_only) {
    const int jobs = args.jobs > 0 ? args.jobs : std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    std::vector<const Point*> todo;
    for (const auto& p : points) {
      if (!done(p)) todo.push_back(&p);
    }
    std::cerr << fmt::format("tpusim sweep {}: {} points, {} already done, running {} on {} worker{}\n", spec.name,
                             points.size(), points.size() - todo.size(), todo.size(), jobs, jobs == 1 ? "" : "s");
    const bool interactive = isatty(STDERR_FILENO) != 0;
    std::map<pid_t, std::size_t> running;
    std::size_t next = 0, finished = 0;
    while (next < todo.size() || !running.empty()) {
      while (next < todo.size() && running.size() < static_cast<std::size_t>(jobs)) {
        const Point& p = *todo[next++];
        const fs::path dir = points_dir / point_dir_name(p.index);
        running[spawn_logged(run_argv(self_exe, spec, p, dir), points_dir / (point_dir_name(p.index) + ".log"))] =
            p.index;
      }
      int status = 0;
      const pid_t pid = wait(&status);
      if (pid < 0) break;
      const auto it = running.find(pid);
      if (it == running.end()) continue;
      exit_codes[it->second] = exit_code_of(status);
      running.erase(it);
      ++finished;
      // A live counter on a terminal; in logs, one line at the end instead of hundreds.
      if (interactive || finished == todo.size()) {
        std::cerr << fmt::format("{}tpusim sweep {}: {}/{} points run", interactive ? "\r" : "", spec.name, finished,
                                 todo.size())
                  << (finished == todo.size() ? "\n" : "");
      }
    }
  }

  std::vector<Row> rows;
  std::size_t failed = 0;
  for (const auto& p : points) {
    Row r;
    r.point = &p;
    const fs::path summary = points_dir / point_dir_name(p.index) / "summary.json";
    if (fs::exists(summary)) {
      r.summary = read_json(summary);
      r.status = "ok";
    } else {
      const auto it = exit_codes.find(p.index);
      r.status = it == exit_codes.end() ? "not run" : fmt::format("failed (exit {})", it->second);
      ++failed;
    }
    rows.push_back(std::move(r));
  }
  write_table(spec, rows, out / "table.csv");
  plot_step_time(spec, rows, out / "step_time.svg");
  std::cout << fmt::format("sweep {}: {} points, {} ok, {} not ok; table: {}\n", spec.name, points.size(),
                           points.size() - failed, failed, (out / "table.csv").string());
  if (spec.analysis == Analysis::roofline) {
    roofline(spec, rows, out / "roofline.csv", out / "roofline.svg", std::cout);
    std::cout << "  roofline: " << (out / "roofline.csv").string() << ", " << (out / "roofline.svg").string() << "\n";
  }
  if (failed > 0) {
    std::cerr << fmt::format("tpusim sweep: {} point{} did not complete; see {}/*.log\n", failed,
                             failed == 1 ? "" : "s", points_dir.string());
    return 1;
  }
  return 0;
}

}  // namespace tpusim::tools
