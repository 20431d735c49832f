#pragma once
// The chip's ICI ports (the ici block): the one seam between a chip and the pod's network (network_port.h,
// which the interconnect implements). The chip's ICI queue (collectives, send / recv, remote DMA puts) runs through it,
// several instructions in flight at once (net/ici_unit.h); the interconnect wakes the chip (Chip::wake) when
// one completes.

namespace tpusim::models {

class NetworkPort;

class IciPort {
 public:
  virtual ~IciPort() = default;
  // Without an interconnect, an ICI instruction fails the run.
  virtual void attach(NetworkPort& ici) = 0;
};

}  // namespace tpusim::models
