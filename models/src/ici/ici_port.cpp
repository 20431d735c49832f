// The chip side of the interconnect: up to net::kIciOperationsInFlight ICI instructions in flight
// (NetworkPort::full), started in queue order and collected, in any order, through the network's per-chip
// calls. A collective's reductions reserve a VPU of the chip (Chip::reserve_vpu) and count in its busy time.
#include "ici/ici_port.h"

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "ici/network_port.h"
#include "program_index.h"

namespace tpusim::models {
namespace {

class Ici final : public Block, public InstructionUnit, public IciPort {
 public:
  Ici(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::ici, b.block.name, 0), chip_(b.chip) {}

  void attach(NetworkPort& ici) override { ici_ = &ici; }

  // ---- InstructionUnit
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return ici_ == nullptr || !ici_->full(chip_.chip); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    if (is_remote_put(ins)) {
      // A one-sided put over ICI (net/interconnect.h). Assumption: the local read of its source is not a
      // limit (HBM or VMEM run ~10-100x faster than an ICI link), so it takes no share of the HBM server.
      if (ici_ == nullptr) chip_.fail(instr, "no interconnect attached to run a remote DMA");
      put_bytes_ += ins.bytes;
    } else if (ici_ == nullptr) {
      chip_.fail(instr, "no interconnect attached to run an ICI instruction");
    }
    ici_->start(chip_.chip, instr, now);
  }
  bool retire(Tick now, CompletionSink& sink) override {
    std::uint32_t instr = 0;
    Tick started = 0;
    bool any = false;
    while (ici_ != nullptr && ici_->take_completed(chip_.chip, instr, started)) {
      sink.complete(instr, started, now);
      any = true;
    }
    return any;
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick /*now*/) const override { return running(); }
  [[nodiscard]] bool full(int /*lane*/, Tick /*now*/) const override { return ici_ != nullptr && ici_->full(chip_.chip); }

  // ---- Block: running ICI instructions have no local deadline; the interconnect wakes the chip.
  [[nodiscard]] Activity activity(Tick /*now*/) const override {
    return running() ? Activity::communication : Activity::idle;
  }
  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::dma).bytes += put_bytes_;
  }
  [[nodiscard]] bool awaits_wake() const override { return running(); }

 private:
  [[nodiscard]] bool running() const { return ici_ != nullptr && ici_->busy(chip_.chip); }

  const ChipContext& chip_;
  NetworkPort* ici_ = nullptr;
  std::uint64_t put_bytes_ = 0;  // remote DMA puts (counted with the DMA bytes)
};

}  // namespace

std::unique_ptr<Block> make_ici_block(const BlockBuild& b) { return std::make_unique<Ici>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
