#include "tools/src/sweep/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/preflight.h"
#include "tools/src/run_check.h"
#include "tools/src/study_plan.h"
#include "tools/src/sweep/slurm.h"
#include "tools/src/sweep/sweep_analysis.h"
#include "tools/src/sweep/sweep_axes.h"
#include "tools/src/sweep/sweep_check.h"
#include "tools/src/sweep/sweep_runner.h"
#include "tools/src/sweep/sweep_table.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/scenario.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

fs::path self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("/proc/self/exe") : p;
}

std::vector<std::string> run_argv(const fs::path& self, const SweepArgs& args, const SweepPlan& plan, const Run& r,
                                  const fs::path& dir) {
  std::vector<std::string> argv{self.string()};
  argv.insert(argv.end(), args.limits.flags.begin(), args.limits.flags.end());
  argv.insert(argv.end(), {"run", plan.scenario.string(), "-q", "-o", dir.string()});
  for (const auto& o : r.overrides) {
    argv.emplace_back("--set");
    argv.push_back(o);
  }
  return argv;
}

std::string describe_points(const SweepPlan& plan, const Expansion& ex) {
  std::string s = fmt::format("{} point{}", ex.runs.size(), ex.runs.size() == 1 ? "" : "s");
  std::vector<std::string> notes;
  if (!plan.seeds.empty()) notes.push_back(fmt::format("{} combinations x {} seeds", ex.configs.size(), plan.seeds.size()));
  if (ex.configs.size() < ex.combinations) {
    notes.push_back(fmt::format("{} of {} combinations dropped by filters", ex.combinations - ex.configs.size(),
                                ex.combinations));
  }
  if (!notes.empty()) {
    s += " (";
    for (std::size_t i = 0; i < notes.size(); ++i) s += (i ? "; " : "") + notes[i];
    s += ")";
  }
  return s;
}

// What the seeds did: the largest spread of the step time over the rows, said plainly when it is zero.
void report_seeds(const SweepPlan& plan, const SweepTable& table, std::ostream& out) {
  if (plan.seeds.empty()) return;
  const std::size_t step = *table.column("step_time_s");
  double worst = 0;
  std::size_t rows = 0;
  for (const auto& r : table.rows) {
    if (!r.mean[step] || *r.mean[step] <= 0) continue;
    ++rows;
    worst = std::max(worst, *r.spread[step] / *r.mean[step]);
  }
  out << fmt::format("  seeds: {} per point; largest step-time spread (sample standard deviation / mean) over {} "
                     "points: {:.3g}%\n", plan.seeds.size(), rows, 100 * worst);
  if (rows > 0 && worst == 0) {
    out << "  the spread is zero: the simulated step does not depend on the seed (random faults change a "
           "job's timeline: see the goodput column)\n";
  }
}

int build_outputs(const SweepPlan& plan, const Expansion& ex, const fs::path& out, const fs::path& points_dir) {
  const auto runs = read_runs(ex, points_dir);
  const SweepTable table = build_table(plan, ex, runs);
  write_file_atomically(out / "table.csv", [&](std::ostream& o) { write_table_csv(plan, table, o); });
  write_file_atomically(out / "table.json", [&](std::ostream& o) { o << table_json(plan, table).dump(2) << "\n"; });
  if (!plan.seeds.empty()) {
    write_file_atomically(out / "runs.csv", [&](std::ostream& o) { write_runs_csv(plan, ex, runs, o); });
  }
  std::size_t ok = 0, failed = 0, unfit = 0;
  for (const auto& r : table.rows) {
    if (r.status == "ok") ++ok;
    else if (r.status == kDoesNotFitStatus) ++unfit;
    else if (r.status.rfind("failed", 0) == 0) ++failed;
  }
  // A point whose step does not fit in HBM is a result (its row says so, with the memory plan), not a failure.
  const std::size_t missing = table.rows.size() - ok - unfit - failed;
  std::cout << fmt::format("sweep {}: {} point{}, {} ok, {}{} failed, {} not run; table: {}\n", plan.name,
                           table.rows.size(), table.rows.size() == 1 ? "" : "s", ok,
                           unfit > 0 ? fmt::format("{} do not fit in HBM, ", unfit) : "", failed, missing,
                           (out / "table.csv").string());
  report_seeds(plan, table, std::cout);
  write_analyses(plan, table, out, std::cout);
  compact_manifest(out);
  if (failed + missing > 0) {
    std::cerr << fmt::format("tpusim sweep: {} point{} did not complete; errors are in the table's error column and "
                             "in {}/*.log\n", failed + missing, failed + missing == 1 ? "" : "s", points_dir.string());
    return 1;
  }
  return 0;
}

int run_sweep(const SweepArgs& args) {
  int share_k = 0, share_n = 1;
  if (!args.share.empty() && !parse_share(args.share, share_k, share_n)) {
    std::cerr << fmt::format("tpusim sweep: --share expects K/N with 0 <= K < N, found '{}'\n", args.share);
    return 2;
  }
  SweepPlan plan;
  Expansion ex;
  std::string base;  // what the points resolve to (study_plan.h)
  try {
    plan = load_sweep_plan(args.sweep);
    ex = expand(plan);
    // Each point as `run` checks it before simulating (run_check.h), with the limits a point's run has.
    base = validate(plan, ex, [&](const Scenario& s) {
      try {
        (void)check_run(s, args.limits.limits);
      } catch (const ResourceRefused& e) {
        // At the scenario, which names no line: validate adds the point.
        throw ConfigError({Diagnostic{SourceLoc{plan.scenario.string()}, "", "the point's run would be refused", "",
                                      e.what(), ""}});
      }
    });
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\ntpusim sweep: bad input; nothing was run\n";
    return 2;
  }
  if (ex.runs.empty()) {
    std::cerr << fmt::format("tpusim sweep {}: the filters drop all {} combinations; nothing to run\n", plan.name,
                             ex.combinations);
    return 2;
  }
  // Updated in place over runs, under the rules of every output folder (output_folder.h): new, or one tpusim
  // wrote; never the current folder or an ancestor of it.
  fs::path out;
  try {
    out = check_output_folder(args.out_dir.empty() ? default_output_dir(plan.name) : fs::path(args.out_dir),
                              "sweep");
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim sweep: " << e.what() << "\ntpusim sweep: bad input; nothing was run\n";
    return 2;
  }
  const fs::path points_dir = out / "points";

  json points = json::array();
  for (const auto& r : ex.runs) points.push_back(r.overrides);
  const json plan_doc{{"sweep", plan.name}, {"scenario", plan.scenario.string()}, {"points", points}, {"base", base}};
  const fs::path plan_file = out / "plan.json";
  if (fs::exists(plan_file)) {
    std::ifstream in(plan_file);
    // Resuming another sweep, or this one over a base that changed since, would label old points with new values.
    if (const auto differs = plan_difference(json::parse(in, nullptr, false), plan_doc)) {
      std::cerr << plan_refusal("sweep", out, *differs) << "\ntpusim sweep: bad input; nothing was run\n";
      return 2;
    }
  } else if (!args.share.empty()) {
    std::cerr << fmt::format("tpusim sweep: {} has no plan.json; --share runs the tasks of a script written by "
                             "--slurm\n", out.string());
    return 2;
  } else {
    (void)claim_output_folder(out, "sweep");
    fs::create_directories(points_dir);
    write_file_atomically(plan_file, [&](std::ostream& o) { o << plan_doc.dump(2) << "\n"; });
  }
  fs::create_directories(points_dir);
  // The points this run writes (a share's, or all of them; --collect reads all) are locked until it ends.
  std::optional<PointsLock> lock;
  if (!args.emit_commands && !args.slurm) {
    const bool a_share = !args.share.empty() && !args.collect_only;
    std::vector<std::size_t> mine;  // a share's
    for (const auto& r : ex.runs) {
      if (a_share && static_cast<int>(r.index % share_n) == share_k) mine.push_back(r.index);
    }
    try {
      if (!a_share) {
        lock.emplace(out, PointsLock::every);
      } else if (!mine.empty()) {  // a share that owns no point writes nothing
        lock.emplace(out, mine);
      }
    } catch (const OutputRefused& e) {
      std::cerr << "tpusim sweep: " << e.what() << "\ntpusim sweep: nothing was run\n";
      return 2;
    }
  }

  auto pending = [&](const Run& r) {
    if (fs::exists(points_dir / point_dir_name(r.index) / "summary.json")) return false;
    return args.retry_failed || !has_failure_record(points_dir, r.index);
  };
  for (const auto& r : ex.runs) {
    if (is_broken_failure_record(points_dir, r.index)) {
      std::cerr << fmt::format("tpusim sweep: {} is empty or cut short (a run killed while writing it); point {} "
                               "runs again\n",
                               failure_file(points_dir, r.index).string(), r.index);
    }
  }
  std::vector<const Run*> todo;
  for (const auto& r : ex.runs) {
    if (pending(r) && static_cast<int>(r.index % share_n) == share_k) todo.push_back(&r);
  }
  const fs::path self = self_exe();

  if (args.emit_commands) {
    for (const Run* r : todo) {
      std::string line;
      for (const auto& a : run_argv(self, args, plan, *r, points_dir / point_dir_name(r->index))) {
        line += (line.empty() ? "" : " ") + shell_quote(a);
      }
      std::cout << line << "\n";
    }
    return 0;
  }

  if (args.slurm) {
    SlurmJob job;
    job.name = plan.name;
    job.tpusim = self;
    job.sweep_file = fs::absolute(plan.file);
    job.out_dir = out;
    job.tasks = args.slurm_tasks > 0 ? args.slurm_tasks : static_cast<int>(std::clamp<std::size_t>(todo.size(), 1, 32));
    job.tasks = std::min<int>(job.tasks, static_cast<int>(ex.runs.size()));
    job.cpus_per_task = std::max(1, args.jobs);
    job.options = args.slurm_options;
    job.tpusim_flags = args.limits.flags;
    fs::create_directories(out / "slurm");
    const fs::path script = out / "slurm" / "sweep.sbatch";
    write_file_atomically(script, [&](std::ostream& o) { write_slurm_script(job, o); });
    fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    // The array tasks' logs (slurm.h: slurm/task-N.out) are written by Slurm for tpusim: listed as tpusim's.
    for (int task = 0; task < job.tasks; ++task) {
      record_written(out / "slurm" / fmt::format("task-{}.out", task), true);
    }
    std::cout << fmt::format("wrote {} ({} array tasks for {} pending of {})\n", script.string(), job.tasks,
                             todo.size(), describe_points(plan, ex));
    std::cout << fmt::format("submit:        sbatch {}\nthen collect:  {} sweep {} -o {} --collect\n",
                             shell_quote(script.string()), shell_quote(self.string()),
                             shell_quote(job.sweep_file.string()), shell_quote(out.string()));
    return 0;
  }

  if (!args.collect_only) {
    const int jobs = args.jobs > 0 ? args.jobs : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    std::size_t share_total = 0, failed_before = 0;
    for (const auto& r : ex.runs) {
      if (static_cast<int>(r.index % share_n) != share_k) continue;
      ++share_total;
      if (!args.retry_failed && !fs::exists(points_dir / point_dir_name(r.index) / "summary.json") &&
          has_failure_record(points_dir, r.index)) {
        ++failed_before;
      }
    }
    std::cerr << fmt::format("tpusim sweep {}: {}{}, {} already done{}, running {} on {} worker{}\n", plan.name,
                             describe_points(plan, ex),
                             args.share.empty() ? "" : fmt::format(", share {} has {}", args.share, share_total),
                             share_total - todo.size(),
                             failed_before > 0 ? fmt::format(" ({} failed: --retry-failed runs them again)", failed_before)
                                               : std::string(),
                             todo.size(), jobs, jobs == 1 ? "" : "s");
    std::vector<PointTask> tasks;
    for (const Run* r : todo) {
      const fs::path dir = points_dir / point_dir_name(r->index);
      tasks.push_back(PointTask{r->index, run_argv(self, args, plan, *r, dir), dir});
    }
    Progress progress(plan.name, tasks.size(), std::cerr, isatty(STDERR_FILENO) != 0);
    const RunSummary done = run_points(tasks, jobs, points_dir, progress);
    if (done.interrupted != 0) {
      std::cerr << fmt::format("\ntpusim sweep: {}; finished points are kept in {}, run the sweep again to resume\n",
                               Interrupted(done.interrupted).what(), points_dir.string());
      return 128 + done.interrupted;
    }
    if (!args.share.empty()) {
      // A task of a job array: its points are in place; the table is built once, by --collect.
      if (done.failed > 0) {
        std::cerr << fmt::format("tpusim sweep: {} of this share's points failed; see {}/*.failed.json\n", done.failed,
                                 points_dir.string());
        return 1;
      }
      return 0;
    }
  }
  return build_outputs(plan, ex, out, points_dir);
}

}  // namespace

int sweep_command(const SweepArgs& args) {
  try {
    return run_sweep(args);
  } catch (const std::exception& e) {  // a folder or file that cannot be written, a failed fork
    std::cerr << "tpusim sweep: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tpusim::tools
