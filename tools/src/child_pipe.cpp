#include "tools/src/child_pipe.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "tpusim/core/interrupt.h"

namespace tpusim::tools {

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
