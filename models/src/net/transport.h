#pragma once
// Transport: moves bytes from one chip to another over the pod's channels. It owns the link model
// (link_model.h: every directed ICI link, optical ones included, then each host's DCN NIC, egress and
// ingress), the router (fidelity.routing: dor, or fault_aware around InterconnectOptions::faults), the send
// targets (send_targets.h) and their cached routes (route_cache.h), and the step's timed faults as they cut
// the links (in_step_cuts.h). It knows nothing of collectives or matching, nor of the OCS port maps (ocs.h):
// within a step a circuit is its link.
//
// Contract:
// - A target is a destination rule relative to the sender in the space of a group shape ("the member 2 on
//   along axis 0 of my group", "the same chip in the next pod of my group"; kernels/README.md, "Groups"),
//   interned at elaboration by add_target() with the instruction that first uses it (for error messages).
//   cache_routes() then routes every target from every chip once, within kRouteCacheEntries; targets beyond
//   the budget are routed when a transfer starts. A destination the router cannot reach is a SimulationError
//   naming both chips and that instruction.
// - start() moves `bytes` from `chip` to destination(chip, target), which must be another chip, and returns
//   a transfer id tagged with its owner; advance(now) appends the transfers delivered by `now` in delivery
//   order; the owner reads the transfer (src, dst) and release()s it, after which the id is reused.
// - No SystemC process: the interconnect calls advance() and start() with non-decreasing times and keeps its
//   one kernel event at next_event().
#include <cstdint>
#include <memory>
#include <vector>

#include "../ticks.h"
#include "in_step_cuts.h"
#include "link_model.h"
#include "route_cache.h"
#include "send_targets.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_options.h"
#include "tpusim/topology/routing.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

// Assumption: one-way DCN latency between hosts of different pods, 10 us (NIC, a few datacenter switch
// hops and the host stack; Google has not published a TPU DCN latency).
inline constexpr Seconds kDcnLatency{10e-6};

// Assumption: targets x chips route entries cached per run at most (4 bytes each plus the links); collectives
// with more distinct targets (direct all-to-all on a big pod) route each send when it starts instead.
inline constexpr std::size_t kRouteCacheEntries = std::size_t{1} << 24;

// One member's share of an aggregate: what `chip` sends under `target` over the aggregate's steps. The
// transport routes the parts again when a timed fault cuts the aggregate in flight.
struct AggregatePart {
  std::uint32_t chip = 0;
  TargetId target = 0;
  std::uint64_t bytes = 0;
};

// Which engine a transfer's delivery goes to.
enum class Owner : std::uint8_t { collective, point_to_point };

class Transport {
 public:
  // `topo` must outlive the transport. ICI channels move data at the link's rate x chip.ici.link_efficiency
  // (framing and flow control); a DCN NIC's rate is taken as achievable as given. Throws std::invalid_argument
  // for faults under DOR routing.
  // `degraded` links run slower (LinkDegradation, tpusim/models/sim_options.h).
  // `timed` cables fail at their tick (SimOptions::timed_links): advance() cuts them at that tick (the
  // transfers in flight on them retransmitted or lost by `in_flight`), switches the router to fault_aware
  // around every cable failed so far and rebuilds the route cache: under retransmit at the tick, under lose at
  // the fault's detection (the routes are static until then, and a transfer started over the cut before it is
  // lost too, sent again at the detection); epoch() counts the cables the routes go around.
  // `timed_chips` stop at their tick (SimOptions::timed_chips): their cables fail as a timed cable's do, the
  // transfers to or from them are dropped (cut ones and every later one: start() returns a transfer that is
  // never delivered), and routes avoid them; collectives keep their plans (epoch() counts cables only).
  // `ends_at_stop`: the run ends at the first stop (SimOptions::end_at_stop), so aggregates run up to it.
  Transport(const Topology& topo, const Scenario& scenario, const FaultSet& faults,
            const std::vector<LinkDegradation>& degraded = {}, const std::vector<TimedLinkFault>& timed = {},
            InFlightPolicy in_flight = InFlightPolicy::retransmit,
            const std::vector<TimedChipFault>& timed_chips = {}, bool ends_at_stop = false);

  // Interns a group shape (it must fit the topology: kernels::plan_collective checks).
  [[nodiscard]] GroupShapeId add_group(const ir::CollectiveGroup& group) { return targets_.add_group(group); }
  [[nodiscard]] TargetId add_target(const Target& t, const Origin& origin) { return targets_.add_target(t, origin); }
  [[nodiscard]] const Target& target(TargetId t) const { return targets_.target(t); }
  [[nodiscard]] ChipId destination(std::uint32_t chip, TargetId t) const { return targets_.destination(chip, t); }
  // Sends under `t` stay on the chip (the same for every chip: offsets in group space are uniform).
  [[nodiscard]] bool stays_home(TargetId t) const { return targets_.stays_home(t); }
  // Routes every target added so far from every chip (within the cache budget).
  void cache_routes();

  [[nodiscard]] TransferId start(std::uint32_t chip, TargetId t, std::uint64_t bytes, Tick now, Owner owner);

  // Aggregate transfers (fidelity.collectives = aggregate; the collective engine's). Whether the links can run
  // them: flow links and no chip failed or failing (the transfers to a stopped chip are dropped one by one).
  // Failed and degraded links leave every route fixed and every channel at one rate; a timed cable fault cuts
  // an aggregate in flight like any transfer (see start_aggregate).
  [[nodiscard]] bool runs_aggregates() const { return aggregates_; }
  [[nodiscard]] const ir::CollectiveGroup& group(GroupShapeId g) const { return targets_.group(g); }
  // Appends the channels of the route from `chip` under `t` to `out` (nothing when it stays home) and returns
  // their summed latency.
  Tick append_route(std::uint32_t chip, TargetId t, std::vector<std::uint32_t>& out);
  // Starts an aggregate (LinkModel::start_aggregate) owned by the collective engine: `path` and `hop_bytes`
  // are the routes of `parts` with each part's bytes on its hops, `latency` = `steps` x the longest of those
  // routes' latencies; all three must stay valid until it is delivered; source() and sink() of its id are 0.
  // A timed cable fault cutting it in flight keeps the share delivered and starts the rest of every part again
  // over the routes around the cable (retransmit: at the tick; lose: at the detection), the steps left paying
  // the new routes' latency; the id stays the same.
  [[nodiscard]] TransferId start_aggregate(const std::vector<std::uint32_t>& path,
                                           const std::vector<std::uint64_t>& hop_bytes, std::uint64_t bytes,
                                           Tick latency, const std::vector<AggregatePart>& parts,
                                           std::uint32_t steps, Tick now);
  void advance(Tick now, std::vector<TransferId>& delivered);
  [[nodiscard]] Tick next_event() { return std::min(model_->next_event(), cuts_.next_action()); }
  // Cables of the timed faults the routes go around so far (0 before the first), and whether there are any.
  [[nodiscard]] std::uint32_t epoch() const { return cuts_.cables_failed(); }
  [[nodiscard]] bool has_timed_faults() const { return !cuts_.empty(); }
  // What each timed fault did by `end` (SimResult::network.in_step_faults).
  [[nodiscard]] std::vector<InStepFault> in_step_faults() const { return cuts_.stats(); }
  [[nodiscard]] std::uint32_t source(TransferId id) const { return transfers_[id].src; }
  [[nodiscard]] std::uint32_t sink(TransferId id) const { return transfers_[id].dst; }
  [[nodiscard]] Owner owner(TransferId id) const { return transfers_[id].owner; }
  void release(TransferId id) { free_.push_back(id); }

  [[nodiscard]] const Topology& topology() const { return topo_; }
  [[nodiscard]] const FaultSet& faults() const { return faults_; }
  [[nodiscard]] const char* link_model_name() const { return model_->name(); }
  [[nodiscard]] const char* router_name() const { return router_->name(); }
  // Per channel: the topology's links (by LinkId), then DCN egress of host h at dcn_egress(h), ingress at
  // dcn_ingress(h), then, with an oversubscribed fabric, pod p's uplink at uplink_egress(p), ingress at
  // uplink_ingress(p).
  [[nodiscard]] std::vector<ChannelStats> channel_stats(Tick end) const { return model_->stats(end); }
  [[nodiscard]] std::size_t dcn_egress(std::size_t host) const { return dcn_base_ + host; }
  [[nodiscard]] std::size_t dcn_ingress(std::size_t host) const { return dcn_base_ + topo_.host_count() + host; }
  // Whether pods reach the fabric through uplinks that can bind (pods > 1, dcn_oversubscription above 1); a
  // non-blocking uplink carries its NICs' sum and never binds, so it has no channel.
  [[nodiscard]] bool has_uplinks() const { return has_uplinks(topo_); }
  [[nodiscard]] static bool has_uplinks(const Topology& topo) {
    return topo.pods() > 1 && topo.dcn_oversubscription() > 1;
  }
  [[nodiscard]] std::size_t uplink_egress(int pod) const {
    return dcn_base_ + 2 * topo_.host_count() + static_cast<std::size_t>(pod);
  }
  [[nodiscard]] std::size_t uplink_ingress(int pod) const {
    return uplink_egress(pod) + static_cast<std::size_t>(topo_.pods());
  }
  // Transfers started (aggregates included, each one).
  [[nodiscard]] std::uint64_t transfers_started() const { return started_; }

 private:
  struct Transfer {
    std::uint32_t src = 0, dst = 0;
    TargetId target = 0;  // aggregates: none (see parts)
    std::uint64_t bytes = 0;
    Owner owner = Owner::collective;
    std::vector<std::uint32_t> path;  // used when the target's routes are not cached, and by a cut aggregate
    // Aggregates: the parts and steps (start_aggregate), the path and hop bytes in flight, the share of the
    // parts' bytes left, the latency of the steps done and the longest route latency of the current path.
    const std::vector<AggregatePart>* parts = nullptr;
    std::uint32_t steps = 0;
    const std::uint32_t* agg_path = nullptr;
    const std::uint64_t* agg_hop_bytes = nullptr;
    std::uint32_t agg_hops = 0;
    std::vector<std::uint64_t> hop_bytes;  // a cut aggregate's, on `path`
    double left = 1, latency_done = 0, longest = 0;
  };

  // The channel path from `chip` to its destination under `t` into `out`; false when it is the chip itself.
  bool route(std::uint32_t chip, TargetId t, std::vector<std::uint32_t>& out);
  [[nodiscard]] TransferId new_transfer();
  // Starts transfer `id` (its src, target and owner set) with `bytes` on its current route.
  void launch(TransferId id, std::uint64_t bytes, Tick now);
  void fail_cable(std::size_t k, Tick now);
  // The router and the route cache go around timed fault k from now (collectives planned from now too).
  void route_around(std::size_t k);
  // Lost at its start over a cut the routes still use (lose, before the cut's detection): aggregate `id`
  // counts as cut, its bytes over the cut lost, and is sent again at the detection. False when it is not.
  bool lost_at_start(TransferId id);
  void lose(std::size_t k, TransferId id, std::uint64_t bytes);
  // Removes from delivered[from ..) the transfers to a stopped chip (dropped), then notes the resent ones.
  void settle(std::vector<TransferId>& delivered, std::size_t from, Tick now);
  [[nodiscard]] bool dead(std::uint32_t chip) const { return cuts_.dead(chip); }
  void drop(TransferId id, std::uint64_t bytes) { cuts_.drop(transfers_[id].src, transfers_[id].dst, bytes); }
  // Starts the rest of cut aggregate `id` (its `left` share of every part) over the current routes.
  void relaunch_aggregate(TransferId id, Tick now);

  const Topology& topo_;
  FaultSet faults_;
  std::unique_ptr<Router> router_;
  std::uint32_t dcn_base_ = 0;  // channel of host h's NIC: egress dcn_base_ + h, ingress dcn_base_ + hosts + h
  std::unique_ptr<LinkModel> model_;
  std::vector<Tick> latency_;  // per channel
  bool aggregates_ = false;

  SendTargets targets_;
  RouteCache routes_;

  std::vector<Transfer> transfers_;
  std::vector<TransferId> free_;
  std::uint64_t started_ = 0;

  InStepCuts cuts_;
};

}  // namespace tpusim::models::net
