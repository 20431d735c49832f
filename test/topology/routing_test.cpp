// Dimension-order and fault-aware routing: exact path lengths and links on small tori and meshes.
#include <algorithm>
#include <stdexcept>

#include "specs.h"
#include "tpusim/topology/routing.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

using test::make_chip;
using test::make_pod;
using test::at;

// Hop distance by breadth-first search over Topology::out_links, independent of the library's routing code.
std::vector<int> reference_distances(const Topology& t, ChipId src) {
  std::vector<int> dist(t.chip_count(), -1);
  std::vector<ChipId> frontier{src};
  dist[src.value()] = 0;
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    for (LinkId l : t.out_links(frontier[i])) {
      const ChipId d = t.link(l).dst;
      if (dist[d.value()] >= 0) continue;
      dist[d.value()] = dist[frontier[i].value()] + 1;
      frontier.push_back(d);
    }
  }
  return dist;
}

// The path is a chain of links from src to dst.
void expect_chain(const Topology& t, const Path& path, ChipId src, ChipId dst) {
  ChipId here = src;
  for (LinkId l : path) {
    ASSERT_EQ(t.link(l).src, here);
    here = t.link(l).dst;
  }
  EXPECT_EQ(here, dst);
}

bool visits(const Topology& t, const Path& path, ChipId chip) {
  return std::any_of(path.begin(), path.end(), [&](LinkId l) { return t.link(l).dst == chip || t.link(l).src == chip; });
}

void expect_dor_is_shortest_everywhere(const Topology& t) {
  for (std::uint32_t s = 0; s < t.chip_count(); ++s) {
    const std::vector<int> dist = reference_distances(t, ChipId(s));
    for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
      const auto path = dor_route(t, ChipId(s), ChipId(d));
      ASSERT_TRUE(path.has_value());
      ASSERT_EQ(static_cast<int>(path->size()), dist[d]) << s << " -> " << d;
      ASSERT_EQ(dor_hops(t, ChipId(s), ChipId(d)), dist[d]);
      expect_chain(t, *path, ChipId(s), ChipId(d));
    }
  }
}

TEST(Dor, PathLengthEqualsTorusDistanceForAllPairs) {
  const ChipSpec chip = make_chip("c", 6, 50);
  expect_dor_is_shortest_everywhere(build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {1, 1, 1}), chip));
  expect_dor_is_shortest_everywhere(build_topology(make_pod({5, 4}, {1, 0}, {1, 1}), chip));
  expect_dor_is_shortest_everywhere(build_topology(make_pod({2, 3, 6}, {1, 0, 1}, {1, 1, 1}), chip));
}

TEST(Dor, TwistedTorusRoutesAreShortestPaths) {
  const ChipSpec chip = make_chip("v4", 6, 45);
  expect_dor_is_shortest_everywhere(build_topology(make_pod({4, 4, 8}, {1, 1, 1}, {1, 1, 1}, {}, 1, true), chip));
  expect_dor_is_shortest_everywhere(build_topology(make_pod({4, 8, 8}, {1, 1, 1}, {1, 1, 1}, {}, 1, true), chip));
  expect_dor_is_shortest_everywhere(build_topology(make_pod({8, 4, 4}, {1, 1, 1}, {1, 1, 1}, {}, 1, true), chip));
}

TEST(Dor, TorusDistanceOnTheFullV5pPod) {
  const Topology t = build_topology(make_pod({16, 20, 28}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v5p", 6, 90));
  EXPECT_EQ(dor_hops(t, at(t, 0, 0, 0), at(t, 8, 10, 14)), 32);
  EXPECT_EQ(dor_hops(t, at(t, 1, 2, 3), at(t, 15, 19, 27)), 2 + 3 + 4);
  EXPECT_EQ(dor_route(t, at(t, 1, 2, 3), at(t, 15, 19, 27))->size(), 9U);
}

TEST(Dor, TakesTheShorterWayRoundAndPlusOnATie) {
  const Topology t = build_topology(make_pod({8}, {1}, {1}), make_chip("c", 4, 50));
  const Path back = *dor_route(t, ChipId(0), ChipId(6));
  EXPECT_EQ(back, (Path{*t.out_link(ChipId(0), 0, -1), *t.out_link(ChipId(7), 0, -1)}));
  EXPECT_TRUE(t.link(back[0]).wraparound);
  const Path fwd = *dor_route(t, ChipId(0), ChipId(2));
  EXPECT_EQ(fwd, (Path{*t.out_link(ChipId(0), 0, 1), *t.out_link(ChipId(1), 0, 1)}));
  const Path tie = *dor_route(t, ChipId(6), ChipId(2));  // 4 hops either way
  ASSERT_EQ(tie.size(), 4U);
  for (LinkId l : tie) EXPECT_EQ(t.link(l).direction, 1);
  EXPECT_TRUE(dor_route(t, ChipId(3), ChipId(3))->empty());
}

TEST(Dor, GoesAxisByAxisInIndexOrder) {
  const Topology t = build_topology(make_pod({4, 4}, {0, 0}, {1, 1}), make_chip("c", 4, 50));
  const auto legs = *dor_legs(t, at(t, 3, 0), at(t, 1, 2));
  ASSERT_EQ(legs.size(), 2U);
  EXPECT_EQ(legs[0].axis, 0);
  EXPECT_EQ(legs[0].direction, -1);
  EXPECT_EQ(legs[0].hops, 2);
  EXPECT_EQ(legs[1].axis, 1);
  EXPECT_EQ(legs[1].direction, 1);
  EXPECT_EQ(legs[1].hops, 2);
  const Path p = *dor_route(t, at(t, 3, 0), at(t, 1, 2));
  EXPECT_EQ(t.link(p[1]).dst, at(t, 1, 0));
}

TEST(Dor, ReportsNoIciRouteBetweenPods) {
  const Topology t = build_topology(make_pod({4, 4}, {1, 1}, {2, 2}, {}, 2), make_chip("c", 4, 50));
  EXPECT_FALSE(dor_route(t, ChipId(0), ChipId(16)).has_value());
  EXPECT_FALSE(make_dor_router(t)->route(ChipId(0), ChipId(17)).has_value());
  EXPECT_EQ(dor_hops(t, ChipId(16), ChipId(31)), 2);
}

TEST(FaultAware, WithoutFaultsMatchesDor) {
  const Topology t = build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  auto router = make_fault_aware_router(t, FaultSet{});
  EXPECT_STREQ(router->name(), "fault_aware");
  for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
    EXPECT_EQ(router->route(ChipId(5), ChipId(d)), dor_route(t, ChipId(5), ChipId(d)));
  }
}

TEST(FaultAware, FailedLinkForcesAThreeHopDetourOnATorus) {
  const Topology t = build_topology(make_pod({4, 4}, {1, 1}, {1, 1}), make_chip("c", 4, 50));
  const LinkId cut = *t.out_link(at(t, 0, 0), 0, 1);
  FaultSet faults;
  faults.links.push_back(cut);
  auto router = make_fault_aware_router(t, faults);
  const Path p = *router->route(at(t, 0, 0), at(t, 1, 0));
  EXPECT_EQ(p.size(), 3U);
  EXPECT_EQ(std::count(p.begin(), p.end(), cut), 0);
  expect_chain(t, p, at(t, 0, 0), at(t, 1, 0));
  // Only the direction that failed is affected; an unaffected pair keeps its DOR route.
  EXPECT_EQ(router->route(at(t, 1, 0), at(t, 0, 0))->size(), 1U);
  EXPECT_EQ(router->route(at(t, 2, 1), at(t, 3, 3)), dor_route(t, at(t, 2, 1), at(t, 3, 3)));
}

TEST(FaultAware, CutMeshCableForcesAFiveHopDetour) {
  const Topology t = build_topology(make_pod({4, 4}, {0, 0}, {4, 2}), make_chip("v5e", 4, 50));
  FaultSet faults;
  faults.add_cable(t, *t.out_link(at(t, 1, 0), 0, 1));
  ASSERT_EQ(faults.links.size(), 2U);
  auto router = make_fault_aware_router(t, faults);
  EXPECT_EQ(dor_route(t, at(t, 0, 0), at(t, 3, 0))->size(), 3U);
  EXPECT_EQ(router->route(at(t, 0, 0), at(t, 3, 0))->size(), 5U);
  EXPECT_EQ(router->route(at(t, 3, 0), at(t, 0, 0))->size(), 5U);
  EXPECT_EQ(router->route(at(t, 0, 1), at(t, 3, 1))->size(), 3U);
}

TEST(FaultAware, TrafficThroughAFailedChipIsReroutedAndTrafficToItIsUnreachable) {
  const Topology t = build_topology(make_pod({4, 4}, {0, 0}, {4, 2}), make_chip("v5e", 4, 50));
  FaultSet faults;
  faults.chips.push_back(at(t, 1, 0));
  auto router = make_fault_aware_router(t, faults);
  ASSERT_TRUE(visits(t, *dor_route(t, at(t, 0, 0), at(t, 2, 0)), at(t, 1, 0)));
  const Path p = *router->route(at(t, 0, 0), at(t, 2, 0));
  EXPECT_EQ(p.size(), 4U);
  EXPECT_FALSE(visits(t, p, at(t, 1, 0)));
  expect_chain(t, p, at(t, 0, 0), at(t, 2, 0));
  EXPECT_FALSE(router->route(at(t, 0, 0), at(t, 1, 0)).has_value());
  EXPECT_FALSE(router->route(at(t, 1, 0), at(t, 3, 3)).has_value());
}

TEST(FaultAware, UnreachableDestinationIsReportedNotCrashedOn) {
  const Topology t = build_topology(make_pod({4}, {0}, {1}), make_chip("c", 4, 50));
  FaultSet faults;
  faults.add_cable(t, *t.out_link(ChipId(1), 0, 1));
  auto router = make_fault_aware_router(t, faults);
  EXPECT_FALSE(router->route(ChipId(0), ChipId(3)).has_value());
  EXPECT_FALSE(router->route(ChipId(3), ChipId(0)).has_value());
  EXPECT_EQ(router->route(ChipId(0), ChipId(1))->size(), 1U);
  EXPECT_EQ(router->route(ChipId(3), ChipId(2))->size(), 1U);
}

TEST(FaultAware, FailedOcsPortTakesTheWraparoundDownAndTrafficGoesTheLongWay) {
  const Topology t = build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  // OCS 0 carries the axis-0 wraparound at face position (y, z) = (0, 0); port 0 is the cube's + face.
  FaultSet faults;
  faults.add_ocs_port(t, OcsId(0), PortId(0));
  ASSERT_EQ(faults.links.size(), 2U);
  auto router = make_fault_aware_router(t, faults);
  EXPECT_EQ(dor_hops(t, at(t, 3, 0, 0), at(t, 0, 0, 0)), 1);
  EXPECT_EQ(router->route(at(t, 3, 0, 0), at(t, 0, 0, 0))->size(), 3U);
  EXPECT_EQ(router->route(at(t, 3, 1, 0), at(t, 0, 1, 0))->size(), 1U);
}

TEST(FaultAware, RejectsAFaultSetFromAnotherTopology) {
  const Topology t = build_topology(make_pod({4}, {0}, {1}), make_chip("c", 4, 50));
  FaultSet faults;
  faults.chips.push_back(ChipId(4));
  EXPECT_THROW((void)make_fault_aware_router(t, faults), std::out_of_range);
}

}  // namespace
}  // namespace tpusim
