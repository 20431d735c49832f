#pragma once
// One TPU chip: the composition root of its blocks. It builds them from the chip's composition with the
// registry of block kinds (block/elaborator.h), binds their paths, hands its queues to the sequencer
// (chip/sequencer.h), and drives time for all of them.
//
// Timing: one SC_METHOD and one sc_event per chip. The blocks keep their own next-event times (an MXU's
// finish, a memory's next completion or latency expiry, a reservation of result pops); the method brings them
// all to the current time, completes what has finished, starts what may start, and re-arms the event at the
// earliest next time. This is the "local queue behind one kernel event" of DESIGN.md: the kernel holds one
// pending event per chip, whatever the number of blocks and transfers. The interconnect wakes the chip by
// notifying wake(); attach_ici() is the seam to it.
//
// Running ahead: while no ICI instruction of the chip is in flight, nothing outside the chip can act on it (the
// interconnect calls into a chip, waking it or reserving its VPU, only for an ICI instruction the chip
// started), so its next activations depend on its own state alone. One kernel activation then runs the
// chip's following activations too, each at its own tick (ChipContext::now), as long as that holds, and stops
// before one that would start an instruction acting outside the chip (Sequencer::run's `hold`) or that
// finishes the program; that activation runs at its tick from the kernel, as it did before. Every chip
// activation computes what it computed before, at the same tick: only the kernel's events between them are
// saved, and the chip's blocks stay in the cache from one activation to the next. Its instructions complete
// (SimOptions::trace) in the same order as before, but earlier relative to other chips'. Off with
// SimOptions::run_ahead false (TPUSIM_RUN_AHEAD=off), which runs every activation from the kernel.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "block/block.h"
#include "block/counters.h"
#include "block/registry.h"
#include "chip/collective_side.h"
#include "chip/sequencer.h"
#include "ici/chip_port.h"
#include "program_index.h"
#include "run_control.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

class NetworkPort;

class Chip : public sc_core::sc_module, public ChipPort {
 public:
  SC_HAS_PROCESS(Chip);
  // `spec`, with its composition (standard_composition() of a spec built in code), and `program` must outlive
  // the chip.
  Chip(const sc_core::sc_module_name& name, std::uint32_t id, const ChipSpec& spec, const ProgramIndex& program,
       const MxuDataflowModel& dataflow, MxuFidelity mxu_fidelity, RunControl& control,
       const BlockRegistry& registry);

  [[nodiscard]] bool finished() const { return sequencer_.finished(); }
  // Where the chip stands when nothing more can happen (Sequencer::stuck).
  [[nodiscard]] std::string stuck() const { return sequencer_.stuck(); }
  // The chip's statistics, gathered from its sequencer and blocks (call after the run).
  [[nodiscard]] ChipCounters collect() const;
  [[nodiscard]] sc_core::sc_event& wake() { return wake_; }
  [[nodiscard]] std::uint32_t id() const { return context_.chip; }
  [[nodiscard]] const ChipSpec& spec() const { return context_.spec; }
  // The pod's interconnect, which runs this chip's ICI queue (collectives, send / recv, remote puts) through
  // the chip's ICI ports; without one, an ICI instruction fails the run. The interconnect wakes the chip
  // (wake()) when an ICI instruction completes.
  void attach_ici(NetworkPort& ici);
  // A collective's reduction on TensorCore `core`'s VPU (ici/chip_port.h): reserved on the VPU block like the
  // MXU's result pops (ResultDrain), after what the VPU holds. It does not wake the chip (the sequencer counts
  // the reserved time, InstructionUnit::busy_between). Fails instruction `instr` if the core has no VPU.
  Tick reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) override;
  // An ICI instruction's HBM traffic (ici/chip_port.h: a collective's step, a send, recv or put): kept until
  // the chip's activation at `now` (the chip wakes for it when it comes from outside one), which charges it to
  // the HBM block (MemoryBlock::charge) as the transfer of ICI engine kFirstIciEngine + slot, capped at the
  // channel share of its larger direction (hbm_channel_share) and, with a `spread`, at its bytes over that time
  // at the HBM's rate (less the turnaround when it reads and writes); when the HBM has moved it, the activation
  // reports Interconnect::hbm_done. Fails instruction `instr` if the chip has no HBM block that takes charges.
  void charge_hbm(std::uint32_t slot, std::uint32_t token, std::uint32_t instr, Tick now, std::uint64_t read,
                  std::uint64_t written, Tick spread) override;
  // The chip has an activation of its own (its timed event, not a wake by the interconnect) at `now`, pending
  // or run: what reaches it from outside at that tick meets it in the kernel's process order
  // (mirror/mirroring.h).
  [[nodiscard]] bool own_activation_at(Tick now) const { return timed_ == now || timed_ran_ == now; }
  // The chip stops at `at` (a chip fault inside the step, SimOptions::timed_chips): no activation at or after
  // it runs, so nothing completes from then on and the chip never finishes.
  void stop_at(Tick at) { stop_at_ = at; }

 private:
  void run();
  // One activation at `now` (ahead: later than the kernel's time). Returns the tick of the next one, or kNever
  // (waiting for the interconnect, or finished); sets held_ when an activation ahead stopped to run again at
  // `now` from the kernel.
  Tick activate(Tick now, bool ahead);
  // Nothing outside the chip can act on it before its next activation (see "Running ahead").
  [[nodiscard]] bool may_run_ahead() const;

  ChipContext context_;
  std::vector<std::unique_ptr<Block>> blocks_;  // chip-level, in composition order (TensorCores own theirs)
  std::vector<Block*> all_;                     // every block, TensorCore children included, in build order
  std::vector<InstructionUnit*> retire_order_;  // per TensorCore its MXU then VPU, then DMA, host, ICI
  CollectiveSide collective_;                   // its collectives' VPU reservations, its ICI HBM charges
  bool activating_ = false;
  Sequencer sequencer_;
  bool reported_ = false;  // finished, and told the run control
  bool held_ = false;
  Tick timed_ = 0;             // the tick of its own pending event (the first activation is at 0)
  Tick timed_ran_ = kNever;    // the tick of its last activation by its own event
  Tick stop_at_ = kNever;
  sc_core::sc_event wake_{"wake"};  // named: an unnamed event costs the chip a unique-name generator
};

}  // namespace tpusim::models
