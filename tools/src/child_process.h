#pragma once
// The job's steps simulated in child processes (a SystemC kernel runs once per process): ChildStepRunner forks
// a child per step, which simulates it and sends its StepReport back through a pipe (encode_step_report); a
// SIGINT or SIGTERM the parent receives is sent on to the child (read_from_child).
#include <optional>
#include <string>

#include "tools/src/job_run.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/job_steps.h"

namespace tpusim::tools {

class ChildStepRunner : public models::StepRunner {
 public:
  // With `trace`, each step records the traced chips' instructions (StepReport::spans).
  ChildStepRunner(const ir::ProgramSet& programs, std::optional<FaultTraceOptions> trace)
      : programs_(programs), trace_(std::move(trace)) {}
  // nullopt when the child failed (it said why on stderr) or its report did not decode; throws Interrupted
  // when a signal stopped it.
  std::optional<models::StepReport> run(const Scenario& s, const models::SimOptions& options,
                                        const std::string& what) override;

 private:
  const ir::ProgramSet& programs_;
  std::optional<FaultTraceOptions> trace_;
};

}  // namespace tpusim::tools
