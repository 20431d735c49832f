// Diameter and bisection of a Topology (definitions in topology.h).
#include <algorithm>
#include <vector>

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
  const auto& shape = topo.shape();
  std::vector<Bisection> cuts;  // per axis of two chips or more: the cut halving it
  for (int a = 0; a < topo.axes(); ++a) {
    if (shape[static_cast<std::size_t>(a)] >= 2) cuts.push_back(Bisection{a, 0, BytesPerSecond(0)});
  }
  if (cuts.empty()) return Bisection{};  // a single chip has nothing to cut
  for (const Link& l : topo.links()) {
    const ChipCoord s = topo.coord(l.src);
    if (s.pod != 0) break;  // links are numbered pod by pod; pods are identical
    const ChipCoord d = topo.coord(l.dst);
    for (Bisection& b : cuts) {
      const auto ax = static_cast<std::size_t>(b.axis);
      const int half = shape[ax] / 2;
      if (s.pos[ax] < half && d.pos[ax] >= half) {
        ++b.links;
        b.bandwidth += l.bandwidth;
      }
    }
  }
  // The narrowest: the least bandwidth, then the fewest links, then the longest axis, then the first.
  return *std::min_element(cuts.begin(), cuts.end(), [&](const Bisection& x, const Bisection& y) {
    if (x.bandwidth != y.bandwidth) return x.bandwidth < y.bandwidth;
    if (x.links != y.links) return x.links < y.links;
    return shape[static_cast<std::size_t>(x.axis)] > shape[static_cast<std::size_t>(y.axis)];
  });
}

}  // namespace tpusim
