// Diameter and bisection of a Topology (definitions in topology.h).
#include <algorithm>

#include "ici_graph.h"
#include "tpusim/topology/topology.h"

namespace tpusim {

namespace {

// Largest finite BFS distance from `src` (its eccentricity within its connected part).
int eccentricity(const detail::IciGraph& g, ChipId src, std::vector<int>& dist,
                 std::vector<boost::default_color_type>& color) {
  detail::bfs(g, src, dist, nullptr, color);
  return *std::max_element(dist.begin(), dist.end());
}

}  // namespace

int diameter_bfs(const Topology& topo) {
  const detail::IciGraph g = detail::make_ici_graph(topo);
  std::vector<int> dist;
  std::vector<boost::default_color_type> color;
  int d = 0;
  for (std::uint32_t s = 0; s < topo.chips_per_pod(); ++s) d = std::max(d, eccentricity(g, ChipId(s), dist, color));
  return d;
}

std::optional<int> diameter_closed_form(const Topology& topo) {
  if (topo.twisted()) return std::nullopt;
  int d = 0;
  for (int a = 0; a < topo.axes(); ++a) {
    const int len = topo.shape()[static_cast<std::size_t>(a)];
    d += topo.wraps(a) ? len / 2 : len - 1;
  }
  return d;
}

int diameter(const Topology& topo) {
  if (topo.chips_per_pod() <= kDiameterBfsLimit) return diameter_bfs(topo);
  if (const auto closed = diameter_closed_form(topo)) return *closed;
  // Twisted torus: a Cayley graph, so every chip has the same eccentricity.
  const detail::IciGraph g = detail::make_ici_graph(topo);
  std::vector<int> dist;
  std::vector<boost::default_color_type> color;
  return eccentricity(g, ChipId(0), dist, color);
}

Bisection bisection(const Topology& topo) {
  Bisection b;
  const auto& shape = topo.shape();
  for (int a = 1; a < topo.axes(); ++a) {
    if (shape[static_cast<std::size_t>(a)] > shape[static_cast<std::size_t>(b.axis)]) b.axis = a;
  }
  const int half = shape[static_cast<std::size_t>(b.axis)] / 2;
  if (half == 0) return b;  // a single chip has nothing to cut
  for (const Link& l : topo.links()) {
    const ChipCoord s = topo.coord(l.src);
    if (s.pod != 0) break;  // links are numbered pod by pod; pods are identical
    const ChipCoord d = topo.coord(l.dst);
    const auto ax = static_cast<std::size_t>(b.axis);
    if (s.pos[ax] < half && d.pos[ax] >= half) {
      ++b.links;
      b.bandwidth += l.bandwidth;
    }
  }
  return b;
}

}  // namespace tpusim
