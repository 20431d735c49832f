#pragma once
// One TensorCore: its MXU group, its VPU and its VMEM. The VPU executes one instruction at a time; the MXU
// group is a pipeline that accepts the next matmul while earlier ones still stream and drain (see
// MxuPipeline). Durations come from timing.h. The core's sequencing (which instruction may start) is done by
// the chip, which owns the dependency counters.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "ticks.h"
#include "tpusim/models/timing.h"

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

// The VPU time a TensorCore's matmuls reserve to pop their results out of the MXU result buffer
// (result_pop_cycles in timing.h). The VPU is in order: a reservation starts no earlier than the matmul's
// first results and after whatever the VPU already has (the running vector instruction, earlier
// reservations), and a vector instruction starts only once every reservation made before it has ended, even
// one still waiting for its matmul's first results (the gap is idle VPU time). The chip wakes at every
// reservation's start and end so the VPU's state changes only at activations. A collective's reductions
// reserve time here too, from the network's process (Chip::reserve_vpu, net/vpu_port.h), without waking the
// chip: its accounting counts them with reserved_within().
class ResultPops {
 public:
  // Reserves `duration` ticks starting at max(earliest, end of the last reservation); returns its end.
  Tick reserve(Tick earliest, Tick duration);
  // Drops the reservations ended by `now`.
  void retire(Tick now);
  // A reservation is popping at `now` (call after retire(now)).
  [[nodiscard]] bool active(Tick now) const { return !pending_.empty() && pending_.front().start <= now; }
  // Reservations not yet ended (call after retire(now)): a vector instruction must wait.
  [[nodiscard]] bool pending() const { return !pending_.empty(); }
  // The next start or end of a reservation after `now`; kNever if none.
  [[nodiscard]] Tick next_boundary(Tick now) const;
  // Ticks of the reservations not yet retired that fall within [from, to).
  [[nodiscard]] Tick reserved_within(Tick from, Tick to) const;
  // Ticks reserved over the run (the reservations never overlap each other or a vector instruction).
  [[nodiscard]] Tick busy_ticks() const { return total_; }

 private:
  struct Interval {
    Tick start;
    Tick end;
  };
  std::deque<Interval> pending_;  // in order, disjoint; back-to-back reservations merged
  Tick total_ = 0;
};

// Assumption: the TensorCore's sequencer holds up to 4 matmul instructions issued to its MXUs and not yet
// drained (an instruction buffer of a few entries; not published). Enough to keep the arrays streaming
// back to back when each instruction has at least a few tiles per array.
inline constexpr std::size_t kMxuInstructionsInFlight = 4;

// The MXU group of one TensorCore as a pipeline of matmul instructions. The chip issues a matmul when the
// pipeline has room; MxuDataflowModel::schedule() (or the cycle reference) places its tiles after what the
// arrays still hold, so fill and drain are paid once per back-to-back run. Instructions complete in issue
// order. Time inside a run is counted in MXU cycles from the tick the run began (the arrays went busy after
// being idle), so a lone instruction takes exactly cycles_to_ticks(bf16_cycles) from its start.
class MxuPipeline {
 public:
  explicit MxuPipeline(int arrays) : arrays_(static_cast<std::size_t>(arrays)) {}

  [[nodiscard]] bool full() const { return inflight_.size() >= kMxuInstructionsInFlight; }
  [[nodiscard]] bool busy() const { return !inflight_.empty(); }
  // When the oldest instruction completes; kNever when idle.
  [[nodiscard]] Tick finish() const { return inflight_.empty() ? kNever : inflight_.front().end; }
  [[nodiscard]] std::uint32_t instr() const { return inflight_.front().instr; }
  [[nodiscard]] Tick started() const { return inflight_.front().issued; }
  void finish_current() { inflight_.pop_front(); }

  // The MXU cycle (of the current run) an instruction issued at `now` is issued at; opens a new run, with
  // idle arrays, when nothing is in flight.
  [[nodiscard]] std::int64_t issue_cycle(Tick now, Hertz clock);
  [[nodiscard]] std::vector<MxuArrayState>& arrays() { return arrays_; }
  [[nodiscard]] std::int64_t last_end_cycle() const { return last_end_; }
  // VMEM streaming of an instruction issued at cycle `issue` needing `cycles` of VMEM time: it starts when
  // both the instruction is issued and the previous instruction's VMEM traffic of this run is done. Returns
  // the cycle it ends (the instruction cannot end earlier).
  [[nodiscard]] std::int64_t stream_vmem(std::int64_t issue, std::int64_t cycles);
  // Records an instruction issued at `now` whose last output leaves at `end_cycle` of the current run and
  // which cannot complete before `not_before` (its last result pop).
  void push(Tick now, std::uint32_t instr, std::int64_t end_cycle, Hertz clock, Tick not_before = 0);

  // Busy time is the union of the in-flight instructions' lifetimes (they overlap when pipelined).
  void account(Tick now) { busy_time_.advance(now, busy()); }
  [[nodiscard]] Tick busy_ticks() const { return busy_time_.total(); }
  [[nodiscard]] std::uint64_t executed() const { return executed_; }

 private:
  struct InFlight {
    std::uint32_t instr;
    Tick issued;
    Tick end;
  };
  std::vector<MxuArrayState> arrays_;
  std::deque<InFlight> inflight_;
  Tick epoch_ = 0;
  std::int64_t last_end_ = 0;
  std::int64_t vmem_free_ = 0;  // cycle of the run at which the VMEM traffic of earlier instructions ends
  std::uint64_t executed_ = 0;
  BusyTime busy_time_;
};

// Assumption: the cycle reference steps R x C x MXUs processing elements per cycle, about 1e8 PE-steps per
// wall second; an instruction needing more than 2e9 PE-cycles (some 20 s, e.g. beyond ~512^3 on a v4
// TensorCore) is refused under fidelity.mxu: cycle rather than silently taking minutes.
inline constexpr double kCycleReferencePeCycleLimit = 2e9;

// How a TensorCore times its matmuls: the dataflow's closed form (fidelity.mxu: fast), or the cycle-level
// reference stepping every processing element (fidelity.mxu: cycle; weight-stationary only, shapes within
// kCycleReferencePeCycleLimit). Both pipeline back-to-back instructions, with chip.mxu.step_overhead
// (`gap_cycles`, whole MXU cycles) between them: an array that still streams an earlier instruction of the run
// starts streaming this one gap_cycles after it would otherwise (its next weights may load meanwhile). A
// dtype whose MXU rate is not the bf16 rate (int8 at 2x, say) does not pipeline: it runs after the arrays drain
// (and the gap), for matmul_cycles().
class MxuTimer {
 public:
  MxuTimer(const MxuDataflowModel& dataflow, const MxuSpec& mxu, MxuFidelity fidelity, std::int64_t gap_cycles = 0)
      : dataflow_(dataflow), mxu_(mxu), fidelity_(fidelity), gap_cycles_(gap_cycles) {}
  // Empty when the instruction can be timed; otherwise why not (for an error naming the instruction).
  [[nodiscard]] std::string unsupported(const MatmulShape& s) const;
  // The end cycle of a matmul issued at cycle `issue` of `pipe`'s current run; updates the arrays' state.
  [[nodiscard]] std::int64_t schedule(const MatmulShape& s, DType dtype, std::int64_t issue, MxuPipeline& pipe) const;

 private:
  const MxuDataflowModel& dataflow_;
  const MxuSpec& mxu_;
  MxuFidelity fidelity_;
  std::int64_t gap_cycles_;
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
  TensorCore(std::uint64_t vmem_capacity, int mxus)
      : mxu(mxus), vmem(vmem_capacity), array_macs(static_cast<std::size_t>(mxus), 0.0) {}
  MxuPipeline mxu;
  ExecUnit vpu;
  ResultPops pops;  // the VPU's time popping MXU results, beside its vector instructions
  Vmem vmem;
  double useful_macs = 0;  // m x k x n summed over the matmuls this core ran
  std::vector<double> array_macs;  // useful MACs per MXU array (matmul_array_macs), summed over the matmuls
  std::uint64_t mxu_vmem_bytes = 0;  // operand bytes the MXUs read from and wrote to VMEM (matmul_vmem_bytes)
  std::uint64_t vpu_vmem_bytes = 0;  // same for the VPU (Instruction::bytes)

  // Pops run only while their matmul is in flight, so they need no term here.
  [[nodiscard]] bool computing() const { return mxu.busy() || vpu.busy(); }
  // The VPU runs a vector instruction or pops results at `now` (after pops.retire(now)).
  [[nodiscard]] bool vpu_busy(Tick now) const { return vpu.busy() || pops.active(now); }
  // VPU busy time: vector instructions plus result pops (disjoint).
  [[nodiscard]] Tick vpu_busy_ticks() const { return vpu.busy_ticks() + pops.busy_ticks(); }
};

}  // namespace tpusim::models
