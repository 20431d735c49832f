#pragma once
// The interface between the chip's sequencer and a block that executes instructions (MXU, VPU, DMA engine,
// host, ICI ports, SparseCore). The sequencer owns program order and dependencies; a unit owns timing.
//
// Contract: the sequencer starts an instruction only when can_start() says a slot is free; the unit
// reports every started instruction exactly once through retire(), in the order its queue completes them (a
// queue completes its instructions in program order, except the ICI ports', whose in-flight instructions
// complete in any order: the sequencer's dependency counters keep a window for that). A unit with several
// queues (the DMA engine has one per TensorCore) calls them lanes.
#include <cstdint>

#include "ticks.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  // `instr` started at `started` has completed at `now`.
  virtual void complete(std::uint32_t instr, Tick started, Tick now) = 0;
};

class InstructionUnit {
 public:
  virtual ~InstructionUnit() = default;
  // Lane `lane` may take its next instruction now (a slot is free).
  [[nodiscard]] virtual bool can_start(int lane, Tick now) const = 0;
  virtual void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) = 0;
  // Hands every instruction finished by `now` to `sink`; returns whether there was any.
  virtual bool retire(Tick now, CompletionSink& sink) = 0;
  // For the stall statistics: work in flight on `lane`, and every slot of `lane` taken.
  [[nodiscard]] virtual bool busy(int lane, Tick now) const = 0;
  [[nodiscard]] virtual bool full(int lane, Tick now) const = 0;
  // Time within [from, to) the unit was busy with work started from outside the chip's activations (a
  // collective's reduction the network reserves on a VPU), which busy() at the last activation could not see.
  [[nodiscard]] virtual Tick busy_between(int /*lane*/, Tick /*from*/, Tick /*to*/) const { return 0; }
};

}  // namespace tpusim::models
