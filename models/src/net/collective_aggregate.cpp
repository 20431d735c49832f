// The collective engine's aggregate mode (fidelity.collectives = aggregate, models/src/net/README.md): a ring
// plan's identical steps split into runs, each run of a group moved as one flow (its members gathered first),
// with the run's HBM charges and the step's reductions at the run's end. The step-by-step machine and the
// plans are in collective_engine.cpp.
#include <algorithm>

#include "collective_engine.h"
#include "tpusim/models/timing.h"

namespace tpusim::models::net {

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

// Group g of a shape: the chips that differ only in the group's coordinates (kernels/README.md, "Groups"),
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

}  // namespace tpusim::models::net
