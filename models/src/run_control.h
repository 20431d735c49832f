#pragma once
// State of one simulation run shared by its chips: progress reporting, the count of unfinished chips, and
// the first error. Owned by the Pod and passed to each chip by reference (no globals).
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>

#include "ticks.h"
#include "tpusim/models/sim_options.h"

namespace tpusim::models {

class RunControl {
 public:
  // `clock_check_interval`: activations between reads of the wall clock; 1 when activations can be long
  // (the cycle-level MXU reference steps a whole matmul in one), a few thousand otherwise.
  RunControl(std::function<void(double)> progress, std::function<void(const TraceSpan&)> trace,
             std::uint32_t chips, std::uint64_t clock_check_interval = 4096);

  // Every chip process activation calls this once; it counts events, reports progress about once per wall
  // second, and throws Interrupted after a Ctrl-C or SIGTERM (the chip records it through fail()).
  void on_activation(Tick now);
  void chip_finished() { --unfinished_; }
  // Records the first failure (an exception must not unwind through the SystemC kernel). Chips stop re-arming
  // their events once failed() is true, so the kernel runs out of events within one activation per chip;
  // this avoids sc_stop(), which prints reports on the user's terminal.
  void fail(std::exception_ptr error);
  [[nodiscard]] bool failed() const { return static_cast<bool>(error_); }

  [[nodiscard]] std::uint64_t activations() const { return activations_; }
  [[nodiscard]] std::uint32_t unfinished() const { return unfinished_; }
  [[nodiscard]] const std::exception_ptr& error() const { return error_; }
  [[nodiscard]] bool tracing() const { return static_cast<bool>(trace_); }
  // Chips may run ahead of the kernel (chip/chip.h, "Running ahead"; SimOptions::run_ahead).
  [[nodiscard]] bool run_ahead() const { return run_ahead_; }
  void set_run_ahead(bool on) { run_ahead_ = on; }
  // The last tick the run simulates (a chip fault's stop or detection; kNever: until every chip finished): a
  // chip runs ahead of the kernel to no activation after it, as the kernel, stopping there, would not run it.
  [[nodiscard]] Tick horizon() const { return horizon_; }
  void set_horizon(Tick last) { horizon_ = last; }
  void trace(const TraceSpan& span) const { trace_(span); }

 private:
  std::function<void(double)> progress_;
  std::function<void(const TraceSpan&)> trace_;
  std::chrono::steady_clock::time_point last_report_;
  std::uint64_t activations_ = 0;
  std::uint64_t clock_check_interval_;
  std::uint32_t unfinished_;
  bool run_ahead_ = true;
  Tick horizon_ = kNever;
  std::exception_ptr error_;
};

}  // namespace tpusim::models
