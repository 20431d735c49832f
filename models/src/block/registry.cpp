#include "block/registry.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "block/unit_blocks.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/models/errors.h"

namespace tpusim::models {

void ChipContext::fail(std::uint32_t instr, const std::string& what) const {
  const ir::Instruction& ins = program[instr];
  throw SimulationError(chip, ins.core, instr, program.label_of(ins), what);
}

void Block::connect(Block& to) {
  throw std::logic_error(std::string("block ") + name() + " has no port for a path to " + to.name());
}

void BlockRegistry::add(BlockKind kind, BlockFactory factory) { factories_[static_cast<std::size_t>(kind)] = factory; }

std::unique_ptr<Block> BlockRegistry::build(const BlockBuild& what) const {
  const BlockFactory f = factories_[static_cast<std::size_t>(what.block.kind)];
  if (f == nullptr) {
    throw std::logic_error("no module registered for block kind " + std::string(block_kind_name(what.block.kind)));
  }
  return f(what);
}

namespace {

// The factories of the kinds added with add_block_kind, by kind.
std::array<BlockFactory, kMaxBlockKinds>& added_factories() {
  static std::array<BlockFactory, kMaxBlockKinds> factories{};
  return factories;
}

}  // namespace

BlockKind add_block_kind(BlockKindInfo info, BlockFactory factory) {
  if (factory == nullptr) throw std::invalid_argument(std::string("add_block_kind ") + std::string(info.name) +
                                                      ": no factory");
  const BlockKind kind = tpusim::add_block_kind(std::move(info));
  added_factories()[static_cast<std::size_t>(kind)] = factory;
  return kind;
}

BlockKind add_block_kind(BlockKindInfo info, BlockFactory factory, ir::UnitKindInfo runs) {
  const std::string name(info.name);
  const BlockKind kind = add_block_kind(std::move(info), factory);
  try {
    add_unit_block(kind, ir::add_unit_kind(runs));
  } catch (...) {
    remove_block_kind(name);
    throw;
  }
  return kind;
}

bool remove_block_kind(std::string_view name) {
  const auto last = static_cast<std::size_t>(block_kinds().size() - 1);
  const UnitBlock* runs = unit_block_of(static_cast<BlockKind>(last));
  if (block_kinds()[last].name != name || !tpusim::remove_block_kind(name)) return false;
  added_factories()[last] = nullptr;
  if (runs != nullptr) {
    const std::string_view unit = ir::unit_name(runs->unit);
    remove_unit_block(static_cast<BlockKind>(last));
    ir::remove_unit_kind(unit);
  }
  return true;
}

void register_chip_blocks(BlockRegistry& registry) {
  registry.add(BlockKind::tensorcore, &make_tensorcore_block);
  registry.add(BlockKind::mxu, &make_mxu_block);
  registry.add(BlockKind::vpu, &make_vpu_block);
  registry.add(BlockKind::vmem, &make_vmem_block);
  registry.add(BlockKind::cmem, &make_cmem_block);
  registry.add(BlockKind::hbm, &make_hbm_block);
  registry.add(BlockKind::dma, &make_dma_block);
  registry.add(BlockKind::host, &make_host_block);
  registry.add(BlockKind::ici, &make_ici_block);
  registry.add(BlockKind::sparsecore, &make_sparsecore_block);
  for (std::size_t k = kBuiltInBlockKinds; k < block_kinds().size(); ++k) {
    registry.add(static_cast<BlockKind>(k), added_factories()[k]);
  }
}

}  // namespace tpusim::models
