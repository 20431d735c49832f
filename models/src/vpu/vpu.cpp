// The VPU of a TensorCore: it runs the core's vector instructions one at a time and drains the MXU's results
// (ResultDrain, block/result_drain.h).
#include "block/result_drain.h"

#include <algorithm>

#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "memory/fused_stream.h"
#include "memory/transfer.h"
#include "vpu/result_pops.h"

namespace tpusim::models {

Tick ResultPops::reserve(Tick earliest, Tick duration) {
  if (duration == 0) return earliest;
  const Tick start = pending() ? std::max(earliest, pending_.back().end) : earliest;
  total_ += duration;
  if (pending() && pending_.back().end == start) {
    pending_.back().end += duration;
  } else {
    pending_.push_back(Interval{start, start + duration});
  }
  return pending_.back().end;
}

void ResultPops::retire(Tick now) {
  while (pending() && pending_[head_].end <= now) ++head_;
  if (!pending()) {  // drained: reuse the storage from its start
    pending_.clear();
    head_ = 0;
  } else if (head_ >= 64 && 2 * head_ >= pending_.size()) {  // never drained: drop the retired half
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

Tick ResultPops::reserved_within(Tick from, Tick to) const {
  Tick total = 0;
  for (std::size_t i = head_; i < pending_.size() && pending_[i].start < to; ++i) {
    if (pending_[i].end > from) total += std::min(pending_[i].end, to) - std::max(pending_[i].start, from);
  }
  return total;
}

Tick ResultPops::next_boundary(Tick now) const {
  if (!pending()) return kNever;
  return pending_[head_].start > now ? pending_[head_].start : pending_[head_].end;
}

namespace {

// A vector instruction lasts max(vpu_cycles, vmem_bound_cycles of its declared VMEM bytes) (timing.h). A fused
// vector instruction (kernels/program.h) adds its exposed first load and last store, streams its operands
// through the path "vpu -> hbm" meanwhile (memory/fused_stream.h), and completes once its stream has too.
class Vpu final : public Block, public InstructionUnit, public ResultDrain {
 public:
  using Socket = tlm_utils::multi_passthrough_initiator_socket<Vpu, 32, tlm::tlm_base_protocol_types, 0,
                                                               sc_core::SC_ZERO_OR_MORE_BOUND>;
  Socket memory;  // the path vpu -> hbm

  Vpu(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::vpu, b.block.name, b.instance), memory("memory"), chip_(b.chip), stream_(b.instance, 1) {
    memory.register_nb_transport_bw(this, &Vpu::nb_transport_bw);
  }

  void connect(Block& to) override {
    auto* target = dynamic_cast<MemoryTarget*>(&to);
    if (target == nullptr || target->memory() != ir::Memory::hbm) {
      Block::connect(to);
      return;
    }
    memory.bind(target->target_socket());
  }

  // ---- InstructionUnit: one vector instruction at a time, in order behind the pops reserved so far.
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !busy_ && !pops_.pending(); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    const ChipSpec& spec = chip_.spec;
    vmem_bytes_ += ins.bytes;  // declared VMEM operand bytes (timing.h)
    const std::int64_t cycles =
        std::max(vpu_cycles(spec.vpu, ins.vector.op, ins.vector.elements),
                 vmem_bound_cycles(static_cast<double>(ins.bytes), spec.vmem.bandwidth, spec.clock));
    Tick exposed = 0;  // fused: the first load before and the last store after the compute
    if (ins.streams_hbm()) {
      if (memory.size() == 0) chip_.fail(instr, "a fused vector op streams from HBM, and chip.paths has no 'vpu -> hbm'");
      exposed = FusedStream::head_ticks(spec.hbm, ins) + FusedStream::tail_ticks(spec.hbm, ins);
      stream_.start(now, instr, ins, memory[0]);
    }
    busy_ = true;
    instr_ = instr;
    started_ = now;
    finish_ = now + cycles_to_ticks(cycles, spec.clock) + exposed;
  }
  bool retire(Tick now, CompletionSink& sink) override {
    if (!busy_ || finish_ > now || stream_.busy()) return false;
    busy_ = false;
    sink.complete(instr_, started_, now);
    return true;
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick now) const override { return busy_ || pops_.active(now); }
  [[nodiscard]] bool full(int lane, Tick now) const override { return busy(lane, now); }
  [[nodiscard]] Tick busy_between(int /*lane*/, Tick from, Tick to) const override {
    return pops_.reserved_within(from, to);
  }

  // ---- ResultDrain: the MXU's results (and a collective's reductions: Chip::reserve_vpu), after the running
  // vector instruction.
  Tick reserve_pops(Tick earliest, Tick duration) override {
    if (busy_) earliest = std::max(earliest, finish_);
    return pops_.reserve(earliest, duration);
  }

  // ---- Block
  // Busy while computing: a fused instruction past its compute, waiting for its stream, is not.
  void account(Tick now) override {
    busy_time_.advance(now, computing());
    last_ = now;
  }
  void advance(Tick now) override { pops_.retire(now); }
  [[nodiscard]] Tick next_event(Tick now) const override {
    return std::min(busy_ && finish_ > now ? finish_ : kNever, pops_.next_boundary(now));
  }
  // Pops run only while their matmul is in flight (the MXU is computing then), so only vector work counts;
  // fused: waiting for a stream after the compute counts as a memory stall.
  [[nodiscard]] Activity activity(Tick /*now*/) const override {
    if (computing()) return Activity::compute;
    return stream_.was_busy() ? Activity::memory : Activity::idle;
  }
  void collect(ChipCounters& c) const override {
    c.unit(HwUnit::vpu).busy += busy_time_.total() + pops_.busy_ticks();  // vector instructions and pops are disjoint
    c.unit(HwUnit::vpu).bytes += vmem_bytes_;
  }

 private:
  // Computing since the previous account() (every finish is a chip activation).
  [[nodiscard]] bool computing() const { return busy_ && finish_ > last_; }
  tlm::tlm_sync_enum nb_transport_bw(int /*socket*/, tlm::tlm_generic_payload& gp, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) {
    stream_.on_response(gp);
    return tlm::TLM_COMPLETED;
  }

  const ChipContext& chip_;
  FusedStream stream_;
  Tick last_ = 0;
  ResultPops pops_;
  bool busy_ = false;
  std::uint32_t instr_ = 0;
  Tick started_ = 0;
  Tick finish_ = 0;
  BusyTime busy_time_;            // vector instructions
  std::uint64_t vmem_bytes_ = 0;  // VMEM operand bytes of the vector instructions (Instruction::bytes)
};

}  // namespace

std::unique_ptr<Block> make_vpu_block(const BlockBuild& b) { return std::make_unique<Vpu>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
