#include "tools/src/mirrored_step.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "tools/src/child_pipe.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/logging.h"

namespace tpusim::tools {
namespace {

// The fork: the constructor returns in the child (child() true), and in the parent only when the child fell
// back (child() false, fallback() its reason); when the child verified (or failed in its own way, which it
// reports itself), the parent exits with the child's status.
class MirroredChild {
 public:
  MirroredChild();
  ~MirroredChild() {
    if (fd_ >= 0) close(fd_);  // the child's own error or interrupt: the parent exits with its status
  }
  MirroredChild(const MirroredChild&) = delete;
  MirroredChild& operator=(const MirroredChild&) = delete;

  [[nodiscard]] bool child() const { return fd_ >= 0; }
  [[nodiscard]] const std::string& fallback() const { return fallback_; }
  // In the child: the mirrored run verified; the child goes on as the program.
  void verified();
  // In the child: it did not; the parent simulates every chip.
  [[noreturn]] void fall_back(const std::string& why);

 private:
  int fd_ = -1;
  std::string fallback_;
};

MirroredChild::MirroredChild() {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("mirrored chips: pipe() failed");
  std::fflush(nullptr);  // nothing buffered before the fork is written twice
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("mirrored chips: fork() failed");
  if (pid == 0) {
    close(fds[0]);
    fd_ = fds[1];
    return;
  }
  close(fds[1]);
  const std::string message = read_from_child(fds[0], pid);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!message.empty() && message[0] == 'F') {
    fallback_ = message.substr(1);
    return;
  }
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    std::raise(WTERMSIG(status));
    _exit(128 + WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

void MirroredChild::verified() {
  const char v = 'V';
  (void)write_all(fd_, &v, 1);
  close(fd_);
  fd_ = -1;
}

void MirroredChild::fall_back(const std::string& why) {
  const std::string message = "F" + why;
  (void)write_all(fd_, message.data(), message.size());
  close(fd_);
  _exit(0);  // nothing of the child's is flushed: the parent writes everything
}

}  // namespace

models::SimResult simulate_step(const Scenario& scenario, const ir::ProgramSet& programs,
                                const models::SimOptions& options) {
  if (!models::runs_mirrored(scenario, programs, options)) return models::simulate(scenario, programs, options);
  std::string why;
  {
    MirroredChild child;
    if (child.child()) {
      try {
        models::SimResult result = models::simulate(scenario, programs, options);
        child.verified();
        return result;
      } catch (const models::MirrorFallback& e) {
        child.fall_back(e.why());
      }
    }
    why = child.fallback();
  }
  const std::string note = "fell back to simulating every chip: " + why;
  logger_for("pod")->warn("mirrored chips: {}", note);
  models::SimOptions every_chip = options;
  every_chip.mirror = false;
  models::SimResult result = models::simulate(scenario, programs, every_chip);
  result.cost.mirroring = note;
  return result;
}

}  // namespace tpusim::tools
