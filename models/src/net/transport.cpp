#include "transport.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tpusim/kernels/collectives.h"
#include "tpusim/models/errors.h"

namespace tpusim::models::net {
namespace {

std::vector<Channel> channels_of(const Topology& topo, double link_efficiency) {
  const std::size_t hosts = topo.host_count();
  std::vector<Channel> ch;
  ch.reserve(topo.link_count() + 2 * hosts);
  for (const Link& l : topo.links()) {
    ch.push_back(Channel{l.bandwidth.value() * link_efficiency / kTicksPerSecond, to_ticks(l.latency)});
  }
  // DCN NIC of each host: egress carries the DCN latency, ingress none (the latency counts once per send).
  // A zero rate (a chip without DCN) gets a tiny one; plans that would use it are rejected at elaboration.
  const double dcn = std::max(topo.dcn_bandwidth_per_host().value(), 1.0) / kTicksPerSecond;
  for (std::size_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, to_ticks(kDcnLatency)});
  for (std::size_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, 0});
  return ch;
}

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

// The channels with the degraded links slowed down.
std::vector<Channel> degrade(std::vector<Channel> ch, const std::vector<LinkDegradation>& degraded, Bytes chunk) {
  for (const LinkDegradation& d : degraded) {
    Channel& c = ch.at(d.link.value());
    c.bytes_per_tick *= d.bandwidth_fraction / retransmission_factor(d.bit_error_rate, chunk);
    c.latency += to_ticks(d.added_latency);
  }
  return ch;
}

}  // namespace

Transport::Transport(const Topology& topo, const Scenario& scenario, const FaultSet& faults,
                     const std::vector<LinkDegradation>& degraded, const std::vector<TimedLinkFault>& timed,
                     InFlightPolicy in_flight, const std::vector<TimedChipFault>& timed_chips)
    : topo_(topo),
      faults_(faults),
      router_(make_router(topo, scenario.fidelity.routing, faults_)),
      ocs_(topo, scenario.pod.ocs_reconfiguration),
      dcn_base_(static_cast<std::uint32_t>(topo.link_count())) {
  std::vector<Channel> channels =
      degrade(channels_of(topo, scenario.chip.ici.link_efficiency), degraded, scenario.fidelity.link_chunk);
  latency_.reserve(channels.size());
  for (const Channel& c : channels) latency_.push_back(c.latency);
  model_ = make_link_model(scenario.fidelity, std::move(channels));
  // Failed and degraded links leave every route fixed (the fault-aware router's detours included) and every
  // channel at one rate, which is all an aggregate flow needs; timed cable faults cut aggregates in flight and
  // start their rest again (relaunch_aggregate). Stopped chips drop transfers one by one: per step (README.md).
  aggregates_ = scenario.fidelity.links == LinkFidelity::flow && faults_.chips.empty() && timed_chips.empty();
  in_flight_ = in_flight;
  for (const TimedLinkFault& f : timed) {
    const Tick at = to_ticks(f.at);
    timed_.push_back(TimedCut{f.link, at, std::max(at, to_ticks(f.detected))});
  }
  for (const TimedChipFault& f : timed_chips) {
    const std::vector<LinkId> out = topo.out_links(f.chip);
    const Tick at = to_ticks(f.at);
    timed_.push_back(TimedCut{out.empty() ? LinkId(0) : out.front(), at, std::max(at, to_ticks(f.detected)),
                              static_cast<std::int64_t>(f.chip.value())});
  }
  if (!timed_chips.empty()) {
    dead_.assign(topo.chip_count(), false);
    dead_fault_.assign(topo.chip_count(), 0);
  }
  std::stable_sort(timed_.begin(), timed_.end(), [](const TimedCut& a, const TimedCut& b) { return a.at < b.at; });
  for (std::size_t k = 0; k < timed_.size(); ++k) {
    const TimedCut& f = timed_[k];
    if (f.chip >= 0) dead_fault_[static_cast<std::size_t>(f.chip)] = k;
    InStepFault st;
    st.link = f.link.value();
    st.chip = f.chip;
    st.at = to_seconds(f.at);
    st.detected = to_seconds(f.detected);
    cut_stats_.push_back(st);
  }
}

Tick Transport::next_action() const {
  const Tick fault = applied_ < timed_.size() ? timed_[applied_].at : kNever;
  return std::min(fault, resends_.empty() ? kNever : resends_.front().at);
}

// The actions at a tick come after the link model's events up to and including it (a transfer delivered at the
// tick of a cut is delivered).
void Transport::advance(Tick now, std::vector<TransferId>& delivered) {
  for (Tick a = next_action(); a <= now; a = next_action()) {
    std::size_t from = delivered.size();
    model_->advance(a, delivered);
    settle(delivered, from, a);
    while (applied_ < timed_.size() && timed_[applied_].at == a) fail_cable(applied_, a);
    while (!resends_.empty() && resends_.front().at == a) {
      const TransferId id = resends_.front().id;
      resends_.erase(resends_.begin());
      if (dead(transfers_[id].src) || dead(transfers_[id].dst)) drop(id, transfers_[id].bytes);
      else if (transfers_[id].parts != nullptr) relaunch_aggregate(id, a);
      else launch(id, transfers_[id].bytes, a);
    }
  }
  const std::size_t from = delivered.size();
  model_->advance(now, delivered);
  settle(delivered, from, now);
}

void Transport::settle(std::vector<TransferId>& delivered, std::size_t from, Tick now) {
  if (!dead_.empty()) {
    std::size_t kept = from;
    for (std::size_t i = from; i < delivered.size(); ++i) {
      const TransferId id = delivered[i];
      if (dead(transfers_[id].dst)) {  // arrived at a chip that had stopped
        drop(id, transfers_[id].bytes);
        continue;
      }
      delivered[kept++] = id;
    }
    delivered.resize(kept);
  }
  note_resent(delivered, from, now);
}

// Counted on the stopped chip's fault; the id is never delivered nor released (a few per stopped step).
void Transport::drop(TransferId id, std::uint64_t bytes) {
  const Transfer& tr = transfers_[id];
  const std::uint32_t chip = dead(tr.src) ? tr.src : tr.dst;
  InStepFault& st = cut_stats_[dead_fault_[chip]];
  ++st.transfers_dropped;
  st.dropped = Bytes(st.dropped.count() + bytes);
}

// The interconnect advances to each of the transport's next events, so a transfer delivered in this call
// arrived at `now`.
void Transport::note_resent(const std::vector<TransferId>& delivered, std::size_t from, Tick now) {
  if (resent_.empty()) return;
  for (std::size_t i = from; i < delivered.size(); ++i) {
    const auto it = std::find_if(resent_.begin(), resent_.end(), [&](const auto& r) { return r.first == delivered[i]; });
    if (it == resent_.end()) continue;
    cut_stats_[it->second].resent_done = std::max(cut_stats_[it->second].resent_done, to_seconds(now));
    resent_.erase(it);
  }
}

void Transport::fail_cable(std::size_t k, Tick now) {
  const TimedCut f = timed_[k];
  applied_ = static_cast<std::uint32_t>(k + 1);
  std::vector<std::uint32_t> cut;
  if (f.chip >= 0) {
    const ChipId chip(static_cast<std::uint32_t>(f.chip));
    dead_[chip.value()] = true;
    faults_.chips.push_back(chip);
    for (const LinkId l : topo_.out_links(chip)) {
      faults_.add_cable(topo_, l);
      cut.push_back(l.value());
      cut.push_back(topo_.link(l).reverse.value());
    }
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
  } else {
    ++cables_failed_;
    faults_.add_cable(topo_, f.link);
    cut = {f.link.value(), topo_.link(f.link).reverse.value()};
  }
  router_ = make_fault_aware_router(topo_, faults_);
  // Transfers in flight keep pointing into the old routes; new ones take the surviving graph's.
  retired_routes_.push_back(std::move(route_links_));
  route_links_.clear();
  route_begin_.clear();
  cache_routes();
  InStepFault& st = cut_stats_[k];
  for (const LinkModel::Cut& c : model_->cut(now, cut)) {
    Transfer& tr = transfers_[c.transfer];
    if (tr.parts != nullptr) {  // an aggregate: its bytes over the cut cable, and the share delivered
      std::uint64_t on_cut = 0;
      for (std::uint32_t h = 0; h < tr.agg_hops; ++h) {
        if (std::find(cut.begin(), cut.end(), tr.agg_path[h]) != cut.end()) on_cut += tr.agg_hop_bytes[h];
      }
      const double done = c.bytes == 0 ? 1.0 : static_cast<double>(c.delivered) / static_cast<double>(c.bytes);
      const auto moved = static_cast<std::uint64_t>(std::floor(static_cast<double>(on_cut) * done));
      ++st.transfers_cut;
      st.in_flight = Bytes(st.in_flight.count() + on_cut);
      st.delivered = Bytes(st.delivered.count() + moved);
      tr.latency_done += tr.left * done * static_cast<double>(tr.steps) * tr.longest;
      tr.left *= 1 - done;
      if (in_flight_ == InFlightPolicy::retransmit) {
        st.retransmitted = Bytes(st.retransmitted.count() + (on_cut - moved));
        relaunch_aggregate(c.transfer, now);
      } else {
        // As per step the lost transfer's bytes count whole; what is sent again is the share not delivered.
        st.lost = Bytes(st.lost.count() + on_cut);
        const Resend r{f.detected, c.transfer};
        resends_.insert(std::upper_bound(resends_.begin(), resends_.end(), r,
                                         [](const Resend& a, const Resend& b) { return a.at < b.at; }),
                        r);
      }
      resent_.emplace_back(c.transfer, k);
      continue;
    }
    ++st.transfers_cut;
    st.in_flight = Bytes(st.in_flight.count() + c.bytes);
    st.delivered = Bytes(st.delivered.count() + c.delivered);
    if (dead(transfers_[c.transfer].src) || dead(transfers_[c.transfer].dst)) {
      drop(c.transfer, c.bytes);  // to or from the stopped chip: nobody to send it, or to receive it
    } else if (in_flight_ == InFlightPolicy::retransmit) {
      st.retransmitted = Bytes(st.retransmitted.count() + (c.bytes - c.delivered));
      launch(c.transfer, c.bytes - c.delivered, now);
      resent_.emplace_back(c.transfer, k);
    } else {
      st.lost = Bytes(st.lost.count() + c.bytes);
      const Resend r{f.detected, c.transfer};
      resends_.insert(std::upper_bound(resends_.begin(), resends_.end(), r,
                                       [](const Resend& a, const Resend& b) { return a.at < b.at; }),
                      r);
      resent_.emplace_back(c.transfer, k);
    }
  }
}

GroupShapeId Transport::add_group(const ir::CollectiveGroup& group) {
  const auto it = std::find(groups_.begin(), groups_.end(), group);
  if (it != groups_.end()) return static_cast<GroupShapeId>(it - groups_.begin());
  groups_.push_back(group);
  return static_cast<GroupShapeId>(groups_.size() - 1);
}

TargetId Transport::add_target(const Target& t, const Origin& origin) {
  const auto [it, inserted] = target_by_key_.emplace(t, static_cast<TargetId>(targets_.size()));
  if (inserted) {
    targets_.push_back(t);
    origins_.push_back(origin);
    home_.push_back(destination(0, it->second) == ChipId(0));
  }
  return it->second;
}

ChipId Transport::destination(std::uint32_t chip, TargetId target) const {
  const Target& t = targets_[target];
  return kernels::group_destination(topo_, groups_[t.group], ChipId(chip), t.offset, t.pod_offset);
}

// Deadlock freedom is assumed, not simulated (topology/routing.h and README.md).
bool Transport::route(std::uint32_t chip, TargetId target, std::vector<std::uint32_t>& out) {
  out.clear();
  const Target& t = targets_[target];
  const ChipId dst = destination(chip, target);
  if (dst == ChipId(chip)) return false;
  if (dead(chip) || dead(dst.value())) return true;  // no route: start() drops such sends
  if (t.pod_offset != 0) {
    out.push_back(dcn_base_ + topo_.host_of(ChipId(chip)).value());
    out.push_back(dcn_base_ + static_cast<std::uint32_t>(topo_.host_count()) + topo_.host_of(dst).value());
    return true;
  }
  const std::optional<Path> path = router_->route(ChipId(chip), dst);
  if (!path) {
    const Origin& o = origins_[target];
    const auto down = [&](ChipId c) {
      return std::find(faults_.chips.begin(), faults_.chips.end(), c) != faults_.chips.end() ? " (down)" : "";
    };
    throw SimulationError(chip, o.core, o.instr, o.label,
                          fmt::format("no ICI route from {}{} to {}{}: the {} router finds no path around {} "
                                      "failed links and {} failed chips",
                                      describe_chip(topo_, ChipId(chip)), down(ChipId(chip)),
                                      describe_chip(topo_, dst), down(dst), router_->name(), faults_.links.size(),
                                      faults_.chips.size()));
  }
  for (LinkId l : *path) out.push_back(l.value());
  return true;
}

void Transport::cache_routes() {
  const std::size_t chips = topo_.chip_count();
  route_begin_.resize(targets_.size());
  route_links_.resize(targets_.size());
  std::vector<std::uint32_t> path;
  for (TargetId t = 0; t < targets_.size(); ++t) {
    if ((static_cast<std::size_t>(t) + 1) * chips > kRouteCacheEntries) return;
    std::vector<std::uint32_t>& begin = route_begin_[t];
    std::vector<std::uint32_t>& links = route_links_[t];
    if (!begin.empty()) continue;
    begin.reserve(chips + 1);
    for (std::uint32_t c = 0; c < chips; ++c) {
      begin.push_back(static_cast<std::uint32_t>(links.size()));
      route(c, t, path);
      links.insert(links.end(), path.begin(), path.end());
    }
    begin.push_back(static_cast<std::uint32_t>(links.size()));
  }
}

TransferId Transport::new_transfer() {
  TransferId id;
  if (free_.empty()) {
    id = static_cast<TransferId>(transfers_.size());
    transfers_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  ++started_;
  return id;
}

Tick Transport::append_route(std::uint32_t chip, TargetId t, std::vector<std::uint32_t>& out) {
  const std::size_t from = out.size();
  if (t < route_begin_.size() && !route_begin_[t].empty()) {
    out.insert(out.end(), route_links_[t].begin() + route_begin_[t][chip],
               route_links_[t].begin() + route_begin_[t][chip + 1]);
  } else {
    std::vector<std::uint32_t> path;
    route(chip, t, path);
    out.insert(out.end(), path.begin(), path.end());
  }
  Tick latency = 0;
  for (std::size_t i = from; i < out.size(); ++i) latency += latency_[out[i]];
  return latency;
}

TransferId Transport::start_aggregate(const std::vector<std::uint32_t>& path,
                                      const std::vector<std::uint64_t>& hop_bytes, std::uint64_t bytes, Tick latency,
                                      const std::vector<AggregatePart>& parts, std::uint32_t steps, Tick now) {
  const TransferId id = new_transfer();
  Transfer& tr = transfers_[id];
  tr.src = 0;
  tr.dst = 0;
  tr.owner = Owner::collective;
  tr.parts = &parts;
  tr.steps = steps;
  tr.agg_path = path.data();
  tr.agg_hop_bytes = hop_bytes.data();
  tr.agg_hops = static_cast<std::uint32_t>(path.size());
  tr.left = 1;
  tr.latency_done = 0;
  tr.longest = steps == 0 ? 0.0 : static_cast<double>(latency) / steps;
  model_->start_aggregate(now, id, path.data(), hop_bytes.data(), tr.agg_hops, bytes, latency);
  return id;
}

// The rest of every part (rounded up to a byte) over its current route; the steps left (the `left` share of
// them) wait the longest of the new routes' latencies, those done before the cut the old ones'.
void Transport::relaunch_aggregate(TransferId id, Tick now) {
  Transfer& tr = transfers_[id];
  std::vector<std::uint32_t> path;
  std::vector<std::uint64_t> hop_bytes;
  Tick longest = 0;
  std::uint64_t most = 0;
  for (const AggregatePart& p : *tr.parts) {
    const auto bytes = static_cast<std::uint64_t>(std::ceil(static_cast<double>(p.bytes) * tr.left));
    if (bytes == 0) continue;
    longest = std::max(longest, append_route(p.chip, p.target, path));
    hop_bytes.resize(path.size(), bytes);
    most = std::max(most, bytes);
  }
  tr.path = std::move(path);
  tr.hop_bytes = std::move(hop_bytes);
  tr.agg_path = tr.path.data();
  tr.agg_hop_bytes = tr.hop_bytes.data();
  tr.agg_hops = static_cast<std::uint32_t>(tr.path.size());
  tr.longest = static_cast<double>(longest);
  const auto latency =
      static_cast<Tick>(std::llround(tr.latency_done + tr.left * static_cast<double>(tr.steps) * tr.longest));
  model_->start_aggregate(now, id, tr.agg_path, tr.agg_hop_bytes, tr.agg_hops, most, latency);
}

TransferId Transport::start(std::uint32_t chip, TargetId t, std::uint64_t bytes, Tick now, Owner owner) {
  const TransferId id = new_transfer();
  Transfer& tr = transfers_[id];
  tr.src = chip;
  tr.dst = destination(chip, t).value();
  tr.target = t;
  tr.bytes = bytes;
  tr.owner = owner;
  tr.parts = nullptr;
  if (dead(chip) || dead(tr.dst)) {
    drop(id, bytes);
    return id;
  }
  launch(id, bytes, now);
  return id;
}

void Transport::launch(TransferId id, std::uint64_t bytes, Tick now) {
  Transfer& tr = transfers_[id];
  const TargetId t = tr.target;
  const std::uint32_t* path;
  std::uint32_t hops;
  if (t < route_begin_.size() && !route_begin_[t].empty()) {
    path = route_links_[t].data() + route_begin_[t][tr.src];
    hops = route_begin_[t][tr.src + 1] - route_begin_[t][tr.src];
  } else {
    route(tr.src, t, tr.path);
    path = tr.path.data();
    hops = static_cast<std::uint32_t>(tr.path.size());
  }
  model_->start(now, id, path, hops, bytes);
}

}  // namespace tpusim::models::net
