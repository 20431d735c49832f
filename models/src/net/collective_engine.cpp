#include "collective_engine.h"

#include <algorithm>

#include "tpusim/models/errors.h"
#include "tpusim/models/timing.h"

namespace tpusim::models::net {

// Plans with the collective library (kernels/collectives.h).
CollectivePlanner default_collective_planner() {
  return [](const Topology& topo, const ir::Instruction& ins, const ir::CollectiveGroup& group,
            const FaultSet& failed) {
    return kernels::plan_collective(topo, ins.collective, ins.bytes, ins.dtype, group,
                                    static_cast<kernels::CollectiveAlgorithm>(ins.algorithm), failed);
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
  const PlanBook::Key key{static_cast<int>(ins.collective), ins.bytes, static_cast<int>(ins.dtype), shape,
                          static_cast<int>(ins.algorithm)};
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
  for (const kernels::CollectiveStep& step : info.plan.steps) {
    std::vector<TargetId> targets;
    std::uint32_t receives = 0;
    for (const kernels::CollectiveSend& send : step.sends) {
      const Target t{shape, send.offset, send.pod_offset};
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

// A ring all-reduce / all-gather / reduce-scatter, in the pod or across pods: its DCN stage is a ring over the
// pods (pod_offset +1 every step), which every chip runs alike too; its route is the two NIC channels. Axes
// planned as lines (LineChain sends: a mesh axis or a segment, kernels/collectives.h) run aggregated too: not
// every chip sends at every step, but every step loads the line's first link with the step's bytes, so the
// busiest link carries the run's bytes summed, as on a ring (README.md).
bool CollectiveEngine::ring_plan(const kernels::CollectivePlan& plan) {
  if (plan.kind != CollectiveKind::all_reduce && plan.kind != CollectiveKind::all_gather &&
      plan.kind != CollectiveKind::reduce_scatter) {
    return false;
  }
  if (plan.algorithm != kernels::CollectiveAlgorithm::ring_bidirectional &&
      plan.algorithm != kernels::CollectiveAlgorithm::ring_unidirectional) {
    return false;
  }
  return !plan.steps.empty();
}

// Cuts the steps into runs of consecutive steps whose sends to other chips are the same (target, bytes) pairs:
// within a run every link of a group carries the same bytes at every step over fixed routes (failed and
// degraded links change neither between faults), so its steps are synchronous and take, each, the slowest
// link's time, which one weighted max-min fair flow over all those links reproduces (README.md).
void CollectiveEngine::split_runs(PlanInfo& info) {
  info.aggregate = true;
  // Chain plans: each chip reduces what its receives bring; a step's reduction on the critical path is that of
  // the chip of a group reducing most in it (every group is congruent: the first one's members stand for all).
  const std::vector<std::uint32_t>* line_members =
      info.chains ? &aggregates_.layout(info.group, transport_).members.front() : nullptr;
  std::vector<std::pair<TargetId, std::uint64_t>> previous;
  bool previous_gather = false;
  for (std::size_t s = 0; s < info.plan.steps.size(); ++s) {
    const kernels::CollectiveStep& step = info.plan.steps[s];
    std::vector<std::pair<TargetId, std::uint64_t>> sends;
    // A line's reduce-scatter keeps its first link busy at every step, its all-gather its last link: a run
    // holds steps of one phase only, or its busiest link would not be busy at every step of it.
    bool gather = false;
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      if (!transport_.stays_home(info.targets[s][i])) sends.emplace_back(info.targets[s][i], step.sends[i].bytes);
      gather = gather || (step.sends[i].chain.axis >= 0 && step.sends[i].chain.gather);
    }
    std::sort(sends.begin(), sends.end());
    if (s == 0 || sends != previous || gather != previous_gather) {
      info.runs.emplace_back();
      info.runs.back().first = static_cast<std::uint32_t>(s);
    }
    Run& run = info.runs.back();
    if (run.steps++ == 0) {
      run.sends = sends;
    } else {
      for (std::size_t i = 0; i < sends.size(); ++i) run.sends[i].second += sends[i].second;
    }
    previous = std::move(sends);
    previous_gather = gather;
    std::uint64_t reduce = step.reduce_elements;
    if (line_members != nullptr) {
      std::uint64_t most = 0;
      for (const std::uint32_t m : *line_members) {
        std::uint64_t e = 0;
        for (std::size_t i = 0; i < step.sends.size(); ++i) {
          if (step.sends[i].chain.axis >= 0 && !transport_.stays_home(info.targets[s][i]) &&
              receives(m, info, step.sends[i])) {
            e += step.sends[i].chain.reduce_elements;
          }
        }
        most = std::max(most, e);
      }
      reduce += most;
    }
    if (reduce > 0) {
      info.reduce += cycles_to_ticks(
          vpu_cycles(chip_.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(reduce)), chip_.clock);
    }
  }
}

// Group g of a shape: the chips that differ only in the group's coordinates (kernels/collectives.h, "Groups"),
// numbered in the order of their first member.
const CollectiveEngine::Layout& CollectiveEngine::Aggregates::layout(GroupId group, const Transport& transport) {
  if (layouts_.size() <= group) layouts_.resize(static_cast<std::size_t>(group) + 1);
  Layout& l = layouts_[group];
  if (!l.group_of_chip.empty()) return l;
  const Topology& topo = transport.topology();
  const ir::CollectiveGroup& g = transport.group(group);
  const std::size_t chips = topo.chip_count();
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<std::uint32_t> of_first(chips, kNone);  // group index by its member 0
  l.group_of_chip.resize(chips);
  for (std::uint32_t c = 0; c < chips; ++c) {
    ChipCoord at = topo.coord(ChipId(c));
    for (std::size_t a = 0; a < kMaxAxes; ++a) {
      const int size = static_cast<int>(g.size[a]), stride = static_cast<int>(g.stride[a]);
      at.pos[a] -= (at.pos[a] % (size * stride)) / stride * stride;
    }
    at.pod -= at.pod % static_cast<int>(g.pods);
    std::uint32_t& index = of_first[topo.chip_at(at).value()];
    if (index == kNone) {
      index = static_cast<std::uint32_t>(l.members.size());
      l.members.emplace_back();
    }
    l.group_of_chip[c] = index;
    l.members[index].push_back(c);
  }
  return l;
}

void CollectiveEngine::join(std::uint32_t chip, Slot slot, Tick now) {
  const Op& o = op(chip, slot);
  const Layout& l = aggregates_.layout(o.group, transport_);
  const std::uint32_t g = l.group_of_chip[chip];
  const std::optional<std::uint32_t> gr =
      aggregates_.gather(o.group, o.seq, g, Member{chip, slot}, l.members[g].size());
  if (gr) start_run(*gr, 0, now);
}

std::optional<std::uint32_t> CollectiveEngine::Aggregates::gather(GroupId shape, std::uint32_t seq, std::uint32_t g,
                                                                  Member member, std::size_t size) {
  const auto it = gathering_.try_emplace(std::make_tuple(shape, seq, g)).first;
  it->second.push_back(member);
  if (it->second.size() < size) return std::nullopt;
  std::uint32_t gr = 0;
  if (free_group_runs_.empty()) {
    gr = static_cast<std::uint32_t>(group_runs_.size());
    group_runs_.emplace_back();
  } else {
    gr = free_group_runs_.back();
    free_group_runs_.pop_back();
  }
  group_runs_[gr].members = std::move(it->second);
  gathering_.erase(it);
  return gr;
}

void CollectiveEngine::Aggregates::retire(GroupFlow& flow) {
  retired_paths_.push_back(std::move(flow.path));
  retired_hop_bytes_.push_back(std::move(flow.hop_bytes));
  flow.path.clear();
  flow.hop_bytes.clear();
}

// Run `run` of a group as one flow (its members[0]'s op names the plan, group and seq), and each member's HBM
// charged with what it reads and writes over the run's steps.
void CollectiveEngine::start_run(std::uint32_t gr, std::uint32_t run, Tick now) {
  const std::vector<Member>& members = aggregates_.run(gr).members;
  const Op& o = op(members[0].chip, members[0].slot);
  PlanInfo& info = plans_[o.plan];
  const Layout& l = aggregates_.layout(o.group, transport_);
  const std::uint32_t g = l.group_of_chip[members[0].chip];
  Run& r = info.runs[run];
  if (r.flows.empty()) r.flows.resize(l.members.size());
  GroupFlow& f = r.flows[g];
  if (!f.built) {
    for (const std::uint32_t m : l.members[g]) {
      for (const auto& [target, bytes] : r.sends) {
        const std::uint64_t sent = info.chains ? chain_bytes(m, info, r, target) : bytes;
        if (sent > 0) f.parts.push_back(AggregatePart{m, target, sent});
      }
    }
  }
  if (!f.built || f.epoch != transport_.epoch()) {  // routed again after a timed cable fault
    if (f.built) aggregates_.retire(f);
    f.built = true;
    f.epoch = transport_.epoch();
    f.bytes = 0;
    Tick longest = 0;
    for (const AggregatePart& p : f.parts) {
      longest = std::max(longest, transport_.append_route(p.chip, p.target, f.path));
      f.hop_bytes.resize(f.path.size(), p.bytes);
      f.bytes = std::max(f.bytes, p.bytes);
    }
    f.latency = static_cast<Tick>(r.steps) * longest;
  }
  const TransferId id = transport_.start_aggregate(f.path, f.hop_bytes, f.bytes, f.latency, f.parts, r.steps, now);
  if (id >= sent_.size()) sent_.resize(static_cast<std::size_t>(id) + 1);
  sent_[id] = Sent{members[0].slot, o.group, o.seq, gr, true};
  GroupRun& pending = aggregates_.run(gr);
  pending.run = run;
  pending.flow_pending = true;
  if (run != 0) return;
  // The whole collective's HBM traffic at its first run, paced over its bandwidth-optimal time: one charge
  // per member and collective, not per run (each is two chip activations: README.md).
  pending.hbm_pending = 0;
  const Tick spread = to_ticks(info.plan.ideal_time);
  constexpr std::uint64_t kUnknownHbm = ~std::uint64_t{0};
  if (info.chains && info.hbm_of_chip.empty()) info.hbm_of_chip.assign(chips_, {kUnknownHbm, 0});
  for (const Member& m : pending.members) {
    std::uint64_t read = 0, written = 0;
    if (info.chains && info.hbm_of_chip[m.chip].first != kUnknownHbm) {
      std::tie(read, written) = info.hbm_of_chip[m.chip];
    } else {
      for (Run& each : info.runs) {
        const auto [rd, wr] = run_hbm(m.chip, info, each);
        read += rd;
        written += wr;
      }
      if (info.chains) info.hbm_of_chip[m.chip] = {read, written};
    }
    if (read + written == 0) continue;
    Op& mo = op(m.chip, m.slot);
    mo.hbm_pending = true;
    mo.group_run = gr;
    ++pending.hbm_pending;
    charge(m.chip, m.slot, now, read, written, spread);
  }
}

std::pair<std::uint64_t, std::uint64_t> CollectiveEngine::run_hbm(std::uint32_t chip, const PlanInfo& info,
                                                                  Run& r) const {
  if (!info.chains && r.hbm_known) return {r.hbm_read, r.hbm_written};
  std::uint64_t read = 0, written = 0, reduce = 0;
  for (std::uint32_t s = r.first; s < r.first + r.steps; ++s) {
    const kernels::CollectiveStep& step = info.plan.steps[s];
    reduce += step.reduce_elements;
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      if (transport_.stays_home(info.targets[s][i])) continue;
      if (sends(chip, info, step.sends[i])) read += step.sends[i].bytes;
      if (receives(chip, info, step.sends[i])) {
        written += step.sends[i].bytes;
        reduce += step.sends[i].chain.reduce_elements;
      }
    }
  }
  read += reduce * info.element_bytes;
  if (!info.chains) {
    r.hbm_known = true;
    r.hbm_read = read;
    r.hbm_written = written;
  }
  return {read, written};
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

// What `chip` sends under `target` over the steps of run `r` of a chain plan (only where chain_sends() says).
std::uint64_t CollectiveEngine::chain_bytes(std::uint32_t chip, const PlanInfo& info, const Run& r,
                                            TargetId target) const {
  std::uint64_t bytes = 0;
  for (std::uint32_t s = r.first; s < r.first + r.steps; ++s) {
    const kernels::CollectiveStep& step = info.plan.steps[s];
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      if (info.targets[s][i] == target && sends(chip, info, step.sends[i])) bytes += step.sends[i].bytes;
    }
  }
  return bytes;
}

// The next run, or: every member reduces what its steps would have (one VPU reservation of their summed
// time), then pays the steps' synchronisations and completes (end_step of the last step).
void CollectiveEngine::aggregate_delivered(TransferId id, Tick now) {
  transport_.release(id);
  const std::uint32_t gr = sent_[id].step;
  aggregates_.run(gr).flow_pending = false;
  advance_run(gr, now);
}

void CollectiveEngine::advance_run(std::uint32_t gr, Tick now) {
  GroupRun& g = aggregates_.run(gr);
  if (g.flow_pending) return;
  const std::uint32_t next = g.run + 1;
  const PlanInfo& info = plans_[op(g.members[0].chip, g.members[0].slot).plan];
  if (next >= info.runs.size() && g.hbm_pending > 0) return;  // the last run waits for the members' HBM
  if (next < info.runs.size()) {
    start_run(gr, next, now);
    return;
  }
  const std::vector<Member> members = std::move(g.members);
  g.members.clear();
  aggregates_.release(gr);
  for (const Member& m : members) {
    Op& o = op(m.chip, m.slot);
    o.step.index = static_cast<std::uint32_t>(info.plan.steps.size() - 1);
    const Tick syncs = static_cast<Tick>(info.plan.steps.size()) * to_ticks(kCollectiveStepSync);
    if (info.reduce > 0) {
      o.reducing = true;
      reductions_.push(Reduction{m.chip, m.slot, o.instr, o.core, info.reduce, syncs, 0});
      continue;
    }
    const Tick end = now + syncs;
    if (end == now) {
      end_step(m.chip, m.slot, now);
    } else {
      o.reducing = true;
      timers_.push(end, m.chip, m.slot, TimerKind::step);
    }
  }
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
