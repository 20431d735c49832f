// A TensorCore: the module that holds the blocks of the per-TensorCore kinds (mxu, vpu, vmem), built as its
// children (pod.chip0.tensorcore1.mxu). It has no behaviour of its own: its MXU and VPU are the units that
// run the core's queues, and the chip's sequencer issues into them.
#include "block/registry.h"
#include "block/elaborator.h"

namespace tpusim::models {
namespace {

class TensorCore final : public Block {
 public:
  TensorCore(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::tensorcore, b.block.name, b.instance),
        children_(b.elaborator.build(BlockScope::tensorcore, b.instance)) {}

 private:
  std::vector<std::unique_ptr<Block>> children_;
};

}  // namespace

std::unique_ptr<Block> make_tensorcore_block(const BlockBuild& b) {
  return std::make_unique<TensorCore>((b.block.name + std::to_string(b.instance)).c_str(), b);
}

}  // namespace tpusim::models
