#pragma once
// What every hardware block of a chip is (models/README.md has the picture).
//
// A block is an sc_module in the chip's module tree (pod.chip3.tensorcore1.mxu). Blocks talk to each other
// through standard SystemC means bound by the elaborator from the chip's `paths`: engines reach memories
// through TLM-2.0 sockets (memory/transfer.h), the MXU reaches the VPU that drains its results through an
// sc_port (block/result_drain.h). Blocks have no SystemC process of their own: the chip drives time (DESIGN.md, "SystemC
// rules": few pending kernel events). At every activation of its one method the chip calls, on every block,
// account() with the state the block had since the previous activation, then advance() to bring it to the
// current time, runs the program's issue loop, and re-arms its single event at the earliest next_event().
// Calls between blocks happen inside that activation, at its tick (ChipContext::now, which is sc_time_stamp()
// unless the chip runs ahead: chip.h), with zero timing annotation.
#include <cstdint>
#include <string>

#include <systemc>

#include "run_control.h"
#include "ticks.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

struct ChipCounters;

// What every block of one chip is built with (constructor injection; nothing is looked up globally).
struct ChipContext {
  std::uint32_t chip = 0;
  const ChipSpec& spec;
  const ir::Program& program;
  RunControl& control;
  const MxuDataflowModel& dataflow;  // the MXU dataflow of chip.mxu.dataflow
  MxuFidelity mxu_fidelity = MxuFidelity::fast;
  // The tick the chip's current activation runs at: sc_time_stamp() or, while the chip runs ahead of the
  // kernel (chip.h, "Running ahead"), a later tick. A block that needs the time outside a call that passes it
  // (a memory taking a request) reads it here, never from the kernel.
  Tick now = 0;
  // Throws the SimulationError that names the chip, the instruction and its label.
  [[noreturn]] void fail(std::uint32_t instr, const std::string& what) const;
};

// What a block is doing, for the chip's time breakdown (TimeBreakdown in sim_result.h). The chip charges each
// interval to the highest activity of its blocks, in this order.
enum class Activity : std::uint8_t { idle, host, memory, communication, compute };

class Block : public sc_core::sc_module {
 public:
  // `block` is the block's name in the chip's composition (a ChipBlock of the chip's spec, which outlives the
  // chip: a reference, not a copy per block of every chip); `instance` the TensorCore it sits in (or, for a
  // TensorCore, its index); 0 for the other chip-level blocks. As for every sc_module, `name` must come from
  // the caller (the factory), so the module stays on SystemC's hierarchy stack while its children are built.
  Block(const sc_core::sc_module_name& name, BlockKind kind, const std::string& block, int instance)
      : sc_core::sc_module(name), kind_(kind), block_(block), instance_(instance) {}

  [[nodiscard]] BlockKind block_kind() const { return kind_; }
  [[nodiscard]] const std::string& block_name() const { return block_; }
  [[nodiscard]] int instance() const { return instance_; }

  // The state since the previous activation ends at `now` (integrate busy time).
  virtual void account(Tick /*now*/) {}
  // Brings the block to `now`: serve transfers, retire what ended. Completions are handed over later, when the
  // chip asks its units to retire (instruction_unit.h).
  virtual void advance(Tick /*now*/) {}
  // The next tick after `now` at which the block changes state by itself; kNever when it waits for others.
  [[nodiscard]] virtual Tick next_event(Tick /*now*/) const { return kNever; }
  [[nodiscard]] virtual Activity activity(Tick /*now*/) const { return Activity::idle; }
  // Work in flight whose end comes from outside the chip (the interconnect wakes the chip), so no
  // next_event() is no deadlock.
  [[nodiscard]] virtual bool awaits_wake() const { return false; }
  // Binds this block's port for the path "this -> to" (the elaborator calls it once per pair of instances).
  // The chip's resolve step checked that the kinds may connect; a block that cannot is a bug.
  virtual void connect(Block& to);
  // Adds the block's statistics to the chip's counters at the end of the run.
  virtual void collect(ChipCounters& /*counters*/) const {}

 private:
  BlockKind kind_;
  const std::string& block_;
  int instance_;
};

}  // namespace tpusim::models
