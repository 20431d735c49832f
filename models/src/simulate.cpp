#include "tpusim/models/simulate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include <fmt/format.h>

#include "chip/simulate_with_blocks.h"
#include "mirror/mirrored_run.h"
#include "mirror/mirroring.h"
#include "net/simulate_with_planner.h"
#include "pod.h"
#include "run_control.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/logging.h"

namespace tpusim::models {

namespace {

SimResult run(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options,
              const net::InterconnectOptions& network, const BlockRegistry& registry) {
  // Must precede the first SystemC call, which prints the banner otherwise; the caller's choice wins.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const auto wall_start = std::chrono::steady_clock::now();
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    throw std::logic_error("simulate() runs at most once per process: a SystemC kernel cannot be restarted");
  }
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS)) {
    throw std::logic_error("the models count time in picoseconds, SystemC's default resolution");
  }

  const auto chips = static_cast<std::uint32_t>(scenario.pod.chip_count());
  // A chip stopping inside the step (SimOptions::timed_chips): the run ends at the first detection (or, with
  // end_at_stop, the first stop), and the completions up to then measure how far the step got. A chip running
  // ahead of the kernel may complete instructions past the end: they are not counted (nor traced).
  Tick end = kNever;
  for (const TimedChipFault& f : network.timed_chips) {
    end = std::min(end, options.end_at_stop ? to_ticks(f.at) : std::max(to_ticks(f.at), to_ticks(f.detected)));
  }
  StepProgress progress;
  std::function<void(const TraceSpan&)> trace = options.trace;
  if (end != kNever) {
    for (std::uint32_t c = 0; c < chips; ++c) progress.instructions += programs.program_for(c).size();
    trace = [&progress, end, user = options.trace](const TraceSpan& span) {
      if (to_ticks(span.end) > end) return;
      ++progress.completed;
      progress.last_completion = std::max(progress.last_completion, span.end);
      if (user) user(span);
    };
  }
  // Mirrored chips: a run that does not verify throws MirrorFallback (the caller runs every chip, elsewhere).
  std::string note;
  std::optional<TranslationClasses> classes = mirror_classes(scenario, programs, options, network, note);
  std::unique_ptr<Mirroring> mirroring;
  if (classes && trace) {  // a mirror's spans are its representative's, under its own id
    trace = [&mirroring, inner = trace](const TraceSpan& span) {
      inner(span);
      for (const std::uint32_t m : mirroring->mirrors(span.chip)) {
        TraceSpan copy = span;
        copy.chip = m;
        inner(copy);
      }
    };
  }
  RunControl control(options.progress, trace, classes ? classes->classes : chips,
                     scenario.fidelity.mxu == MxuFidelity::cycle ? 1 : 4096);
  control.set_run_ahead(options.run_ahead);
  control.set_horizon(end);
  if (classes) {
    mirroring = std::make_unique<Mirroring>(std::move(*classes), control, options.mirror_mismatch);
  }
  auto pod = std::make_unique<Pod>("pod", scenario, programs, control, network, registry, options.degraded_chips,
                                   mirroring.get());
  const auto elaborated = std::chrono::steady_clock::now();
  // The kernel runs the events of a tick before the one it stops at: at the stop, its tick's are run too (its
  // cuts), and what completes after it is not counted (the trace above).
  if (end == kNever) sc_core::sc_start();
  else sc_core::sc_start(sc_core::sc_time::from_value(options.end_at_stop ? end + 1 : end));
  if (mirroring) {
    mirroring->finish();
    if (!control.error() && control.unfinished() == 0) pod->interconnect()->check_mirrors_end();
    // A mismatch, or a failure of another kind (an error in a program, a deadlock: a run of every chip reports
    // it, naming its chip), throws MirrorFallback; an interrupt is reported as one. The pod is left to the
    // kernel, as below. A step a chip stops in ends with chips unfinished.
    std::string why = mirroring->failed() ? mirroring->failure() : "";
    if (why.empty() && (control.error() || (control.unfinished() > 0 && end == kNever))) {
      try {
        if (control.error()) std::rethrow_exception(control.error());
        why = "the mirrored run failed; the full run reports why";
      } catch (const Interrupted&) {
      } catch (...) {
        why = "the mirrored run failed; the full run reports why";
      }
    }
    if (!why.empty()) {
      (void)pod.release();
      throw MirrorFallback(why, mirroring->refinable() ? mirroring->refined() : std::vector<std::uint32_t>{});
    }
    const std::uint64_t mirrored = chips - mirroring->classes().classes;
    note = fmt::format("{} of {} chips simulated, {} mirrored; inputs verified", mirroring->classes().classes, chips,
                       mirrored);
  }
  if (control.error()) std::rethrow_exception(control.error());
  if (control.unfinished() > 0 && end == kNever) {
    // Nothing more can happen and chips have work left: the programs wait on each other (a recv whose send
    // waits on it, a collective some chip of its group never starts).
    throw std::runtime_error(fmt::format("the simulation ran out of events before every chip finished: {} (the "
                                         "programs wait on each other: a deadlock)",
                                         pod->stuck()));
  }

  SimResult result = pod->collect(end == kNever ? 0 : end);
  if (end != kNever) {
    progress.stopped = control.unfinished() > 0;
    result.progress = progress;
  }
  result.cost.chips_mirrored = mirroring ? chips - mirroring->classes().classes : 0;
  result.cost.mirroring = note;
  result.cost.kernel_events = control.activations();
  result.cost.delta_cycles = sc_core::sc_delta_count();
  result.cost.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  result.cost.elaboration_seconds = std::chrono::duration<double>(elaborated - wall_start).count();
  logger_for("pod")->debug("simulated {} chips: step {} s, {} kernel events, {:.3f} s wall",
                           result.cost.chips_simulated, result.step_time.value(), result.cost.kernel_events,
                           result.cost.wall_seconds);
  // The pod stays with the kernel, which cannot run again in this process: SystemC's registries remove a
  // module, port or export by a linear search, so tearing down a pod of ~10^5 block modules would take
  // seconds (quadratic) to free memory the process is about to return. The kernel's registries still reach
  // it, so it is not a leak.
  (void)pod.release();
  return result;
}

net::InterconnectOptions network_of(const SimOptions& options) {
  net::InterconnectOptions network;
  network.faults = options.failed;
  network.degraded = options.degraded_links;
  network.timed = options.timed_links;
  network.in_flight = options.in_flight;
  network.timed_chips = options.timed_chips;
  network.end_at_stop = options.end_at_stop;
  return network;
}

BlockRegistry builtin_blocks() {
  BlockRegistry registry;
  register_chip_blocks(registry);
  return registry;
}

}  // namespace

SimResult simulate(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options) {
  return run(scenario, programs, options, network_of(options), builtin_blocks());
}

bool runs_mirrored(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options) {
  std::string why_not;
  return mirror_classes(scenario, programs, options, network_of(options), why_not).has_value();
}

MirrorFallback::MirrorFallback(std::string why, std::vector<std::uint32_t> refined)
    : std::runtime_error("mirrored chips did not verify (" + why + "): simulate the step again with " +
                         (refined.empty() ? "SimOptions::mirror false" : "the refined classes") +
                         ", in a fresh process"),
      why_(std::move(why)),
      refined_(std::move(refined)) {}

SimResult net::simulate_with_network(const Scenario& scenario, const ir::ProgramSet& programs,
                                     const SimOptions& options, const net::InterconnectOptions& network) {
  return run(scenario, programs, options, network, builtin_blocks());
}

SimResult simulate_with_blocks(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options,
                               const BlockRegistry& registry) {
  return run(scenario, programs, options, net::InterconnectOptions{}, registry);
}

}  // namespace tpusim::models

// libsystemc.so defines main() and calls sc_main() from it, so every executable linking SystemC needs an
// sc_main symbol even though its own main() runs instead. This is the only definition in tpusim; do not add
// another.
int sc_main(int /*argc*/, char* /*argv*/[]) { return 1; }
