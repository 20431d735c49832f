// Dimension-order routing (contract in routing.h) and the "dor" router.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "tpusim/topology/routing.h"

namespace tpusim {

namespace {

int mod(int a, int m) { return ((a % m) + m) % m; }

// The DOR leg along one axis of an untwisted ring or line, for an offset `delta` (dst - src coordinate).
DorLeg axis_leg(int axis, int len, bool wrap, int delta) {
  if (!wrap) return DorLeg{axis, delta < 0 ? -1 : 1, std::abs(delta)};
  const int fwd = mod(delta, len);
  if (fwd <= len - fwd) return DorLeg{axis, 1, fwd};  // tie -> + direction
  return DorLeg{axis, -1, len - fwd};
}

// Twisted torus: every wraparound crossing on a short axis moves L/2 along each long axis (topology.h), so
// only the parity of the crossings on the short axes matters for the long-axis offsets. The links commute
// (the graph is a Cayley graph of an abelian group), so a shortest path is fixed by how far it goes on each
// axis. On a short axis of length len with forward offset fwd, the cheapest way with an even number of
// crossings is fwd hops in +, with an odd number len - fwd hops in - (fwd > 0) or len hops, once round
// (fwd = 0). Try both parities on every short axis (at most 4 combinations) and keep the first with the
// fewest total hops; the long axes then take the shorter way round.
std::vector<DorLeg> twisted_legs(const Topology& topo, const ChipCoord& a, const ChipCoord& b) {
  const auto& shape = topo.shape();
  const int long_len = *std::max_element(shape.begin(), shape.begin() + topo.axes());
  std::vector<int> short_axes;
  for (int i = 0; i < topo.axes(); ++i) {
    if (shape[static_cast<std::size_t>(i)] != long_len) short_axes.push_back(i);
  }
  std::vector<DorLeg> best;
  int best_hops = std::numeric_limits<int>::max();
  for (unsigned mask = 0; mask < (1U << short_axes.size()); ++mask) {
    std::vector<DorLeg> legs(static_cast<std::size_t>(topo.axes()));
    int crossings = 0;
    for (std::size_t j = 0; j < short_axes.size(); ++j) {
      const int ax = short_axes[j];
      const auto u = static_cast<std::size_t>(ax);
      const int len = shape[u];
      const int fwd = mod(b.pos[u] - a.pos[u], len);
      const bool minus = ((mask >> j) & 1U) != 0;
      if (fwd == 0) {
        // No offset on this axis: stay, or go once round the ring (+) for the twist shift. The detour is
        // never shorter with one long axis, but can be with two (4x8x8: 4 hops buy a shift of 4 on both).
        legs[u] = DorLeg{ax, 1, minus ? len : 0};
        crossings += minus ? 1 : 0;
      } else if (!minus) {
        legs[u] = DorLeg{ax, 1, fwd};
        crossings += a.pos[u] + fwd >= len ? 1 : 0;
      } else {
        legs[u] = DorLeg{ax, -1, len - fwd};
        crossings += a.pos[u] - (len - fwd) < 0 ? 1 : 0;
      }
    }
    int hops = 0;
    for (int i = 0; i < topo.axes(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (shape[u] == long_len) {
        legs[u] = axis_leg(i, long_len, true, b.pos[u] - a.pos[u] - crossings * (long_len / 2));
      }
      hops += legs[u].hops;
    }
    if (hops < best_hops) {
      best_hops = hops;
      best = std::move(legs);
    }
  }
  return best;
}

class DorRouter final : public Router {
 public:
  explicit DorRouter(const Topology& topo) : topo_(topo) {}
  std::optional<Path> route(ChipId src, ChipId dst) override { return dor_route(topo_, src, dst); }
  const char* name() const override { return "dor"; }

 private:
  const Topology& topo_;
};

}  // namespace

std::optional<std::vector<DorLeg>> dor_legs(const Topology& topo, ChipId src, ChipId dst) {
  const ChipCoord a = topo.coord(src);
  const ChipCoord b = topo.coord(dst);
  if (a.pod != b.pod) return std::nullopt;
  std::vector<DorLeg> legs;
  if (topo.twisted()) {
    legs = twisted_legs(topo, a, b);
  } else {
    for (int i = 0; i < topo.axes(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      legs.push_back(axis_leg(i, topo.shape()[u], topo.wraps(i), b.pos[u] - a.pos[u]));
    }
  }
  legs.erase(std::remove_if(legs.begin(), legs.end(), [](const DorLeg& l) { return l.hops == 0; }), legs.end());
  return legs;
}

std::optional<int> dor_hops(const Topology& topo, ChipId src, ChipId dst) {
  const auto legs = dor_legs(topo, src, dst);
  if (!legs) return std::nullopt;
  int hops = 0;
  for (const DorLeg& l : *legs) hops += l.hops;
  return hops;
}

std::optional<Path> dor_route(const Topology& topo, ChipId src, ChipId dst) {
  const auto legs = dor_legs(topo, src, dst);
  if (!legs) return std::nullopt;
  Path path;
  ChipId at = src;
  for (const DorLeg& leg : *legs) {
    for (int h = 0; h < leg.hops; ++h) {
      // The link exists: a leg never steps off a mesh edge, and wrapped axes have links in both directions.
      const LinkId l = *topo.out_link(at, leg.axis, leg.direction);
      path.push_back(l);
      at = topo.link(l).dst;
    }
  }
  return path;
}

std::unique_ptr<Router> make_dor_router(const Topology& topo) { return std::make_unique<DorRouter>(topo); }

}  // namespace tpusim
