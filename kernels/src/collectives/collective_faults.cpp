// Collective plans for the surviving topology: the line alternative to a ring with a failed link, and the
// alpha-beta network time that picks between it and the detour (contracts in tpusim/kernels/collectives.h,
// "Re-planned around failed links").
#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>

#include "collectives/collective_algorithm.h"
#include "tpusim/kernels/twisted_rings.h"

namespace tpusim::kernels {

bool chain_sends(const LineChain& chain, int position, int length) {
  if (position >= length - 1) return false;  // the last member's next is across the cut
  return chain.gather ? position >= chain.step - 1 : position < chain.step;
}

int chain_position(int member, int cut, int length, int direction) {
  const int p = direction > 0 ? member - (cut + 1) : cut - member;
  return ((p % length) + length) % length;
}

namespace {

// One way to plan a participating torus axis around the failed links: -1, its ring as planned without faults
// (its sends through a failed cable detouring), or a line: the rings a failed cable cuts each start after one
// of theirs (`rings`), the others after member `cut`.
struct AxisCut {
  int cut = -1;
  std::vector<RingCut> rings;
};

// The plans compared are every combination of the axes' candidates, the first kMaxCombinations (see below);
// an axis has one line candidate per failed cable of its most-cut ring, at most kMaxLinesPerAxis.
constexpr std::size_t kMaxLinesPerAxis = 3;
constexpr std::size_t kMaxCombinations = 32;

// Per torus axis, the ways to plan it. Lines only where the group closes rings along a whole, untwisted torus
// axis (size x stride = length, any stride, 3 to 256 members): line k cuts each ring a failed cable lies on
// after its k-th failed cable (its last when it has fewer; in failed.links order), the rings no failed cable
// cuts after lane 0's member of the first cut ring's cable. Then what the plan without faults (`healthy`) does
// there: the ring, or the automatic choice's line. An axis no failed cable cuts has the latter alone.
std::array<std::vector<AxisCut>, kMaxAxes> axis_candidates(const Topology& topo, const ir::CollectiveGroup& group,
                                                           const FaultSet& failed, const CollectivePlan& healthy) {
  struct CutRow {
    ChipId member;            // the row's chip at coordinate 0 on the axis
    std::vector<int> cables;  // distinct, in failed.links order
  };
  std::array<std::vector<CutRow>, kMaxAxes> rows;
  for (const LinkId id : failed.links) {
    if (topo.twisted()) break;
    const Link& link = topo.link(id);
    const int a = link.axis;
    const auto u = static_cast<std::size_t>(a);
    if (a >= topo.axes() || !topo.wraps(a)) continue;
    const int n = topo.shape()[u];
    const auto size = static_cast<int>(group.size[u]), stride = static_cast<int>(group.stride[u]);
    if (size * stride != n || size < 3 || size > detail::kMaxLineLength) continue;
    ChipCoord at = topo.coord(link.src);
    const int cable = link.direction > 0 ? at.pos[u] : (at.pos[u] - 1 + n) % n;  // between cable and cable + 1
    at.pos[u] = 0;
    const ChipId member = topo.chip_at(at);
    auto row = std::find_if(rows[u].begin(), rows[u].end(), [&](const CutRow& r) { return r.member == member; });
    if (row == rows[u].end()) row = rows[u].insert(rows[u].end(), CutRow{member, {}});
    if (std::find(row->cables.begin(), row->cables.end(), cable) == row->cables.end()) row->cables.push_back(cable);
  }
  std::array<std::vector<AxisCut>, kMaxAxes> out;
  for (std::size_t a = 0; a < kMaxAxes; ++a) {
    std::size_t lines = 0;
    for (const CutRow& r : rows[a]) lines = std::max(lines, std::min(r.cables.size(), kMaxLinesPerAxis));
    for (std::size_t k = 0; k < lines; ++k) {
      AxisCut c;
      for (const CutRow& r : rows[a]) {
        c.rings.push_back(RingCut{static_cast<int>(a), r.member, r.cables[std::min(k, r.cables.size() - 1)]});
      }
      c.cut = c.rings.front().cable / static_cast<int>(group.stride[a]);
      out[a].push_back(std::move(c));
    }
    out[a].push_back(AxisCut{healthy.cut[a], {}});
  }
  return out;
}

}  // namespace

ChipId group_destination(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip,
                         const std::array<int, kMaxAxes>& offset, int pod_offset) {
  ChipCoord c = topo.coord(chip);
  // Member i of lane l of the block starting at b is chip b + l + i x stride (kernels/README.md, "Groups").
  const auto move = [](int& pos, int by, int size, int stride) {
    const int block = size * stride;
    const int base = pos - pos % block, within = pos % block;
    pos = base + within % stride + (((within / stride + by) % size) + size) % size * stride;
  };
  if (pod_offset != 0) {
    move(c.pod, pod_offset, static_cast<int>(group.pods), 1);
  } else {
    for (std::size_t a = 0; a < kMaxAxes; ++a) {
      if (offset[a] != 0) move(c.pos[a], offset[a], static_cast<int>(group.size[a]), static_cast<int>(group.stride[a]));
    }
  }
  return topo.chip_at(c);
}

int group_member(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip, int axis) {
  const auto a = static_cast<std::size_t>(axis);
  const int x = topo.coord(chip).pos[a];
  const auto block = static_cast<int>(group.size[a] * group.stride[a]);
  return (x % block) / static_cast<int>(group.stride[a]);
}

int line_cut(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group, ChipId chip,
             int axis) {
  const auto a = static_cast<std::size_t>(axis);
  const ChipCoord c = topo.coord(chip);
  const int n = topo.shape()[a], s = static_cast<int>(group.stride[a]), lane = c.pos[a] % s;
  for (const RingCut& r : plan.ring_cuts) {
    if (r.axis != axis) continue;
    ChipCoord row = topo.coord(r.member);
    row.pos[a] = c.pos[a];
    if (row == c) return (((r.cable - lane) % n + n) % n) / s;
  }
  return plan.cut[a];
}

int line_position(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group, ChipId chip,
                  const CollectiveSend& send) {
  const int axis = send.chain.axis;
  const auto a = static_cast<std::size_t>(axis);
  return chain_position(group_member(topo, group, chip, axis), line_cut(topo, plan, group, chip, axis),
                        static_cast<int>(group.size[a]), send.offset[a]);
}

namespace {

// The fault-aware router's paths, each asked for once: the candidate plans of one collective send between the
// same chips (they differ in which chips make their chain sends).
class RouteMemo {
 public:
  RouteMemo(const Topology& topo, const FaultSet& failed) : router_(make_fault_aware_router(topo, failed)) {}
  const std::optional<Path>& route(ChipId src, ChipId dst) {
    const std::uint64_t key = (std::uint64_t{src.value()} << 32) | dst.value();
    auto it = paths_.find(key);
    if (it == paths_.end()) it = paths_.emplace(key, router_->route(src, dst)).first;
    return it->second;
  }

 private:
  std::unique_ptr<Router> router_;
  std::unordered_map<std::uint64_t, std::optional<Path>> paths_;
};

std::optional<Seconds> network_time(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group,
                                    RouteMemo& routes) {
  const std::size_t steps = plan.steps.size();
  std::vector<std::vector<double>> bytes(steps, std::vector<double>(topo.link_count(), 0.0));
  std::vector<double> latency(steps, 0.0);
  const std::uint32_t follow = twisted_ring_axes(topo, plan, group);
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    const ChipId chip(c);
    for (std::size_t s = 0; s < steps; ++s) {
      for (const CollectiveSend& send : plan.steps[s].sends) {
        if (send.pod_offset != 0 || send.bytes == 0) continue;
        if (send.chain.axis >= 0) {
          const auto a = static_cast<std::size_t>(send.chain.axis);
          const int n = static_cast<int>(group.size[a]);
          if (!chain_sends(send.chain, line_position(topo, plan, group, chip, send), n)) continue;
        }
        const ChipId dst = group_destination(topo, group, chip, send.offset, 0, follow);
        if (dst == chip) continue;
        const std::optional<Path>& path = routes.route(chip, dst);
        if (!path) return std::nullopt;
        double hops = 0;
        for (const LinkId l : *path) {
          bytes[s][l.value()] += static_cast<double>(send.bytes);
          hops += topo.link(l).latency.value();
        }
        latency[s] = std::max(latency[s], hops);
      }
    }
  }
  double total = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    double worst = 0;
    for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
      if (bytes[s][l] > 0) worst = std::max(worst, bytes[s][l] / topo.link(LinkId(l)).bandwidth.value());
    }
    total += worst + latency[s];
  }
  return Seconds(total);
}

}  // namespace

std::optional<Seconds> plan_network_time(const Topology& topo, const CollectivePlan& plan,
                                         const ir::CollectiveGroup& group, const FaultSet& failed) {
  RouteMemo routes(topo, failed);
  return network_time(topo, plan, group, routes);
}

CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip, DType dtype,
                               const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm,
                               const FaultSet& failed) {
  CollectivePlan ring = plan_collective(topo, kind, bytes_per_chip, dtype, group, algorithm);
  if (failed.links.empty() || ring.steps.empty()) return ring;
  const std::array<std::vector<AxisCut>, kMaxAxes> candidates = axis_candidates(topo, group, failed, ring);
  std::size_t combinations = 1;
  for (const std::vector<AxisCut>& c : candidates) combinations *= c.size();
  if (combinations == 1) return ring;  // no failed cable cuts a ring the group closes
  // Every combination of the axes' candidates, axis 0 slowest, each axis's lines before its fault-free plan: the
  // first is every cut axis a line (after its first failed cable), the last the plan without faults (the ring
  // kept, its sends through the cuts detouring). Past kMaxCombinations only the last is added. The fastest by
  // plan_network_time wins; ties go to the earlier (more lines: they leave the other rings' links alone).
  std::optional<CollectivePlan> best;
  double best_time = 0;
  RouteMemo routes(topo, failed);
  const auto consider = [&](CollectivePlan plan) {
    const std::optional<Seconds> t = network_time(topo, plan, group, routes);
    if (!t || (best && t->value() >= best_time)) return;
    plan.estimate = *t;
    best_time = t->value();
    best = std::move(plan);
  };
  for (std::size_t i = 0; i + 1 < std::min(combinations, kMaxCombinations); ++i) {
    std::array<const AxisCut*, kMaxAxes> pick{};
    std::array<int, kMaxAxes> cut{-1, -1, -1};
    std::size_t rest = i;
    for (std::size_t a = kMaxAxes; a-- > 0;) {
      pick[a] = &candidates[a][rest % candidates[a].size()];
      rest /= candidates[a].size();
      cut[a] = pick[a]->cut;
    }
    CollectivePlan line = detail::plan_collective_cut(topo, kind, bytes_per_chip, dtype, group, ring.algorithm, cut);
    if (i == 0 && line.cut == ring.cut) return ring;  // not a ring plan: its sends detour
    for (std::size_t a = 0; a < kMaxAxes; ++a) {
      if (line.cut[a] >= 0 && line.cut[a] == cut[a]) {
        line.ring_cuts.insert(line.ring_cuts.end(), pick[a]->rings.begin(), pick[a]->rings.end());
      }
    }
    line.replan = CollectivePlan::Replan::line;
    consider(std::move(line));
  }
  ring.replan = CollectivePlan::Replan::detour;
  consider(ring);
  return best ? *best : ring;  // no best: some send has no surviving route (the transport reports it)
}

}  // namespace tpusim::kernels
