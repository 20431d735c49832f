#include "collective_engine.h"

#include <algorithm>

#include "tpusim/models/errors.h"
#include "tpusim/models/timing.h"

namespace tpusim::models::net {

// Plans with the collective library (kernels/collectives.h).
CollectivePlanner default_collective_planner() {
  return [](const Topology& topo, const ir::Instruction& ins) -> kernels::CollectivePlan {
    return kernels::plan_collective(topo, ins.collective, ins.bytes, ins.dtype, ins.mesh_axes,
                                    static_cast<kernels::CollectiveAlgorithm>(ins.algorithm));
  };
}

CollectiveEngine::CollectiveEngine(Transport& transport, const ChipSpec& chip, IciUnits& units, NetStatistics& stats,
                                   CollectivePlanner planner)
    : transport_(transport),
      chip_(chip),
      units_(units),
      stats_(stats),
      planner_(std::move(planner)),
      chips_(transport.topology().chip_count()) {}

PlanId CollectiveEngine::add(const Origin& origin, const ir::Instruction& ins) {
  const auto key = std::make_tuple(static_cast<int>(ins.collective), ins.bytes, static_cast<int>(ins.dtype),
                                   ins.mesh_axes, static_cast<int>(ins.algorithm));
  PlanId id = 0;
  if (const auto it = plan_by_key_.find(key); it != plan_by_key_.end()) {
    id = it->second;
  } else {
    const Topology& topo = transport_.topology();
    PlanInfo info;
    info.plan = planner_(topo, ins);
    for (const kernels::CollectiveStep& step : info.plan.steps) {
      std::vector<TargetId> targets;
      std::uint32_t receives = 0;
      for (const kernels::CollectiveSend& send : step.sends) {
        const Target t{send.offset, send.pod_offset};
        if (t.pod_offset != 0 && topo.dcn_bandwidth_per_host().value() <= 0) {
          throw SimulationError(0, origin.core, origin.instr, origin.label,
                                "the collective crosses pods but the chip has no DCN bandwidth (chip.host.dcn_bandwidth)");
        }
        targets.push_back(transport_.add_target(t, origin));
        // Offsets are the same for every chip, so a send that stays on its chip does so everywhere.
        if (!transport_.stays_home(targets.back())) ++receives;
      }
      info.targets.push_back(std::move(targets));
      info.receives.push_back(receives);
    }
    plans_.push_back(std::move(info));
    id = static_cast<PlanId>(plans_.size() - 1);
    plan_by_key_.emplace(key, id);
  }
  return id;
}

void CollectiveEngine::start(std::uint32_t chip, PlanId id, NetStatistics::Entry entry, Tick now) {
  ChipState& s = chips_[chip];
  s.active = true;
  s.plan = id;
  s.entry = entry;
  s.started = now;
  s.step = 0;
  const PlanInfo& info = plans_[id];
  s.arrived.assign(info.plan.steps.size(), 0);
  const std::uint32_t seq = s.seq++;
  // Receives that came in before this chip reached the collective.
  std::size_t kept = 0;
  for (const Early& e : s.early) {
    if (e.seq == seq) {
      s.arrived[e.step] += e.count;
    } else {
      s.early[kept++] = e;
    }
  }
  s.early.resize(kept);
  if (info.plan.steps.empty()) {
    s.active = false;
    units_.finish(chip);
  } else {
    begin_step(chip, now);
  }
}

void CollectiveEngine::begin_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  const PlanInfo& info = plans_[s.plan];
  const kernels::CollectiveStep& step = info.plan.steps[s.step];
  const std::vector<TargetId>& targets = info.targets[s.step];
  s.sends_pending = 0;
  for (std::size_t i = 0; i < step.sends.size(); ++i) {
    const TargetId t = targets[i];
    if (transport_.destination(chip, t) == ChipId(chip)) continue;
    ++s.sends_pending;
    const TransferId id = transport_.start(chip, t, step.sends[i].bytes, now, Owner::collective);
    if (id >= sent_.size()) sent_.resize(static_cast<std::size_t>(id) + 1);
    sent_[id] = Sent{s.seq - 1, s.step};
  }
  check_step(chip, now);
}

void CollectiveEngine::check_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  if (!s.active || s.reducing || s.sends_pending > 0) return;
  const PlanInfo& info = plans_[s.plan];
  if (s.arrived[s.step] < info.receives[s.step]) return;
  const std::uint64_t elements = info.plan.steps[s.step].reduce_elements;
  if (elements == 0) {
    end_step(chip, now);
    return;
  }
  const Tick t = cycles_to_ticks(vpu_cycles(chip_.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(elements)),
                                 chip_.clock);
  s.reduce_ticks += t;
  s.reducing = true;
  timers_.push(Timer{now + t, timer_seq_++, chip});
}

bool CollectiveEngine::fire_timers(Tick now) {
  bool any = false;
  while (!timers_.empty() && timers_.top().time <= now) {
    const std::uint32_t chip = timers_.top().chip;
    timers_.pop();
    chips_[chip].reducing = false;
    end_step(chip, now);
    any = true;
  }
  return any;
}

void CollectiveEngine::end_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  const PlanInfo& info = plans_[s.plan];
  if (++s.step < info.plan.steps.size()) {
    begin_step(chip, now);
    return;
  }
  stats_.collective_completed(s.entry, s.started, now);
  s.active = false;
  units_.finish(chip);
}

void CollectiveEngine::on_delivered(TransferId id, Tick now) {
  const std::uint32_t src = transport_.source(id), dst = transport_.sink(id);
  const Sent sent = sent_[id];
  transport_.release(id);
  --chips_[src].sends_pending;
  check_step(src, now);  // may start transfers (and reuse the id)
  receive(dst, sent.seq, sent.step, 1, now);
}

void CollectiveEngine::receive(std::uint32_t chip, std::uint32_t seq, std::uint32_t step, std::uint32_t count,
                               Tick now) {
  ChipState& s = chips_[chip];
  if (s.active && s.seq - 1 == seq) {
    s.arrived[step] += count;
    if (step == s.step) check_step(chip, now);
    return;
  }
  for (Early& e : s.early) {
    if (e.seq == seq && e.step == step) {
      e.count += count;
      return;
    }
  }
  s.early.push_back(Early{seq, step, count});
}

}  // namespace tpusim::models::net
