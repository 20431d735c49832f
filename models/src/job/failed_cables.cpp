// The cables a reroute job has routed around, and the chips they cut off (failed_cables.h).
#include "tpusim/models/failed_cables.h"

#include <algorithm>
#include <deque>

namespace tpusim::models::job {

std::uint32_t FailedCables::cable_of(LinkId link) const {
  return std::min(link.value(), topo_.link(link).reverse.value());
}

std::optional<std::vector<ChipId>> FailedCables::reach(ChipId from, std::optional<ChipId> stop) const {
  std::vector<char> seen(topo_.chip_count(), 0);
  std::vector<ChipId> found{from};
  std::deque<ChipId> next{from};
  seen[from.value()] = 1;
  while (!next.empty()) {
    const ChipId c = next.front();
    next.pop_front();
    for (LinkId l : topo_.out_links(c)) {
      if (down_.count(cable_of(l)) != 0) continue;
      const ChipId d = topo_.link(l).dst;
      if (seen[d.value()] != 0) continue;
      if (stop && d == *stop) return std::nullopt;
      seen[d.value()] = 1;
      found.push_back(d);
      next.push_back(d);
    }
  }
  return found;
}

std::optional<std::vector<ChipId>> FailedCables::fail(LinkId link) {
  if (!down_.insert(cable_of(link)).second) return std::nullopt;  // already routed around
  const Link& l = topo_.link(link);
  // The pod was connected before this cable went; it still is exactly when the cable's ends reach each other.
  std::optional<std::vector<ChipId>> src_side = reach(l.src, l.dst);
  if (!src_side) return std::nullopt;
  std::vector<ChipId> dst_side = *reach(l.dst, std::nullopt);
  std::vector<ChipId> cut = src_side->size() < dst_side.size() ? *src_side : dst_side;
  std::sort(cut.begin(), cut.end());
  return cut;
}

std::vector<LinkId> FailedCables::between(const std::vector<ChipId>& side) const {
  auto in = [&side](ChipId c) { return std::binary_search(side.begin(), side.end(), c); };
  std::vector<LinkId> out;
  for (std::uint32_t cable : down_) {
    const Link& l = topo_.link(LinkId(cable));
    if (in(l.src) != in(l.dst)) out.emplace_back(cable);
  }
  return out;
}

std::vector<std::uint32_t> FailedCables::repair_around(const std::vector<ChipId>& chips) {
  std::vector<std::uint32_t> repaired;
  for (ChipId c : chips) {
    for (LinkId l : topo_.out_links(c)) {
      if (down_.erase(cable_of(l)) != 0) repaired.push_back(cable_of(l));
    }
  }
  std::sort(repaired.begin(), repaired.end());
  return repaired;
}

}  // namespace tpusim::models::job
