#pragma once
// Routing on a Topology: dimension-order routes computed on demand (nothing is stored per pair), and a
// fault-aware policy that routes around failed links and chips by shortest paths on the surviving graph.
//
// Deadlock freedom is assumed, not simulated; the scheme the model assumes is:
// - DOR on a mesh is deadlock-free as is; on a ring/torus each ring uses two virtual channels with a dateline
//   at the wraparound link (a packet moves to the second VC when it crosses it), which breaks the cyclic
//   channel dependency (Dally & Seitz 1987). On a twisted torus the dateline is the (twisted) wraparound link.
// - Rerouted (non-DOR) paths run on adaptive VCs under Duato's protocol: an escape VC class carries up*/down*
//   routing on a BFS spanning tree of the surviving graph (Autonet), which connects every surviving pair and
//   is deadlock-free, so the shortest paths we hand out need not be acyclic themselves. The escape VC is not
//   modelled as a separate resource; links are shared as if the adaptive VC always makes progress.
#include <memory>
#include <optional>
#include <vector>

#include "tpusim/core/ids.h"
#include "tpusim/topology/topology.h"

namespace tpusim {

// A route: the directed links taken in order; empty for src == dst.
using Path = std::vector<LinkId>;

// One leg of a dimension-order route: `hops` links along `axis` in `direction` (+1/-1).
struct DorLeg {
  int axis = 0;
  int direction = 1;
  int hops = 0;
};

// Dimension-order routing. Axes are taken in index order; on a wrapped axis the route takes the shorter way
// round, and on a tie (the chip opposite on an even ring) the + direction. Mesh axes go straight. On a
// twisted torus the directions on the short axes are chosen together with the resulting long-axis distance
// to minimise total hops (ties: the first choice with + before -, lower axes first); legs still run in axis
// order, and on a k x 2k x 2k twist a short axis with no offset may be travelled once round its ring when the
// twist shift that buys saves more on the two long axes. Every DOR route is a shortest path of the healthy
// topology. nullopt when src and dst are in
// different pods (they share no ICI; the traffic goes over the DCN).
[[nodiscard]] std::optional<std::vector<DorLeg>> dor_legs(const Topology& topo, ChipId src, ChipId dst);
[[nodiscard]] std::optional<Path> dor_route(const Topology& topo, ChipId src, ChipId dst);
// Hop count of the DOR route without building it (the torus/mesh distance).
[[nodiscard]] std::optional<int> dor_hops(const Topology& topo, ChipId src, ChipId dst);

// Failed components seen by a router. A failed chip loses every link into and out of it. Links are
// directed: a cut cable is both of its links (add_cable); an OCS port failure is every link through the port.
// Ids must belong to the router's topology (make_fault_aware_router throws std::out_of_range otherwise).
struct FaultSet {
  std::vector<LinkId> links;
  std::vector<ChipId> chips;

  void add_cable(const Topology& topo, LinkId link);
  void add_ocs_port(const Topology& topo, OcsId ocs, PortId port);
};

// A routing policy. route() returns nullopt when dst cannot be reached from src (including when either chip
// has failed), never throws for that. A router refers to its Topology, which must outlive it. Routers may
// cache and are not safe for concurrent use.
class Router {
 public:
  virtual ~Router() = default;
  [[nodiscard]] virtual std::optional<Path> route(ChipId src, ChipId dst) = 0;
  [[nodiscard]] virtual const char* name() const = 0;
};

// "dor": dor_route(), ignores faults.
[[nodiscard]] std::unique_ptr<Router> make_dor_router(const Topology& topo);

// "fault_aware": a pair whose DOR route avoids every failed link and chip keeps it (routing tables change
// only where a fault forces them to); any other pair gets a shortest path in hops on the surviving graph
// (Boost.Graph BFS, deterministic: edges are visited in LinkId order). The BFS tree of the last source is
// cached, so routing many destinations from one source costs one BFS (O(chips + links)).
[[nodiscard]] std::unique_ptr<Router> make_fault_aware_router(const Topology& topo, const FaultSet& faults);

}  // namespace tpusim
