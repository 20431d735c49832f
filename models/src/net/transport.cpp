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
  ch.reserve(topo.link_count() + 2 * hosts + 2 * static_cast<std::size_t>(topo.pods()));
  for (const Link& l : topo.links()) {
    ch.push_back(Channel{l.bandwidth.value() * link_efficiency / kTicksPerSecond, to_ticks(l.latency)});
  }
  // DCN NIC of each host: egress carries the DCN latency, ingress none (the latency counts once per send).
  // A zero rate (a chip without DCN) gets a tiny one; plans that would use it are rejected at elaboration.
  const double dcn = std::max(topo.dcn_bandwidth_per_host().value(), 1.0) / kTicksPerSecond;
  for (std::size_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, to_ticks(kDcnLatency)});
  for (std::size_t h = 0; h < hosts; ++h) ch.push_back(Channel{dcn, 0});
  // Each pod's uplink into the fabric, egress then ingress, when it can bind; no latency of its own (the
  // NIC's DCN latency covers the switch hops).
  if (Transport::has_uplinks(topo)) {
    const double uplink = std::max(topo.dcn_uplink_bandwidth().value(), 1.0) / kTicksPerSecond;
    for (int side = 0; side < 2; ++side) {
      for (int p = 0; p < topo.pods(); ++p) ch.push_back(Channel{uplink, 0});
    }
  }
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
                     InFlightPolicy in_flight, const std::vector<TimedChipFault>& timed_chips, bool ends_at_stop)
    : topo_(topo),
      faults_(faults),
      router_(make_router(topo, scenario.fidelity.routing, faults_)),
      dcn_base_(static_cast<std::uint32_t>(topo.link_count())),
      targets_(topo),
      cuts_(topo, timed, in_flight, timed_chips) {
  std::vector<Channel> channels =
      degrade(channels_of(topo, scenario.chip.ici.link_efficiency), degraded, scenario.fidelity.link_chunk);
  latency_.reserve(channels.size());
  for (const Channel& c : channels) latency_.push_back(c.latency);
  model_ = make_link_model(scenario.fidelity, std::move(channels));
  // Failed and degraded links leave every route fixed (the fault-aware router's detours included) and every
  // channel at one rate, which is all an aggregate flow needs; timed cable faults cut aggregates in flight and
  // start their rest again (relaunch_aggregate). Stopped chips drop transfers one by one: per step (README.md),
  // unless the run ends at the stop: up to it every step is healthy, and at it a cut aggregate is dropped whole.
  aggregates_ = scenario.fidelity.links == LinkFidelity::flow && faults_.chips.empty() &&
                (timed_chips.empty() || ends_at_stop);
}

// The actions at a tick come after the link model's events up to and including it (a transfer delivered at the
// tick of a cut is delivered).
void Transport::advance(Tick now, std::vector<TransferId>& delivered) {
  for (Tick a = cuts_.next_action(); a <= now; a = cuts_.next_action()) {
    std::size_t from = delivered.size();
    model_->advance(a, delivered);
    settle(delivered, from, a);
    while (cuts_.fault_due(a)) fail_cable(cuts_.apply_next(), a);
    while (cuts_.detection_due(a)) route_around(cuts_.detect_next());
    while (const std::optional<TransferId> resend = cuts_.take_resend(a)) {
      const TransferId id = *resend;
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
  if (cuts_.any_dead()) {
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
  cuts_.note_resent(delivered, from, now);
}

void Transport::route_around(std::size_t k) {
  const InStepCuts::Cut f = cuts_.cut(k);
  if (f.chip >= 0) {
    const ChipId chip(static_cast<std::uint32_t>(f.chip));
    faults_.chips.push_back(chip);
    for (const LinkId l : topo_.out_links(chip)) faults_.add_cable(topo_, l);
  } else {
    faults_.add_cable(topo_, f.link);
  }
  router_ = make_fault_aware_router(topo_, faults_);
  // Transfers in flight keep pointing into the old routes; new ones take the surviving graph's.
  routes_.retire();
  cache_routes();
}

// Under retransmit the routes go around the cut at once; under lose they stay until its detection, and what is
// started over it until then is lost too (launch).
void Transport::fail_cable(std::size_t k, Tick now) {
  const InStepCuts::Cut f = cuts_.cut(k);
  std::vector<std::uint32_t> cut;
  if (f.chip >= 0) {
    for (const LinkId l : topo_.out_links(ChipId(static_cast<std::uint32_t>(f.chip)))) {
      cut.push_back(l.value());
      cut.push_back(topo_.link(l).reverse.value());
    }
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
  } else {
    cut = {f.link.value(), topo_.link(f.link).reverse.value()};
  }
  if (cuts_.in_flight() == InFlightPolicy::retransmit) {
    route_around(k);
  } else {
    cuts_.cut_unseen(k, cut);
  }
  InStepFault& st = cuts_.stats(k);
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
      if (f.chip >= 0) {  // a stopped chip's cables, in a run that ends at the stop: dropped, as one transfer
        ++st.transfers_dropped;
        st.dropped = Bytes(st.dropped.count() + on_cut);
        continue;
      }
      tr.latency_done += tr.left * done * static_cast<double>(tr.steps) * tr.longest;
      tr.left *= 1 - done;
      if (cuts_.in_flight() == InFlightPolicy::retransmit) {
        st.retransmitted = Bytes(st.retransmitted.count() + (on_cut - moved));
        relaunch_aggregate(c.transfer, now);
        cuts_.resending(k, c.transfer);
      } else {
        // As per step the lost transfer's bytes count whole; what is sent again is the share not delivered.
        st.lost = Bytes(st.lost.count() + on_cut);
        cuts_.resend_at_detection(k, c.transfer);
      }
      continue;
    }
    ++st.transfers_cut;
    st.in_flight = Bytes(st.in_flight.count() + c.bytes);
    st.delivered = Bytes(st.delivered.count() + c.delivered);
    if (dead(transfers_[c.transfer].src) || dead(transfers_[c.transfer].dst)) {
      drop(c.transfer, c.bytes);  // to or from the stopped chip: nobody to send it, or to receive it
    } else if (cuts_.in_flight() == InFlightPolicy::retransmit) {
      st.retransmitted = Bytes(st.retransmitted.count() + (c.bytes - c.delivered));
      launch(c.transfer, c.bytes - c.delivered, now);
      cuts_.resending(k, c.transfer);
    } else {
      st.lost = Bytes(st.lost.count() + c.bytes);
      cuts_.resend_at_detection(k, c.transfer);
    }
  }
}

// Deadlock freedom is assumed, not simulated (topology/routing.h and README.md).
bool Transport::route(std::uint32_t chip, TargetId target, std::vector<std::uint32_t>& out) {
  out.clear();
  const Target& t = targets_.target(target);
  const ChipId dst = destination(chip, target);
  if (dst == ChipId(chip)) return false;
  if (dead(chip) || dead(dst.value())) return true;  // no route: start() drops such sends
  if (t.pod_offset != 0) {
    out.push_back(static_cast<std::uint32_t>(dcn_egress(topo_.host_of(ChipId(chip)).value())));
    if (has_uplinks()) {
      out.push_back(static_cast<std::uint32_t>(uplink_egress(topo_.coord(ChipId(chip)).pod)));
      out.push_back(static_cast<std::uint32_t>(uplink_ingress(topo_.coord(dst).pod)));
    }
    out.push_back(static_cast<std::uint32_t>(dcn_ingress(topo_.host_of(dst).value())));
    return true;
  }
  const std::optional<Path> path = router_->route(ChipId(chip), dst);
  if (!path) {
    const Origin& o = targets_.origin(target);
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
  routes_.resize(targets_.size());
  for (TargetId t = 0; t < targets_.size(); ++t) {
    if ((static_cast<std::size_t>(t) + 1) * chips > kRouteCacheEntries) return;
    routes_.fill(t, static_cast<std::uint32_t>(chips),
                 [&](std::uint32_t c, std::vector<std::uint32_t>& out) { route(c, t, out); });
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
  if (routes_.has(t)) {
    const RouteCache::Span r = routes_.find(t, chip);
    out.insert(out.end(), r.links, r.links + r.hops);
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
  if (lost_at_start(id)) return id;
  model_->start_aggregate(now, id, path.data(), hop_bytes.data(), tr.agg_hops, bytes, latency);
  return id;
}

bool Transport::lost_at_start(TransferId id) {
  const Transfer& tr = transfers_[id];
  const std::optional<std::size_t> k = tr.parts != nullptr ? cuts_.unseen_on(tr.agg_path, tr.agg_hops)
                                                           : std::nullopt;
  if (!k) return false;
  std::uint64_t on_cut = 0;  // an aggregate's bytes over the cut (the ones a cut in flight would count)
  for (std::uint32_t h = 0; h < tr.agg_hops; ++h) {
    if (cuts_.unseen_on(tr.agg_path + h, 1) == k) on_cut += tr.agg_hop_bytes[h];
  }
  lose(*k, id, on_cut);
  return true;
}

void Transport::lose(std::size_t k, TransferId id, std::uint64_t bytes) {
  InStepFault& st = cuts_.stats(k);
  ++st.transfers_cut;
  st.in_flight = Bytes(st.in_flight.count() + bytes);
  st.lost = Bytes(st.lost.count() + bytes);
  cuts_.resend_at_detection(k, id);
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
  if (lost_at_start(id)) return;
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
  if (routes_.has(t)) {
    const RouteCache::Span r = routes_.find(t, tr.src);
    path = r.links;
    hops = r.hops;
  } else {
    route(tr.src, t, tr.path);
    path = tr.path.data();
    hops = static_cast<std::uint32_t>(tr.path.size());
  }
  if (const std::optional<std::size_t> k = cuts_.unseen_on(path, hops)) {
    lose(*k, id, bytes);
    return;
  }
  model_->start(now, id, path, hops, bytes);
}

}  // namespace tpusim::models::net
