#pragma once
// What `tpusim run` of a scenario with a job (job:, faults:, fault_rates:; docs/faults.md) writes: the fault
// timeline and the job's goodput into summary.json and onto stdout, its traces. The steps it simulates and the
// timeline are the job layer's (tpusim/models/job_steps.h); child_process.h runs each step in a child process.
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/src/charts/svg.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/job_steps.h"
#include "tpusim/models/simulate.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// What the steps simulated with a fault trace (`tpusim run --trace`): the chips, and each chip's share of the
// spans kept (TraceRecorder).
struct FaultTraceOptions {
  std::set<std::uint32_t> chips;
  std::size_t limit = 0;
};

// The link-utilization maps worth drawing (steps with ICI traffic): links-fault-K.svg and the step.
[[nodiscard]] std::vector<std::pair<std::string, const models::FaultStep*>> fault_link_maps(
    const models::FaultSteps& steps);
// What links-fault-K.svg marks in a step, from the fault the step was simulated with (FaultStep::fault_kind,
// fault_link, fault_chip): failed, the chip of a chip_down or host_down and both directions of the cable of a
// link_down or ocs_port_down; degraded, the direction of a link_degraded and the chip of a straggler or
// hbm_degraded.
[[nodiscard]] LinkMapMarks fault_marks(const Topology& topo, const models::FaultStep& step);
// The traces to write (with --trace): trace-fault-K.json per step simulated with a fault, numbered as
// job.simulated_steps[K] and links-fault-K.svg.
[[nodiscard]] std::vector<std::pair<std::string, const models::FaultStep*>> fault_traces(
    const models::FaultSteps& steps);

// Under reroute, with more than one cable down at once (JobResult::cables_down_at_most), what the step time
// after them leaves out: each step with a failed cable is simulated with that cable alone. Nullopt otherwise.
// The run prints it as a warning on stderr, and the job's output carries it (job.notes, the printout).
[[nodiscard]] std::optional<std::string> several_cables_note(const Scenario& s, const models::JobResult& r);
// summary.json's `faults.timeline` and `job` (docs/summary-format.md).
void add_job_json(nlohmann::ordered_json& summary, const Scenario& s, const models::JobOutcome& job,
                  const models::FaultSteps& fault_steps);
// The job on stdout: wall time and goodput, every step simulated in full (the healthy one and each with a fault)
// with its time against the healthy step, the checkpoint costs, the losses and the fault timeline.
void print_job(const Scenario& s, const models::JobOutcome& job, const models::FaultSteps& fault_steps,
               std::ostream& out);
// The job's timeline in the Chrome trace-event format (Perfetto), written beside the step's trace.json as
// job-trace.json (microseconds of the job's wall clock, hours long). A "job" process: the job's span, every
// checkpoint write kept (JobResult::checkpoint_writes), each fault's lost work (the work since the checkpoint
// it rolled back to, up to the fault) and the job's downtime after each detection ("recovery: <how>", up to
// the resumption, holding its repair, restart, reconfiguration and restore in turn). A "faults" process: one
// track per failed component with an instant event at the fault and its detection span. Spans that would
// overlap on a track take a second one ("lost work 2"). docs/faults.md says how to read it. job_trace.cpp.
void write_job_trace(const Scenario& s, const models::JobOutcome& job, std::ostream& out);
// One step simulated with a fault as a Chrome trace (trace-fault-K.json, fault_trace.cpp): the traced chips'
// instructions as trace.json has them, plus the fault's own track (in its chip's process for a chip fault, in
// a "failed links" process for a link's) with an instant event at its tick (0 for a fault lasting from the
// step's start), the detection span from the tick to the detection, and the resend span of the transfers the
// cut caught, from their resend (the tick: retransmit; the detection: lose) to the last one's delivery.
void write_fault_trace(const Topology& topo, const ir::ProgramSet& programs, const FaultTraceOptions& trace,
                       const models::FaultStep& step, std::ostream& out);

}  // namespace tpusim::tools
