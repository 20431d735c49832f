#pragma once
// The MXU group of a TensorCore (the mxu block: `count` systolic arrays): a pipeline of matmul instructions
// timed by the chip's dataflow (timing.h) or the cycle reference. Its results drain through the unit the path
// "mxu -> vpu" names (block/result_drain.h); without that path they leave without occupying a VPU.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ticks.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

// Assumption: the TensorCore's sequencer holds up to 4 matmul instructions issued to its MXUs and not yet
// drained (an instruction buffer of a few entries; not published). Enough to keep the arrays streaming
// back to back when each instruction has at least a few tiles per array.
inline constexpr std::size_t kMxuInstructionsInFlight = 4;

// Assumption: the cycle reference steps R x C x MXUs processing elements per cycle, about 1e8 PE-steps per
// wall second; an instruction needing more than 2e9 PE-cycles (some 20 s, e.g. beyond ~512^3 on a v4
// TensorCore) is refused under fidelity.mxu: cycle rather than silently taking minutes.
inline constexpr double kCycleReferencePeCycleLimit = 2e9;

// The MXU group of one TensorCore as a pipeline of matmul instructions. A matmul is issued when the pipeline
// has room; MxuDataflowModel::schedule() (or the cycle reference) places its tiles after what the arrays
// still hold, so fill and drain are paid once per back-to-back run. Instructions complete in issue order.
// Time inside a run is counted in MXU cycles from the tick the run began (the arrays went busy after being
// idle), so a lone instruction takes exactly cycles_to_ticks(bf16_cycles) from its start.
class MxuPipeline {
 public:
  explicit MxuPipeline(int arrays) : arrays_(static_cast<std::size_t>(arrays)) {}

  [[nodiscard]] bool full() const { return count_ >= kMxuInstructionsInFlight; }
  [[nodiscard]] bool busy() const { return count_ > 0; }
  // When the oldest instruction completes; kNever when idle.
  [[nodiscard]] Tick finish() const { return count_ == 0 ? kNever : inflight_[head_].end; }
  [[nodiscard]] std::uint32_t instr() const { return inflight_[head_].instr; }
  [[nodiscard]] Tick started() const { return inflight_[head_].issued; }
  void finish_current() {
    head_ = (head_ + 1) % kMxuInstructionsInFlight;
    --count_;
  }

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

  // The tick at which cycle `cycle` of the current run falls.
  [[nodiscard]] Tick tick_of(std::int64_t cycle, Hertz clock) const { return epoch_ + cycles_to_ticks(cycle, clock); }
  // The earliest end of an in-flight instruction after `now`; kNever if none (a fused instruction that ended
  // its compute and waits for its HBM stream is no future event of the pipeline).
  [[nodiscard]] Tick next_end_after(Tick now) const;
  // Computing since the previous account(): an in-flight instruction had not yet ended then (every end is a
  // chip activation, next_end_after). A fused instruction waiting for its HBM stream past its end is not.
  [[nodiscard]] bool computing() const { return count_ > 0 && inflight_[(head_ + count_ - 1) % kMxuInstructionsInFlight].end > last_; }

  // Busy time is the union of the in-flight instructions' lifetimes up to their ends (they overlap when
  // pipelined).
  void account(Tick now) {
    busy_time_.advance(now, computing());
    last_ = now;
  }
  [[nodiscard]] Tick busy_ticks() const { return busy_time_.total(); }

 private:
  struct InFlight {
    std::uint32_t instr;
    Tick issued;
    Tick end;
  };
  std::vector<MxuArrayState> arrays_;
  std::array<InFlight, kMxuInstructionsInFlight> inflight_{};  // a ring: count_ entries from head_, in issue order
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  Tick epoch_ = 0;
  std::int64_t last_end_ = 0;
  std::int64_t vmem_free_ = 0;  // cycle of the run at which the VMEM traffic of earlier instructions ends
  Tick last_ = 0;               // the previous account()
  BusyTime busy_time_;
};

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

}  // namespace tpusim::models
