// CMEM (v4): common memory between HBM and VMEM, one bandwidth scheduler at cmem.bandwidth; copies take
// kOnChipCopyLatency (timing.h).
#include "block/registry.h"
#include "memory/memory_block.h"

namespace tpusim::models {
namespace {

class Cmem final : public MemoryBlock {
 public:
  Cmem(const sc_core::sc_module_name& name, const BlockBuild& b)
      : MemoryBlock(name, b.chip, BlockKind::cmem, b.block.name, 0, ir::Memory::cmem,
                    b.chip.spec.cmem.bandwidth) {
    add_scheduler(b.chip.spec.cmem.scheduler, b.chip.spec.cmem.bandwidth.value());
  }

 private:
  Admission admit(const tlm::tlm_generic_payload& gp, const Transfer& t) override {
    return plain(gp, t, to_ticks(kOnChipCopyLatency));
  }
};

}  // namespace

std::unique_ptr<Block> make_cmem_block(const BlockBuild& b) { return std::make_unique<Cmem>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
