#pragma once
// One TensorCore: its MXU group, its VPU and its VMEM. The units execute one instruction at a time, in queue
// order; their durations come from timing.h. The core's sequencing (which instruction may start) is done by
// the chip, which owns the dependency counters.
#include <cstdint>

#include "ticks.h"

namespace tpusim::models {

// A unit that executes one instruction at a time for a known duration (the MXU group or the VPU).
class ExecUnit {
 public:
  [[nodiscard]] bool busy() const { return busy_; }
  [[nodiscard]] Tick finish() const { return busy_ ? finish_ : kNever; }
  [[nodiscard]] std::uint32_t instr() const { return instr_; }
  [[nodiscard]] Tick started() const { return start_; }

  void start(Tick now, std::uint32_t instr, Tick duration) {
    busy_ = true;
    instr_ = instr;
    start_ = now;
    finish_ = now + duration;
    ++executed_;
  }
  void finish_current() { busy_ = false; }

  void account(Tick now) { busy_time_.advance(now, busy_); }
  [[nodiscard]] Tick busy_ticks() const { return busy_time_.total(); }
  [[nodiscard]] std::uint64_t executed() const { return executed_; }

 private:
  bool busy_ = false;
  Tick start_ = 0;
  Tick finish_ = 0;
  std::uint32_t instr_ = 0;
  std::uint64_t executed_ = 0;
  BusyTime busy_time_;
};

// VMEM occupancy of one TensorCore. Instructions allocate when they start and free when they end
// (ir::Instruction::vmem_alloc / vmem_free); the capacity is a hard limit (chip.vmem.capacity).
class Vmem {
 public:
  explicit Vmem(std::uint64_t capacity) : capacity_(capacity) {}
  // False (and no change) if `bytes` more do not fit.
  [[nodiscard]] bool allocate(std::uint64_t bytes);
  // False (and occupancy clamped at zero) if more is freed than is allocated.
  [[nodiscard]] bool release(std::uint64_t bytes);
  [[nodiscard]] std::uint64_t used() const { return used_; }
  [[nodiscard]] std::uint64_t peak() const { return peak_; }
  [[nodiscard]] std::uint64_t capacity() const { return capacity_; }

 private:
  std::uint64_t capacity_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
};

struct TensorCore {
  explicit TensorCore(std::uint64_t vmem_capacity) : vmem(vmem_capacity) {}
  ExecUnit mxu;
  ExecUnit vpu;
  Vmem vmem;
  double useful_macs = 0;  // m x k x n summed over the matmuls this core ran

  [[nodiscard]] bool computing() const { return mxu.busy() || vpu.busy(); }
};

}  // namespace tpusim::models
