// One step simulated with a fault as a Chrome trace (contract in job_run.h, write_fault_trace).
#include <algorithm>

#include <fmt/format.h>

#include "tools/src/job_run.h"
#include "tools/src/output_folder.h"
#include "tools/src/trace.h"

namespace tpusim::tools {

void write_fault_trace(const Topology& topo, const ir::ProgramSet& programs, const FaultTraceOptions& trace,
                       const models::FaultStep& step, std::ostream& out) {
  TraceRecorder recorder(trace.chips, trace.limit);
  for (const models::TraceSpan& s : step.spans) recorder.record(s);
  TraceMark base;
  if (step.fault_chip) {
    base.pid = *step.fault_chip;
    base.process = fmt::format("chip {}", *step.fault_chip);
    base.track = "fault";
  } else {
    base.pid = static_cast<std::uint32_t>(topo.chip_count());
    base.process = "failed links";
    base.track = step.fault_target;
  }
  std::vector<TraceMark> marks;
  TraceMark fault = base;
  fault.instant = true;
  fault.start = fault.end = Seconds(step.fault_at_s);
  fault.name = step.hit ? step.fault_name : step.fault_name + " (from the step's start)";
  marks.push_back(fault);
  if (step.hit && step.detected_s > step.fault_at_s) {
    TraceMark detection = base;
    detection.name = "detection";
    detection.start = Seconds(step.fault_at_s);
    detection.end = Seconds(step.detected_s);
    marks.push_back(detection);
  }
  if (step.progress.stopped) {
    // Nothing completes from the last completion (or the fault) to the detection, where the simulation ends.
    TraceMark stall = base;
    stall.name = "step stalled: nothing completes";
    stall.start = Seconds(std::max(step.progress.last_completion_s, step.fault_at_s));
    stall.end = Seconds(step.detected_s);
    stall.args = {{"completed", step.progress.completed}, {"instructions", step.progress.instructions},
                  {"transfers_dropped", step.dropped_transfers}};
    marks.push_back(stall);
  }
  if (step.hit && step.transfers_cut > 0 && step.resent_done_s > 0) {
    // Lost transfers go again in full at the detection; retransmitted ones at once from the first byte lost.
    TraceMark resend = base;
    const bool lost = step.lost_bytes > 0;
    resend.name = lost ? "resend (lost at the cut)" : "retransmit (cut)";
    resend.start = Seconds(lost ? step.detected_s : step.fault_at_s);
    resend.end = Seconds(step.resent_done_s);
    resend.args = {{"transfers", step.transfers_cut},
                   {"bytes", lost ? step.lost_bytes : step.retransmitted_bytes}};
    marks.push_back(resend);
  }
  recorder.write(programs, out, marks, fmt::format("{}: the step with {}", kWrittenByTpusim, step.what));
}

}  // namespace tpusim::tools
