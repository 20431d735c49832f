#pragma once
// The job's steps simulated in child processes (a SystemC kernel runs once per process): ChildStepRunner forks
// a child per step, which simulates it and sends its StepReport back through a pipe (encode_step_report); a
// SIGINT or SIGTERM the parent receives is sent on to the child (read_from_child). FaultStepServer lets the
// run's own simulation be the job's healthy step (models/README.md "Job").
#include <sys/types.h>

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

// The job's fault steps need the healthy step's time (where a timed fault lands), and a process that has run a
// SystemC kernel cannot start another. So the server is forked before the run's own simulation and waits;
// steps() sends it that simulation's step time, the server composes the FaultSteps there (a ChildStepRunner
// child per step) and sends back each step's `what` and report in order, and steps() composes the same
// FaultSteps from them (same inputs, same requests). Usable from a mirrored run's child, which goes on as the
// program. Without steps() (the simulation failed) the server exits when the pipe closes.
class FaultStepServer {
 public:
  // `max_faults`: the FaultSteps' (models::run_job's), here and in the server.
  FaultStepServer(const Scenario& s, const Topology& topo, ChildStepRunner& runner, std::size_t max_faults);
  ~FaultStepServer();
  FaultStepServer(const FaultStepServer&) = delete;
  FaultStepServer& operator=(const FaultStepServer&) = delete;
  // Throws Interrupted when a signal stopped the server.
  [[nodiscard]] models::FaultSteps steps(Seconds healthy);

 private:
  const Scenario& scenario_;
  const Topology& topo_;
  std::size_t max_faults_;
  pid_t pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
};

}  // namespace tpusim::tools
