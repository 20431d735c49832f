#pragma once
// The pod's network as a chip calls it: the ICI unit that runs the chip's ICI queue (collectives, send / recv,
// remote DMA puts) and the report that the chip's HBM has moved a collective's bytes. The interconnect
// (net/interconnect.h) implements it; the pod wires every chip to it (Chip::attach_ici). It lives below the
// chip and the network (models/README.md, "Layers"), with the other direction of the seam (chip_port.h).
#include <cstdint>

#include "ticks.h"

namespace tpusim::models {

class NetworkPort {
 public:
  virtual ~NetworkPort() = default;
  // The ICI unit of chip `chip`, called from the chip's activation at `now` (net/ici_unit.h): up to
  // net::kIciOperationsInFlight instructions in flight, started in queue order, each completing on its own.
  // Some instruction is in flight:
  [[nodiscard]] virtual bool busy(std::uint32_t chip) const = 0;
  // No room for another: the chip's next ICI instruction waits.
  [[nodiscard]] virtual bool full(std::uint32_t chip) const = 0;
  // Starts ICI instruction `instr` of the chip's program (the unit must not be full).
  virtual void start(std::uint32_t chip, std::uint32_t instr, Tick now) = 0;
  // If an instruction of the chip has completed: returns true with the oldest such and its start tick, and
  // frees its slot. Call until it returns false.
  virtual bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started) = 0;
  // The HBM of chip `chip` has moved what was charged to it under `token` (ChipPort::charge_hbm), called from
  // the chip's activation at `now`.
  virtual void hbm_done(std::uint32_t chip, std::uint32_t token, Tick now) = 0;

 protected:
  NetworkPort() = default;
  NetworkPort(const NetworkPort&) = default;
  NetworkPort& operator=(const NetworkPort&) = default;
};

}  // namespace tpusim::models
