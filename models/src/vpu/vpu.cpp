#include "vpu/vpu.h"

#include <algorithm>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
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

// A vector instruction lasts max(vpu_cycles, vmem_bound_cycles of its declared VMEM bytes) (timing.h).
class Vpu final : public Block, public InstructionUnit, public ResultDrain {
 public:
  Vpu(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::vpu, b.block.name, b.instance), chip_(b.chip) {}

  // ---- InstructionUnit: one vector instruction at a time, in order behind the pops reserved so far.
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !busy_ && !pops_.pending(); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    const ChipSpec& spec = chip_.spec;
    vmem_bytes_ += ins.bytes;  // declared VMEM operand bytes (timing.h)
    const std::int64_t cycles =
        std::max(vpu_cycles(spec.vpu, ins.vector_op, ins.elements),
                 vmem_bound_cycles(static_cast<double>(ins.bytes), spec.vmem.bandwidth, spec.clock));
    busy_ = true;
    instr_ = instr;
    started_ = now;
    finish_ = now + cycles_to_ticks(cycles, spec.clock);
  }
  bool retire(Tick now, CompletionSink& sink) override {
    if (!busy_ || finish_ > now) return false;
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
  void account(Tick now) override { busy_time_.advance(now, busy_); }
  void advance(Tick now) override { pops_.retire(now); }
  [[nodiscard]] Tick next_event(Tick now) const override {
    return std::min(busy_ ? finish_ : kNever, pops_.next_boundary(now));
  }
  // Pops run only while their matmul is in flight (the MXU is computing then), so only vector work counts.
  [[nodiscard]] Activity activity(Tick /*now*/) const override { return busy_ ? Activity::compute : Activity::idle; }
  void collect(ChipCounters& c) const override {
    c.vpu_busy += busy_time_.total() + pops_.busy_ticks();  // vector instructions and pops are disjoint
    c.vpu_vmem_bytes += vmem_bytes_;
  }

 private:
  const ChipContext& chip_;
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
