#include "mirror/mirrored_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <stdexcept>

#include "pod.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::models {

std::optional<TranslationClasses> mirror_classes(const Scenario& scenario, const ir::ProgramSet& programs,
                                                 const SimOptions& options, const net::InterconnectOptions& network,
                                                 std::string& why_not) {
  why_not.clear();
  if (!options.mirror) {
    why_not = "mirrored chips off";
  } else if (!uses_ici(programs)) {
    why_not = "no ICI instruction";
  } else if (!options.failed.links.empty() || !options.failed.chips.empty() || !options.degraded_links.empty() ||
             !options.timed_links.empty() || !options.timed_chips.empty() || !network.faults.links.empty() ||
             !network.faults.chips.empty() || !network.degraded.empty() || !network.timed.empty() ||
             !network.timed_chips.empty()) {
    why_not = "a fault, degraded link or stopping chip in the step";
  } else if (!options.degraded_chips.empty()) {
    why_not = "a straggler or degraded chip";
  } else if (scenario.fidelity.links != LinkFidelity::flow) {
    why_not = "chunked links (chunks of one tick are served in process order)";
  } else if (scenario.fidelity.routing != RoutingPolicy::dor) {
    why_not = "routing other than dimension order";
  }
  if (!why_not.empty()) return std::nullopt;
  const Topology topo = build_topology(scenario.pod, scenario.chip);
  TranslationClasses classes = translation_classes(topo, programs);
  if (classes.classes == topo.chip_count()) {
    why_not = "no two chips in one translation class";
    return std::nullopt;
  }
  return classes;
}

MirrorChild::MirrorChild() {
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
  // The child verified (or failed in its own way, which it has reported): it was the program.
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    std::raise(WTERMSIG(status));
    _exit(128 + WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

void MirrorChild::verified() {
  const char v = 'V';
  (void)write_all(fd_, &v, 1);
  close(fd_);
  fd_ = -1;
}

void MirrorChild::fall_back(const std::string& why) {
  const std::string message = "F" + why;
  (void)write_all(fd_, message.data(), message.size());
  close(fd_);
  _exit(0);  // nothing of the child's is flushed: the parent writes everything
}

}  // namespace tpusim::models
