// Rings that follow a twisted torus's links (contract in tpusim/kernels/twisted_rings.h).
#include "tpusim/kernels/twisted_rings.h"

#include <algorithm>

namespace tpusim::kernels {

namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

int longest_axis(const Topology& topo) {
  return *std::max_element(topo.shape().begin(), topo.shape().begin() + topo.axes());
}

}  // namespace

bool holds_shifted_rings(const Topology& topo, const ir::CollectiveGroup& group) {
  if (!topo.twisted()) return false;
  const int longest = longest_axis(topo);
  for (int a = 0; a < topo.axes(); ++a) {
    const auto u = static_cast<std::size_t>(a);
    if (topo.shape()[u] != longest) continue;
    const auto size = static_cast<int>(group.size[u]), stride = static_cast<int>(group.stride[u]);
    // The shift of L/2 must land on a member of the same lane.
    if (size * stride != longest || (longest / 2) % stride != 0) return false;
  }
  return true;
}

bool closes_ring(const Topology& topo, const ir::CollectiveGroup& group, int axis) {
  if (!topo.wraps(axis)) return false;
  return !topo.twisted() || topo.shape()[static_cast<std::size_t>(axis)] == longest_axis(topo) ||
         holds_shifted_rings(topo, group);
}

std::uint32_t twisted_ring_axes(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group) {
  if (!topo.twisted()) return 0;
  const bool ring = plan.algorithm == CollectiveAlgorithm::ring_bidirectional ||
                    plan.algorithm == CollectiveAlgorithm::ring_unidirectional;
  const bool phased = plan.kind == CollectiveKind::all_reduce || plan.kind == CollectiveKind::reduce_scatter ||
                      plan.kind == CollectiveKind::all_gather;
  if (!ring || !phased) return 0;
  if (std::any_of(plan.cut.begin(), plan.cut.end(), [](int c) { return c >= 0; })) return 0;
  if (!holds_shifted_rings(topo, group)) return 0;
  const int longest = longest_axis(topo);
  std::uint32_t follow = 0;
  for (int a = 0; a < topo.axes(); ++a) {
    const auto u = static_cast<std::size_t>(a);
    const auto size = static_cast<int>(group.size[u]), stride = static_cast<int>(group.stride[u]);
    if (topo.shape()[u] != longest && size > 1 && size * stride == topo.shape()[u]) follow |= 1u << a;
  }
  return follow;
}

ChipId group_destination(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip,
                         const std::array<int, kMaxAxes>& offset, int pod_offset, std::uint32_t follow) {
  if (follow == 0 || pod_offset != 0) return group_destination(topo, group, chip, offset, pod_offset);
  std::array<int, kMaxAxes> rest = offset;
  ChipCoord c = topo.coord(chip);
  int crossings = 0;
  for (std::size_t a = 0; a < kMaxAxes; ++a) {
    if (((follow >> a) & 1u) == 0 || offset[a] == 0) continue;
    // The group spans the axis whole: member i of lane l is chip l + i x stride.
    const auto size = static_cast<int>(group.size[a]), stride = static_cast<int>(group.stride[a]);
    const int to = c.pos[a] / stride + offset[a];
    crossings += floor_div(to, size);
    c.pos[a] = c.pos[a] % stride + (to - floor_div(to, size) * size) * stride;
    rest[a] = 0;
  }
  const int longest = longest_axis(topo);
  for (int b = 0; b < topo.axes(); ++b) {
    const auto u = static_cast<std::size_t>(b);
    if (topo.shape()[u] == longest) c.pos[u] = ((c.pos[u] + crossings * (longest / 2)) % longest + longest) % longest;
  }
  return group_destination(topo, group, topo.chip_at(c), rest, 0);
}

}  // namespace tpusim::kernels
