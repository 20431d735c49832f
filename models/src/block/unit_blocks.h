#pragma once
// The block kinds that run instructions: the unit queue each runs (kernels/program.h, UnitKind), how its
// blocks take the per-TensorCore queues, and where its units stand in the order the chip retires them at one
// tick. The one home of the chip's unit-to-block wiring: the chip binds its queues by it, the program index
// checks by it which blocks a program needs.
#include <array>
#include <cstdint>

#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"

namespace tpusim::models {

struct UnitBlock {
  // How the blocks of the kind take a per-core unit kind's queues: one block per TensorCore (the block's
  // instance is the core), or one block running every core's queue in its own lane; a chip-level kind has one
  // queue, run by the block of instance 0.
  enum class Queues : std::uint8_t { block_per_core, lane_per_core, one };
  BlockKind block;
  ir::UnitKind unit;
  Queues queues;
  // Retire order: a block per core at 2 x its core + `retire` (a core's MXU, then its VPU), the others at
  // `retire` (the DMA engine, the host, the ICI ports, the SparseCore: the order the trace lists completions
  // of the same tick in).
  int retire;
  // Its busy and stall phases are classified per activation as unit `hw` (one instance per block), or not at
  // all (the ICI ports: reported per link and collective).
  bool phased;
  HwUnit hw;
};

inline constexpr std::array<UnitBlock, 6> kUnitBlocks{{
    {BlockKind::mxu, ir::UnitKind::mxu, UnitBlock::Queues::block_per_core, 0, true, HwUnit::mxu},
    {BlockKind::vpu, ir::UnitKind::vpu, UnitBlock::Queues::block_per_core, 1, true, HwUnit::vpu},
    {BlockKind::dma, ir::UnitKind::dma, UnitBlock::Queues::lane_per_core, 1000, true, HwUnit::dma},
    {BlockKind::host, ir::UnitKind::host, UnitBlock::Queues::one, 1001, true, HwUnit::host},
    {BlockKind::ici, ir::UnitKind::ici, UnitBlock::Queues::one, 1002, false, HwUnit::host},
    {BlockKind::sparsecore, ir::UnitKind::sparsecore, UnitBlock::Queues::one, 1003, true, HwUnit::sparsecore},
}};

// The entry of block kind `kind`, or nullptr for a kind that runs no instructions.
[[nodiscard]] constexpr const UnitBlock* unit_block_of(BlockKind kind) {
  for (const UnitBlock& u : kUnitBlocks) {
    if (u.block == kind) return &u;
  }
  return nullptr;
}
// The entry whose blocks run unit kind `unit`, or nullptr (sync: the sequencer's own); a table lookup (the
// sequencer asks at every activation).
inline constexpr std::array<const UnitBlock*, ir::kUnitKinds> kUnitBlockOfUnit = [] {
  std::array<const UnitBlock*, ir::kUnitKinds> of{};
  for (const UnitBlock& u : kUnitBlocks) of[static_cast<std::size_t>(u.unit)] = &u;
  return of;
}();
[[nodiscard]] constexpr const UnitBlock* unit_block_for(ir::UnitKind unit) {
  return kUnitBlockOfUnit[static_cast<std::size_t>(unit)];
}

}  // namespace tpusim::models
