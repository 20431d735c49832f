#include "block/elaborator.h"

namespace tpusim::models {

std::vector<std::unique_ptr<Block>> Elaborator::build(BlockScope scope, int core) const {
  std::vector<std::unique_ptr<Block>> out;
  for (const ChipBlock& b : composed_.composition.blocks) {
    if (block_kind(b.kind).scope != scope || b.count == 0 || !used_[static_cast<std::size_t>(b.kind)]) continue;
    if (scope == BlockScope::tensorcore) {
      out.push_back(registry_.build(BlockBuild{chip_, b, core, *this}));
    } else {
      // Chip-level kinds have one instance, except the TensorCores.
      const int instances = b.kind == BlockKind::tensorcore ? b.count : 1;
      for (int i = 0; i < instances; ++i) out.push_back(registry_.build(BlockBuild{chip_, b, i, *this}));
    }
  }
  return out;
}

void Elaborator::bind(const std::vector<Block*>& blocks) const {
  for (const ChipPath& p : composed_.composition.paths) {
    for (Block* from : blocks) {
      if (from->block_name() != p.from) continue;
      for (Block* to : blocks) {
        if (to->block_name() != p.to) continue;
        const bool both_inside = block_kind(from->block_kind()).scope == BlockScope::tensorcore &&
                                 block_kind(to->block_kind()).scope == BlockScope::tensorcore;
        if (both_inside && from->instance() != to->instance()) continue;
        from->connect(*to);
      }
    }
  }
}

}  // namespace tpusim::models
