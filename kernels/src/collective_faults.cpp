// Collective plans for the surviving topology: the line alternative to a ring with a failed link, and the
// alpha-beta network time that picks between it and the detour (contracts in tpusim/kernels/collectives.h,
// "Re-planned around failed links").
#include <algorithm>
#include <memory>
#include <optional>

#include "collective_algorithm.h"

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

// Per participating ring axis, the member after which a failed link cuts it (-1: none). Only whole, untwisted
// torus axes the group spans with stride 1 (every lane's ring is the axis's own ring, so one cut serves all).
std::array<int, kMaxAxes> cuts_for(const Topology& topo, const ir::CollectiveGroup& group, const FaultSet& failed) {
  std::array<int, kMaxAxes> cut{-1, -1, -1};
  if (topo.twisted()) return cut;
  for (const LinkId id : failed.links) {
    const Link& link = topo.link(id);
    const int a = link.axis;
    const auto u = static_cast<std::size_t>(a);
    if (a >= topo.axes() || cut[u] >= 0 || !topo.wraps(a)) continue;
    const int n = topo.shape()[u];
    if (group.size[u] != static_cast<std::uint32_t>(n) || group.stride[u] != 1 || n < 3 || n > 256) continue;
    const int x = topo.coord(link.src).pos[u];
    cut[u] = link.direction > 0 ? x : (x - 1 + n) % n;
  }
  return cut;
}

}  // namespace

ChipId group_destination(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip,
                         const std::array<int, kMaxAxes>& offset, int pod_offset) {
  ChipCoord c = topo.coord(chip);
  // Member i of lane l of the block starting at b is chip b + l + i x stride (collectives.h, "Groups").
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

std::optional<Seconds> plan_network_time(const Topology& topo, const CollectivePlan& plan,
                                         const ir::CollectiveGroup& group, const FaultSet& failed) {
  const std::unique_ptr<Router> router = make_fault_aware_router(topo, failed);
  const std::size_t steps = plan.steps.size();
  std::vector<std::vector<double>> bytes(steps, std::vector<double>(topo.link_count(), 0.0));
  std::vector<double> latency(steps, 0.0);
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    const ChipId chip(c);
    for (std::size_t s = 0; s < steps; ++s) {
      for (const CollectiveSend& send : plan.steps[s].sends) {
        if (send.pod_offset != 0 || send.bytes == 0) continue;
        if (send.chain.axis >= 0) {
          const auto a = static_cast<std::size_t>(send.chain.axis);
          const int n = static_cast<int>(group.size[a]);
          const int p = chain_position(group_member(topo, group, chip, send.chain.axis), plan.cut[a], n, send.offset[a]);
          if (!chain_sends(send.chain, p, n)) continue;
        }
        const ChipId dst = group_destination(topo, group, chip, send.offset, 0);
        if (dst == chip) continue;
        const std::optional<Path> path = router->route(chip, dst);
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

CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip, DType dtype,
                               const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm,
                               const FaultSet& failed) {
  CollectivePlan ring = plan_collective(topo, kind, bytes_per_chip, dtype, group, algorithm);
  if (failed.links.empty() || ring.steps.empty()) return ring;
  std::array<int, kMaxAxes> cut = cuts_for(topo, group, failed);
  if (std::all_of(cut.begin(), cut.end(), [](int c) { return c < 0; })) return ring;
  for (std::size_t a = 0; a < kMaxAxes; ++a) {
    if (cut[a] < 0) cut[a] = ring.cut[a];  // the lines the automatic choice planned stay lines
  }
  CollectivePlan line = detail::plan_collective_cut(topo, kind, bytes_per_chip, dtype, group, ring.algorithm, cut);
  if (std::all_of(line.cut.begin(), line.cut.end(), [](int c) { return c < 0; })) return ring;  // not a ring plan
  const std::optional<Seconds> ring_time = plan_network_time(topo, ring, group, failed);
  const std::optional<Seconds> line_time = plan_network_time(topo, line, group, failed);
  ring.replan = CollectivePlan::Replan::detour;
  line.replan = CollectivePlan::Replan::line;
  if (ring_time) ring.estimate = *ring_time;
  if (line_time) line.estimate = *line_time;
  // Ties go to the line: it leaves the links of the other rings alone.
  if (line_time && (!ring_time || line_time->value() <= ring_time->value())) return line;
  return ring;
}

}  // namespace tpusim::kernels
