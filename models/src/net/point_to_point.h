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
// - A remote DMA (a dma with dst: remote) is a one-sided put: it travels and completes like a send, but the
//   destination runs nothing and nothing matches it.
#include <cstdint>
#include <vector>

#include "../ticks.h"
#include "ici_unit.h"
#include "transport.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models::net {

class PointToPoint {
 public:
  PointToPoint(Transport& transport, IciUnits& units);

  // The target of a send, recv or put (the recv's is its source): along mesh_axes when `group` is null, else
  // in `group` (which must fit the topology). Throws SimulationError for an axis the pod lacks, a group of
  // one chip and a peer that is the chip itself.
  [[nodiscard]] TargetId target(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup* group);

  // Runs `ins` (a send, recv or remote put under `target`) in ICI slot `slot` of `chip` (its ICI unit has
  // begun it).
  void start(std::uint32_t chip, Slot slot, const ir::Instruction& ins, TargetId target, Tick now);
  // A transfer of this engine was delivered (the transport still holds it; the engine releases it).
  void on_delivered(TransferId id, Tick now);

 private:
  // Chip D's exchanges with one peer chip: sends to it started, recvs from it started, sends from it delivered
  // ahead of their recv, recvs waiting for their send.
  struct Peer {
    std::uint32_t chip = 0;
    std::uint32_t sent = 0;
    std::uint32_t received = 0;
    std::vector<std::uint32_t> delivered;  // numbers k of the peer's sends to D delivered, no recv yet
    std::vector<std::pair<std::uint32_t, Slot>> waiting;  // (k, slot) of D's recvs not yet matched
  };
  struct Sent {  // per transfer id
    Slot slot = 0;
    bool put = false;
    std::uint32_t number = 0;  // k: the sender's k-th send to this destination
  };

  Peer& peer(std::uint32_t chip, std::uint32_t other);

  Transport& transport_;
  IciUnits& units_;
  std::vector<std::vector<Peer>> peers_;  // [chip]: the chips it exchanged with (few)
  std::vector<Sent> sent_;                // by TransferId
};

}  // namespace tpusim::models::net
