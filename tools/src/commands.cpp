#include "tools/src/commands.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tools/src/describe_chip.h"
#include "tools/src/child_process.h"
#include "tools/src/environment.h"
#include "tools/src/job_run.h"
#include "tools/src/mirrored_step.h"
#include "tools/src/model_info.h"
#include "tools/src/memory_in_use.h"
#include "tools/src/op_classes.h"
#include "tools/src/output_folder.h"
#include "tools/src/readable.h"
#include "tools/src/report.h"
#include "tools/src/run_check.h"
#include "tools/src/simulation_report.h"
#include "tools/src/charts/svg.h"
#include "tools/src/trace.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/assumptions.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/kernels/sharding.h"
#include "tpusim/models/assumptions.h"
#include "tpusim/models/simulate.h"
#include "tpusim/topology/describe.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

// `after` says what had run when the error was found; empty: nothing had.
void print_config_error(const ConfigError& e, const std::string& after = "") {
  std::cerr << e.what() << "\n";
  std::cerr << fmt::format("tpusim: {} error{} in the input; {}\n", e.diagnostics().size(),
                           e.diagnostics().size() == 1 ? "" : "s",
                           after.empty() ? "nothing was simulated" : after);
}

// Runs a command's body and maps what it throws to the exit codes: bad input (ConfigError, a refused output
// path, or a spec the layers below reject with std::invalid_argument) 2; a Ctrl-C or SIGTERM 128 + signal;
// anything else that fails (a write) 1. main() catches what escapes this (out of memory, internal errors).
int with_exit_codes(const std::string& who, const std::function<int()>& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    print_config_error(e);
    return 2;
  } catch (const OutputRefused& e) {
    std::cerr << who << ": " << e.what() << "\n";
    return 2;
  } catch (const ResourceRefused& e) {
    std::cerr << who << ": " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << who << ": " << e.what() << "\n";
    return 2;
  } catch (const Interrupted& e) {
    std::cerr << who << ": " << e.what() << "; nothing was written\n";
    return e.exit_code();
  } catch (const std::runtime_error& e) {
    std::cerr << who << ": " << e.what() << "\n";
    return 1;
  }
}

void write_text(const fs::path& path, const std::string& text) {
  write_file(path, [&](std::ostream& out) { out << text; });
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// What --perf prints: where the wall time went and what was really simulated.
struct PerfFigures {
  double simulation_s = 0, elaboration_s = 0;
  std::uint64_t kernel_events = 0;
  std::uint64_t instructions_executed = 0, instructions_mirrored = 0;
  std::uint64_t chips_simulated = 0, chips_mirrored = 0;
  std::string mirroring;
};

// SimulationCost::mirroring as --perf says it: why mirroring did not apply, when it did not.
std::string mirroring_note(bool mirrored, const std::string& note) {
  return mirrored || note.rfind("fell back", 0) == 0 ? note : "not applied: " + note;
}

void print_perf(const PerfFigures& p, double lowering_s, double fault_steps_s, double output_s,
                const models::FaultSteps* fault_steps) {
  const double wall = lowering_s + p.elaboration_s + p.simulation_s + fault_steps_s + output_s;
  const auto t = [](double s) { return readable(s, Quantity::seconds); };
  std::cerr << fmt::format("tpusim perf: wall {}: lowering {}, elaboration {}, simulation {}{}, output {}\n", t(wall),
                           t(lowering_s), t(p.elaboration_s), t(p.simulation_s),
                           fault_steps_s > 0 ? fmt::format(", the job's fault steps {}", t(fault_steps_s)) : "",
                           t(output_s));
  std::cerr << fmt::format(
      "tpusim perf: chips {} simulated, {} mirrored; instructions {} executed, {} mirrored; {} kernel events "
      "({} events/s, {} instructions/s of simulation); peak memory {}\n",
      p.chips_simulated, p.chips_mirrored, p.instructions_executed, p.instructions_mirrored, p.kernel_events,
      readable(static_cast<double>(p.kernel_events) / std::max(p.simulation_s, 1e-9), Quantity::count),
      readable(static_cast<double>(p.instructions_executed) / std::max(p.simulation_s, 1e-9), Quantity::count),
      readable(peak_rss_mib() * 1024 * 1024, Quantity::bytes));
  if (!p.mirroring.empty()) {
    std::cerr << fmt::format("tpusim perf: mirroring {}\n", mirroring_note(p.chips_mirrored > 0, p.mirroring));
  }
  // A job's steps with faults, each simulated in a process of its own.
  if (fault_steps == nullptr) return;
  for (std::size_t i = 0; i < fault_steps->steps().size(); ++i) {
    const models::FaultStep& f = fault_steps->steps()[i];
    if (!f.ok) continue;
    std::cerr << fmt::format("tpusim perf: step {} ({}): wall {}; mirroring {}\n", i + 1, f.what,
                             readable(f.cost.wall_s, Quantity::seconds),
                             mirroring_note(f.cost.chips_mirrored > 0, f.cost.mirroring));
  }
}

}  // namespace

int run_command(const RunArgs& args) {
  Scenario scenario;
  kernels::LoweredWorkload lowered;
  std::optional<Topology> topology;
  fs::path out_dir;
  double lowering_s = 0;  // for --perf
  const int input = with_exit_codes("tpusim run", [&] {
    scenario = load_scenario(args.scenario, args.overrides);
    kernels::check_sharding(scenario.workload, scenario.pod);
    // Before any work: a run that could not write its output is refused now, not after the simulation.
    out_dir = args.out_dir.empty() ? default_output_dir(scenario.name) : fs::path(args.out_dir);
    (void)check_output_folder(out_dir, "run");
    guard_topology(scenario.pod, args.limits);
    topology.emplace(check_topology(scenario));
    check_fault_cuts(scenario, *topology);
    const Scenario step = models::job_step_scenario(scenario);  // job_steps.h
    guard_lowering(step, args.limits);
    const auto lowering_start = std::chrono::steady_clock::now();
    lowered = programs_for(step);
    lowering_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - lowering_start).count();
    check_programs(step, lowered.programs, *topology);
    guard_simulation(step, lowered.programs, args.limits);
    // A job given in steps: once its step is known.
    guard_fault_rates(scenario, *topology, scenario.job.duration, args.limits);
    return 0;
  });
  if (input != 0) return input;

  // Enough spans for a detailed one-chip timeline; a bigger trace would not open in a browser anyway.
  constexpr std::size_t kMaxTraceSpans = 2'000'000;
  std::optional<TraceRecorder> tracer;
  if (args.trace) {
    Diagnostics diags;
    auto chips = parse_chip_list(args.trace_chips, static_cast<std::size_t>(scenario.pod.chip_count()), diags);
    if (!diags.empty()) {
      std::cerr << diags.str();
      return 2;
    }
    tracer.emplace(std::move(chips), kMaxTraceSpans);
  }

  const bool interactive = isatty(STDERR_FILENO) != 0;
  const auto wall_start = std::chrono::steady_clock::now();
  models::SimOptions options;
  apply_environment(options);  // environment.h
  options.progress = [&](double sim_seconds) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (wall < 2.0) return;  // quiet for short runs
    std::cerr << fmt::format("{}tpusim: simulated {} in {:.1f} s wall{}", interactive ? "\r" : "",
                             format_time(Seconds(sim_seconds)), wall, interactive ? "   " : "\n");
  };

  const ir::ProgramSet& programs = lowered.programs;
  OpClassRecorder classes(programs, static_cast<std::uint32_t>(scenario.pod.chip_count()));
  // Whole models lowered here (a program file names no HBM buffers): each pipeline stage's first chip.
  std::vector<MemoryInUseRecorder> in_use;
  if (scenario.workload.program.empty()) {
    for (std::size_t p = 0; p < lowered.memory_timelines.size(); ++p) {
      in_use.emplace_back(programs, static_cast<std::uint32_t>(p), lowered.memory_timelines[p]);
    }
  }
  options.trace = [&tracer, &classes, &in_use](const models::TraceSpan& s) {
    classes.record(s);
    for (MemoryInUseRecorder& r : in_use) {
      if (s.chip == r.chip()) r.record(s);  // a chip per stage of thousands: test before the call
    }
    if (tracer) tracer->record(s);
  };

  RunReport report;
  std::optional<PerfFigures> perf;
  double fault_steps_s = 0;
  std::chrono::steady_clock::time_point output_start;
  std::optional<models::FaultSteps> fault_steps;  // a job's steps with faults, simulated in child processes
  std::optional<models::JobOutcome> job;
  std::optional<Seconds> healthy_step;  // once simulated
  try {
    // A job's steps with faults: simulated by a server forked now, once this simulation gives the healthy step.
    std::optional<FaultTraceOptions> fault_trace;  // the steps simulated with a fault trace as trace.json does
    if (tracer) fault_trace = FaultTraceOptions{tracer->chips(), kMaxTraceSpans};
    ChildStepRunner runner(programs, fault_trace);  // child_process.h
    std::optional<FaultStepServer> server;
    if (scenario.job.enabled) server.emplace(scenario, *topology, runner, max_job_faults(args.limits));
    const models::SimResult result = simulate_step(scenario, programs, options);  // mirrored_step.h
    healthy_step = result.step_time;
    if (server) {
      // A job given in steps: its length is known now; its fault plan is checked before any step with a fault
      // is simulated.
      models::check_fault_times_of_steps(scenario, result.step_time);
      if (scenario.job.given_in_steps()) {
        guard_fault_rates(scenario, *topology, models::healthy_job_length(scenario, result.step_time),
                          args.limits);
      }
      const auto fault_start = std::chrono::steady_clock::now();
      fault_steps.emplace(server->steps(result.step_time));
      fault_steps_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - fault_start).count();
      job = models::run_job_timeline(scenario, *topology, result.step_time, *fault_steps,
                                     max_job_faults(args.limits));
      if (const auto note = several_cables_note(scenario, job->result)) {
        std::cerr << "tpusim: warning: " << *note << "\n";
      }
    }
    output_start = std::chrono::steady_clock::now();
    report = make_report(scenario, programs, result, &*topology,
                         scenario.workload.program.empty() ? &lowered : nullptr, &classes);
    if (!in_use.empty()) {
      std::vector<std::pair<std::uint32_t, std::vector<std::pair<double, double>>>> counters;
      for (const MemoryInUseRecorder& r : in_use) {
        MemoryInUse u = r.finish(result.step_time.value());
        counters.emplace_back(u.chip, std::move(u.changes));  // the trace's; the report reads the peaks
        if (in_use.size() > 1) {
          MemoryInUse stage = u;
          stage.slice_peak_bytes.clear();  // only the fullest stage's slices are reported
          report.memory.in_use_by_stage.push_back(std::move(stage));
        }
        // The fullest stage stands for the step, as its memory plan does (the first of equals).
        if (!report.memory.in_use || u.peak_bytes > report.memory.in_use->peak_bytes) {
          report.memory.in_use = std::move(u);
        }
      }
      if (report.memory.plan && report.memory.in_use->peak_bytes > report.memory.plan->capacity.as_double()) {
        // The plan fits (lowering refuses a step whose plan does not); the schedule holds more at once.
        report.notes.push_back(fmt::format(
            "HBM over capacity as scheduled: chip {} holds {} at {} into the step, above its {} (the plan's "
            "count, {}, fits; ops the schedule overlaps hold their buffers together beyond what the plan counts, "
            "which is a gather run ahead from where it may start but not a collective finishing after the ops that "
            "follow it, where a compiler short of memory would hold work back)",
            report.memory.in_use->chip, readable(report.memory.in_use->peak_bytes, Quantity::bytes),
            readable(report.memory.in_use->peak_at_s, Quantity::seconds),
            readable(report.memory.plan->capacity.as_double(), Quantity::bytes),
            readable(report.memory.plan->total().as_double(), Quantity::bytes)));
      }
      if (tracer) tracer->set_hbm_in_use(std::move(counters));
    }
    if (args.perf) {
      perf = PerfFigures{result.cost.wall_seconds - result.cost.elaboration_seconds,
                         result.cost.elaboration_seconds,
                         result.cost.kernel_events,
                         result.cost.instructions_executed,
                         result.cost.instructions_mirrored,
                         result.cost.chips_simulated - result.cost.chips_mirrored,
                         result.cost.chips_mirrored,
                         result.cost.mirroring};
    }
  } catch (const ConfigError& e) {
    // A job given in steps: its fault times are checked once the healthy step is simulated, before any step
    // with a fault.
    print_config_error(e, healthy_step ? fmt::format("found once the healthy step was simulated ({}); no step "
                                                     "with a fault was simulated, nothing was written",
                                                     format_time(*healthy_step))
                                       : "");
    return 2;
  } catch (const ResourceRefused& e) {
    std::cerr << "tpusim: " << e.what() << "\n";
    return 2;
  } catch (const Interrupted& e) {
    if (interactive) std::cerr << "\n";
    std::cerr << "tpusim: " << e.what() << "; no output was written\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    if (interactive) std::cerr << "\n";
    std::cerr << "tpusim: simulation failed: " << e.what() << "\n";
    std::cerr << "tpusim: no output was written\n";
    return 1;
  }
  if (interactive && std::chrono::steady_clock::now() - wall_start > std::chrono::seconds(2)) std::cerr << "\n";

  std::vector<std::string> written;  // every file the run writes, in order, for the last line on stdout
  try {
    OutputFolder folder(out_dir, "run");
    const auto file = [&](const std::string& name) {
      written.push_back(name);
      return folder.file(name);
    };
    auto summary = summary_json(scenario, report);
    if (job) add_job_json(summary, scenario, *job, *fault_steps);
    write_text(file("summary.json"), summary.dump(2) + "\n");
    write_file(file("chips.csv"), [&](std::ostream& out) { write_chips_csv(report, out); });
    if (!report.time.ops.empty()) write_file(file("ops.csv"), [&](std::ostream& out) { write_ops_csv(report, out); });
    if (!report.network.links.empty()) {
      write_file(file("links.csv"), [&](std::ostream& out) { write_links_csv(report, out); });
      std::vector<double> utilization;
      for (const auto& l : report.network.links) utilization.push_back(l.utilization);
      write_file(file("links.svg"), [&](std::ostream& out) {
        write_link_heatmap_svg(*topology, utilization,
                               fmt::format("{}: ICI link utilization ({})", scenario.name, scenario.pod.name), {},
                               out);
      });
    }
    if (fault_steps) {  // the link heatmap of each step simulated with a lasting fault (job_run.h)
      for (const auto& map : fault_link_maps(*fault_steps)) {  // no structured binding: lambdas capture `step`
        const auto& step = map.second;
        write_file(file(map.first), [&](std::ostream& out) {
          write_link_heatmap_svg(*topology, step->link_utilization,
                                 fmt::format("{}: ICI link utilization", step->what),
                                 fault_marks(*topology, *step), out);
        });
      }
    }
    if (tracer) {
      write_file(file("trace.json"), [&](std::ostream& out) { tracer->write(programs, out); });
      if (job) write_file(file("job-trace.json"), [&](std::ostream& out) { write_job_trace(scenario, *job, out); });
      for (const auto& trace : fault_steps ? fault_traces(*fault_steps) : decltype(fault_traces(*fault_steps)){}) {
        const models::FaultStep* traced = trace.second;  // trace-fault-K.json (job_run.h)
        write_file(file(trace.first), [&](std::ostream& out) {
          write_fault_trace(*topology, programs, FaultTraceOptions{tracer->chips(), kMaxTraceSpans}, *traced, out);
        });
      }
      write_file(file("timeline.svg"), [&](std::ostream& out) {
        tracer->write_timeline_svg(fmt::format("{}: unit timeline", scenario.name), out);
      });
      if (tracer->dropped() > 0) {
        std::cerr << fmt::format("tpusim: trace.json holds the first {} instructions of each traced chip; {} more "
                                 "were not traced\n", tracer->per_chip_limit(), tracer->dropped());
      }
    }
    folder.commit();
    if (perf) {
      print_perf(*perf, lowering_s, fault_steps_s,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - output_start).count(),
                 fault_steps ? &*fault_steps : nullptr);
    }
  } catch (const Interrupted& e) {
    std::cerr << "tpusim: " << e.what() << "; " << out_dir.string() << " was left as it was\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "tpusim: cannot write the output folder " << out_dir.string() << ": " << e.what() << "\n";
    return 1;
  }
  if (!args.quiet) {
    print_table(scenario, report, std::cout);
    if (job) print_job(scenario, *job, *fault_steps, std::cout);
    std::cout << fmt::format("\n  wrote {}: {}\n", out_dir.string(), fmt::join(written, ", "));
  }
  return 0;
}

int validate_command(const std::string& scenario_name, const std::vector<std::string>& overrides,
                     const Limits& limits) {
  return with_exit_codes("tpusim validate", [&] {
    // The same checks as `run`, so that "ok" means the run will not be refused, but for a job given in steps: its
    // fault times and rates are checked against its end, which needs the simulated step (the note below).
    const Scenario s = load_scenario(scenario_name, overrides);
    const ir::ProgramSet programs = check_run(s, limits).lowered.programs;  // run_check.h
    std::size_t instructions = 0;
    for (const auto& p : programs.programs) instructions += p.size();
    // The estimate to four digits (readable.h): rounding it down to whole MiB printed "about 0 B" below 1 MiB.
    std::cout << fmt::format("{}: ok ({} on {}, {} chip{}, {} program{} of {} instructions; about {} of memory)\n",
                             s.name, s.workload.program.empty() ? s.workload.model.name : s.workload.program,
                             s.pod.name, s.pod.chip_count(), s.pod.chip_count() == 1 ? "" : "s",
                             programs.programs.size(), programs.programs.size() == 1 ? "" : "s", instructions,
                             readable(estimated_run_bytes(s, programs), Quantity::bytes));
    if (s.job.enabled && s.job.given_in_steps() && (!s.faults.faults.empty() || s.faults.rates.any())) {
      // The one check `ok` cannot cover: a job's end is job.steps x a step that only a simulation gives.
      const std::size_t n = s.faults.faults.size();
      const std::string listed = n == 0   ? ""
                                 : n == 1 ? "checks the fault's time against it"
                                          : "checks the faults' times against it";
      const std::string rates = s.faults.rates.any() ? "bounds the fault rates by it" : "";
      std::cout << fmt::format("  note: the job is given in steps ({}), so its end is known only once its step is "
                               "simulated; run {}{}{} before it simulates any step with a fault\n",
                               s.job.steps, listed, !listed.empty() && !rates.empty() ? " and " : "", rates);
    }
    return 0;
  });
}

namespace {

std::string source_text(const std::map<std::string, FieldOrigin>& origins, const FieldInfo& info) {
  const auto it = origins.find(info.key);
  if (it == origins.end()) return "";
  if (it->second.defaulted) {
    const bool assumption = info.doc.find("assumption") != std::string::npos;
    return assumption ? "default [assumption]" : "default";
  }
  std::string text = it->second.comment.empty() ? it->second.loc.str() : it->second.comment;
  return text;
}

template <class Spec>
void print_spec(const std::string& title, const FieldTable<Spec>& table, const Spec& spec,
                const std::map<std::string, FieldOrigin>& origins) {
  std::cout << title << "\n";
  const auto rendered = table.render(spec);
  const auto infos = table.infos();
  std::size_t key_w = 4, val_w = 5;
  for (const auto& [k, v] : rendered) {
    key_w = std::max(key_w, k.size());
    val_w = std::max(val_w, v.size());
  }
  std::cout << fmt::format("  {:<{}}  {:<{}}  {}\n", "field", key_w, "value", val_w, "source");
  for (std::size_t i = 0; i < rendered.size(); ++i) {
    std::cout << fmt::format("  {:<{}}  {:<{}}  {}\n", rendered[i].first, key_w, rendered[i].second, val_w,
                             source_text(origins, infos[i]));
  }
}

}  // namespace

int describe_command(const std::string& what, const std::string& name, const std::string& svg_path,
                     const std::vector<std::string>& overrides) {
  return with_exit_codes("tpusim describe", [&] {
    if (!overrides.empty() && what != "scenario") {
      std::cerr << fmt::format("tpusim describe: --set applies to 'describe scenario NAME' only (a what-if resolved "
                               "as run resolves it), not to 'describe {}'\n",
                               what);
      return 2;
    }
    if (what == "assumptions") {
      std::cout << "Modelling numbers that no source gives: model and lowering constants, and the calibrated\n"
                   "defaults of spec fields (`tpusim calibrate` checks them; other spec fields that are\n"
                   "assumptions say so in `tpusim describe chip`):\n";
      for (const auto& [layer, list] : {std::pair{"hardware models", models::model_assumptions()},
                                        std::pair{"lowering library", kernels::lowering_assumptions()}}) {
        std::cout << "\n" << layer << "\n";
        for (const Assumption& a : list) {
          std::cout << fmt::format("  {:<36} {}\n      {} ({})\n", a.name, a.value, a.why, a.where);
        }
      }
      return 0;
    }
    if (what == "params") {
      for (const auto& [section, infos] : all_field_tables()) {
        std::cout << section << "\n";
        for (const auto& f : infos) {
          const std::string def = !f.default_text            ? "required"
                                  : f.default_text->empty() ? "default \"\""
                                                            : "default " + *f.default_text;
          std::cout << fmt::format("  {:<28} {:<17} {:<18} {}\n", f.key, f.kind, def, f.doc);
        }
      }
      return 0;
    }
    if (name.empty()) {
      std::cerr << fmt::format("tpusim describe {}: a name is required (bundled: {})\n", what,
                               fmt::join(bundled_names(what == "chip"        ? "configs/chips"
                                                       : what == "pod"       ? "configs/pods"
                                                       : what == "model"     ? "configs/models"
                                                                             : "scenarios"),
                                         ", "));
      return 2;
    }
    if (!svg_path.empty() && what != "chip") {
      std::cerr << "tpusim describe: --svg draws a chip only ('describe chip NAME --svg FILE')\n";
      return 2;
    }
    if (what == "model") return describe_model(name, std::cout);
    if (what == "chip") {
      const ChipSpec chip = load_chip(name);
      // Refused before any output when the path is not tpusim's to write (output_folder.h).
      const fs::path target = svg_path.empty() ? fs::path() : check_output_file(svg_path);
      print_chip_description(chip, std::cout);
      std::cout << "(model constants that are assumptions: tpusim describe assumptions)\n";
      if (!svg_path.empty()) {
        std::ostringstream svg;
        write_chip_svg(chip, svg);
        write_file_atomically(target, [&](std::ostream& f) { f << sign_drawing(svg.str(), true); });
        std::cout << "wrote " << svg_path << "\n";
      }
    } else if (what == "pod") {
      const PodSpec pod = load_pod(name);
      (void)load_chip_of_pod(pod);  // refused as validate refuses it (too few ICI ports, wraparound, hosts)
      print_spec(fmt::format("pod {} ({} chips)", pod.name, pod.chip_count()), pod_fields(), pod, pod.origins);
    } else {
      const Scenario s = load_scenario(name, overrides);
      std::cout << "scenario " << s.name << (overrides.empty() ? " (resolved)\n" : " (resolved, with --set)\n");
      for (const auto& [k, v] : render_scenario(s)) std::cout << fmt::format("  {:<32} {}\n", k, v);
    }
    return 0;
  });
}

int lower_command(const std::string& scenario_name, const std::vector<std::string>& overrides,
                  const std::string& out, const Limits& limits) {
  return with_exit_codes("tpusim lower", [&] {
    const Scenario s = load_scenario(scenario_name, overrides);
    kernels::check_sharding(s.workload, s.pod);
    guard_lowering(s, limits);
    // tpusim replaces a program file it wrote and nobody changed: signed, with the checksum of what it holds.
    const fs::path target = out.empty() ? fs::path() : check_output_file(out);
    const kernels::LoweredWorkload lowered = programs_for(s);
    std::ostringstream program;
    ir::write_program_json(lowered.programs, program);
    // Signed on stdout too: a program saved with `>` is as much tpusim's as one written with -o.
    const std::string text = sign_program(program.str());
    if (out.empty()) {
      std::cout << text;
    } else {
      write_file_atomically(target, [&](std::ostream& f) { f << text; });
    }
    // The lowering's summary and memory plan: on stdout with -o, else on stderr beside the program.
    std::ostream& info = out.empty() ? std::cerr : std::cout;
    print_lowering_summary(s, lowered, info);
    return 0;
  });
}

int topo_command(const std::string& name, const std::string& dot_path, const std::string& svg_path,
                 const Limits& limits) {
  return with_exit_codes("tpusim topo", [&] {
    const PodSpec pod = load_pod(name);
    guard_topology(pod, limits);
    const ChipSpec chip = load_chip_of_pod(pod);
    const Topology topo = build_topology(pod, chip);
    const bool drawing = !dot_path.empty() || !svg_path.empty();
    // Refused before any work when the paths are not tpusim's to write.
    if (!dot_path.empty()) (void)check_output_file(dot_path);
    if (!svg_path.empty()) (void)check_output_file(svg_path);
    if (drawing && topo.chip_count() > kDotChipLimit) {
      std::cerr << fmt::format("tpusim topo: {} has {} chips; drawings (--dot, --svg) are limited to {} chips\n",
                               pod.name, topo.chip_count(), kDotChipLimit);
      return 2;
    }
    std::string dot;
    if (drawing) {
      std::ostringstream ss;
      write_dot(topo, ss);
      dot = ss.str();
    }
    std::cout << describe_topology(topo);
    if (!dot_path.empty()) {
      write_file_atomically(check_output_file(dot_path),
                            [&](std::ostream& out) { out << sign_drawing(dot, false); });
      std::cout << "wrote " << dot_path << "\n";
    }
    if (!svg_path.empty()) {
      std::ostringstream drawn;
      write_topology_svg(topo, drawn);
      const std::string svg = sign_drawing(drawn.str(), true);
      write_file_atomically(check_output_file(svg_path), [&](std::ostream& out) { out << svg; });
      std::cout << "wrote " << svg_path << "\n";
    }
    return 0;
  });
}

}  // namespace tpusim::tools
