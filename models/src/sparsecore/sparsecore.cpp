// The SparseCores of a chip (v4, v5p): embedding lookups (gather) and updates (scatter), one instruction at a
// time, spread over every tile of every SparseCore (Jouppi et al., ISCA 2023: the SparseCores fetch table rows
// from HBM with their own fetch units and add them into pooled vectors beside the TensorCores).
//
// An instruction's transfers go through one TLM initiator socket to the memories the paths "sparsecore ->
// <memory>" reach, as the SparseCore's own engine (kSparseCoreEngine), so they share bandwidth with the DMA
// engine's queues:
//   gather:  read the rows from `src` (embedding_row_volume: whole 32-byte accesses per row) and write the
//            k pooled vectors (k x n x dtype) to `dst`, both at once (the tiles stream);
//   scatter: read the k gradient vectors from `src`, and read and write back the rows of the table in `dst`.
// It ends when its transfers have and when the adds are done (sparsecore_pool_cycles after its start). The
// SparseCore's own memory is the on-chip end of its transfers (vmem in their Transfer), so reads of HBM pay
// hbm.latency and writes are posted, as for a DMA.
#include <array>

#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "memory/transfer.h"

namespace tpusim::models {
namespace {

constexpr std::size_t kMemories = 5;  // ir::Memory values
constexpr std::size_t kTransfers = 3;  // at most three per instruction (a scatter)

class SparseCore final : public Block, public InstructionUnit {
 public:
  using Socket = tlm_utils::multi_passthrough_initiator_socket<SparseCore, 32, tlm::tlm_base_protocol_types, 0,
                                                               sc_core::SC_ZERO_OR_MORE_BOUND>;
  Socket socket;  // bound to every memory a path "sparsecore -> <memory>" reaches

  SparseCore(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::sparsecore, b.block.name, 0), socket("socket"), chip_(b.chip) {
    routes_.fill(-1);
    for (auto& gp : payloads_) gp.set_extension(new Transfer);
    socket.register_nb_transport_bw(this, &SparseCore::nb_transport_bw);
  }

  void connect(Block& to) override {
    auto* memory = dynamic_cast<MemoryTarget*>(&to);
    if (memory == nullptr) {
      Block::connect(to);
      return;
    }
    routes_[static_cast<std::size_t>(memory->memory())] = static_cast<int>(socket.size());
    socket.bind(memory->target_socket());
  }

  // ---- InstructionUnit
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !busy_; }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    busy_ = true;
    instr_ = instr;
    started_ = now;
    compute_end_ = now + cycles_to_ticks(sparsecore_pool_cycles(chip_.spec.sparsecore, ins), chip_.spec.clock);
    bytes_ += ins.bytes;
    const double rows = embedding_row_volume(ins);
    const auto bags = static_cast<double>(ins.shape.k) * static_cast<double>(ins.shape.n) * dtype_bytes(ins.dtype);
    next_ = 0;
    if (ins.kind == ir::OpKind::gather) {
      send(instr, ins.memory.src, ir::Memory::vmem, ins.bytes, rows);                         // the rows in
      send(instr, ir::Memory::vmem, ins.memory.dst, static_cast<std::uint64_t>(bags), bags);  // the bags out
    } else {
      send(instr, ins.memory.src, ir::Memory::vmem, static_cast<std::uint64_t>(bags), bags);  // the gradients in
      send(instr, ins.memory.dst, ir::Memory::vmem, ins.bytes, rows);                         // the rows in
      send(instr, ir::Memory::vmem, ins.memory.dst, ins.bytes, rows);                         // and back
    }
  }
  bool retire(Tick now, CompletionSink& sink) override {
    if (!busy_ || outstanding_ > 0 || compute_end_ > now) return false;
    busy_ = false;
    sink.complete(instr_, started_, now);
    return true;
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick /*now*/) const override { return busy_; }
  [[nodiscard]] bool full(int /*lane*/, Tick /*now*/) const override { return busy_; }

  // ---- Block
  void account(Tick now) override { busy_time_.advance(now, busy_); }
  [[nodiscard]] Tick next_event(Tick now) const override { return busy_ && compute_end_ > now ? compute_end_ : kNever; }
  [[nodiscard]] Activity activity(Tick /*now*/) const override { return busy_ ? Activity::compute : Activity::idle; }
  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::sparsecore).busy += busy_time_.total();
    c.unit(HwUnit::sparsecore).bytes += bytes_;
  }

 private:
  // One transfer of the running instruction from `src` to `dst`; the one that is not the SparseCore's own
  // memory is the memory it goes to.
  void send(std::uint32_t instr, ir::Memory src, ir::Memory dst, std::uint64_t bytes, double volume) {
    if (volume <= 0) return;
    const ir::Memory memory = src == ir::Memory::vmem ? dst : src;
    const int route = routes_[static_cast<std::size_t>(memory)];
    if (route < 0) chip_.fail(instr, "the SparseCore reaches no such memory (chip.paths)");
    tlm::tlm_generic_payload& gp = payloads_[next_++];
    Transfer& t = *gp.get_extension<Transfer>();
    t = Transfer{};
    t.src = src;
    t.dst = dst;
    t.bytes = bytes;
    t.volume = volume;
    t.engine = kSparseCoreEngine;
    t.order = order_++;
    prepare_transfer(gp, t, memory);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    ++outstanding_;
    if (socket[route]->nb_transport_fw(gp, phase, delay) == tlm::TLM_COMPLETED) --outstanding_;
  }
  tlm::tlm_sync_enum nb_transport_bw(int /*socket*/, tlm::tlm_generic_payload& /*gp*/, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) {
    --outstanding_;
    return tlm::TLM_COMPLETED;
  }

  const ChipContext& chip_;
  std::array<int, kMemories> routes_{};  // socket index by ir::Memory; -1 = not reached
  std::array<tlm::tlm_generic_payload, kTransfers> payloads_;
  std::size_t next_ = 0;
  int outstanding_ = 0;
  std::uint64_t order_ = 0;
  bool busy_ = false;
  std::uint32_t instr_ = 0;
  Tick started_ = 0;
  Tick compute_end_ = 0;
  BusyTime busy_time_;
  std::uint64_t bytes_ = 0;  // table rows gathered or updated (Instruction::bytes)
};

}  // namespace

std::unique_ptr<Block> make_sparsecore_block(const BlockBuild& b) {
  return std::make_unique<SparseCore>(b.block.name.c_str(), b);
}

}  // namespace tpusim::models
