// tpusim: the command-line front end. Parses arguments with CLI11 and dispatches to the subcommands.
#include <cstdlib>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "tools/src/calibrate.h"
#include "tools/src/cli_suggest.h"
#include "tools/src/cli_values.h"
#include "tools/src/commands.h"
#include "tools/src/compare.h"
#include "tools/src/environment.h"
#include "tools/src/layouts.h"
#include "tools/src/sweep/sweep.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/logging.h"
#include "tpusim/core/version.h"

namespace {

int run_main(int argc, char** argv) {
  // The SystemC kernel prints a banner on stdout when it starts; stdout belongs to our reports.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  tpusim::tools::use_data_dir_from_environment();  // before anything names bundled data

  CLI::App app{"tpusim: a discrete-event simulator of Google TPU pods (v2, v3, v4, v5e, v5p, v6e).", "tpusim"};
  app.set_version_flag("--version", std::string("tpusim ") + std::string(tpusim::version()) + " (SystemC 2.3.4)");
  app.require_subcommand(1);
  // Options of tpusim itself may also follow the subcommand: `tpusim run x --max-memory 8GiB`.
  app.fallthrough();
  std::string max_memory;
  double max_pe_cycles = 0;
  app.add_option("--max-memory", max_memory,
                 "refuse work whose estimated memory is above SIZE, e.g. 8GiB (default: half of this machine's "
                 "memory)");
  app.add_option("--max-pe-cycles", max_pe_cycles,
                 "refuse fidelity.mxu: cycle runs that would step more processing-element cycles (default 3e10, "
                 "about 5 minutes)");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level,
                 "log levels by module path, longest prefix wins: 'info' or 'warn,pod.chip0.hbm=debug'")
      ->capture_default_str();

  tpusim::tools::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "simulate a scenario and write summary.json, chips.csv and a table");
  run_cmd->add_option("scenario", run.scenario,
                      "bundled scenario name (scenarios/NAME.yaml) or path to a scenario YAML")
      ->capture_default_str();
  run_cmd->add_option("-o,--out", run.out_dir, "output folder (default: out/<scenario name>); replaced on success");
  run_cmd->add_option("--set", run.overrides,
                      "override any resolved field by dotted path, e.g. --set chip.hbm.bandwidth=2TB/s")
      ->allow_extra_args(false);
  run_cmd->add_flag("--perf", run.perf, "print to stderr the wall time by phase, the chips and instructions simulated and mirrored, kernel events/s and peak memory");
  run_cmd->add_flag("-q,--quiet", run.quiet, "do not print the result table");
  run_cmd->add_flag("--trace", run.trace,
                    "write trace.json, a timeline of every instruction (open in ui.perfetto.dev), and for a "
                    "job job-trace.json, its checkpoint writes, lost work, restarts, faults and detections");
  auto* trace_chips = run_cmd->add_option("--trace-chips", run.trace_chips, "chips to trace (with --trace), e.g. 0-3,8")
                          ->capture_default_str();

  std::string validate_scenario;
  std::vector<std::string> validate_overrides;
  auto* validate_cmd = app.add_subcommand("validate", "check a scenario and everything it names; simulate nothing");
  validate_cmd->add_option("scenario", validate_scenario, "bundled scenario name or path")->required();
  validate_cmd->add_option("--set", validate_overrides, "override a field by dotted path")->allow_extra_args(false);

  std::string describe_what, describe_name;
  auto* describe_cmd = app.add_subcommand(
      "describe",
      "print a resolved spec with units and the source of every value (a chip also as its block diagram); "
      "'describe model' a model's parameters by component; 'describe params' lists all fields, 'describe "
      "assumptions' the model constants no source gives");
  describe_cmd->add_option("what", describe_what, "chip, pod, model, scenario, params or assumptions")
      ->required()
      ->check(CLI::IsMember({"chip", "pod", "model", "scenario", "params", "assumptions"}));
  describe_cmd->add_option("name", describe_name, "bundled name or path (not needed for params)");
  std::string describe_svg;
  describe_cmd->add_option("--svg", describe_svg, "describe chip: also draw the composed chip (blocks, paths) as SVG");
  std::vector<std::string> describe_overrides;
  describe_cmd
      ->add_option("--set", describe_overrides,
                   "describe scenario: override a field by dotted path, as run does, and show the what-if resolved")
      ->allow_extra_args(false);

  std::string lower_scenario, lower_out;
  std::vector<std::string> lower_overrides;
  auto* lower_cmd = app.add_subcommand(
      "lower", "lower a scenario's workload and write its programs as JSON, with a summary and the memory plan");
  lower_cmd->add_option("scenario", lower_scenario, "bundled scenario name or path")->required();
  lower_cmd->add_option("-o,--out", lower_out, "output file (default: stdout)");
  lower_cmd->add_option("--set", lower_overrides, "override a field by dotted path")->allow_extra_args(false);

  tpusim::tools::LayoutsArgs layouts;
  auto* layouts_cmd = app.add_subcommand(
      "layouts", "run every data x fsdp x tensor (x expert, x sequence) mesh of a whole model on its pod that fits (tensor also as tensor_sequence), with --microbatches, --remat and --overlap values searched jointly, ranked by step time then HBM per chip");
  layouts_cmd->add_option("scenario", layouts.scenario, "bundled scenario name or path")->required();
  layouts_cmd->add_option("--set", layouts.overrides, "override a field by dotted path")->allow_extra_args(false);
  layouts_cmd->add_option("-o,--out", layouts.out_dir, "output folder (default: out/<scenario name>-layouts)");
  layouts_cmd->add_option("-j,--jobs", layouts.jobs, "runs at once (default: every core)");
  layouts_cmd->add_option("--axes", layouts.axes, "search only these mesh axes, comma-separated (" + tpusim::tools::layout_axis_names() + "; default: every one the model has)")->delimiter(',');
  layouts_cmd->add_option("--microbatches", layouts.microbatches, "also search these workload.microbatches values, comma-separated (every combination with the mesh)")->delimiter(',');
  layouts_cmd->add_option("--remat", layouts.remat, "also search these workload.remat policies, comma-separated (e.g. full,minimal)")->delimiter(',');
  layouts_cmd->add_option("--overlap", layouts.overlap, "also search workload.overlap: on,off")->delimiter(',');

  std::string topo_name, topo_dot, topo_svg;
  auto* topo_cmd = app.add_subcommand("topo", "print a pod's chips, links, diameter and bisection");
  topo_cmd->add_option("pod", topo_name, "bundled pod name or path")->required();
  topo_cmd->add_option("--dot", topo_dot, "also write a Graphviz DOT file (up to 512 chips)");
  topo_cmd->add_option("--svg", topo_svg, "also draw the topology as SVG: one panel per z plane (up to 512 chips)");

  tpusim::tools::SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand(
      "sweep",
      "run a plan of overrides over a scenario (grid, zipped axes, ranges, derived values, filters, seeds), one "
      "process per point, and tabulate and chart the results (docs/sweeps.md)");
  sweep_cmd->add_option("sweep", sweep.sweep, "bundled sweep name (sweeps/NAME.yaml) or path")->required();
  sweep_cmd->add_option("-o,--out", sweep.out_dir, "output folder (default: out/<sweep name>)");
  sweep_cmd->add_option("-j,--jobs", sweep.jobs,
                        "points run at once (default: every core; with --slurm: CPUs per array task, default 1)");
  sweep_cmd->add_flag("--emit-commands", sweep.emit_commands,
                      "print one command per point not yet done (for GNU parallel or a Slurm job array)");
  sweep_cmd->add_flag("--collect", sweep.collect_only, "run nothing; build the table from finished points");
  sweep_cmd->add_flag("--retry-failed", sweep.retry_failed, "run points that failed before again");
  sweep_cmd->add_flag("--slurm", sweep.slurm,
                      "write OUT/slurm/sweep.sbatch, a Slurm job array whose tasks run shares of the points");
  sweep_cmd->add_option("--tasks", sweep.slurm_tasks, "--slurm: array tasks (default: one per point, at most 32)");
  sweep_cmd->add_option("--slurm-option", sweep.slurm_options, "--slurm: an extra #SBATCH line, e.g. --time=2:00:00")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--share", sweep.share, "run only the pending points numbered K modulo N (K/N); no table");

  tpusim::tools::CalibrateArgs calibrate;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate",
      "run the calibration set (published TPU measurements) and print predicted against measured with the error");
  calibrate_cmd->add_option("set", calibrate.set, "bundled calibration set (calibration/NAME.yaml) or path")
      ->capture_default_str();
  calibrate_cmd->add_option("-o,--out", calibrate.out_dir, "output folder: table.csv, a chart per plotted entry")
      ->capture_default_str();
  calibrate_cmd->add_option("--set", calibrate.overrides, "override a field of every point, e.g. --set "
                                                         "chip.ici.link_efficiency=0.9")
      ->allow_extra_args(false);

  tpusim::tools::CompareArgs compare;
  auto* compare_cmd = app.add_subcommand(
      "compare", "two or more runs side by side (output folders or summary.json files), with each one's "
                 "difference from the first");
  compare_cmd->add_option("runs", compare.runs, "run output folders or summary.json files")->required();
  compare_cmd->add_option("-o,--out", compare.out_dir, "also write compare.csv and compare.json into this folder");

  if (argc == 1) {  // a bare `tpusim` is a request for orientation, not an error
    std::cout << app.help();
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ConversionError& e) {
    std::cerr << tpusim::tools::conversion_error(e.what()) << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    std::cerr << tpusim::tools::cli_suggestions(app, argc, argv, e.what());
    return 2;
  }

  tpusim::Diagnostics diags;
  tpusim::tools::check_command_line(app, diags);
  // The chips --trace writes: without it nothing is traced, and the list would be ignored.
  if (run_cmd->parsed() && trace_chips->count() > 0 && !run.trace) {
    diags.error(tpusim::SourceLoc{"--trace-chips", 0, 0}, "--trace-chips", "chips to trace, but no trace is written",
                "--trace-chips with --trace", "--trace-chips " + run.trace_chips, "add --trace, or drop --trace-chips");
  }
  if (diags.empty()) tpusim::configure_logging(log_level, diags);
  if (!diags.empty()) {
    std::cerr << diags.str();
    return 2;
  }

  tpusim::install_interrupt_handlers();
  using namespace tpusim::tools;
  Limits limits;
  try {
    limits = limits_from(max_memory, max_pe_cycles);
  } catch (const tpusim::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  run.limits = limits;
  // A study checks its points with the limits and passes them on to each run it starts.
  const StudyLimits study{limits, limit_flags(max_memory, max_pe_cycles)};
  sweep.limits = study;
  calibrate.limits = study;
  layouts.limits = study;
  if (run_cmd->parsed()) return run_command(run);
  if (validate_cmd->parsed()) return validate_command(validate_scenario, validate_overrides, limits);
  if (describe_cmd->parsed()) return describe_command(describe_what, describe_name, describe_svg, describe_overrides);
  if (lower_cmd->parsed()) return lower_command(lower_scenario, lower_overrides, lower_out, limits);
  if (topo_cmd->parsed()) return topo_command(topo_name, topo_dot, topo_svg, limits);
  if (sweep_cmd->parsed()) return sweep_command(sweep);
  if (calibrate_cmd->parsed()) return calibrate_command(calibrate, "/proc/self/exe");
  if (layouts_cmd->parsed()) return layouts_command(layouts, "/proc/self/exe");
  if (compare_cmd->parsed()) return compare_command(compare);
  return 2;
}

}  // namespace

// No exception leaves main: the commands map bad input to exit 2 and failures to 1 themselves; what reaches
// here (out of memory, an internal error) is reported in one line, exit 1.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "tpusim: out of memory; nothing was written (try a smaller workload or pod, or fidelity: fast)\n";
  } catch (const tpusim::Interrupted& e) {
    std::cerr << "tpusim: " << e.what() << "; nothing was written\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "tpusim: internal error: " << e.what() << "; nothing was written (please report this)\n";
  } catch (...) {
    std::cerr << "tpusim: internal error (unknown exception); nothing was written (please report this)\n";
  }
  return 1;
}
