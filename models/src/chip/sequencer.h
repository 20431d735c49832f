#pragma once
// The chip's sequencer: it runs the program's unit queues (program_index.h) on the chip's blocks.
//
// Each queue starts its instructions in program order, each once its dependencies have completed and the unit
// behind the queue has a free slot (instruction_unit.h); an instruction's vmem.alloc is taken from its
// TensorCore's VMEM when it starts and its vmem.free given back when it completes. Barriers complete as soon
// as their dependencies have (chip-local). The sequencer also keeps the chip's time breakdown and each unit
// queue's busy / stalled / slot-bound time (UnitUsage in sim_result.h).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "block/block.h"
#include "block/counters.h"
#include "block/instruction_unit.h"
#include "completion_window.h"
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
  // Where an unfinished chip stands once nothing more can happen: its oldest instruction started and never
  // completed, or else the first that never started ("instruction 3 'x' (recv) started and never completed").
  [[nodiscard]] std::string stuck() const;

  void complete(std::uint32_t instr, Tick started, Tick now) override;
  [[nodiscard]] ChipCounters& counters() { return counters_; }
  [[nodiscard]] const ChipCounters& counters() const { return counters_; }

 private:
  struct QueueState {
    std::uint32_t cursor = 0;  // next instruction of the queue to start
    CompletionWindow completed;  // completion_window.h
    InstructionUnit* unit = nullptr;
    int lane = 0;
  };
  struct UnitPhase {
    bool busy = false;
    bool slots = false;  // busy, next instruction waiting for a slot
    int reason = -1;     // not busy, next instruction waiting: a stall reason (stall_on); -1 = idle
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
  std::vector<std::vector<UnitPhase>> phase_;  // by HwUnit, per instance, since the last activation
};

}  // namespace tpusim::models
