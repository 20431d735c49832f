#include "chip/chip.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>

#include "block/elaborator.h"
#include "block/result_drain.h"
#include "block/unit_blocks.h"
#include "ici/ici_port.h"
#include "ici/network_port.h"
#include "memory/memory_block.h"
#include "memory/transfer.h"
#include "tpusim/core/chip_blocks.h"
#include "vmem/vmem.h"

namespace tpusim::models {
namespace {

void collect_tree(const std::vector<std::unique_ptr<Block>>& blocks, std::vector<Block*>& out) {
  for (const auto& b : blocks) {
    out.push_back(b.get());
    for (sc_core::sc_object* child : b->get_child_objects()) {
      if (auto* block = dynamic_cast<Block*>(child)) out.push_back(block);
    }
  }
}

}  // namespace

Chip::Chip(const sc_core::sc_module_name& name, std::uint32_t id, const ChipSpec& spec, const ProgramIndex& program,
           const MxuDataflowModel& dataflow, MxuFidelity mxu_fidelity, RunControl& control,
           const BlockRegistry& registry)
    : sc_core::sc_module(name),
      context_{id, spec, program.program(), control, dataflow, mxu_fidelity},
      collective_(context_),
      sequencer_(context_, program) {
  if (spec.composition.blocks.empty()) {
    throw std::invalid_argument("chip spec without its composition (standard_composition)");
  }
  const Elaborator elaborator(context_, spec, registry, program.blocks_used());
  blocks_ = elaborator.build(BlockScope::chip);
  collect_tree(blocks_, all_);
  elaborator.bind(all_);
  // Observers first: at each activation they account the interval that ends before the blocks they watch do.
  std::stable_partition(all_.begin(), all_.end(), [](const Block* b) { return block_kind(b->block_kind()).observes; });

  // The sequencer's queues, each on the unit that serves it; the units in the order they retire
  // (block/unit_blocks.h).
  const QueueLayout& layout = program.layout();
  std::vector<std::pair<int, InstructionUnit*>> order;
  for (Block* b : all_) {
    if (auto* vmem = dynamic_cast<VmemSpace*>(b)) sequencer_.bind_vmem(b->instance(), vmem);
    if (auto* memory = dynamic_cast<MemoryBlock*>(b); memory != nullptr && memory->memory() == ir::Memory::hbm) {
      collective_.set_hbm(*memory);
    }
    if (auto* vpu = dynamic_cast<ResultDrain*>(b); vpu != nullptr && b->block_kind() == BlockKind::vpu) {
      collective_.add_vpu(b->instance(), *vpu);
    }
    auto* unit = dynamic_cast<InstructionUnit*>(b);
    const UnitBlock* kind = unit_block_of(b->block_kind());
    if (unit == nullptr || kind == nullptr) continue;
    switch (kind->queues) {
      case UnitBlock::Queues::lane_per_core:
        for (int core = 0; core < layout.cores(); ++core) sequencer_.bind(layout.queue(kind->unit, core), unit, core);
        break;
      case UnitBlock::Queues::block_per_core: sequencer_.bind(layout.queue(kind->unit, b->instance()), unit, 0); break;
      case UnitBlock::Queues::one: sequencer_.bind(layout.queue(kind->unit, 0), unit, 0); break;
    }
    const bool per_core = kind->queues == UnitBlock::Queues::block_per_core;
    order.emplace_back(per_core ? 2 * b->instance() + kind->retire : kind->retire, unit);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [r, unit] : order) retire_order_.push_back(unit);
  sequencer_.check_bound();

  SC_METHOD(run);
  sensitive << wake_;
}

void Chip::attach_ici(NetworkPort& ici) {
  collective_.attach_ici(ici);
  for (Block* b : all_) {
    if (auto* port = dynamic_cast<IciPort*>(b)) port->attach(ici);
  }
}

void Chip::run() {
  if (context_.control.failed() || reported_) return;
  try {
    const Tick kernel = sc_core::sc_time_stamp().value();
    context_.control.on_activation(kernel);
    if (kernel == timed_) timed_ran_ = kernel;
    Tick next = activate(kernel, false);
    while (next != kNever && next <= context_.control.horizon() && may_run_ahead()) {
      const Tick at = next;
      next = activate(at, true);
      if (held_) {
        held_ = false;
        next = at;
        break;
      }
    }
    timed_ = next;
    if (next != kNever) wake_.notify(sc_core::sc_time::from_value(next - kernel));
  } catch (...) {
    context_.control.fail(std::current_exception());
  }
}

bool Chip::may_run_ahead() const {
  if (!context_.control.run_ahead() || context_.control.failed()) return false;
  return std::none_of(all_.begin(), all_.end(), [](const Block* b) { return b->awaits_wake(); });
}

Tick Chip::reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) {
  return collective_.reserve_vpu(core, instr, now, duration);
}

void Chip::charge_hbm(std::uint32_t slot, std::uint32_t token, std::uint32_t instr, Tick /*now*/,
                      std::uint64_t read, std::uint64_t written, Tick spread) {
  collective_.keep(slot, token, instr, read, written, spread);
  // The network charges at the kernel's time: the chip is not running ahead (it has this collective in flight).
  if (!activating_) wake_.notify(sc_core::SC_ZERO_TIME);
}

Tick CollectiveSide::reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) {
  ResultDrain* vpu = core < static_cast<int>(vpus_.size()) ? vpus_[static_cast<std::size_t>(core)] : nullptr;
  if (vpu == nullptr) chip_.fail(instr, fmt::format("a collective reducing on TensorCore {}, which has no VPU", core));
  return vpu->reserve_pops(now, duration);
}

void CollectiveSide::keep(std::uint32_t slot, std::uint32_t token, std::uint32_t instr, std::uint64_t read,
                          std::uint64_t written, Tick spread) {
  if (hbm_ == nullptr) {
    chip_.fail(instr, "an ICI instruction's HBM traffic on a chip whose HBM block does not take charges (MemoryBlock)");
  }
  charges_.push_back(Charge{slot, token, read, written, spread});
}

void CollectiveSide::take(Tick now) {
  if (hbm_ == nullptr) return;
  // In the order of their ICI slots (each a transfer engine of its own), not of the network's processing,
  // which may visit the chip's collectives in another order at the same tick (a mirrored chip's class takes
  // what its members charged at one tick as a set: mirror/mirroring.h).
  std::stable_sort(charges_.begin(), charges_.end(), [](const Charge& a, const Charge& b) { return a.slot < b.slot; });
  for (const Charge& c : charges_) {
    const HbmSpec& hbm = chip_.spec.hbm;
    double cap = hbm_channel_share(hbm, static_cast<double>(std::max(c.read, c.written)));
    if (c.spread > 0) {
      const double turnaround = c.read > 0 && c.written > 0 ? hbm.turnaround : 0.0;
      const double rate = hbm.achievable_bandwidth().value() * (1.0 - turnaround);  // bytes/s
      const double paced = static_cast<double>(c.read + c.written) / (rate * to_seconds(c.spread).value());
      cap = std::min(cap, std::max(paced, 1e-9));
    }
    hbm_->charge(now, static_cast<std::uint8_t>(kFirstIciEngine + c.slot), order_++, c.read, c.written, cap, c.token);
  }
  charges_.clear();
  std::vector<std::uint32_t>& done = hbm_->charges_done();
  for (const std::uint32_t token : done) ici_->hbm_done(chip_.chip, token, now);
  done.clear();
}

Tick Chip::activate(Tick now, bool ahead) {
  // Two wakes at the tick of the last completion (the network's delta wake for an ICI completion and the
  // chip's own timed one) may activate a finished chip once more: nothing to do.
  if (reported_ || now >= stop_at_) return kNever;
  struct Activating {
    bool& flag;
    explicit Activating(bool& f) : flag(f) { flag = true; }
    ~Activating() { flag = false; }
    Activating(const Activating&) = delete;
    Activating& operator=(const Activating&) = delete;
  } activating(activating_);
  context_.now = now;
  Activity activity = Activity::idle;
  for (const Block* b : all_) activity = std::max(activity, b->activity(now));
  sequencer_.account(now, activity);
  for (Block* b : all_) b->account(now);
  for (Block* b : all_) b->advance(now);
  collective_.take(now);
  // Ahead, an activation that finishes the program reports it from the kernel at its tick, like one that
  // would start an ICI instruction (the run control counts unfinished chips at the kernel's time).
  const bool ran = sequencer_.run(now, retire_order_, ahead);
  if (ahead && (!ran || sequencer_.finished())) {
    held_ = true;
    return now;
  }
  if (sequencer_.finished()) {
    context_.control.chip_finished();
    reported_ = true;
    return kNever;
  }
  collective_.take(now);  // an ICI instruction started by this activation may have charged the HBM
  sequencer_.classify(now);
  Tick next = kNever;
  bool waiting = false;
  for (const Block* b : all_) {
    next = std::min(next, b->next_event(now));
    waiting = waiting || b->awaits_wake();
  }
  if (next == kNever) {
    if (waiting) return kNever;  // the interconnect wakes the chip when its instruction completes
    sequencer_.deadlock();
  }
  return next;
}

ChipCounters Chip::collect() const {
  ChipCounters c = sequencer_.counters();
  for (const Block* b : all_) b->collect(c);
  return c;
}



}  // namespace tpusim::models
