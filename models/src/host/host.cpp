// The host: its CPU's work for the chip and its PCIe link, which is also the path to host memory.
//
// Host instructions (launch, infeed, outfeed, checkpoint, sync) run one at a time in program order
// (kHostTransfersInFlight): host.seconds of host-side work, then, when there are bytes, the transfer over the
// PCIe direction it uses (infeed and launch: host -> chip; the others chip -> host). As a memory (the path "dma ->
// host"), the link takes DMAs to and from host memory. Both directions are bandwidth schedulers at
// host.pcie_bandwidth, and every transfer first waits kPcieLatency (timing.h). Assumption: a transfer into or
// out of HBM is limited by PCIe alone (16-32 GB/s against 0.7-2.8 TB/s on the bundled chips), so it takes no
// share of HBM's bandwidth; its bytes still count in HBM traffic: the host's own transfers here (infeed writes
// HBM, outfeed and checkpoint read it), a DMA's through the HBM's count_transfer (dma/dma.cpp).
#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "memory/transfer_engine.h"
#include "host/host.h"
#include "memory/memory_block.h"

namespace tpusim::models {
namespace {

class Host final : public MemoryBlock, public InstructionUnit, private tlm::tlm_bw_transport_if<> {
 public:
  Host(const sc_core::sc_module_name& name, const BlockBuild& b)
      : MemoryBlock(name, b.chip, BlockKind::host, b.block.name, 0, ir::Memory::host, b.chip.spec.host.pcie_bandwidth),
        engine_(kHostTransfersInFlight, kHostEngine),
        local_(local_port(*this)) {
    in_ = add_scheduler(MemoryScheduler::shared, b.chip.spec.host.pcie_bandwidth.value());
    out_ = add_scheduler(MemoryScheduler::shared, b.chip.spec.host.pcie_bandwidth.value());
  }

  // ---- InstructionUnit: host instructions.
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !engine_.full(); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    Transfer t;
    const bool infeed = ins.host.op == ir::HostOp::infeed || ins.host.op == ir::HostOp::launch;
    t.src = infeed ? ir::Memory::host : ir::Memory::hbm;
    t.dst = infeed ? ir::Memory::hbm : ir::Memory::host;
    t.bytes = ins.bytes;
    t.volume = static_cast<double>(ins.bytes);
    (infeed ? hbm_written_ : hbm_read_) += ins.bytes;
    engine_.issue(now, instr, ins.bytes > 0 ? &local_ : nullptr, ir::Memory::host, t,
                  to_ticks(Seconds(ins.host.seconds)));
  }
  bool retire(Tick now, CompletionSink& sink) override {
    return engine_.retire([&](std::uint32_t instr, Tick issued) { sink.complete(instr, issued, now); });
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick /*now*/) const override { return engine_.busy(); }
  [[nodiscard]] bool full(int /*lane*/, Tick /*now*/) const override { return engine_.full(); }

  // ---- Block
  void account(Tick now) override { engine_.account(now); }
  void advance(Tick now) override {
    MemoryBlock::advance(now);
    engine_.start_ready(now);
  }
  [[nodiscard]] Tick next_event(Tick now) const override {
    return std::min(MemoryBlock::next_event(now), engine_.next_event());
  }
  [[nodiscard]] Activity activity(Tick /*now*/) const override {
    return engine_.busy() ? Activity::host : Activity::idle;
  }
  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::host).busy += engine_.busy_ticks();
    c.unit(HwUnit::host).bytes += bytes_;
    c.traffic.hbm_read += hbm_read_;
    c.traffic.hbm_written += hbm_written_;
  }
  // Every transfer over the link: the host's own, a DMA's PCIe times, and one a slower end times (a what-if
  // PCIe faster than HBM).
  void count_transfer(const Transfer& t) override { bytes_ += t.bytes; }

 private:
  // The link: into the chip on one direction, out of it on the other.
  Admission admit(const tlm::tlm_generic_payload& gp, const Transfer& t) override {
    Admission a = plain(gp, t, to_ticks(kPcieLatency));
    a.scheduler = t.src == ir::Memory::host ? in_ : out_;
    return a;
  }
  // Answers to the host's own transfers.
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) override {
    engine_.on_response(gp);
    return tlm::TLM_COMPLETED;
  }
  void invalidate_direct_mem_ptr(sc_dt::uint64 /*start*/, sc_dt::uint64 /*end*/) override {}

  TransferEngine engine_;
  tlm::tlm_fw_transport_if<>& local_;
  std::size_t in_ = 0, out_ = 0;
  std::uint64_t bytes_ = 0;  // over PCIe: host instructions and DMAs to or from host memory
  std::uint64_t hbm_read_ = 0, hbm_written_ = 0;  // HBM bytes of the host's own transfers
};

}  // namespace

std::unique_ptr<Block> make_host_block(const BlockBuild& b) { return std::make_unique<Host>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
