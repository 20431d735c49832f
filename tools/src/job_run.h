#pragma once
// `tpusim run` of a scenario with a job (job:, faults:, fault_rates:; docs/faults.md): the steady-state step
// is simulated once in full, the steps under each lasting fault (a link routed around), the step each timed
// link fault lands in (with the cable failing at its tick) and the step each timed chip_down lands in (the chip
// stopping at its tick, up to the detection) are simulated once each in forked child processes (a SystemC
// kernel runs once per process), and the job's timeline over all its steps is composed from them
// (models/job.h). Writes the fault timeline and the job's goodput into
// summary.json and onto stdout.
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/job.h"
#include "tpusim/models/simulate.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// The scenario whose step is simulated: with a job, the checkpoint is written in full on the timeline every
// workload.checkpoint.every_steps steps, so the simulated step leaves out its amortised share.
[[nodiscard]] Scenario job_step_scenario(const Scenario& s);

// One step simulated with a lasting fault.
struct FaultStep {
  std::string what;  // "[0,0,0] x+ link_down", ...
  double step_time_s = 0;
  std::vector<double> link_utilization;  // by LinkId
  double retransmitted_bytes = 0;        // a link with a bit error rate, or a cable failing in the step: bytes sent again
  bool ok = false;
  // A step simulated with a cable failing at its tick inside it (the step in flight when a timed link fault
  // lands, under reroute): when, and the transfers in flight on the cable then (SimResult::in_step_faults).
  bool hit = false;
  double fault_at_s = 0, detected_s = 0;  // since the step's start
  double transfers_cut = 0, in_flight_bytes = 0, delivered_bytes = 0, lost_bytes = 0;
  double resent_done_s = 0;  // since the step's start: the last cut transfer sent again arrived (0: none)
  // A step stopped by a chip_down at its tick (hit and stopped): simulated up to the detection (step_time_s);
  // the transfers to or from the chip dropped, and how far the step got (SimResult::progress).
  bool stopped = false;
  double dropped_transfers = 0, dropped_bytes = 0;
  double instructions = 0, completed = 0, last_completion_s = 0;
  // For its trace (trace-fault-K.json, with --trace): the fault ("link_down [0,0,0] x+"), on a chip's track or
  // the failed link's, and the instructions of the traced chips.
  std::string fault_name;
  std::string fault_target;          // the track's name: "[0,0,0] x+", "[1,1,0]"
  std::optional<std::uint32_t> fault_chip;  // a chip's fault: its track is in the chip's process
  bool traced = false;
  std::vector<models::TraceSpan> spans;
};

// What the steps simulated with a fault trace (`tpusim run --trace`): the chips, and each chip's share of the
// spans kept (TraceRecorder).
struct FaultTraceOptions {
  std::set<std::uint32_t> chips;
  std::size_t limit = 0;
};

// The steps the job needs simulated under lasting faults, each run in a child process before the run's own
// simulation.
class FaultSteps {
 public:
  // With a timed link_down or ocs_port_down under reroute, or a timed chip_down, it also simulates the healthy
  // step (in a child) and composes the job's timeline with it, to learn where each such fault lands in its step,
  // and simulates that step with the cable failing (the chip stopping, up to its detection) at its tick (one
  // child each).
  // With `trace`, each step simulated with a fault records the traced chips' instructions (written as
  // trace-fault-K.json by write_fault_trace).
  FaultSteps(const Scenario& s, const Topology& topo, const ir::ProgramSet& programs,
             std::optional<FaultTraceOptions> trace = std::nullopt);
  // The step time with `f` lasting; the healthy step when `f` needs no simulation of its own.
  [[nodiscard]] Seconds step_with(const models::ConcreteFault& f, Seconds healthy) const;
  // The step in flight when `f` lands `offset` after its start (JobCosts::step_hit): simulated in the
  // constructor; nullopt for a fault with no such step or one simulated at another offset.
  [[nodiscard]] std::optional<Seconds> step_hit(const models::ConcreteFault& f, Seconds offset) const;
  [[nodiscard]] const std::vector<FaultStep>& steps() const { return steps_; }
  // The link-utilization maps worth drawing (steps with ICI traffic): file name and utilization by LinkId.
  [[nodiscard]] std::vector<std::pair<std::string, const FaultStep*>> link_maps() const;
  // The traces to write (with --trace): trace-fault-K.json per step simulated with a fault, numbered as
  // job.simulated_steps[K] and links-fault-K.svg.
  [[nodiscard]] std::vector<std::pair<std::string, const FaultStep*>> traces() const;

 private:
  // Which simulated step stands for a fault: a timed fault's own, or for a link drawn from fault_rates the
  // representative of its axis (chip 0's + link: on a torus every link of an axis is alike under translation).
  [[nodiscard]] std::optional<std::size_t> index_of(const models::ConcreteFault& f) const;

  const Topology& topo_;
  bool reroute_ = false;
  std::map<int, std::size_t> by_fault_;  // FaultSpec::index -> steps_
  std::map<int, std::size_t> by_axis_;   // axis -> steps_ (drawn links)
  std::map<int, std::size_t> hit_by_fault_;  // FaultSpec::index -> steps_ (the step it lands in)
  std::vector<FaultStep> steps_;
};

struct JobOutcome {
  models::JobCosts costs;
  models::JobResult result;
  std::vector<FaultStep> hit_steps;  // the steps simulated with a cable failing at its tick inside them
};

// Composes the job's timeline from the simulated step; throws ConfigError (bad input) for a timed fault at or
// after the job's end.
[[nodiscard]] JobOutcome run_job_timeline(const Scenario& s, const Topology& topo, Seconds step,
                                          const FaultSteps& fault_steps);
// The costs the timeline composes from the simulated step (no check of the fault times).
[[nodiscard]] models::JobCosts job_costs(const Scenario& s, Seconds step, const FaultSteps& fault_steps);

// summary.json's `faults.timeline` and `job` (docs/summary-format.md).
void add_job_json(nlohmann::ordered_json& summary, const Scenario& s, const JobOutcome& job,
                  const FaultSteps& fault_steps);
void print_job(const Scenario& s, const JobOutcome& job, std::ostream& out);
// The job's timeline in the Chrome trace-event format (Perfetto), written beside the step's trace.json as
// job-trace.json (microseconds over the whole job, hours long): a "job" track with the job's span, and one
// track per failed component with an instant event at the fault and spans for its detection (fault to
// detection) and recovery (detection to resumption), named by the recovery. job_trace.cpp.
void write_job_trace(const Scenario& s, const JobOutcome& job, std::ostream& out);
// One step simulated with a fault as a Chrome trace (trace-fault-K.json, fault_trace.cpp): the traced chips'
// instructions as trace.json has them, plus the fault's own track (in its chip's process for a chip fault, in
// a "failed links" process for a link's) with an instant event at its tick (0 for a fault lasting from the
// step's start), the detection span from the tick to the detection, and the resend span of the transfers the
// cut caught, from their resend (the tick: retransmit; the detection: lose) to the last one's delivery.
void write_fault_trace(const Topology& topo, const ir::ProgramSet& programs, const FaultTraceOptions& trace,
                       const FaultStep& step, std::ostream& out);

}  // namespace tpusim::tools
