// The DMA engine: one descriptor queue (a TransferEngine) per TensorCore, each keeping dma.outstanding
// transfers in flight and retiring them in its own issue order, and one TLM initiator socket bound to every
// memory a path "dma -> <memory>" reaches (the VMEM of each TensorCore, CMEM, HBM, host memory).
//
// A transfer between two memories goes to the slower of them (the lower nominal bandwidth; the one further from the
// TensorCore on a tie: vmem, cmem, hbm, host), which times it: HBM <-> VMEM and HBM <-> CMEM at HBM, CMEM <-> VMEM at
// CMEM, anything <-> host over PCIe, VMEM <-> VMEM at that TensorCore's VMEM. The faster end counts the transfer's
// bytes in its traffic (MemoryTarget::count_transfer: HBM read and written bytes, PCIe bytes), so a memory's traffic is
// what the program moves through it whichever end is slower. Assumption: the faster end keeps up. Its bandwidth taken
// by such transfers is not modelled: they do not contend with its other transfers, are not in its busy time, and a
// transfer does not wait for it (host <-> HBM over PCIe takes at most 32 GB/s of >= 700 GB/s of HBM on the bundled
// chips; a what-if HBM faster than VMEM or CMEM gets HBM <-> VMEM or CMEM loads at their rate, which may add up to more
// than HBM's: the run notes "HBM over its rate" then). Modelling it needs a transfer served by both ends' schedulers at
// once; `tpusim describe assumptions` lists it. The queue of a DMA is its Instruction::core; a VMEM endpoint is that
// TensorCore's VMEM. Its pattern scales the memory time it needs: bytes / dma.strided_efficiency (or gather_efficiency)
// (dma_pattern_efficiency in timing.h).
#include <array>
#include <vector>

#include <fmt/format.h>
#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "memory/transfer_engine.h"
#include "memory/transfer.h"

namespace tpusim::models {
namespace {

constexpr std::size_t kMemories = 5;  // ir::Memory values

int level(ir::Memory m) {
  switch (m) {
    case ir::Memory::vmem: return 0;
    case ir::Memory::cmem: return 1;
    case ir::Memory::hbm: return 2;
    case ir::Memory::host: return 3;
    case ir::Memory::remote: return 4;
  }
  return 4;
}

std::string_view memory_name(ir::Memory m) {
  switch (m) {
    case ir::Memory::hbm: return "hbm";
    case ir::Memory::vmem: return "vmem";
    case ir::Memory::cmem: return "cmem";
    case ir::Memory::host: return "host";
    case ir::Memory::remote: return "remote";
  }
  return "?";
}

class Dma final : public Block, public InstructionUnit {
 public:
  using Socket = tlm_utils::multi_passthrough_initiator_socket<Dma, 32, tlm::tlm_base_protocol_types, 0,
                                                               sc_core::SC_ZERO_OR_MORE_BOUND>;
  Socket socket;  // bound to every memory the DMA engine reaches

  Dma(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::dma, b.block.name, 0), socket("socket"), chip_(b.chip) {
    const int cores = b.chip.spec.tensorcores;
    if (cores < 1 || cores > 128) throw std::invalid_argument("DMA engine needs 1 to 128 descriptor queues");
    queues_.reserve(static_cast<std::size_t>(cores));
    for (int q = 0; q < cores; ++q) queues_.emplace_back(b.chip.spec.dma.outstanding, static_cast<std::uint8_t>(q));
    for (auto& r : routes_) r.assign(static_cast<std::size_t>(cores), Route{});
    socket.register_nb_transport_bw(this, &Dma::nb_transport_bw);
  }

  void connect(Block& to) override {
    auto* memory = dynamic_cast<MemoryTarget*>(&to);
    if (memory == nullptr) {
      Block::connect(to);
      return;
    }
    const Route route{static_cast<int>(socket.size()), memory->nominal_bandwidth().value(), memory};
    socket.bind(memory->target_socket());
    auto& by_core = routes_[static_cast<std::size_t>(memory->memory())];
    if (memory->memory() == ir::Memory::vmem) {
      by_core[static_cast<std::size_t>(memory->memory_instance())] = route;
    } else {
      std::fill(by_core.begin(), by_core.end(), route);
    }
  }

  // ---- InstructionUnit: lane = descriptor queue = TensorCore.
  [[nodiscard]] bool can_start(int lane, Tick /*now*/) const override { return !queue(lane).full(); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    const Route& src = route(instr, ins, ins.memory.src);
    const Route& dst = route(instr, ins, ins.memory.dst);
    // The slower memory times the transfer; on a tie, the one further out.
    const bool to_src = src.bandwidth < dst.bandwidth ||
                        (src.bandwidth == dst.bandwidth && level(ins.memory.src) >= level(ins.memory.dst));
    const Route& target = to_src ? src : dst;
    Transfer t;
    t.src = ins.memory.src;
    t.dst = ins.memory.dst;
    t.bytes = ins.bytes;
    t.volume = static_cast<double>(ins.bytes) / dma_pattern_efficiency(chip_.spec.dma, ins.memory.pattern);
    bytes_ += ins.bytes;
    const Route& other = to_src ? dst : src;
    if (other.memory != target.memory) other.memory->count_transfer(t);  // the faster end keeps up: counted only
    queues_[ins.core].issue(now, instr, socket[target.socket], to_src ? ins.memory.src : ins.memory.dst, t);
  }
  bool retire(Tick now, CompletionSink& sink) override {
    bool any = false;
    for (TransferEngine& q : queues_) {
      any = q.retire([&](std::uint32_t instr, Tick issued) { sink.complete(instr, issued, now); }) || any;
    }
    return any;
  }
  [[nodiscard]] bool busy(int lane, Tick /*now*/) const override { return queue(lane).busy(); }
  [[nodiscard]] bool full(int lane, Tick /*now*/) const override { return queue(lane).full(); }

  // ---- Block: busy while any queue has a transfer issued and not retired.
  void account(Tick now) override { busy_.advance(now, any_busy()); }
  [[nodiscard]] Activity activity(Tick /*now*/) const override { return any_busy() ? Activity::memory : Activity::idle; }
  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::dma).busy += busy_.total();
    c.unit(HwUnit::dma).bytes += bytes_;
  }

 private:
  struct Route {
    int socket = -1;
    double bandwidth = 0;  // the memory's nominal bandwidth
    MemoryTarget* memory = nullptr;
  };

  [[nodiscard]] const TransferEngine& queue(int lane) const { return queues_[static_cast<std::size_t>(lane)]; }
  [[nodiscard]] bool any_busy() const {
    return std::any_of(queues_.begin(), queues_.end(), [](const TransferEngine& q) { return q.busy(); });
  }
  const Route& route(std::uint32_t instr, const ir::Instruction& ins, ir::Memory m) const {
    const Route& r = routes_[static_cast<std::size_t>(m)][ins.core];
    if (r.socket < 0) {
      chip_.fail(instr, fmt::format("the DMA engine reaches no {} (chip.paths has no 'dma -> {}')", memory_name(m),
                                    memory_name(m)));
    }
    return r;
  }
  tlm::tlm_sync_enum nb_transport_bw(int /*socket*/, tlm::tlm_generic_payload& gp, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) {
    queues_[gp.get_extension<Transfer>()->engine].on_response(gp);
    return tlm::TLM_COMPLETED;
  }

  const ChipContext& chip_;
  std::vector<TransferEngine> queues_;
  std::array<std::vector<Route>, kMemories> routes_;  // [memory][core]
  BusyTime busy_;
  std::uint64_t bytes_ = 0;  // every DMA instruction's payload (remote puts are the ICI port's)
};

}  // namespace

std::unique_ptr<Block> make_dma_block(const BlockBuild& b) { return std::make_unique<Dma>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
