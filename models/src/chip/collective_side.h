#pragma once
// The chip's side of its collectives, sends and recvs (ici/chip_port.h): the TensorCores' VPUs that the
// collectives' reductions reserve, and the HBM traffic of their steps and of the sends and recvs, kept from the
// network's call until the chip's next activation charges it to the HBM block. The chip (chip/chip.h) owns one, wires it as it builds its blocks and forwards its ChipPort
// calls to it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "block/block.h"
#include "ticks.h"

namespace tpusim::models {

class NetworkPort;

class ResultDrain;
class MemoryBlock;

class CollectiveSide {
 public:
  // `chip` must outlive it.
  explicit CollectiveSide(const ChipContext& chip)
      : chip_(chip), vpus_(static_cast<std::size_t>(std::max(chip.spec.tensorcores, 0)), nullptr) {}

  // Wiring: TensorCore `core`'s VPU (a core without one stays unset), the HBM block, the pod's interconnect
  // (which hears what the HBM has moved).
  void add_vpu(int core, ResultDrain& vpu) { vpus_.at(static_cast<std::size_t>(core)) = &vpu; }
  void set_hbm(MemoryBlock& hbm) { hbm_ = &hbm; }
  void attach_ici(NetworkPort& ici) { ici_ = &ici; }

  // ChipPort::reserve_vpu: fails instruction `instr` if the core has no VPU.
  Tick reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration);
  // ChipPort::charge_hbm, kept until take(): fails instruction `instr` if the chip has no HBM block that takes
  // charges.
  void keep(std::uint32_t slot, std::uint32_t token, std::uint32_t instr, std::uint64_t read, std::uint64_t written,
            Tick spread);
  // From the chip's activation at `now`: charges what was kept to the HBM as the transfer of ICI engine
  // kFirstIciEngine + slot, capped at the channel share of its larger direction (hbm_channel_share) and, with a
  // spread, at its bytes over that time at the HBM's rate (less the turnaround when it reads and writes); then
  // reports Interconnect::hbm_done for what the HBM has moved.
  void take(Tick now);

 private:
  struct Charge {
    std::uint32_t slot, token;
    std::uint64_t read, written;
    Tick spread;
  };

  const ChipContext& chip_;
  std::vector<ResultDrain*> vpus_;  // by TensorCore (nullptr: no VPU there)
  MemoryBlock* hbm_ = nullptr;      // the HBM block, if built
  NetworkPort* ici_ = nullptr;
  std::vector<Charge> charges_;  // until the next activation charges them
  std::uint64_t order_ = 0;      // the charges' order on the HBM
};

}  // namespace tpusim::models
