#include "block/unit_blocks.h"

#include <algorithm>

namespace tpusim::models {

namespace {

// Every unit kind's entry in `blocks`, or nullptr (taken again whenever the vector changes: its entries move).
std::array<const UnitBlock*, ir::kMaxUnitKinds> index_of(const std::vector<UnitBlock>& blocks) {
  std::array<const UnitBlock*, ir::kMaxUnitKinds> of{};
  for (const UnitBlock& u : blocks) of[static_cast<std::size_t>(u.unit)] = &u;
  return of;
}

}  // namespace

namespace detail {
std::vector<UnitBlock> unit_blocks(kBuiltInUnitBlockInfo.begin(), kBuiltInUnitBlockInfo.end());
std::array<const UnitBlock*, ir::kMaxUnitKinds> unit_block_of_unit = index_of(unit_blocks);  // after unit_blocks
}  // namespace detail

const UnitBlock* unit_block_of(BlockKind kind) {
  for (const UnitBlock& u : detail::unit_blocks) {
    if (u.block == kind) return &u;
  }
  return nullptr;
}

void add_unit_block(BlockKind block, ir::UnitKind unit) {
  const int retire = detail::unit_blocks.back().retire + 1;
  // Its hardware unit kind, named after the unit kind (at most one per added unit kind: kMaxHwUnits).
  const auto hw = static_cast<HwUnit>(detail::hw_units.size());
  detail::hw_units.push_back(
      {hw, ir::unit_name(unit), true, unit, false, false, HwUnitInfo::Utilization::busy_time});
  detail::unit_blocks.push_back({block, unit, UnitBlock::Queues::one, retire, true, hw});
  detail::unit_block_of_unit = index_of(detail::unit_blocks);
}

void remove_unit_block(BlockKind block) {
  auto& all = detail::unit_blocks;
  const auto of_block = [&](const UnitBlock& u) { return u.block == block; };
  const auto it = std::find_if(all.begin() + kBuiltInUnitBlocks, all.end(), of_block);
  if (it == all.end()) return;
  const HwUnit hw = it->hw;
  all.erase(it);
  auto& units = detail::hw_units;
  units.erase(std::remove_if(units.begin() + kBuiltInHwUnits, units.end(),
                             [&](const HwUnitInfo& u) { return u.unit == hw; }),
              units.end());
  detail::unit_block_of_unit = index_of(all);
}

}  // namespace tpusim::models
