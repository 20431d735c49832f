#include "tools/src/child_pipe.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "tpusim/core/interrupt.h"

namespace tpusim::tools {

pid_t fork_tied_child() {
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // The parent-death signal goes with the thread that forked; tpusim forks only from its main thread.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(128 + SIGKILL);
  return 0;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string read_from_child(int fd, pid_t child) {
  std::string bytes;
  char buf[1 << 16];
  bool forwarded = false;
  for (;;) {
    // Before the read too: the signal may have come since the child started.
    if (const int s = interrupt_signal(); s != 0 && !forwarded) {
      kill(child, s);
      forwarded = true;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      bytes.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return bytes;
    }
  }
}

}  // namespace tpusim::tools
