#pragma once
// The registry of block kinds: the factory the elaborator calls for each kind in a chip's composition. The
// composition root (the pod) fills it explicitly with register_chip_blocks(); nothing registers itself by
// static initialisation (it would vanish from a static library). One factory per kind, in the kind's folder.
#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "block/block.h"
#include "tpusim/core/chip_blocks.h"

namespace tpusim::models {

class Elaborator;

// What a factory gets: the chip, the block's composition entry and which instance to build.
struct BlockBuild {
  const ChipContext& chip;
  const ChipBlock& block;
  int instance = 0;              // the TensorCore it sits in (per-TensorCore kinds), or a TensorCore's index
  const Elaborator& elaborator;  // a TensorCore builds the blocks that sit in it through it
};

using BlockFactory = std::unique_ptr<Block> (*)(const BlockBuild&);

class BlockRegistry {
 public:
  void add(BlockKind kind, BlockFactory factory);
  // Builds one instance; throws std::logic_error for a kind nobody registered.
  [[nodiscard]] std::unique_ptr<Block> build(const BlockBuild& what) const;
  [[nodiscard]] bool has(BlockKind kind) const { return factories_[static_cast<std::size_t>(kind)] != nullptr; }

 private:
  std::array<BlockFactory, kMaxBlockKinds> factories_{};
};

// Registers every built-in kind (the factories below) and every kind added with add_block_kind.
void register_chip_blocks(BlockRegistry& registry);

// A block kind of your own, in one call: adds `info` to core's catalogue (tpusim::add_block_kind, which checks
// it) with the factory that builds its module, which register_chip_blocks registers from then on. Returns the
// kind. models/README.md ("A block kind of your own") walks through one.
BlockKind add_block_kind(BlockKindInfo info, BlockFactory factory);
// A block kind of your own that runs instructions: as above, and `runs` joins the IR's unit kinds
// (ir::add_unit_kind). A program's `custom` instructions that name it go to the kind's block (one queue per chip,
// in its instance 0), which must be an InstructionUnit (block/instruction_unit.h) and adds its busy time and
// bytes to its own row of the units (block/unit_blocks.h, hw_unit_of). A chip whose program names it and has no
// such block is refused before the run.
BlockKind add_block_kind(BlockKindInfo info, BlockFactory factory, ir::UnitKindInfo runs);
// Takes the last added kind out of the catalogue and the registry again, with its unit kind; false when it is not
// the last added.
bool remove_block_kind(std::string_view name);

// The built-in factories, each defined in its kind's folder.
std::unique_ptr<Block> make_tensorcore_block(const BlockBuild& b);  // tensorcore/tensorcore.cpp
std::unique_ptr<Block> make_mxu_block(const BlockBuild& b);         // mxu/mxu.cpp
std::unique_ptr<Block> make_vpu_block(const BlockBuild& b);         // vpu/vpu.cpp
std::unique_ptr<Block> make_vmem_block(const BlockBuild& b);        // vmem/vmem.cpp
std::unique_ptr<Block> make_cmem_block(const BlockBuild& b);        // cmem/cmem.cpp
std::unique_ptr<Block> make_hbm_block(const BlockBuild& b);         // hbm/hbm.cpp
std::unique_ptr<Block> make_dma_block(const BlockBuild& b);         // dma/dma.cpp
std::unique_ptr<Block> make_host_block(const BlockBuild& b);        // host/host.cpp
std::unique_ptr<Block> make_ici_block(const BlockBuild& b);         // ici/ici_port.cpp
std::unique_ptr<Block> make_sparsecore_block(const BlockBuild& b);  // sparsecore/sparsecore.cpp

}  // namespace tpusim::models
