// The OCS fabric: its port map comes from the topology's optical links, and remapping a port pair takes the
// reconfiguration time. Pure C++ (no SystemC).
#include <gtest/gtest.h>

#include "net/ocs.h"
#include "test_chips.h"

namespace tpusim::models::net {
namespace {

// Two 4x4x4 cubes along axis 0 of an 8x4x4 torus: the links crossing between the cubes (and the wraparound
// links of every axis) are optical.
Topology two_cubes() {
  PodSpec pod;
  pod.name = "two-cubes";
  pod.shape = {8, 4, 4};
  pod.wraparound = {1, 1, 1};
  pod.cube = {4, 4, 4};
  pod.host_shape = {2, 2, 1};
  return build_topology(pod, testing::v4_like());
}

TEST(OcsFabric, PortMapMatchesTheTopologysOpticalLinks) {
  const Topology topo = two_cubes();
  const OcsFabric ocs(topo, Seconds(0.1));
  ASSERT_GT(topo.ocs_count(), 0);
  std::size_t optical = 0;
  for (const Link& l : topo.links()) {
    if (!l.ocs) continue;
    ++optical;
    EXPECT_EQ(ocs.peer(l.ocs->ocs, l.ocs->src_port, 0), l.ocs->dst_port);
    EXPECT_EQ(ocs.peer(l.ocs->ocs, l.ocs->dst_port, 0), l.ocs->src_port);
  }
  EXPECT_EQ(optical, topo.link_count(LinkKind::optical));
}

TEST(OcsFabric, RemappingAPortPairDisconnectsOldPeersAndTakesTheReconfigurationTime) {
  const Topology topo = two_cubes();
  OcsFabric ocs(topo, Seconds(0.1));  // 100 ms
  const OcsId sw(0);
  const PortId a(0), b(1), c(2);  // cube 0's + and - faces, cube 1's + face
  const auto old_a = ocs.peer(sw, a, 0);
  const auto old_c = ocs.peer(sw, c, 0);
  ASSERT_TRUE(old_a && old_c);
  const Tick now = 5'000'000;
  const Tick up = ocs.remap(sw, a, c, now);
  EXPECT_EQ(up, now + 100'000'000'000ULL);
  EXPECT_EQ(ocs.peer(sw, a, up - 1), std::nullopt);  // still reconfiguring
  EXPECT_EQ(ocs.peer(sw, a, up), c);
  EXPECT_EQ(ocs.peer(sw, c, up), a);
  if (*old_a != c) {
    EXPECT_EQ(ocs.peer(sw, *old_a, up), std::nullopt);
  }
  if (*old_c != a) {
    EXPECT_EQ(ocs.peer(sw, *old_c, up), std::nullopt);
  }
  EXPECT_EQ(ocs.remaps(), 1u);
  EXPECT_THROW(ocs.remap(sw, a, a, now), std::invalid_argument);
  EXPECT_THROW(ocs.remap(OcsId(10'000), a, b, now), std::out_of_range);
}

}  // namespace
}  // namespace tpusim::models::net
