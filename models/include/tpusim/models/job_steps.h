#pragma once
// The job's simulated steps (models/README.md "Job"): which steps a job with faults needs simulated (one per
// lasting fault, one per axis for drawn links, the step each timed link or chip fault lands in), the costs the
// timeline composes from them, and the timeline. Each step is simulated by an injected StepRunner (the tool's
// runs it in a child process: a SystemC kernel runs once per process) that answers with a StepReport.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/models/job.h"
#include "tpusim/models/simulate.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models {

// What the job needs of one simulated step. Counts are doubles as summary.json has them.
struct StepReport {
  double step_time_s = 0;
  std::vector<double> link_utilization;  // by LinkId
  // The first cable failing or chip stopping in the step (SimResult::network.in_step_faults), else zeros.
  double transfers_cut = 0, in_flight_bytes = 0, delivered_bytes = 0;
  double retransmitted_bytes = 0;  // also: a link with a bit error rate, bytes sent again (set by FaultSteps)
  double lost_bytes = 0;
  double resent_done_s = 0;  // since the step's start: the last cut transfer sent again arrived (0: none)
  double dropped_transfers = 0, dropped_bytes = 0;
  // SimResult::progress (a step stopped by a chip fault).
  struct Progress {
    bool stopped = false;
    double instructions = 0, completed = 0, last_completion_s = 0;
  } progress;
  bool traced = false;  // the runner recorded the traced chips' spans
  std::vector<TraceSpan> spans;
  // What simulating it cost (SimulationCost, for --perf): wall time, chips simulated and mirrored, and how the
  // mirroring went.
  struct Cost {
    double wall_s = 0, chips_simulated = 0, chips_mirrored = 0;
    std::string mirroring;
  } cost;
};
[[nodiscard]] StepReport step_report(const SimResult& r);  // without spans

// The report between processes: a magic word, a version, then every field with its counts. decode refuses a
// message of another version, a short or long one, or a span of an unknown unit (nullopt, `why` says which).
[[nodiscard]] std::string encode_step_report(const StepReport& r);
[[nodiscard]] std::optional<StepReport> decode_step_report(std::string_view bytes, std::string& why);

// Simulates one step of `s` with `options` (the programs are the runner's); nullopt when it failed (the runner
// has said why). `what` names the step in messages.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  [[nodiscard]] virtual std::optional<StepReport> run(const Scenario& s, const SimOptions& options,
                                                      const std::string& what) = 0;
};

// One step simulated with a fault.
struct FaultStep : StepReport {
  std::string what;  // "[0,0,0] x+ link_down", ...
  bool ok = false;   // simulated (else the report is zeros)
  // A step the fault lands in (a timed link fault under reroute, or a chip_down, `stopped` then).
  bool hit = false;
  double fault_at_s = 0, detected_s = 0;  // since the step's start
  // For its trace: the fault ("link_down [0,0,0] x+") on its track ("[0,0,0] x+", "[1,1,0]"), in its chip's
  // process for a chip's fault.
  std::string fault_name;
  std::string fault_target;
  std::optional<std::uint32_t> fault_chip;
  // The fault's kind and, for a link fault, the direction it failed or degraded (the link map marks it).
  std::optional<FaultKind> fault_kind;
  std::optional<LinkId> fault_link;
};

// The scenario whose step is simulated: with a job, the checkpoint is written in full on the timeline every
// workload.checkpoint.every_steps steps, so the simulated step leaves out its amortised share.
[[nodiscard]] Scenario job_step_scenario(const Scenario& s);

// The steps the job needs simulated, each by `runner` in the constructor; the healthy step is the caller's.
class FaultSteps {
 public:
  // With a timed link_down or ocs_port_down under reroute, or a timed chip_down, it composes the job's
  // timeline with the `healthy` step time, to learn where each such fault lands in its step, and simulates
  // that step with the faults lasting then and the cable failing (the chip stopping, up to its detection) at
  // its tick; `max_faults` as run_job's.
  FaultSteps(const Scenario& s, const Topology& topo, Seconds healthy, StepRunner& runner,
             std::size_t max_faults = kMaxJobFaults);
  // The step time with `f` lasting; the healthy step when `f` needs no simulation of its own.
  [[nodiscard]] Seconds step_with(const ConcreteFault& f, Seconds healthy) const;
  // The step in flight when `f` lands `offset` after its start (JobCosts::step_hit): nullopt for a fault with
  // no such step or one simulated at another offset.
  [[nodiscard]] std::optional<Seconds> step_hit(const ConcreteFault& f, Seconds offset) const;
  [[nodiscard]] const std::vector<FaultStep>& steps() const { return steps_; }

 private:
  // A timed fault's own step, or for a link drawn from fault_rates its axis's (chip 0's + link: on a torus
  // every link of an axis is alike under translation).
  [[nodiscard]] std::optional<std::size_t> index_of(const ConcreteFault& f) const;

  const Topology& topo_;
  bool reroute_ = false;
  std::map<int, std::size_t> by_fault_;      // FaultSpec::index -> steps_
  std::map<int, std::size_t> by_axis_;       // axis -> steps_ (drawn links)
  std::map<int, std::size_t> hit_by_fault_;  // FaultSpec::index -> steps_ (the step it lands in)
  std::vector<FaultStep> steps_;
};

struct JobOutcome {
  JobCosts costs;
  JobResult result;
  std::vector<FaultStep> hit_steps;  // the steps simulated with a fault at its tick inside them
};

// The costs the timeline composes from the simulated step (no check of the fault times).
[[nodiscard]] JobCosts job_costs(const Scenario& s, Seconds step, const FaultSteps& fault_steps);
// The length of a healthy job: job.duration, or for a job given in steps, steps x the step plus the
// checkpoints written between them.
[[nodiscard]] Seconds healthy_job_length(const Scenario& s, Seconds step);
// Throws ConfigError for a job.duration shorter than the step (job.h, check_duration_holds_a_step), and for a
// timed fault at or after the end of a job given in steps (one given by duration was checked when the scenario
// was read). Cheap: call it before any step with a fault is simulated.
void check_fault_times_of_steps(const Scenario& s, Seconds step);
// Composes the job's timeline from the simulated step; throws ConfigError for a timed fault at or after the
// job's end. `max_faults` as run_job's.
[[nodiscard]] JobOutcome run_job_timeline(const Scenario& s, const Topology& topo, Seconds step,
                                          const FaultSteps& fault_steps, std::size_t max_faults = kMaxJobFaults);

}  // namespace tpusim::models
