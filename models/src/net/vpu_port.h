#pragma once
// The chip side of a collective's reductions: the VPU of a TensorCore, which the network shares with the
// chip's vector instructions and MXU result pops. The chip implements it; the pod wires it to the
// interconnect (Interconnect::attach_chip).
#include <cstdint>

#include "../ticks.h"

namespace tpusim::models::net {

class VpuPort {
 public:
  virtual ~VpuPort() = default;
  // Reserves `duration` ticks of TensorCore `core`'s VPU from `now` on, in order behind what the VPU already
  // holds (its running vector instruction, earlier reservations), and returns the reservation's end. Vector
  // instructions issued after it wait for it; it counts as VPU busy time. Called at the current simulation
  // time, from any process; it does not wake the chip (README.md).
  // `instr` names the collective, for the error when the core has no VPU.
  virtual Tick reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) = 0;
};

}  // namespace tpusim::models::net
