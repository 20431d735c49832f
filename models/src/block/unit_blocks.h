#pragma once
// The block kinds that run instructions: the unit queue each runs (kernels/program.h, UnitKind), how its
// blocks take the per-TensorCore queues, and where its units stand in the order the chip retires them at one
// tick. The one home of the chip's unit-to-block wiring: the chip binds its queues by it, the program index
// checks by it which blocks a program needs.
#include <array>
#include <cstdint>
#include <vector>

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

// The built-in kinds' entries; those of kinds added with a unit kind of their own (registry.h,
// add_block_kind) follow them in unit_blocks().
inline constexpr int kBuiltInUnitBlocks = 6;
inline constexpr std::array<UnitBlock, kBuiltInUnitBlocks> kBuiltInUnitBlockInfo{{
    {BlockKind::mxu, ir::UnitKind::mxu, UnitBlock::Queues::block_per_core, 0, true, HwUnit::mxu},
    {BlockKind::vpu, ir::UnitKind::vpu, UnitBlock::Queues::block_per_core, 1, true, HwUnit::vpu},
    {BlockKind::dma, ir::UnitKind::dma, UnitBlock::Queues::lane_per_core, 1000, true, HwUnit::dma},
    {BlockKind::host, ir::UnitKind::host, UnitBlock::Queues::one, 1001, true, HwUnit::host},
    {BlockKind::ici, ir::UnitKind::ici, UnitBlock::Queues::one, 1002, false, HwUnit::host},
    {BlockKind::sparsecore, ir::UnitKind::sparsecore, UnitBlock::Queues::one, 1003, true, HwUnit::sparsecore},
}};

namespace detail {
// unit_blocks.cpp keeps them: the entries, and for each unit kind the entry whose blocks run it (or nullptr).
extern std::vector<UnitBlock> unit_blocks;
extern std::array<const UnitBlock*, ir::kMaxUnitKinds> unit_block_of_unit;
}  // namespace detail

[[nodiscard]] inline const std::vector<UnitBlock>& unit_blocks() { return detail::unit_blocks; }
// The entry of block kind `kind`, or nullptr for a kind that runs no instructions.
[[nodiscard]] const UnitBlock* unit_block_of(BlockKind kind);
// The entry whose blocks run unit kind `unit`, or nullptr (sync: the sequencer's own); a table lookup (the
// sequencer asks at every activation).
[[nodiscard]] inline const UnitBlock* unit_block_for(ir::UnitKind unit) {
  return detail::unit_block_of_unit[static_cast<std::size_t>(unit)];
}
// The hardware unit kind whose counters the blocks of `kind` add to (ChipCounters::unit); `kind` runs instructions.
[[nodiscard]] inline HwUnit hw_unit_of(BlockKind kind) { return unit_block_of(kind)->hw; }
// Adds the entry of an added block kind that runs the added unit kind `unit`: one queue per chip, retired after
// the built-in units, with a hardware unit kind of its own (hw_units(), named after the unit kind) whose phases
// the sequencer classifies and whose busy time and bytes the block reports (ChipCounters::unit). Removes both.
void add_unit_block(BlockKind block, ir::UnitKind unit);
void remove_unit_block(BlockKind block);

}  // namespace tpusim::models
