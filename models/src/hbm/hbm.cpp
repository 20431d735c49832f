// HBM: one bandwidth scheduler at bandwidth x efficiency, less hbm.turnaround while reads and writes mix. A
// transfer that reads HBM waits hbm.latency first (writes are posted: the engine is done once HBM has taken
// the last byte); an HBM -> HBM copy moves its bytes twice and pays the turnaround by itself; a transfer is
// striped over
// min(hbm.channels, ceil(bytes / kHbmStripe)) channels and moves at most at that share of the rate
// (hbm_channel_share in timing.h). A collective's steps read and write it too (MemoryBlock::charge, from
// Chip::charge_hbm); their bytes count in hbm_read / hbm_written. So does every DMA between HBM and a slower
// memory (host memory over PCIe; VMEM or CMEM when a what-if makes HBM the faster end): the slower end times
// it, and HBM only counts its bytes (count_transfer; dma/dma.cpp: the faster end keeps up). The host's own
// transfers (infeed, outfeed, checkpoint) are counted by the host (host/host.cpp).
#include "block/counters.h"
#include "block/registry.h"
#include "memory/memory_block.h"

namespace tpusim::models {
namespace {

class Hbm final : public MemoryBlock {
 public:
  Hbm(const sc_core::sc_module_name& name, const BlockBuild& b)
      : MemoryBlock(name, b.chip, BlockKind::hbm, b.block.name, 0, ir::Memory::hbm, b.chip.spec.hbm.bandwidth),
        spec_(b.chip.spec.hbm) {
    add_scheduler(spec_.scheduler, spec_.achievable_bandwidth().value(), spec_.turnaround);
  }

  // Every transfer that reads or writes HBM: those it serves and those a slower end times.
  void count_transfer(const Transfer& t) override {
    if (t.src == ir::Memory::hbm) read_ += t.bytes;
    if (t.dst == ir::Memory::hbm) written_ += t.bytes;
  }

  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::hbm).busy += scheduler(0).busy_ticks();
    c.traffic.hbm_read += read_ + charged_read();
    c.traffic.hbm_written += written_ + charged_written();
  }

 private:
  Admission admit(const tlm::tlm_generic_payload& gp, const Transfer& t) override {
    const bool reads = t.src == ir::Memory::hbm;
    Admission a = plain(gp, t, reads ? to_ticks(spec_.latency) : 0);
    if (t.src == t.dst) {  // a copy reads and writes by itself: it pays hbm.turnaround alone
      a.volume *= 2;
      a.direction = FlowDirection::copy;
    }
    a.cap = hbm_channel_share(spec_, static_cast<double>(t.bytes));
    return a;
  }

  const HbmSpec& spec_;
  std::uint64_t read_ = 0;     // bytes of transfers that read HBM
  std::uint64_t written_ = 0;  // bytes of transfers that write HBM
};

}  // namespace

std::unique_ptr<Block> make_hbm_block(const BlockBuild& b) { return std::make_unique<Hbm>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
