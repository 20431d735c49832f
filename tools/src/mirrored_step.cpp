#include "tools/src/mirrored_step.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/src/child_pipe.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/logging.h"

namespace tpusim::tools {
namespace {

// Refining the classes (models::MirrorFallback::refined) is worth another mirrored run while the classes stay
// few: past a 32nd of the chips (or 64 on a small pod), or after this many refinements, every chip is
// simulated instead. A mirrored run costs the network plus its classes' chips, and every refinement's run comes
// on top: a chip stopping inside the 175B pod step refined to 220, 467, 721 and 950 classes of 4096, each run
// costlier, before a run of every chip (bench/README.md); a link failing refines to 32 or 64.
constexpr int kMaxRefinements = 32;
constexpr std::size_t kMinClassCap = 64;

// The fork: the constructor returns in the child (child() true), and in the parent only when the child fell
// back (child() false, fallback() its reason, refined() the classes to try next, if any); when the child
// verified (or failed in its own way, which it reports itself), the parent exits with the child's status.
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
  [[nodiscard]] const std::vector<std::uint32_t>& refined() const { return refined_; }
  // In the child: the mirrored run verified; the child goes on as the program.
  void verified();
  // In the child: it did not; the parent tries `refined` classes, or simulates every chip when it is empty.
  [[noreturn]] void fall_back(const std::string& why, const std::vector<std::uint32_t>& refined);

 private:
  int fd_ = -1;
  std::string fallback_;
  std::vector<std::uint32_t> refined_;
};

MirroredChild::MirroredChild() {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("mirrored chips: pipe() failed");
  // The child dies with this process: killed, it must not go on as an orphan and commit the run's output.
  const pid_t pid = fork_tied_child();
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
  // 'F', the refined classes' count and each chip's representative (native 4-byte words), then the reason.
  if (!message.empty() && message[0] == 'F' && message.size() >= 1 + sizeof(std::uint32_t)) {
    std::uint32_t count = 0;
    std::memcpy(&count, message.data() + 1, sizeof count);
    const std::size_t words = 1 + sizeof count + std::size_t{count} * sizeof(std::uint32_t);
    if (message.size() >= words) {
      refined_.resize(count);
      if (count > 0) std::memcpy(refined_.data(), message.data() + 1 + sizeof count, count * sizeof(std::uint32_t));
      fallback_ = message.substr(words);
      return;
    }
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

void MirroredChild::fall_back(const std::string& why, const std::vector<std::uint32_t>& refined) {
  std::string message = "F";
  const auto count = static_cast<std::uint32_t>(refined.size());
  message.append(reinterpret_cast<const char*>(&count), sizeof count);
  message.append(reinterpret_cast<const char*>(refined.data()), refined.size() * sizeof(std::uint32_t));
  message += why;
  (void)write_all(fd_, message.data(), message.size());
  close(fd_);
  _exit(0);  // nothing of the child's is flushed: the parent writes everything
}

std::size_t class_count(const std::vector<std::uint32_t>& representative) {
  std::size_t classes = 0;
  for (std::uint32_t c = 0; c < representative.size(); ++c) classes += representative[c] == c ? 1 : 0;
  return classes;
}

}  // namespace

models::SimResult simulate_step(const Scenario& scenario, const ir::ProgramSet& programs,
                                const models::SimOptions& options) {
  if (!models::runs_mirrored(scenario, programs, options)) return models::simulate(scenario, programs, options);
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto refined_note = [](int refinements, double seconds) {
    return fmt::format("{} refinement{} of the classes ({} s)", refinements, refinements == 1 ? "" : "s",
                       fmt::format("{:.3g}", seconds));
  };
  models::SimOptions attempt = options;
  std::string why;
  int refinements = 0;
  for (;; ++refinements) {
    MirroredChild child;
    if (child.child()) {
      try {
        models::SimResult result = models::simulate(scenario, programs, attempt);
        child.verified();
        if (refinements > 0) {
          // The runs that refined the classes are part of what this step cost.
          const double before = since_start() - result.cost.wall_seconds;
          result.cost.wall_seconds += before;
          result.cost.mirroring += " after " + refined_note(refinements, before);
        }
        return result;
      } catch (const models::MirrorFallback& e) {
        child.fall_back(e.why(), e.refined());
      }
    }
    why = child.fallback();
    const std::vector<std::uint32_t>& refined = child.refined();
    if (refined.empty() || refinements + 1 > kMaxRefinements ||
        class_count(refined) > std::max(refined.size() / 32, kMinClassCap)) {
      break;
    }
    logger_for("pod")->debug("mirrored chips: refining the classes to {} ({})", class_count(refined), why);
    attempt.mirror_partition = refined;
  }
  // The mirrored runs that did not verify are part of what this step cost.
  const double mirrored_runs = since_start();
  const std::string note = "fell back to simulating every chip" +
                           (refinements > 0 ? " after " + refined_note(refinements, mirrored_runs) : "") +
                           ": " + why;
  logger_for("pod")->warn("mirrored chips: {}", note);
  models::SimOptions every_chip = options;
  every_chip.mirror = false;
  models::SimResult result = models::simulate(scenario, programs, every_chip);
  result.cost.wall_seconds += mirrored_runs;
  result.cost.mirroring = note;
  return result;
}

}  // namespace tpusim::tools
