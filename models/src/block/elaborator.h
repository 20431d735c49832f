#pragma once
// Builds one chip's blocks from its composition (ChipSpec::composition) with the registry of block kinds, and
// binds the paths between them. Called by the chip while it constructs (so the blocks become its children in
// the module tree); a TensorCore calls it for the blocks that sit in it.
//
// Instances: a chip-level kind with count n > 1 (the TensorCores) is built n times, "<name><i>"; a kind that sits
// in a TensorCore is built once inside each, "<name>". A block with count 0 is not built. Binding "a -> b":
// between the instances in the same TensorCore when both kinds sit in one (mxu -> vpu), otherwise from every
// instance of a to every instance of b (dma -> the vmem of each TensorCore). A block the chip's program never
// reaches is not built (nor bound).
#include <bitset>
#include <memory>
#include <vector>

#include "block/registry.h"
#include "tpusim/core/chip_blocks.h"

namespace tpusim::models {

class Elaborator {
 public:
  // `composed` must have its blocks (standard_composition() of a spec built in code). Only the kinds in
  // `used` are built (ProgramIndex::uses: what the chip's program can reach).
  Elaborator(const ChipContext& chip, const ChipSpec& composed, const BlockRegistry& registry,
             std::bitset<kMaxBlockKinds> used)
      : chip_(chip), composed_(composed), registry_(registry), used_(used) {}

  // The blocks of `scope` (for BlockScope::tensorcore, those of TensorCore `core`), in composition order.
  [[nodiscard]] std::vector<std::unique_ptr<Block>> build(BlockScope scope, int core = 0) const;

  // Binds every path of the composition between the built `blocks` (all of them, TensorCore children too).
  void bind(const std::vector<Block*>& blocks) const;

 private:
  const ChipContext& chip_;
  const ChipSpec& composed_;
  const BlockRegistry& registry_;
  std::bitset<kMaxBlockKinds> used_;
};

}  // namespace tpusim::models
