// VMEM (one per TensorCore): occupancy against vmem.capacity, and a bandwidth scheduler at vmem.bandwidth for
// the VMEM -> VMEM copies that reach it (kOnChipCopyLatency each). The MXU and VPU operand traffic is bounded
// by vmem.bandwidth inside those units (vmem_bound_cycles in timing.h), not through this scheduler.
#include "vmem/vmem.h"

#include <algorithm>

#include "block/counters.h"
#include "block/registry.h"
#include "memory/memory_block.h"

namespace tpusim::models {
namespace {

class Vmem final : public MemoryBlock, public VmemSpace {
 public:
  Vmem(const sc_core::sc_module_name& name, const BlockBuild& b)
      : MemoryBlock(name, b.chip, BlockKind::vmem, b.block.name, b.instance, ir::Memory::vmem,
                    b.chip.spec.vmem.bandwidth),
        capacity_(b.chip.spec.vmem.capacity.count()) {
    add_scheduler(b.chip.spec.vmem.scheduler, b.chip.spec.vmem.bandwidth.value());
  }

  bool allocate(std::uint64_t bytes) override {
    if (bytes > capacity_ - used_) return false;
    used_ += bytes;
    peak_ = std::max(peak_, used_);
    return true;
  }
  bool release(std::uint64_t bytes) override {
    if (bytes > used_) {
      used_ = 0;
      return false;
    }
    used_ -= bytes;
    return true;
  }
  [[nodiscard]] std::uint64_t used() const override { return used_; }
  [[nodiscard]] std::uint64_t capacity() const override { return capacity_; }

  void collect(ChipCounters& c) const override { c.vmem_peak = std::max(c.vmem_peak, peak_); }

 private:
  Admission admit(const tlm::tlm_generic_payload& gp, const Transfer& t) override {
    return plain(gp, t, to_ticks(kOnChipCopyLatency));
  }

  std::uint64_t capacity_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;  // highest occupancy over the run
};

}  // namespace

std::unique_ptr<Block> make_vmem_block(const BlockBuild& b) { return std::make_unique<Vmem>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
