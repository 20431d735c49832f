#pragma once
// What a simulation is asked to do besides its scenario and programs (SimOptions: faults inside the step,
// degradations, tracing, mirroring), and what it hands back beside SimResult: the vocabulary simulate() and
// the models' layers share (tpusim/models/simulate.h declares the entry point).
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/topology/routing.h"

namespace tpusim::models {

// One executed instruction, for timelines (Perfetto / Chrome trace). The label is
// programs.program_for(chip).label_of(programs.program_for(chip)[instruction]).
struct TraceSpan {
  std::uint32_t chip = 0;
  std::uint8_t core = 0;  // the instruction's TensorCore (0 for chip-level units)
  ir::UnitKind unit = ir::UnitKind::sync;
  std::uint32_t instruction = 0;
  Seconds start;  // when the unit started it (DMA: issued, including the path latency)
  Seconds end;    // when it completed (DMA: retired)
};

// A link that runs slower for the whole step (a link_degraded fault the job lives with): the channel keeps
// bandwidth_fraction of its rate, its hop takes added_latency more, and with a bit error rate each chunk
// (fidelity.link_chunk) is sent 1 / (1 - p) times on average, p = 1 - (1 - ber)^(chunk bits), which divides
// its rate by that factor (retransmitted bytes: sim_result's links bytes x (factor - 1), models/src/job/job_steps.cpp).
struct LinkDegradation {
  LinkId link;
  double bandwidth_fraction = 1;
  Seconds added_latency;
  double bit_error_rate = 0;
};

// A chip that runs slower for the whole step: a straggler's clock (and with it its on-chip VMEM bandwidth,
// which runs at the core clock) at clock_fraction; a degraded HBM at hbm_bandwidth_fraction of its rate.
struct ChipDegradation {
  ChipId chip;
  double clock_fraction = 1;
  double hbm_bandwidth_fraction = 1;
};

// A cable that fails at a tick inside the step (a link_down or ocs_port_down the job reroutes around, landing
// in this step; models/src/job/job_steps.cpp). At `at` both directions stop: the transfers still moving bytes over
// them are cut (LinkModel::cut) and, by `in_flight`, sent again at once over the surviving route from the first
// byte not delivered, or sent again in full at `detected`; from `at` the router is fault_aware around every
// cable failed so far (its route cache rebuilt), and a collective whose first chip starts at or after `at` is
// planned for the surviving graph. Needs fidelity.collectives per_step or links chunked to matter: the
// transport runs no aggregate flows in a step with a timed fault.
struct TimedLinkFault {
  LinkId link;       // a directed link of the cable
  Seconds at;        // since the step's start
  Seconds detected;  // since the step's start, >= at: the heartbeat model declares the link failed
};

// A chip that stops at a tick inside the step (a chip_down landing in this step; models/src/job/job_steps.cpp). From
// `at` the chip completes nothing more (its instructions in flight and later ones never complete); its cables
// fail as a timed link fault's do (TimedLinkFault), except that transfers to or from the chip are dropped, not
// sent again, and so is every later send to or from it; the others run on and stall on what needs it. The
// runtime learns of it at `detected`: the simulation stops there, or at `at` (SimOptions::end_at_stop), and
// SimResult::progress says how far the step got. Collectives keep the plans they were compiled with: before its
// detection the job does not know.
struct TimedChipFault {
  ChipId chip;
  Seconds at;        // since the step's start
  Seconds detected;  // since the step's start, >= at
};

struct SimOptions {
  // Optional; called from inside the simulation with the simulated time, at most about once per wall second.
  std::function<void(double sim_seconds)> progress;
  // Optional; called as each instruction completes (per chip in completion order; chips interleave, and a
  // chip running ahead, models/README.md "Running ahead", reports before other chips' earlier completions).
  // Costs one branch per instruction when unset. Filter chips in the callback for big pods.
  std::function<void(const TraceSpan&)> trace;
  // Links and chips failed for the whole step (a fault the job reroutes around, models/src/job/job_steps.cpp); needs
  // fidelity.routing fault_aware, which routes around them; collectives are planned for the surviving graph
  // (kernels::plan_collective with the FaultSet: a ring the failure cuts may run as a line).
  FaultSet failed;
  std::vector<LinkDegradation> degraded_links;
  std::vector<ChipDegradation> degraded_chips;
  // Cables failing inside the step, and what happens to the transfers in flight on them.
  std::vector<TimedLinkFault> timed_links;
  // Chips stopping inside the step; the simulation ends at the first detection, or with end_at_stop at the first
  // stop (its tick's events done: what the stop cuts is counted; nothing completes at or after it).
  std::vector<TimedChipFault> timed_chips;
  bool end_at_stop = false;
  InFlightPolicy in_flight = InFlightPolicy::retransmit;
  // A chip with no ICI instruction in flight runs its next activations within one kernel event (models/README.md,
  // "Running ahead"): the outputs are the same either way, only faster. false runs every activation from the
  // kernel (the tool sets it from TPUSIM_RUN_AHEAD=off, to compare the two on any command).
  bool run_ahead = true;
  // Mirrored chips (models/README.md "Mirrored chips"): where every chip of a translation class provably runs
  // the same history, only one per class is simulated and the others mirror it, with their inputs checked
  // against its own; on any difference simulate() throws MirrorFallback, and the step must be simulated again
  // with every chip, in a fresh process (the tool runs the mirrored step in a child: tools/src/mirrored_step.h).
  // The outputs are the same either way. false simulates every chip (the tool: TPUSIM_MIRROR=off).
  bool mirror = true;
  // The classes to mirror: each chip's representative, the lowest chip of its class (a MirrorFallback's
  // refined(), to try next). Empty: the translation classes, with every chip a fault strikes or degrades in a
  // class of its own.
  std::vector<std::uint32_t> mirror_partition;
  // Tests of the fallback: the first check of a mirrored run fails (the tool: TPUSIM_MIRROR=mismatch).
  bool mirror_mismatch = false;
};

// A mirrored run did not verify (a mirror's input differed from its representative's, or the run failed and
// a run of every chip must name the chip): nothing of it may be used, the trace spans already delivered
// included. Simulate the step again, in a fresh process: with SimOptions::mirror_partition = refined() when
// that is not empty (finer classes: the chips that diverged from their class's representative, split off by
// what they received), else with SimOptions::mirror false.
class MirrorFallback : public std::runtime_error {
 public:
  explicit MirrorFallback(std::string why, std::vector<std::uint32_t> refined = {});
  [[nodiscard]] const std::string& why() const { return why_; }
  [[nodiscard]] const std::vector<std::uint32_t>& refined() const { return refined_; }

 private:
  std::string why_;
  std::vector<std::uint32_t> refined_;
};

}  // namespace tpusim::models
