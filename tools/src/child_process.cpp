#include "tools/src/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "tools/src/child_pipe.h"
#include "tools/src/environment.h"
#include "tools/src/mirrored_step.h"
#include "tools/src/trace.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::tools {

std::optional<models::StepReport> ChildStepRunner::run(const Scenario& s, const models::SimOptions& options,
                                                       const std::string& what) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork_tied_child();
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
      apply_environment(o);
      std::optional<TraceRecorder> recorder;
      if (trace_) {
        recorder.emplace(trace_->chips, trace_->limit);
        o.trace = [&recorder](const models::TraceSpan& span) { recorder->record(span); };
      }
      models::StepReport report = models::step_report(simulate_step(s, programs_, o));
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

namespace tpusim::tools {
namespace {

// The server's answer: per step asked, the `what`'s length and bytes, then the report's length (0: the step
// failed) and encode_step_report's bytes, each length 8 native bytes.
class Records : public models::StepRunner {
 public:
  explicit Records(ChildStepRunner* runner) : runner_(runner) {}
  // In the server: runs the step and records the answer.
  std::optional<models::StepReport> run(const Scenario& s, const models::SimOptions& options,
                                        const std::string& what) override {
    if (runner_ == nullptr) return replay(what);
    std::optional<models::StepReport> report = runner_->run(s, options, what);
    const std::string bytes = report ? models::encode_step_report(*report) : std::string();
    for (const std::string* part : {&what, &bytes}) {
      const std::uint64_t n = part->size();
      wire_.append(reinterpret_cast<const char*>(&n), sizeof n);
      wire_.append(*part);
    }
    return report;
  }
  [[nodiscard]] const std::string& wire() const { return wire_; }
  // In the parent: the server's answer, replayed in order.
  void set_wire(std::string wire) { wire_ = std::move(wire); }

 private:
  std::optional<models::StepReport> replay(const std::string& what) {
    std::string got_what, bytes;
    if (!next(got_what) || !next(bytes) || got_what != what) {
      std::fprintf(stderr, "tpusim: the fault-step server sent no answer for the step with %s\n", what.c_str());
      read_at_ = wire_.size();
      return std::nullopt;
    }
    if (bytes.empty()) return std::nullopt;  // the step failed (its child said why)
    std::string why;
    std::optional<models::StepReport> report = models::decode_step_report(bytes, why);
    if (!report) std::fprintf(stderr, "tpusim: the step with %s sent back %s\n", what.c_str(), why.c_str());
    return report;
  }
  bool next(std::string& part) {
    std::uint64_t n = 0;
    if (wire_.size() - read_at_ < sizeof n) return false;
    std::memcpy(&n, wire_.data() + read_at_, sizeof n);
    read_at_ += sizeof n;
    if (wire_.size() - read_at_ < n) return false;
    part = wire_.substr(read_at_, n);
    read_at_ += n;
    return true;
  }

  ChildStepRunner* runner_;
  std::string wire_;
  std::size_t read_at_ = 0;
};

// Reads exactly `size` bytes, retrying when a signal interrupts the read; false at the pipe's end or on a
// signal recorded (the tool's handlers).
bool read_exact(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR && !interrupt_requested()) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

FaultStepServer::FaultStepServer(const Scenario& s, const Topology& topo, ChildStepRunner& runner,
                                 std::size_t max_faults)
    : scenario_(s), topo_(topo), max_faults_(max_faults) {
  int to[2], from[2];
  if (pipe(to) != 0) throw std::runtime_error("the fault-step server: pipe() failed");
  if (pipe(from) != 0) {
    close(to[0]);
    close(to[1]);
    throw std::runtime_error("the fault-step server: pipe() failed");
  }
  pid_ = fork_tied_child();
  if (pid_ < 0) throw std::runtime_error("the fault-step server: fork() failed");
  if (pid_ == 0) {
    close(to[1]);
    close(from[0]);
    double healthy = 0;
    if (!read_exact(to[0], &healthy, sizeof healthy)) _exit(0);
    Records records(&runner);
    try {
      (void)models::FaultSteps(s, topo, Seconds(healthy), records, max_faults);
    } catch (...) {  // the parent meets the same error composing the same steps from the answers so far
    }
    (void)write_all(from[1], records.wire().data(), records.wire().size());
    _exit(0);
  }
  close(to[0]);
  close(from[1]);
  to_server_ = to[1];
  from_server_ = from[0];
}

FaultStepServer::~FaultStepServer() {
  if (to_server_ >= 0) close(to_server_);
  if (from_server_ >= 0) close(from_server_);
  int status = 0;  // not this process's child in a mirrored run's child: ECHILD
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

models::FaultSteps FaultStepServer::steps(Seconds healthy) {
  const double t = healthy.value();
  const bool sent = write_all(to_server_, &t, sizeof t);
  close(to_server_);
  to_server_ = -1;
  Records answers(nullptr);
  if (sent) answers.set_wire(read_from_child(from_server_, pid_));
  close(from_server_);
  from_server_ = -1;
  throw_if_interrupted();
  return models::FaultSteps(scenario_, topo_, healthy, answers, max_faults_);
}

}  // namespace tpusim::tools
