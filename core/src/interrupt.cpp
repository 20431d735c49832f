#include "tpusim/core/interrupt.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace tpusim {
namespace {

// Written by the handler, read by the loops; sig_atomic_t is what a handler may write.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void record_signal(int signal) { g_signal = signal; }

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error(fmt::format("interrupted by {}", signal == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM")),
      signal_(signal) {}

void install_interrupt_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: waits return EINTR so their loops see the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() { return g_signal; }

void throw_if_interrupted() {
  if (const int s = g_signal; s != 0) throw Interrupted(s);
}

void simulate_interrupt(int signal) { g_signal = signal; }

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
    if (const int s = g_signal; s != 0 && !forwarded) {  // before the read too: it may have come since the fork
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

}  // namespace tpusim
