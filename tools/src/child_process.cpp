#include "tools/src/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>

#include "tools/src/trace.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::tools {

std::optional<models::StepReport> ChildStepRunner::run(const Scenario& s, const models::SimOptions& options,
                                                       const std::string& what) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    int status = 1;
    try {
      models::SimOptions o = options;
      std::optional<TraceRecorder> recorder;
      if (trace_) {
        recorder.emplace(trace_->chips, trace_->limit);
        o.trace = [&recorder](const models::TraceSpan& span) { recorder->record(span); };
      }
      models::StepReport report = models::step_report(models::simulate(s, programs_, o));
      if (recorder) {
        report.traced = true;
        report.spans = recorder->spans();
      }
      const std::string bytes = models::encode_step_report(report);
      status = write_all(fds[1], bytes.data(), bytes.size()) ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tpusim: the step with %s failed to simulate: %s\n", what.c_str(), e.what());
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  const std::string bytes = read_from_child(fds[0], pid);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  throw_if_interrupted();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  std::string why;
  std::optional<models::StepReport> report = models::decode_step_report(bytes, why);
  if (!report) std::fprintf(stderr, "tpusim: the step with %s sent back %s\n", what.c_str(), why.c_str());
  return report;
}

}  // namespace tpusim::tools
