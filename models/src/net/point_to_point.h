#pragma once
// Point to point: send / recv and remote DMA puts, over the transport, in the chip's ICI queue.
//
// Contract:
// - `peer` is a coordinate offset along the first axis in mesh_axes (the lowest set bit; with mesh_axes 0,
//   the first axis of length > 1), taken modulo the axis length, in the same pod (target()).
// - A send moves `bytes` to the chip at +peer and completes when they are delivered (eager: it never waits
//   for the recv). A recv names its SOURCE, as in MPI: recv peer = -1 takes what the chip at -1 sent, so the
//   SPMD shift is `send peer=+1; recv peer=-1`. The k-th recv from chip S on chip D matches the k-th send
//   from S to D; it completes when that send has been delivered (at once if it already was).
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

  // The target of a send, recv or put (the recv's is its source). Throws SimulationError for an axis the pod
  // lacks and for a peer that is the chip itself.
  [[nodiscard]] TargetId target(const Origin& origin, const ir::Instruction& ins);

  // Runs `ins` (a send, recv or remote put under `target`) on `chip` (its ICI unit has begun it).
  void start(std::uint32_t chip, const ir::Instruction& ins, TargetId target, Tick now);
  // A transfer of this engine was delivered (the transport still holds it; the engine releases it).
  void on_delivered(TransferId id, Tick now);

 private:
  struct Arrivals {  // sends from `source` delivered but not yet taken by a recv
    std::uint32_t source, count;
  };
  struct ChipState {
    bool waiting = false;  // a recv waits for a send from `peer`
    std::uint32_t peer = 0;
    std::vector<Arrivals> arrived;
  };

  Transport& transport_;
  IciUnits& units_;
  std::vector<ChipState> chips_;
  std::vector<bool> put_;  // by TransferId: a one-sided put (else a send)
};

}  // namespace tpusim::models::net
