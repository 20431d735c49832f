#include "tpusim/core/interrupt.h"

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

}  // namespace tpusim
