#pragma once
// The chip side of a collective, as the network calls it: the VPU of a TensorCore, which its reductions share
// with the chip's vector instructions and MXU result pops, and the HBM its steps read and write, which they
// share with the chip's DMA transfers and fused streams. The chip implements it; the pod wires it to the
// interconnect (net::Interconnect::attach_chip). It lives below the chip and the network (models/README.md,
// "Layers"), with the other direction of the seam (network_port.h).
#include <cstdint>

#include "ticks.h"

namespace tpusim::models {

class ChipPort {
 public:
  virtual ~ChipPort() = default;
  // Reserves `duration` ticks of TensorCore `core`'s VPU from `now` on, in order behind what the VPU already
  // holds (its running vector instruction, earlier reservations), and returns the reservation's end. Vector
  // instructions issued after it wait for it; it counts as VPU busy time. Called at the current simulation
  // time, from any process; it does not wake the chip (README.md).
  // `instr` names the collective, for the error when the core has no VPU.
  virtual Tick reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) = 0;
  // Moves `read` bytes out of and `written` bytes into the chip's HBM from `now` on, on behalf of ICI
  // instruction `instr` (a collective, send, recv or put) running in ICI slot `slot`, sharing the HBM's
  // bandwidth with everything else the chip's HBM serves (the slot is an engine of its own there). Called at
  // the current simulation time, from the network's process or another chip's start of a send (the chip wakes
  // to take it at that tick), or from the chip's own start of a send or recv (its activation takes it before
  // it returns). `spread` > 0: the bytes move no faster than over `spread` ticks (the collective's links pace
  // its DMAs); 0: as fast as the HBM's share allows. When the bytes are moved, the chip reports
  // NetworkPort::hbm_done(chip, token, tick) from its activation.
  virtual void charge_hbm(std::uint32_t slot, std::uint32_t token, std::uint32_t instr, Tick now, std::uint64_t read,
                          std::uint64_t written, Tick spread) = 0;
};

}  // namespace tpusim::models
