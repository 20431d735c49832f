#pragma once
// The chip's sequencer: it runs the program's unit queues (program_index.h) on the chip's blocks.
//
// Each queue starts its instructions in program order, each once its dependencies have completed and the unit
// behind the queue has a free slot (instruction_unit.h); an instruction's vmem_alloc is taken from its
// TensorCore's VMEM when it starts and its vmem_free given back when it completes. Barriers complete as soon
// as their dependencies have (chip-local). The sequencer also keeps the chip's time breakdown and each unit
// queue's busy / stalled / slot-bound time (UnitUsage in sim_result.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "block/block.h"
#include "block/counters.h"
#include "block/instruction_unit.h"
#include "program_index.h"
#include "vmem/vmem.h"

namespace tpusim::models {

class Sequencer final : public CompletionSink {
 public:
  Sequencer(const ChipContext& chip, const ProgramIndex& index);

  // Wiring by the chip: the unit (and its lane) behind queue `queue`, and the VMEM of each TensorCore.
  void bind(int queue, InstructionUnit* unit, int lane);
  void bind_vmem(int core, VmemSpace* vmem);
  // Fails the first instruction of a queue that has instructions but no unit (a block the chip lacks).
  void check_bound() const;

  // The interval since the previous activation ends at `now`; the chip was doing `activity`.
  void account(Tick now, Activity activity);
  // Retires what has finished (asking `units` in order) and starts what may start, until neither changes;
  // returns true. With `hold` (the chip runs ahead of the kernel: chip.h, "Running ahead") it returns false
  // instead, before an issue round in which an instruction that acts outside the chip could start (the ICI
  // queue's next one, which starts in the interconnect, or a barrier, which completes within the round):
  // the chip then runs the activation again at the kernel's time, whose retiring finds nothing new and whose
  // issue rounds are the ones this call would have run.
  bool run(Tick now, const std::vector<InstructionUnit*>& units, bool hold = false);
  [[nodiscard]] bool finished() const { return remaining_ == 0; }
  // Each unit instance's state for the interval starting now (after the activation's issues).
  void classify(Tick now);
  // Fails the run: nothing can progress (cannot happen for a program in topological order; kept as a guard).
  [[noreturn]] void deadlock() const;

  void complete(std::uint32_t instr, Tick started, Tick now) override;
  [[nodiscard]] ChipCounters& counters() { return counters_; }
  [[nodiscard]] const ChipCounters& counters() const { return counters_; }

 private:
  // Completion is a prefix count plus the later positions already completed: the ICI ports complete their
  // in-flight instructions in any order (net/ici_unit.h); every other queue completes in order. The slots bound
  // the instructions in flight, not how far past the oldest one they reach: while one collective waits (a
  // transfer lost on a failed link until its detection, seconds later) the other slots keep completing later
  // ones. The next 64 positions are bits; later ones (rare) a list, moved into the bits as the prefix grows.
  struct QueueState {
    std::uint32_t cursor = 0;     // next instruction of the queue to start
    std::uint32_t completed = 0;  // every position below has completed
    std::uint64_t ahead = 0;      // bit i: position completed + 1 + i has completed
    std::vector<std::uint32_t> beyond;  // completed positions past completed + 64, unordered
    InstructionUnit* unit = nullptr;
    int lane = 0;
    [[nodiscard]] bool done(std::uint32_t pos) const {
      if (pos < completed) return true;
      if (pos == completed) return false;
      if (pos - completed <= 64 && ((ahead >> (pos - completed - 1)) & 1) != 0) return true;
      // The list keeps a position exactly 64 past the prefix as well: the move below fills bits 0-63 before
      // the final shift, which leaves bit 63 (completed + 64) empty.
      return std::find(beyond.begin(), beyond.end(), pos) != beyond.end();
    }
    void complete(std::uint32_t pos) {
      if (pos != completed) {
        if (pos - completed <= 64) {
          ahead |= std::uint64_t{1} << (pos - completed - 1);
        } else {
          beyond.push_back(pos);
        }
        return;
      }
      ++completed;  // bit i is position completed + i until the shift below
      for (;;) {
        while (ahead & 1) {
          ahead >>= 1;
          ++completed;
        }
        bool next = false;  // position `completed` was in the list
        for (std::size_t i = 0; i < beyond.size();) {
          const std::uint32_t d = beyond[i] - completed;
          if (d >= 64) {
            ++i;
            continue;
          }
          ahead |= std::uint64_t{1} << d;
          next = next || d == 0;
          beyond[i] = beyond.back();
          beyond.pop_back();
        }
        if (!next) break;
      }
      ahead >>= 1;
    }
  };
  struct UnitPhase {
    bool busy = false;
    bool slots = false;  // busy, next instruction waiting for a slot
    int reason = -1;     // not busy, next instruction waiting: a StallReason; -1 = idle
  };

  bool try_issue(int queue, Tick now);
  // The next instruction of an ICI queue or of the barrier queue could start now (run's `hold`).
  [[nodiscard]] bool outside_ready(Tick now) const;
  void start(int queue, std::uint32_t instr, Tick now);
  [[nodiscard]] bool dependencies_done(const ir::Instruction& ins, int queue) const;
  // The first dependency of `ins` (in queue `queue`) not yet completed, as its queue; -1 if none.
  [[nodiscard]] int blocking_queue(const ir::Instruction& ins, int queue) const;

  const ChipContext& chip_;
  const ProgramIndex& index_;
  const ir::Program& program_;
  std::vector<QueueState> queues_;
  std::vector<int> outside_queues_;  // the ICI and barrier (sync) queues, for run's `hold`
  std::vector<VmemSpace*> vmem_;  // by TensorCore
  std::size_t remaining_;
  Tick last_account_ = 0;
  ChipCounters counters_;
  std::array<std::vector<UnitPhase>, kHwUnits> phase_;  // by HwUnit, per instance, since the last activation
};

}  // namespace tpusim::models
