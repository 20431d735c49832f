#include "send_targets.h"

#include <algorithm>

#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/twisted_rings.h"

namespace tpusim::models::net {

GroupShapeId SendTargets::add_group(const ir::CollectiveGroup& group) {
  const auto it = std::find(groups_.begin(), groups_.end(), group);
  if (it != groups_.end()) return static_cast<GroupShapeId>(it - groups_.begin());
  groups_.push_back(group);
  return static_cast<GroupShapeId>(groups_.size() - 1);
}

TargetId SendTargets::add_target(const Target& t, const Origin& origin) {
  const auto [it, inserted] = by_key_.emplace(t, static_cast<TargetId>(targets_.size()));
  if (inserted) {
    targets_.push_back(t);
    origins_.push_back(origin);
    home_.push_back(destination(0, it->second) == ChipId(0));
  }
  return it->second;
}

ChipId SendTargets::destination(std::uint32_t chip, TargetId target) const {
  const Target& t = targets_[target];
  return kernels::group_destination(topo_, groups_[t.group], ChipId(chip), t.offset, t.pod_offset, t.follow);
}

}  // namespace tpusim::models::net
