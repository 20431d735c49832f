#pragma once
// The cables a `reroute` job has routed around so far, and what they cut (docs/faults.md "Over the job"). A
// cable is routed around only while every chip of its pod still reaches every other over the surviving ones:
// the cable that cuts a chip off (its every cable down) or splits its pod in two leaves chips that no route
// reaches, which the job meets as those chips failing (the timeline, models/src/job/job_timeline.cpp), or which
// a timed plan under reroute may not ask for (tools/src/preflight.cpp). Plain C++ over the topology's links.
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "tpusim/topology/topology.h"

namespace tpusim::models::job {

class FailedCables {
 public:
  explicit FailedCables(const Topology& topo) : topo_(topo) {}

  // Marks the cable of `link` (both directions) failed. Returns the chips it cuts off, ascending: the smaller
  // side of its pod once the cable's two ends no longer reach each other (a single chip when its last cable
  // went; of two equal sides the one without the link's source); nullopt while the pod stays connected.
  [[nodiscard]] std::optional<std::vector<ChipId>> fail(LinkId link);
  // The recovery of a cut replaces what failed around `chips`: their cables are up again. Returns the cables it
  // repaired (each its lower LinkId), ascending.
  std::vector<std::uint32_t> repair_around(const std::vector<ChipId>& chips);
  [[nodiscard]] std::size_t size() const { return down_.size(); }
  // The cable of `link` is routed around (failed, not yet repaired).
  [[nodiscard]] bool down(LinkId link) const { return down_.count(cable_of(link)) != 0; }
  // The failed cables with one end among `side` (sorted) and the other outside: those that cut it off.
  [[nodiscard]] std::vector<LinkId> between(const std::vector<ChipId>& side) const;
  // The lower LinkId of the cable's two directions.
  [[nodiscard]] std::uint32_t cable_of(LinkId link) const;

 private:
  // The chips `from` reaches over surviving cables; nullopt as soon as `stop` is among them.
  [[nodiscard]] std::optional<std::vector<ChipId>> reach(ChipId from, std::optional<ChipId> stop) const;

  const Topology& topo_;
  std::set<std::uint32_t> down_;  // a cable named by the lower LinkId of its two directions
};

}  // namespace tpusim::models::job
