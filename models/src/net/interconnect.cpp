#include "interconnect.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "tpusim/models/errors.h"
#include "tpusim/models/timing.h"

namespace tpusim::models::net {
namespace {

int wrap(int a, int m) { return ((a % m) + m) % m; }

// Assumption: targets x chips route entries cached per run at most (4 bytes each plus the links); collectives
// with more distinct targets (direct all-to-all on a big pod) route each send when it starts instead.
constexpr std::size_t kRouteCacheEntries = std::size_t{1} << 24;

// ICI channels move data at the link's rate x chip.ici.link_efficiency (framing and flow control); the DCN's
// NIC rate is taken as achievable as given.
std::vector<Channel> channels_of(const Topology& topo, std::uint32_t hosts, double link_efficiency) {
  std::vector<Channel> ch;
  ch.reserve(topo.link_count() + 2 * static_cast<std::size_t>(hosts));
  for (const Link& l : topo.links()) {
    ch.push_back(Channel{l.bandwidth.value() * link_efficiency / kTicksPerSecond, to_ticks(l.latency)});
  }
  // DCN NIC of each host: egress carries the DCN latency, ingress none (the latency counts once per send).
  // A zero rate (a chip without DCN) gets a tiny one; plans that would use it are rejected at elaboration.
  const double dcn = std::max(topo.dcn_bandwidth_per_host().value(), 1.0) / kTicksPerSecond;
  for (std::uint32_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, to_ticks(kDcnLatency)});
  for (std::uint32_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, 0});
  return ch;
}

bool is_ici(const ir::Instruction& ins) { return queue_unit(ins) == ir::UnitKind::ici; }

std::unique_ptr<Router> make_router(const Topology& topo, RoutingPolicy policy, const FaultSet& faults) {
  switch (policy) {
    case RoutingPolicy::dor:
      if (!faults.links.empty() || !faults.chips.empty()) {
        throw std::invalid_argument(fmt::format(
            "{} failed links and {} failed chips given, but fidelity.routing is dor, which ignores them: "
            "set fidelity.routing: fault_aware",
            faults.links.size(), faults.chips.size()));
      }
      return make_dor_router(topo);
    case RoutingPolicy::fault_aware: return make_fault_aware_router(topo, faults);
  }
  throw std::logic_error("unknown routing policy");
}

std::string describe_chip(const Topology& topo, ChipId chip) {
  const ChipCoord c = topo.coord(chip);
  std::string at = fmt::format("{}", c.pos[0]);
  for (int a = 1; a < topo.axes(); ++a) at += fmt::format(",{}", c.pos[static_cast<std::size_t>(a)]);
  return topo.pods() > 1 ? fmt::format("chip {} (pod {}, {})", chip.value(), c.pod, at)
                         : fmt::format("chip {} ({})", chip.value(), at);
}

}  // namespace

// Plans with the collective library (kernels/collectives.h).
CollectivePlanner default_collective_planner() {
  return [](const Topology& topo, const ir::Instruction& ins) -> kernels::CollectivePlan {
    return kernels::plan_collective(topo, ins.collective, ins.bytes, ins.dtype, ins.mesh_axes,
                                    static_cast<kernels::CollectiveAlgorithm>(ins.algorithm));
  };
}

Interconnect::Interconnect(const sc_core::sc_module_name& name, const Topology& topo, const Scenario& scenario,
                           const ir::ProgramSet& programs, const InterconnectOptions& options, RunControl& control)
    : sc_core::sc_module(name),
      topo_(topo),
      scenario_(scenario),
      programs_(programs),
      control_(control),
      faults_(options.faults),
      router_(make_router(topo, scenario.fidelity.routing, faults_)),
      ocs_(topo, scenario.pod.ocs_reconfiguration),
      dcn_base_(static_cast<std::uint32_t>(topo.link_count())),
      model_(make_link_model(scenario.fidelity, channels_of(topo, static_cast<std::uint32_t>(topo.host_count()),
                                                            scenario.chip.ici.link_efficiency))),
      chips_(topo.chip_count()),
      wake_(topo.chip_count(), nullptr) {
  // Plan each collective instruction of each program some chip runs, once.
  std::vector<bool> used(programs.programs.size(), programs.role_of_chip.empty());
  for (std::uint16_t role : programs.role_of_chip) used[role] = true;
  plan_of_instr_.resize(programs.programs.size());
  p2p_of_instr_.resize(programs.programs.size());
  instr_stats_.resize(programs.programs.size());
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    if (!used[p]) continue;
    const ir::Program& program = programs.programs[p];
    for (std::uint32_t i = 0; i < program.size(); ++i) {
      const ir::Instruction& ins = program[i];
      if (!is_ici(ins)) continue;
      if (plan_of_instr_[p].empty()) {
        plan_of_instr_[p].assign(program.size(), kIdle);
        p2p_of_instr_[p].assign(program.size(), kIdle);
        instr_stats_[p].resize(program.size());
      }
      if (ins.kind != ir::OpKind::collective) {
        p2p_of_instr_[p][i] = p2p_target(p, i, ins);
        continue;
      }
      plan_of_instr_[p][i] = plan_for(p, i, ins, options.planner);
      instr_stats_[p][i].plan = plan_of_instr_[p][i];
    }
  }
  for (std::uint32_t t = 0; t < targets_.size(); ++t) cache_routes(t);
  SC_METHOD(run);
  sensitive << event_;
  dont_initialize();
}

std::uint32_t Interconnect::plan_for(std::size_t program, std::uint32_t instr, const ir::Instruction& ins,
                                     const CollectivePlanner& planner) {
  const auto key = std::make_tuple(static_cast<int>(ins.collective), ins.bytes, static_cast<int>(ins.dtype),
                                   ins.mesh_axes, static_cast<int>(ins.algorithm));
  if (const auto it = plan_by_key_.find(key); it != plan_by_key_.end()) return it->second;
  PlanInfo info;
  info.plan = planner(topo_, ins);
  for (const kernels::CollectiveStep& step : info.plan.steps) {
    std::vector<std::uint32_t> targets;
    std::uint32_t receives = 0;
    for (const kernels::CollectiveSend& send : step.sends) {
      Target t{send.offset, send.pod_offset};
      if (t.pod_offset != 0 && topo_.dcn_bandwidth_per_host().value() <= 0) {
        const ir::Program& p = programs_.programs[program];
        throw SimulationError(0, ins.core, instr, p.label_of(ins),
                              "the collective crosses pods but the chip has no DCN bandwidth (chip.host.dcn_bandwidth)");
      }
      targets.push_back(target_index(t, Origin{program, instr}));
      // Offsets are the same for every chip, so a send that stays on its chip does so everywhere.
      if (destination(0, t) != ChipId(0)) ++receives;
    }
    info.targets.push_back(std::move(targets));
    info.receives.push_back(receives);
  }
  plans_.push_back(std::move(info));
  const auto id = static_cast<std::uint32_t>(plans_.size() - 1);
  plan_by_key_.emplace(key, id);
  return id;
}

std::uint32_t Interconnect::target_index(const Target& t, Origin origin) {
  const auto [it, inserted] = target_by_key_.emplace(t, static_cast<std::uint32_t>(targets_.size()));
  if (inserted) {
    targets_.push_back(t);
    target_origin_.push_back(origin);
  }
  return it->second;
}

// The target of a send (+peer) or of the source of a recv (+peer as well: the chip it receives from), along
// the first axis in mesh_axes (see the header).
std::uint32_t Interconnect::p2p_target(std::size_t program, std::uint32_t instr, const ir::Instruction& ins) {
  const ir::Program& p = programs_.programs[program];
  const auto fail = [&](const std::string& what) {
    throw SimulationError(0, ins.core, instr, p.label_of(ins), what);
  };
  int axis = -1;
  if (ins.mesh_axes != 0) {
    while ((ins.mesh_axes & (1u << ++axis)) == 0) {
    }
    if (axis >= topo_.axes()) {
      fail(fmt::format("{} along axis {}, but {} has {} axes", ir::op_name(ins.kind), axis, topo_.name(),
                       topo_.axes()));
    }
  } else {
    for (int a = 0; a < topo_.axes() && axis < 0; ++a) {
      if (topo_.shape()[static_cast<std::size_t>(a)] > 1) axis = a;
    }
  }
  if (axis < 0 || wrap(ins.peer, topo_.shape()[static_cast<std::size_t>(axis)]) == 0) {
    fail(fmt::format("{} with peer offset {} along axis {} of {} names the chip itself", ir::op_name(ins.kind),
                     ins.peer, std::max(axis, 0), topo_.name()));
  }
  Target t;
  t.offset[static_cast<std::size_t>(axis)] = ins.peer;
  return target_index(t, Origin{program, instr});
}

std::optional<ChipId> Interconnect::destination(std::uint32_t chip, const Target& t) const {
  ChipCoord c = topo_.coord(ChipId(chip));
  if (t.pod_offset != 0) {
    c.pod = wrap(c.pod + t.pod_offset, topo_.pods());
  } else {
    for (int a = 0; a < kMaxAxes; ++a) {
      const auto u = static_cast<std::size_t>(a);
      c.pos[u] = wrap(c.pos[u] + t.offset[u], topo_.shape()[u]);
    }
  }
  return topo_.chip_at(c);
}

// Deadlock freedom is assumed, not simulated (topology/routing.h): DOR routes use two virtual channels per
// ring with a dateline; the fault-aware router's rerouted (non-DOR) paths run on adaptive VCs with an
// up*/down* escape VC on a spanning tree of the surviving graph (Duato's protocol), so a detour may close a
// cycle of channel dependencies without deadlocking. Neither VC class is a separate resource here: a path's
// links are shared as if its packets always make progress.
bool Interconnect::route(std::uint32_t chip, std::uint32_t target, std::vector<std::uint32_t>& out) {
  out.clear();
  const Target& t = targets_[target];
  const ChipId dst = *destination(chip, t);
  if (dst == ChipId(chip)) return false;
  if (t.pod_offset != 0) {
    out.push_back(dcn_base_ + topo_.host_of(ChipId(chip)).value());
    out.push_back(dcn_base_ + static_cast<std::uint32_t>(topo_.host_count()) + topo_.host_of(dst).value());
    return true;
  }
  const std::optional<Path> path = router_->route(ChipId(chip), dst);
  if (!path) {
    const Origin& o = target_origin_[target];
    const ir::Program& p = programs_.programs[o.program];
    const ir::Instruction& ins = p[o.instr];
    const auto down = [&](ChipId c) {
      return std::find(faults_.chips.begin(), faults_.chips.end(), c) != faults_.chips.end() ? " (down)" : "";
    };
    throw SimulationError(chip, ins.core, o.instr, p.label_of(ins),
                          fmt::format("no ICI route from {}{} to {}{}: the {} router finds no path around {} "
                                      "failed links and {} failed chips",
                                      describe_chip(topo_, ChipId(chip)), down(ChipId(chip)),
                                      describe_chip(topo_, dst), down(dst), router_->name(), faults_.links.size(),
                                      faults_.chips.size()));
  }
  for (LinkId l : *path) out.push_back(l.value());
  return true;
}

void Interconnect::cache_routes(std::uint32_t target) {
  route_begin_.resize(targets_.size());
  route_links_.resize(targets_.size());
  if ((static_cast<std::size_t>(target) + 1) * chips_.size() > kRouteCacheEntries) return;
  std::vector<std::uint32_t>& begin = route_begin_[target];
  std::vector<std::uint32_t>& links = route_links_[target];
  begin.reserve(chips_.size() + 1);
  std::vector<std::uint32_t> path;
  for (std::uint32_t c = 0; c < chips_.size(); ++c) {
    begin.push_back(static_cast<std::uint32_t>(links.size()));
    route(c, target, path);
    links.insert(links.end(), path.begin(), path.end());
  }
  begin.push_back(static_cast<std::uint32_t>(links.size()));
}

void Interconnect::attach_chip(std::uint32_t chip, sc_core::sc_event& wake) { wake_[chip] = &wake; }

void Interconnect::run() {
  if (control_.failed()) return;
  try {
    const Tick now = sc_core::sc_time_stamp().value();
    control_.on_activation(now);
    sync(now);
    arm(now);
  } catch (...) {
    control_.fail(std::current_exception());
  }
}

// Brings the links, deliveries and reductions up to `now`, including everything they trigger at `now`.
void Interconnect::sync(Tick now) {
  for (;;) {
    model_->advance(now, delivered_);
    const bool deliveries = !delivered_.empty();
    for (std::size_t i = 0; i < delivered_.size(); ++i) on_delivered(delivered_[i], now);
    delivered_.clear();
    bool timers = false;
    while (!timers_.empty() && timers_.top().time <= now) {
      const Timer timer = timers_.top();
      timers_.pop();
      if (timer.start) {
        chips_[timer.chip].starting = false;
        begin_step(timer.chip, now);
      } else {
        chips_[timer.chip].reducing = false;
        end_step(timer.chip, now);
      }
      timers = true;
    }
    if (!deliveries && !timers && model_->next_event() > now) return;
  }
}

void Interconnect::arm(Tick now) {
  Tick next = model_->next_event();
  if (!timers_.empty()) next = std::min(next, timers_.top().time);
  if (next == kNever) return;
  // A pending notification at an earlier time wins over this one (sc_event keeps the earliest).
  event_.notify(sc_core::sc_time::from_value(next - now));
}

void Interconnect::start(std::uint32_t chip, std::uint32_t instr, Tick now) {
  sync(now);
  starting_ = chip;
  start_instruction(chip, instr, now);
  starting_ = kIdle;
  arm(now);
}

void Interconnect::start_instruction(std::uint32_t chip, std::uint32_t instr, Tick now) {
  ChipState& s = chips_[chip];
  const std::size_t program = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[chip];
  s.instr = instr;
  s.started = now;
  s.done = false;
  const ir::Instruction& ins = programs_.programs[program][instr];
  if (ins.kind != ir::OpKind::collective) {
    start_p2p(chip, ins, p2p_of_instr_[program][instr], now);
    return;
  }
  s.op = Op::collective;
  s.plan = plan_of_instr_[program][instr];
  s.step = 0;
  const PlanInfo& info = plans_[s.plan];
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
    finish(chip);
  } else if (kCollectiveStartup.value() > 0) {
    s.starting = true;
    timers_.push(Timer{now + to_ticks(kCollectiveStartup), timer_seq_++, chip, true});
  } else {
    begin_step(chip, now);
  }
}

void Interconnect::start_p2p(std::uint32_t chip, const ir::Instruction& ins, std::uint32_t target, Tick now) {
  ChipState& s = chips_[chip];
  if (ins.kind == ir::OpKind::send || is_remote_put(ins)) {
    s.op = ins.kind == ir::OpKind::send ? Op::send : Op::put;
    s.sends_pending = 1;
    send(chip, target, ins.bytes, now);
    return;
  }
  s.op = Op::recv;
  s.peer = destination(chip, targets_[target])->value();
  for (Arrivals& a : s.p2p) {
    if (a.source == s.peer && a.count > 0) {
      --a.count;
      finish(chip);
      return;
    }
  }
}

void Interconnect::finish(std::uint32_t chip) {
  chips_[chip].done = true;
  if (chip != starting_) wake_[chip]->notify(sc_core::SC_ZERO_TIME);
}

bool Interconnect::take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started) {
  ChipState& s = chips_[chip];
  if (s.instr == kIdle || !s.done) return false;
  instr = s.instr;
  started = s.started;
  s.instr = kIdle;
  s.done = false;
  return true;
}

void Interconnect::begin_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  const PlanInfo& info = plans_[s.plan];
  const kernels::CollectiveStep& step = info.plan.steps[s.step];
  const std::vector<std::uint32_t>& targets = info.targets[s.step];
  s.sends_pending = 0;
  for (std::size_t i = 0; i < step.sends.size(); ++i) {
    const std::uint32_t t = targets[i];
    if (*destination(chip, targets_[t]) == ChipId(chip)) continue;
    ++s.sends_pending;
    Transfer& tr = transfers_[send(chip, t, step.sends[i].bytes, now)];
    tr.seq = s.seq - 1;
    tr.step = s.step;
  }
  check_step(chip, now);
}

// The destination must be another chip.
TransferId Interconnect::send(std::uint32_t chip, std::uint32_t t, std::uint64_t bytes, Tick now) {
  TransferId id;
  if (free_transfers_.empty()) {
    id = static_cast<TransferId>(transfers_.size());
    transfers_.emplace_back();
  } else {
    id = free_transfers_.back();
    free_transfers_.pop_back();
  }
  Transfer& tr = transfers_[id];
  tr.src = chip;
  tr.dst = destination(chip, targets_[t])->value();
  tr.p2p = chips_[chip].op != Op::collective;
  const std::uint32_t* path;
  std::uint32_t hops;
  if (!route_begin_[t].empty()) {
    path = route_links_[t].data() + route_begin_[t][chip];
    hops = route_begin_[t][chip + 1] - route_begin_[t][chip];
  } else {
    route(chip, t, tr.path);
    path = tr.path.data();
    hops = static_cast<std::uint32_t>(tr.path.size());
  }
  ++transfers_started_;
  model_->start(now, id, path, hops, bytes);
  return id;
}

void Interconnect::check_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  if (s.instr == kIdle || s.done || s.op != Op::collective || s.starting || s.reducing || s.sends_pending > 0) {
    return;
  }
  const PlanInfo& info = plans_[s.plan];
  if (s.arrived[s.step] < info.receives[s.step]) return;
  const std::uint64_t elements = info.plan.steps[s.step].reduce_elements;
  const ChipSpec& spec = scenario_.chip;
  const Tick reduce =
      elements == 0 ? 0
                    : cycles_to_ticks(vpu_cycles(spec.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(elements)),
                                      spec.clock);
  const Tick t = reduce + to_ticks(kCollectiveStepSync);
  if (t == 0) {
    end_step(chip, now);
    return;
  }
  s.reduce_ticks += reduce;
  s.reducing = true;
  timers_.push(Timer{now + t, timer_seq_++, chip});
}

void Interconnect::end_step(std::uint32_t chip, Tick now) {
  ChipState& s = chips_[chip];
  const PlanInfo& info = plans_[s.plan];
  if (++s.step < info.plan.steps.size()) {
    begin_step(chip, now);
    return;
  }
  const std::size_t program = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[chip];
  InstrStats& st = instr_stats_[program][s.instr];
  ++st.executions;
  st.first_start = std::min(st.first_start, s.started);
  st.last_end = std::max(st.last_end, now);
  st.longest = std::max(st.longest, now - s.started);
  finish(chip);
}

void Interconnect::on_delivered(TransferId id, Tick now) {
  const Transfer& tr = transfers_[id];
  const std::uint32_t src = tr.src, dst = tr.dst, seq = tr.seq, step = tr.step;
  const bool p2p = tr.p2p;
  free_transfers_.push_back(id);
  --chips_[src].sends_pending;
  if (!p2p) {
    check_step(src, now);  // may start transfers (and grow transfers_)
    receive(dst, seq, step, 1, now);
    return;
  }
  const bool put = chips_[src].op == Op::put;
  finish(src);  // the send (or put) is delivered
  if (put) return;  // one-sided: nothing for the destination to match
  ChipState& d = chips_[dst];
  if (d.instr != kIdle && !d.done && d.op == Op::recv && d.peer == src) {
    finish(dst);
    return;
  }
  const auto a = std::find_if(d.p2p.begin(), d.p2p.end(), [&](const Arrivals& x) { return x.source == src; });
  if (a != d.p2p.end()) ++a->count;
  else d.p2p.push_back(Arrivals{src, 1});
}

void Interconnect::receive(std::uint32_t chip, std::uint32_t seq, std::uint32_t step, std::uint32_t count, Tick now) {
  ChipState& s = chips_[chip];
  if (s.instr != kIdle && !s.done && s.op == Op::collective && s.seq - 1 == seq) {
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

void Interconnect::collect(SimResult& r, Tick end) const {
  const std::vector<ChannelStats> stats = model_->stats(end);
  const double step_s = to_seconds(end).value();
  const auto usage = [&](std::size_t c, double bandwidth) {
    const ChannelStats& s = stats[c];
    LinkUsage u;
    u.bytes = Bytes(s.bytes);
    u.busy = to_seconds(s.busy);
    u.queueing = to_seconds(s.queueing);
    u.chunks = s.chunks;
    u.utilization = bandwidth > 0 && step_s > 0 ? static_cast<double>(s.bytes) / (bandwidth * step_s) : 0.0;
    return u;
  };
  r.link_model = model_->name();
  r.links.reserve(topo_.link_count());
  double sum = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (std::size_t l = 0; l < topo_.link_count(); ++l) {
    r.links.push_back(usage(l, topo_.link(LinkId(static_cast<std::uint32_t>(l))).bandwidth.value()));
    const double u = r.links.back().utilization;
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  if (!r.links.empty()) r.link_utilization = Spread{sum / static_cast<double>(r.links.size()), lo, hi};
  if (topo_.pods() > 1) {
    const std::size_t hosts = topo_.host_count();
    const double bw = topo_.dcn_bandwidth_per_host().value();
    for (std::size_t h = 0; h < hosts; ++h) {
      r.dcn_egress.push_back(usage(dcn_base_ + h, bw));
      r.dcn_ingress.push_back(usage(dcn_base_ + hosts + h, bw));
    }
  }
  for (std::size_t p = 0; p < instr_stats_.size(); ++p) {
    for (std::size_t i = 0; i < instr_stats_[p].size(); ++i) {
      const InstrStats& st = instr_stats_[p][i];
      if (plan_of_instr_[p][i] == kIdle) continue;
      const kernels::CollectivePlan& plan = plans_[st.plan].plan;
      CollectiveUsage c;
      c.program = static_cast<std::uint32_t>(p);
      c.instruction = static_cast<std::uint32_t>(i);
      c.kind = plan.kind;
      c.algorithm = plan.algorithm;
      c.axes_mask = plan.axes_mask;
      c.participants = plan.participants;
      c.steps = plan.steps.size();
      c.bytes_per_chip = Bytes(plan.bytes_per_chip);
      c.executions = st.executions;
      c.ideal_time = plan.ideal_time;
      if (st.executions > 0) {
        c.start = to_seconds(st.first_start);
        c.end = to_seconds(st.last_end);
        c.time = to_seconds(st.longest);
        if (st.longest > 0) {
          c.algorithm_bandwidth = BytesPerSecond(static_cast<double>(plan.bytes_per_chip) / c.time.value());
          c.bus_bandwidth = c.algorithm_bandwidth * plan.bus_factor;
        }
      }
      r.collectives.push_back(c);
    }
  }
  r.ici_transfers = transfers_started_;
}

}  // namespace tpusim::models::net
