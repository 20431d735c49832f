#include "chip/sequencer.h"

#include <algorithm>

#include <fmt/format.h>

#include "block/unit_blocks.h"

namespace tpusim::models {

Sequencer::Sequencer(const ChipContext& chip, const ProgramIndex& index)
    : chip_(chip),
      index_(index),
      program_(index.program()),
      queues_(static_cast<std::size_t>(index.layout().count())),
      vmem_(static_cast<std::size_t>(chip.spec.tensorcores), nullptr),
      remaining_(program_.size()),
      phase_(hw_units().size()) {
  for (int q = 0; q < index.layout().count(); ++q) {
    const UnitBlock* runs = unit_block_for(index.layout().unit(q));
    if (runs == nullptr || !runs->phased) outside_queues_.push_back(q);  // the ICI ports, barriers
  }
  const auto cores = static_cast<std::size_t>(chip.spec.tensorcores);
  for (const UnitBlock& b : unit_blocks()) {
    if (!b.phased) continue;
    const std::size_t instances = b.queues == UnitBlock::Queues::block_per_core ? cores : 1;
    phase_[static_cast<std::size_t>(b.hw)].resize(instances);
    counters_.units[static_cast<std::size_t>(b.hw)].instances.resize(instances);
  }
}

void Sequencer::bind(int queue, InstructionUnit* unit, int lane) {
  queues_[static_cast<std::size_t>(queue)].unit = unit;
  queues_[static_cast<std::size_t>(queue)].lane = lane;
}

void Sequencer::bind_vmem(int core, VmemSpace* vmem) { vmem_[static_cast<std::size_t>(core)] = vmem; }

void Sequencer::check_bound() const {
  const QueueLayout& layout = index_.layout();
  for (int q = 0; q < layout.count(); ++q) {
    const auto& queue = index_.queue(q);
    if (queue.empty() || queues_[static_cast<std::size_t>(q)].unit != nullptr) continue;
    if (layout.unit(q) == ir::UnitKind::sync) continue;
    chip_.fail(queue.front(), fmt::format("the chip has no block to run {} instructions ({} queue)",
                                          ir::op_name(program_[queue.front()].kind), ir::unit_name(layout.unit(q))));
  }
}

// Charges the time since the last activation to the state the chip was in; the state only changes at
// activations.
void Sequencer::account(Tick now, Activity activity) {
  const Tick dt = now - last_account_;
  last_account_ = now;
  switch (activity) {
    case Activity::compute: counters_.time.compute += dt; break;
    case Activity::communication: counters_.time.communication += dt; break;
    case Activity::memory: counters_.time.memory_stall += dt; break;
    case Activity::host: counters_.time.host_stall += dt; break;
    case Activity::idle: counters_.time.idle += dt; break;
  }
  const QueueLayout& layout = index_.layout();
  for (std::size_t u = 0; u < phase_.size(); ++u) {
    for (std::size_t i = 0; i < phase_[u].size(); ++i) {
      const UnitPhase& ph = phase_[u][i];
      UnitTimes& t = counters_.units[u].instances[i];
      // A VPU the last activation found idle may have run work started from outside the chip since (a
      // collective's reduction, reserved by the network: InstructionUnit::busy_between): busy, not stalled.
      Tick outside = 0;
      if (!ph.busy && u == static_cast<std::size_t>(HwUnit::vpu)) {
        const QueueState& q = queues_[static_cast<std::size_t>(layout.queue(ir::UnitKind::vpu, static_cast<int>(i)))];
        if (q.unit != nullptr) outside = q.unit->busy_between(q.lane, now - dt, now);
      }
      if (ph.busy) t.busy += dt;
      t.busy += outside;
      if (ph.slots) t.queue_slots += dt;
      if (ph.reason >= 0) t.stalled[static_cast<std::size_t>(ph.reason)] += dt - outside;
    }
  }
}

bool Sequencer::run(Tick now, const std::vector<InstructionUnit*>& units, bool hold) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (InstructionUnit* u : units) progress = u->retire(now, *this) || progress;
    // Only a barrier completes inside an issue round, so without one starting, what an ICI queue could
    // start cannot change during the round: checking before it is enough.
    if (hold && outside_ready(now)) return false;
    for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
      while (try_issue(q, now)) progress = true;
    }
  }
  if (remaining_ == 0) counters_.finish = now;
  return true;
}

bool Sequencer::outside_ready(Tick now) const {
  for (const int q : outside_queues_) {
    const QueueState& state = queues_[static_cast<std::size_t>(q)];
    const auto& queue = index_.queue(q);
    if (state.cursor >= queue.size()) continue;
    if (state.unit != nullptr && !state.unit->can_start(state.lane, now)) continue;
    if (dependencies_done(program_[queue[state.cursor]], q)) return true;
  }
  return false;
}

// Per unit instance: busy if any of its queues has work in flight; then `slots` if a queue's next instruction
// waits for a free slot, else (not busy) the reason the first waiting queue's next instruction cannot start.
// ICI (reported per link and collective) and barriers are not classified.
void Sequencer::classify(Tick now) {
  for (auto& instances : phase_) std::fill(instances.begin(), instances.end(), UnitPhase{});
  const QueueLayout& layout = index_.layout();
  for (int q = 0; q < layout.count(); ++q) {
    const UnitBlock* runs = unit_block_for(layout.unit(q));
    if (runs == nullptr || !runs->phased) continue;
    const HwUnit hw = runs->hw;
    const std::size_t instance =
        runs->queues == UnitBlock::Queues::block_per_core ? static_cast<std::size_t>(layout.core(q)) : 0;
    const QueueState& state = queues_[static_cast<std::size_t>(q)];
    const bool busy = state.unit != nullptr && state.unit->busy(state.lane, now);
    const bool full = state.unit != nullptr && state.unit->full(state.lane, now);
    UnitPhase& ph = phase_[static_cast<std::size_t>(hw)][instance];
    ph.busy = ph.busy || busy;
    const auto& queue = index_.queue(q);
    if (state.cursor >= queue.size()) continue;
    if (full) {
      ph.slots = true;
    } else if (ph.reason < 0) {
      const int blocker = blocking_queue(program_[queue[state.cursor]], q);
      if (blocker >= 0) ph.reason = stall_on(layout.unit(blocker));
    }
  }
  for (auto& instances : phase_) {
    for (UnitPhase& ph : instances) {
      if (ph.busy) {
        ph.reason = -1;
      } else {
        ph.slots = false;
      }
    }
  }
}

std::string Sequencer::stuck() const {
  std::uint32_t started = ~0U, waiting = ~0U;
  for (std::size_t q = 0; q < queues_.size(); ++q) {
    const auto& queue = index_.queue(static_cast<int>(q));
    const QueueState& state = queues_[q];
    for (std::uint32_t pos = state.completed.prefix(); pos < state.cursor; ++pos) {
      if (!state.completed.done(pos)) started = std::min(started, queue[pos]);
    }
    if (state.cursor < queue.size()) waiting = std::min(waiting, queue[state.cursor]);
  }
  const auto name = [&](std::uint32_t i) {
    return fmt::format("instruction {} '{}' ({})", i, program_.label_of(program_[i]), ir::op_name(program_[i].kind));
  };
  if (started != ~0U) return name(started) + " started and never completed";
  if (waiting != ~0U) return name(waiting) + " never started: its dependencies never completed";
  return "nothing left to run";
}

void Sequencer::deadlock() const {
  for (std::size_t q = 0; q < queues_.size(); ++q) {
    const auto& queue = index_.queue(static_cast<int>(q));
    if (queues_[q].cursor < queue.size()) chip_.fail(queue[queues_[q].cursor], "deadlock: dependencies never complete");
  }
  chip_.fail(0, "deadlock");
}

// A matmul's dependency on an earlier matmul of its own MXU queue is an ordering (accumulation) dependency:
// the in-order MXU pipeline honours it (a matmul's result reaches another matmul's operands only through a
// vector op or a DMA), so it does not hold the matmul back; that is what lets back-to-back matmuls pipeline.
// A fused matmul (kernels/program.h) reads its operands from HBM, so its dependencies are all real.
bool Sequencer::dependencies_done(const ir::Instruction& ins, int queue) const { return blocking_queue(ins, queue) < 0; }

int Sequencer::blocking_queue(const ir::Instruction& ins, int queue) const {
  const bool pipelined = ir::unit_of(ins.kind) == ir::UnitKind::mxu && !ins.streams_hbm();
  const std::uint32_t* deps = program_.deps_of(ins);
  for (std::uint32_t k = 0; k < ins.deps.count; ++k) {
    const std::uint32_t d = deps[k];
    const int dq = index_.queue_of(d);
    if (pipelined && dq == queue) continue;
    if (!queues_[static_cast<std::size_t>(dq)].completed.done(index_.position(d))) return dq;
  }
  return -1;
}

bool Sequencer::try_issue(int q, Tick now) {
  QueueState& state = queues_[static_cast<std::size_t>(q)];
  const auto& queue = index_.queue(q);
  if (state.cursor >= queue.size()) return false;
  const std::uint32_t instr = queue[state.cursor];
  const ir::Instruction& ins = program_[instr];
  if (state.unit != nullptr && !state.unit->can_start(state.lane, now)) return false;
  // A fused instruction runs alone on its unit (one XLA fusion at a time; kernels/program.h).
  if (ins.streams_hbm() && state.unit != nullptr && state.unit->busy(state.lane, now)) return false;
  if (!dependencies_done(ins, q)) return false;
  if (ins.vmem.alloc > 0) {
    VmemSpace* vmem = vmem_[ins.core];
    if (vmem == nullptr) chip_.fail(instr, "the chip has no VMEM block in this TensorCore");
    if (!vmem->allocate(ins.vmem.alloc)) {
      chip_.fail(instr, fmt::format("VMEM overflow: allocating {} with {} of {} in use",
                                    format_bytes(Bytes(ins.vmem.alloc)), format_bytes(Bytes(vmem->used())),
                                    format_bytes(Bytes(vmem->capacity()))));
    }
  }
  ++state.cursor;
  start(q, instr, now);
  return true;
}

void Sequencer::start(int q, std::uint32_t instr, Tick now) {
  const ir::Instruction& ins = program_[instr];
  ++counters_.executed[static_cast<std::size_t>(ir::unit_of(ins.kind))];
  if (ins.kind == ir::OpKind::barrier) {
    complete(instr, now, now);
    return;
  }
  queues_[static_cast<std::size_t>(q)].unit->start(instr, ins, now);
}

void Sequencer::complete(std::uint32_t instr, Tick started, Tick now) {
  const ir::Instruction& ins = program_[instr];
  if (chip_.control.tracing()) {
    chip_.control.trace(TraceSpan{chip_.chip, ins.core, ir::unit_of(ins.kind), instr, to_seconds(started), to_seconds(now)});
  }
  if (ins.vmem.free > 0) {
    VmemSpace* vmem = vmem_[ins.core];
    if (vmem == nullptr || !vmem->release(ins.vmem.free)) {
      chip_.fail(instr, fmt::format("frees {} of VMEM but only {} is allocated", format_bytes(Bytes(ins.vmem.free)),
                                    format_bytes(Bytes(vmem != nullptr ? vmem->used() : 0))));
    }
  }
  queues_[static_cast<std::size_t>(index_.queue_of(instr))].completed.complete(index_.position(instr));
  --remaining_;
}

}  // namespace tpusim::models
