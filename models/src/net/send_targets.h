#pragma once
// SendTargets: the transport's catalogue of where sends go. Group shapes and targets (destination rules
// relative to the sender, kernels/README.md, "Groups") are interned at elaboration, each target with the
// instruction that first used it, so that a route the router cannot find names it. Routing is not here
// (transport.h): this only answers which chip a target names from a given sender.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

using TargetId = std::uint32_t;
using GroupShapeId = std::uint32_t;

// Where a send goes, relative to the sender, in the space of group shape `group` (add_group): `offset`
// members per axis (modulo the group's size there) in the same pod, or, when pod_offset != 0, the chip with
// the same coordinates pod_offset pods on (modulo the group's pods, over the DCN). Along the axes of `follow`
// the move follows a twisted torus's links (kernels/twisted_rings.h).
struct Target {
  GroupShapeId group = 0;
  std::array<int, kMaxAxes> offset{};
  int pod_offset = 0;
  std::uint32_t follow = 0;
  bool operator<(const Target& o) const {
    return std::tie(group, offset, pod_offset, follow) < std::tie(o.group, o.offset, o.pod_offset, o.follow);
  }
};

// The instruction that first used a target, for error messages.
struct Origin {
  std::uint32_t instr = 0;
  int core = 0;
  std::string label;
};

class SendTargets {
 public:
  // `topo` must outlive the catalogue.
  explicit SendTargets(const Topology& topo) : topo_(topo) {}

  // Interns a group shape (it must fit the topology: kernels::plan_collective checks).
  [[nodiscard]] GroupShapeId add_group(const ir::CollectiveGroup& group);
  // Interns a target; `origin` is kept only for the first use.
  [[nodiscard]] TargetId add_target(const Target& t, const Origin& origin);

  [[nodiscard]] std::size_t size() const { return targets_.size(); }
  [[nodiscard]] const Target& target(TargetId t) const { return targets_[t]; }
  [[nodiscard]] const Origin& origin(TargetId t) const { return origins_[t]; }
  [[nodiscard]] const ir::CollectiveGroup& group(GroupShapeId g) const { return groups_[g]; }
  [[nodiscard]] ChipId destination(std::uint32_t chip, TargetId t) const;
  // Sends under `t` stay on the chip (the same for every chip: offsets in group space are uniform).
  [[nodiscard]] bool stays_home(TargetId t) const { return home_[t]; }

 private:
  const Topology& topo_;
  std::vector<ir::CollectiveGroup> groups_;
  std::vector<Target> targets_;
  std::vector<Origin> origins_;  // [target]
  std::vector<bool> home_;       // [target]: stays_home()
  std::map<Target, TargetId> by_key_;
};

}  // namespace tpusim::models::net
