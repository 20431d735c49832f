#pragma once
// Point to point: send / recv and remote DMA puts, over the transport, in the chip's ICI queue.
//
// Contract:
// - `peer` is a coordinate offset along the first axis in mesh_axes (the lowest set bit; with mesh_axes 0,
//   the first axis of length > 1), taken modulo the axis length, in the same pod; or, for an instruction
//   naming a group, a member offset along the group's first axis (the lowest with size > 1), modulo its size
//   (target()).
// - A send moves `bytes` to the chip at +peer and completes when they are delivered (eager: it never waits
//   for the recv). A recv names its SOURCE, as in MPI: recv peer = -1 takes what the chip at -1 sent, so the
//   SPMD shift is `send peer=+1; recv peer=-1`. The k-th recv from chip S on chip D (in D's ICI queue order)
//   matches the k-th send from S to D (in S's); it completes when that send has been delivered (at once if
//   it already was), even when several sends and recvs are in flight and deliveries overtake each other.
// - HBM: the ICI DMAs read a send's bytes out of the sender's HBM and write them into the receiver's, as a
//   collective step's do (README.md). The send charges its read when it starts; the receiver's write is charged
//   to its recv once both have started (the bytes are the send's), and both at the HBM's share (no spread). A
//   send or put completes when delivered and read, a recv when its send is delivered and its write is done.
//   A put reads its source's HBM (a put from VMEM charges nothing); its write into the destination's HBM is
//   counted there when delivered (put_written) but takes none of its bandwidth: nothing runs there to time it.
// - A remote DMA (a dma with dst: remote) is a one-sided put: it travels and completes like a send, but the
//   destination runs nothing and nothing matches it.
#include <cstdint>
#include <deque>
#include <vector>

#include "../ticks.h"
#include "ici/chip_port.h"
#include "ici_unit.h"
#include "transport.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models::net {

class PointToPoint {
 public:
  PointToPoint(Transport& transport, IciUnits& units);

  // Wiring: the HBM of chip `chip`, which its sends read and its recvs write.
  void attach_chip(std::uint32_t chip, ChipPort& port) { ports_[chip] = &port; }

  // The target of a send, recv or put (the recv's is its source): along mesh_axes when `group` is null, else
  // in `group` (which must fit the topology). Throws SimulationError for an axis the pod lacks, a group of
  // one chip and a peer that is the chip itself.
  [[nodiscard]] TargetId target(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup* group);

  // Runs `ins` (instruction `instr`: a send, recv or remote put under `target`) in ICI slot `slot` of `chip`
  // (its ICI unit has begun it).
  void start(std::uint32_t chip, Slot slot, std::uint32_t instr, const ir::Instruction& ins, TargetId target,
             Tick now);
  // A transfer of this engine was delivered (the transport still holds it; the engine releases it).
  void on_delivered(TransferId id, Tick now);
  // Whether ICI slot `slot` of `chip` runs a send, recv or put of this engine.
  [[nodiscard]] bool owns(std::uint32_t chip, Slot slot) const { return state(chip, slot).active; }
  // The HBM of `chip` has moved what the instruction in `slot` charged it with (ChipPort::charge_hbm), inside
  // the chip's activation: when its transfer is done too, the instruction completes at now + 1 tick, from the
  // engine's own process (fire_timers), as a collective's does. Returns whether it pushed a timer.
  bool hbm_done(std::uint32_t chip, Slot slot, Tick now);
  // Completes the instructions due by `now`; false if none was.
  bool fire_timers(Tick now);
  [[nodiscard]] Tick next_timer() const { return timers_.empty() ? kNever : timers_.front().at; }
  // Bytes the remote puts delivered to `chip` wrote into its HBM (counted only: no HBM time is taken there).
  [[nodiscard]] std::uint64_t put_written(std::uint32_t chip) const { return put_written_[chip]; }

 private:
  // Chip D's exchanges with one peer chip: sends to it started, recvs from it started, sends from it delivered
  // ahead of their recv, recvs waiting for their send.
  struct Peer {
    std::uint32_t chip = 0;
    std::uint32_t sent = 0;
    std::uint32_t received = 0;
    std::vector<std::uint32_t> delivered;  // numbers k of the peer's sends to D delivered, no recv yet
    std::vector<std::pair<std::uint32_t, Slot>> waiting;  // (k, slot) of D's recvs not yet matched
    std::vector<std::pair<std::uint32_t, Slot>> posted;   // (k, slot) of D's recvs whose send has not started
    std::vector<std::pair<std::uint32_t, std::uint64_t>> started;  // (k, bytes) of sends to D, recv not started
  };
  struct SlotState {  // per [chip][slot]
    bool active = false;      // the slot runs an instruction of this engine
    bool moving = false;      // its transfer (a recv: its send's) is not delivered yet
    bool hbm = false;         // its HBM charge is not moved yet
    std::uint32_t instr = 0;  // the instruction, for the HBM's errors
  };
  struct Timer {
    Tick at;
    std::uint32_t chip;
    Slot slot;
  };
  struct Sent {  // per transfer id
    Slot slot = 0;
    bool put = false;
    std::uint32_t number = 0;  // k: the sender's k-th send to this destination
    std::uint64_t bytes = 0;
  };

  Peer& peer(std::uint32_t chip, std::uint32_t other);
  SlotState& state(std::uint32_t chip, Slot slot) {
    return slots_[static_cast<std::size_t>(chip) * IciUnits::kSlots + slot];
  }
  [[nodiscard]] const SlotState& state(std::uint32_t chip, Slot slot) const {
    return slots_[static_cast<std::size_t>(chip) * IciUnits::kSlots + slot];
  }
  // Charges `read` / `written` bytes of the instruction in `slot` to the chip's HBM (nothing for 0 bytes).
  void charge(std::uint32_t chip, Slot slot, Tick now, std::uint64_t read, std::uint64_t written);
  // Completes the slot's instruction if its transfer and HBM charge are both done.
  void settle(std::uint32_t chip, Slot slot);

  Transport& transport_;
  IciUnits& units_;
  std::vector<std::vector<Peer>> peers_;  // [chip]: the chips it exchanged with (few)
  std::vector<Sent> sent_;                // by TransferId
  std::vector<ChipPort*> ports_;          // [chip]
  std::vector<SlotState> slots_;          // [chip][slot]
  std::deque<Timer> timers_;              // due in time order: each is pushed at now + 1
  std::vector<std::uint64_t> put_written_;  // [chip]: bytes of the puts delivered to it (put_written)
};

}  // namespace tpusim::models::net
