#pragma once
// The chip's ICI ports (the ici block): the one seam between a chip and the pod's interconnect
// (net/interconnect.h). The chip's ICI queue (collectives, send / recv, remote DMA puts) runs through it,
// several instructions in flight at once (net/ici_unit.h); the interconnect wakes the chip (Chip::wake) when
// one completes.

namespace tpusim::models {

namespace net {
class Interconnect;
}

class IciPort {
 public:
  virtual ~IciPort() = default;
  // Without an interconnect, an ICI instruction fails the run.
  virtual void attach(net::Interconnect& ici) = 0;
};

}  // namespace tpusim::models
