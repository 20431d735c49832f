#pragma once
// Ctrl-C and SIGTERM: the tool installs handlers that only record the signal; long loops (the simulation
// kernel's activations, the cycle-level MXU reference, the lowering) poll interrupt_requested() and throw
// Interrupted, so the run unwinds through its destructors and leaves nothing half-written. The flag is the
// one process-wide state in tpusim that changes while it runs (a signal handler can reach nothing else);
// the other, the data folder (data_paths.h), is set once at start-up.
#include <stdexcept>
#include <string>

namespace tpusim {

// The run was stopped by a signal; exit code 128 + signal() (130 for Ctrl-C, 143 for SIGTERM).
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  [[nodiscard]] int signal() const { return signal_; }
  [[nodiscard]] int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

// Installs SIGINT and SIGTERM handlers that record the signal (without SA_RESTART, so a blocking wait()
// returns and its caller can look at the flag).
void install_interrupt_handlers();
// The signal received so far (SIGINT or SIGTERM), 0 if none.
[[nodiscard]] int interrupt_signal();
[[nodiscard]] inline bool interrupt_requested() { return interrupt_signal() != 0; }
// Throws Interrupted when a signal was received.
void throw_if_interrupted();
// For tests: behave as if `signal` had been received (0 clears).
void simulate_interrupt(int signal);

}  // namespace tpusim
