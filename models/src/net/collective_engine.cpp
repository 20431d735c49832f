#include "collective_engine.h"

#include <algorithm>

#include "tpusim/kernels/twisted_rings.h"
#include "tpusim/models/errors.h"
#include "tpusim/models/timing.h"

namespace tpusim::models::net {

// Plans with the collective library (kernels/collectives.h).
CollectivePlanner default_collective_planner() {
  return [](const Topology& topo, const ir::Instruction& ins, const ir::CollectiveGroup& group,
            const FaultSet& failed) {
    return kernels::plan_collective(topo, ins.comm.collective, ins.bytes, ins.dtype, group,
                                    static_cast<kernels::CollectiveAlgorithm>(ins.comm.algorithm), failed);
  };
}

CollectiveEngine::CollectiveEngine(Transport& transport, const ChipSpec& chip, IciUnits& units, NetStatistics& stats,
                                   CollectivePlanner planner, CollectiveFidelity fidelity)
    : transport_(transport),
      chip_(chip),
      units_(units),
      stats_(stats),
      plans_(std::move(planner)),
      chips_(transport.topology().chip_count()),
      ops_(chips_ * IciUnits::kSlots),
      keys_(chips_ * IciUnits::kSlots, kIdleKey),
      early_(chips_),
      ports_(chips_, nullptr),
      aggregates_(fidelity == CollectiveFidelity::aggregate && transport.runs_aggregates()) {}

std::optional<PlanId> CollectiveEngine::PlanBook::find(const Key& key) const {
  if (const auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  return std::nullopt;
}

PlanId CollectiveEngine::PlanBook::add(const Key& key, PlanInfo info) {
  plans_.push_back(std::move(info));
  const auto id = static_cast<PlanId>(plans_.size() - 1);
  by_key_.emplace(key, id);
  return id;
}

template <typename Replan>
PlanId CollectiveEngine::PlanBook::choose(std::uint64_t key, PlanId id, std::uint32_t epoch, Replan replan) {
  const auto [it, first] = chosen_.try_emplace(key, id);
  if (!first || epoch == 0) return it->second;
  const auto [v, fresh] = variants_.try_emplace(std::make_pair(id, epoch), 0);
  if (fresh) {
    const PlanSource src = *plans_[id].source;
    plans_.push_back(replan(src, plans_[id].group));
    v->second = static_cast<PlanId>(plans_.size() - 1);
  }
  it->second = v->second;
  return v->second;
}

PlanId CollectiveEngine::add(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup& group) {
  const GroupShapeId shape = transport_.add_group(group);
  const PlanBook::Key key{static_cast<int>(ins.comm.collective), ins.bytes, static_cast<int>(ins.dtype), shape,
                          static_cast<int>(ins.comm.algorithm)};
  if (const std::optional<PlanId> id = plans_.find(key)) return *id;
  return plans_.add(key, make_plan(origin, ins, group, shape));
}

CollectiveEngine::PlanInfo CollectiveEngine::make_plan(const Origin& origin, const ir::Instruction& ins,
                                                       const ir::CollectiveGroup& group, GroupShapeId shape) {
  const Topology& topo = transport_.topology();
  PlanInfo info;
  info.plan = plans_.planner()(topo, ins, group, transport_.faults());
  info.group = shape;
  info.element_bytes = static_cast<std::uint64_t>(dtype_bytes(ins.dtype));
  if (transport_.has_timed_faults()) info.source = std::make_unique<PlanSource>(PlanSource{origin, ins, group});
  plans_.note_shape(shape);
  const std::uint32_t follow = kernels::twisted_ring_axes(topo, info.plan, group);
  for (const kernels::CollectiveStep& step : info.plan.steps) {
    std::vector<TargetId> targets;
    std::uint32_t receives = 0;
    for (const kernels::CollectiveSend& send : step.sends) {
      const Target t{shape, send.offset, send.pod_offset, follow};
      if (t.pod_offset != 0 && topo.dcn_bandwidth_per_host().value() <= 0) {
        throw SimulationError(0, origin.core, origin.instr, origin.label,
                              "the collective crosses pods but the chip has no DCN bandwidth (chip.host.dcn_bandwidth)");
      }
      targets.push_back(transport_.add_target(t, origin));
      if (send.chain.axis >= 0) info.chains = true;
      // Offsets are the same for every chip, so a send that stays on its chip does so everywhere.
      if (!transport_.stays_home(targets.back())) ++receives;
    }
    info.targets.push_back(std::move(targets));
    info.receives.push_back(receives);
  }
  if (aggregates_.enabled() && ring_plan(info.plan)) split_runs(info);
  return info;
}

// With timed faults: the first chip to start the shape's seq-th collective picks the plan for every chip (SPMD
// peers must run the same steps): the one planned for the cables failed by then (re-planned on first use).
PlanId CollectiveEngine::plan_now(PlanId id, GroupId group, std::uint32_t seq) {
  return plans_.choose(key(group, seq), id, transport_.epoch(), [&](const PlanSource& src, GroupShapeId shape) {
    return make_plan(src.origin, src.ins, src.group, shape);
  });
}

void CollectiveEngine::start(std::uint32_t chip, Slot slot, std::uint32_t instr, const ir::Instruction& ins, PlanId id,
                             NetStatistics::Entry entry, Tick now) {
  if (seq_.empty()) seq_.assign(chips_ * plans_.shapes(), 0);  // every plan is known once the run starts
  const GroupId group = plans_[id].group;
  const std::uint32_t seq = seq_[chip * plans_.shapes() + group]++;
  if (transport_.has_timed_faults()) id = plan_now(id, group, seq);
  const PlanInfo& info = plans_[id];
  Op& o = op(chip, slot);
  o.active = true;
  o.starting = false;
  o.reducing = false;
  o.plan = id;
  o.entry = entry;
  o.group = info.group;
  o.core = ins.core;
  o.instr = instr;
  o.seq = seq;
  set_key(chip, slot, key(o.group, o.seq));
  o.step.index = 0;
  o.started = now;
  o.arrived.assign(info.plan.steps.size(), 0);
  // Receives that came in before this chip reached the collective.
  std::vector<Early>& early = early_[chip];
  std::size_t kept = 0;
  for (const Early& e : early) {
    if (e.group == o.group && e.seq == o.seq) {
      o.arrived[e.step] += e.count;
    } else {
      early[kept++] = e;
    }
  }
  early.resize(kept);
  o.aggregate = info.aggregate;
  o.hbm_pending = false;
  if (info.plan.steps.empty()) {
    o.active = false;
    set_key(chip, slot, kIdleKey);
    units_.finish(chip, slot);
  } else if (kCollectiveStartup.value() > 0) {
    o.starting = true;
    timers_.push(now + to_ticks(kCollectiveStartup), chip, slot, TimerKind::start);
  } else if (o.aggregate) {
    join(chip, slot, now);
  } else {
    begin_step(chip, slot, now);
  }
}

bool CollectiveEngine::sends(std::uint32_t chip, const PlanInfo& info, const kernels::CollectiveSend& send) const {
  if (send.chain.axis < 0) return true;
  const auto a = static_cast<std::size_t>(send.chain.axis);
  const int n = static_cast<int>(transport_.group(info.group).size[a]);  // the line's members
  const int position = kernels::line_position(transport_.topology(), info.plan, transport_.group(info.group),
                                               ChipId(chip), send);
  return kernels::chain_sends(send.chain, position, n);
}

bool CollectiveEngine::receives(std::uint32_t chip, const PlanInfo& info, const kernels::CollectiveSend& send) const {
  if (send.chain.axis < 0) return true;
  const auto a = static_cast<std::size_t>(send.chain.axis);
  const int n = static_cast<int>(transport_.group(info.group).size[a]);
  const int upstream = kernels::line_position(transport_.topology(), info.plan, transport_.group(info.group),
                                              ChipId(chip), send) - 1;
  return upstream >= 0 && kernels::chain_sends(send.chain, upstream, n);
}

void CollectiveEngine::charge(std::uint32_t chip, Slot slot, Tick now, std::uint64_t read, std::uint64_t written,
                              Tick spread) {
  ports_[chip]->charge_hbm(slot, slot, op(chip, slot).instr, now, read, written, spread);
}

bool CollectiveEngine::hbm_done(std::uint32_t chip, Slot slot, Tick now) {
  Op& o = op(chip, slot);
  // Nothing waits for the HBM yet (the step's transfers, the collective's last flow are still moving): mark it
  // done at once; nothing follows from it now, so no chip hears of it.
  const bool waiting = o.aggregate ? !aggregates_.run(o.group_run).flow_pending &&
                                         aggregates_.run(o.group_run).run + 1 >= plans_[o.plan].runs.size()
                                   : o.step.sends_pending == 0 && o.arrived[o.step.index] >= o.step.expected;
  if (!waiting) {
    o.hbm_pending = false;
    if (o.aggregate) --aggregates_.run(o.group_run).hbm_pending;
    return false;
  }
  timers_.push(now + 1, chip, slot, TimerKind::hbm);
  return true;
}

void CollectiveEngine::begin_step(std::uint32_t chip, Slot slot, Tick now) {
  Op& o = op(chip, slot);
  const PlanInfo& info = plans_[o.plan];
  const kernels::CollectiveStep& step = info.plan.steps[o.step.index];
  const std::vector<TargetId>& targets = info.targets[o.step.index];
  o.step.sends_pending = 0;
  o.step.expected = info.receives[o.step.index];
  o.step.reduce = step.reduce_elements;
  if (info.chains) {
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      if (transport_.stays_home(targets[i])) continue;
      if (receives(chip, info, step.sends[i])) o.step.reduce += step.sends[i].chain.reduce_elements;
      else --o.step.expected;
    }
  }
  std::uint64_t read = o.step.reduce * info.element_bytes, written = 0;
  for (std::size_t i = 0; i < step.sends.size(); ++i) {
    const TargetId t = targets[i];
    if (transport_.stays_home(t)) continue;
    if (!info.chains || receives(chip, info, step.sends[i])) written += step.sends[i].bytes;
    if (info.chains && !sends(chip, info, step.sends[i])) continue;
    read += step.sends[i].bytes;
    ++o.step.sends_pending;
    const TransferId id = transport_.start(chip, t, step.sends[i].bytes, now, Owner::collective);
    if (id >= sent_.size()) sent_.resize(static_cast<std::size_t>(id) + 1);
    sent_[id] = Sent{slot, o.group, o.seq, o.step.index};
  }
  o.hbm_pending = read + written > 0;
  if (o.hbm_pending) charge(chip, slot, now, read, written, 0);
  check_step(chip, slot, now);
}

void CollectiveEngine::check_step(std::uint32_t chip, Slot slot, Tick now) {
  Op& o = op(chip, slot);
  if (!o.active || o.starting || o.reducing || o.hbm_pending || o.step.sends_pending > 0) return;
  if (o.arrived[o.step.index] < o.step.expected) return;
  const std::uint64_t elements = o.step.reduce;
  const Tick reduce =
      elements == 0
          ? 0
          : cycles_to_ticks(vpu_cycles(chip_.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(elements)),
                            chip_.clock);
  const Tick sync = to_ticks(kCollectiveStepSync);
  if (reduce == 0 && sync == 0) {
    end_step(chip, slot, now);
    return;
  }
  o.reducing = true;
  if (reduce == 0) {
    timers_.push(now + sync, chip, slot, TimerKind::step);
  } else {
    reductions_.push(Reduction{chip, slot, o.instr, o.core, reduce, sync, 0});
  }
}

// A chip's reductions that reach its VPU at one tick reserve it in program order (the order the chip issued
// their collectives), not in the order the network happened to process them: the outcome of a tick does not
// depend on the order of the processes that ran in it (which mirrored chips rely on, mirror/mirroring.h).
// Their timers are pushed in arrival order, as they were when each reserved on arrival.
void CollectiveEngine::flush_reductions(Tick now) {
  if (reductions_.empty()) return;
  for (const std::uint32_t i : reductions_.program_order()) {
    Reduction& r = reductions_[i];
    r.end = ports_[r.chip]->reserve_vpu(r.core, r.instr, now, r.duration) + r.after;
  }
  for (const Reduction& r : reductions_.due()) timers_.push(r.end, r.chip, r.slot, TimerKind::step);
  reductions_.clear();
}

const std::vector<std::uint32_t>& CollectiveEngine::DueReductions::program_order() {
  order_.resize(due_.size());
  for (std::uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Reduction& x = due_[a];
    const Reduction& y = due_[b];
    return x.chip != y.chip ? x.chip < y.chip : x.instr != y.instr ? x.instr < y.instr : a < b;
  });
  return order_;
}

bool CollectiveEngine::fire_timers(Tick now) {
  bool any = false;
  while (!timers_.empty() && timers_.top().time <= now) {
    const Timer t = timers_.top();
    timers_.pop();
    if (t.kind == TimerKind::start) {
      Op& o = op(t.chip, t.slot);
      o.starting = false;
      if (o.aggregate) {
        join(t.chip, t.slot, now);
      } else {
        begin_step(t.chip, t.slot, now);
      }
    } else if (t.kind == TimerKind::hbm) {
      Op& o = op(t.chip, t.slot);
      o.hbm_pending = false;
      if (o.aggregate) {
        --aggregates_.run(o.group_run).hbm_pending;
        advance_run(o.group_run, now);
      } else {
        check_step(t.chip, t.slot, now);
      }
    } else {
      op(t.chip, t.slot).reducing = false;
      end_step(t.chip, t.slot, now);
    }
    any = true;
  }
  return any;
}

void CollectiveEngine::end_step(std::uint32_t chip, Slot slot, Tick now) {
  Op& o = op(chip, slot);
  const PlanInfo& info = plans_[o.plan];
  if (++o.step.index < info.plan.steps.size()) {
    begin_step(chip, slot, now);
    return;
  }
  stats_.collective_completed(o.entry, o.started, now, o.plan);
  o.active = false;
  set_key(chip, slot, kIdleKey);
  units_.finish(chip, slot);
}

void CollectiveEngine::on_delivered(TransferId id, Tick now) {
  const Sent sent = sent_[id];
  if (sent.aggregate) {
    aggregate_delivered(id, now);
    return;
  }
  const std::uint32_t src = transport_.source(id), dst = transport_.sink(id);
  transport_.release(id);
  --op(src, sent.slot).step.sends_pending;
  check_step(src, sent.slot, now);  // may start transfers (and reuse the id)
  receive(dst, sent, now);
}

void CollectiveEngine::receive(std::uint32_t chip, const Sent& sent, Tick now) {
  const std::uint64_t k = key(sent.group, sent.seq);
  const std::uint64_t* keys = keys_.data() + static_cast<std::size_t>(chip) * IciUnits::kSlots;
  for (Slot s = 0; s < IciUnits::kSlots; ++s) {
    if (keys[s] != k) continue;
    Op& o = op(chip, s);
    ++o.arrived[sent.step];
    if (sent.step == o.step.index) check_step(chip, s, now);
    return;
  }
  for (Early& e : early_[chip]) {
    if (e.group == sent.group && e.seq == sent.seq && e.step == sent.step) {
      ++e.count;
      return;
    }
  }
  early_[chip].push_back(Early{sent.group, sent.seq, sent.step, 1});
}

}  // namespace tpusim::models::net
