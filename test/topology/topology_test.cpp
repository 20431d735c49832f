// Structure of built topologies: counts, neighbours, hosts, OCS mapping, twist, diameter and bisection for
// the published pod shapes (docs/hardware.md).
#include <map>
#include <set>
#include <stdexcept>

#include "specs.h"
#include "tpusim/topology/topology.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

using test::make_chip;
using test::make_pod;
using test::at;

// One row per published shape: expected counts, diameter (hops) and bisection (directed links one way).
struct ShapeCase {
  const char* label;
  PodSpec pod;
  ChipSpec chip;
  std::size_t chips;
  std::size_t links;
  std::size_t optical;
  std::size_t hosts;
  int diameter;
  std::size_t bisection_links;
};

std::vector<ShapeCase> published_shapes() {
  return {
      {"v2_16x16_torus", make_pod({16, 16}, {1, 1}, {2, 2}), make_chip("v2", 4, 62), 256, 1024, 0, 64, 16, 32},
      {"v3_32x32_torus", make_pod({32, 32}, {1, 1}, {2, 2}), make_chip("v3", 4, 100), 1024, 4096, 0, 256, 32, 64},
      {"v4_4x4x4_cube_torus", make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45), 64, 384,
       96, 16, 6, 32},
      {"v4_16x16x16_pod", make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45), 4096,
       24576, 6144, 1024, 24, 512},
      {"v4_2x2x1_mesh", make_pod({2, 2, 1}, {0, 0, 0}, {2, 2, 1}), make_chip("v4", 6, 45), 4, 8, 0, 1, 2, 2},
      {"v5e_16x16_torus", make_pod({16, 16}, {1, 1}, {4, 2}), make_chip("v5e", 4, 50), 256, 1024, 0, 32, 16, 32},
      {"v5e_4x4_mesh", make_pod({4, 4}, {0, 0}, {4, 2}), make_chip("v5e", 4, 50), 16, 48, 0, 2, 6, 4},
      {"v5p_16x20x28_pod", make_pod({16, 20, 28}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v5p", 6, 90), 8960,
       53760, 13440, 2240, 32, 640},
      {"v6e_16x16_torus", make_pod({16, 16}, {1, 1}, {4, 2}), make_chip("v6e", 4, 100), 256, 1024, 0, 32, 16, 32},
  };
}

TEST(PublishedShapes, ChipLinkHostCountsDiameterAndBisectionAreExact) {
  for (const ShapeCase& c : published_shapes()) {
    SCOPED_TRACE(c.label);
    const Topology t = build_topology(c.pod, c.chip);
    EXPECT_EQ(t.chip_count(), c.chips);
    EXPECT_EQ(t.link_count(), c.links);
    EXPECT_EQ(t.link_count(LinkKind::optical), c.optical);
    EXPECT_EQ(t.link_count(LinkKind::electrical), c.links - c.optical);
    EXPECT_EQ(t.host_count(), c.hosts);
    EXPECT_EQ(diameter(t), c.diameter);
    EXPECT_EQ(diameter_closed_form(t), c.diameter);
    const Bisection b = bisection(t);
    EXPECT_EQ(b.links, c.bisection_links);
    EXPECT_DOUBLE_EQ(b.bandwidth.value(), static_cast<double>(c.bisection_links) * c.chip.ici.link_bandwidth.value());
  }
}

TEST(PublishedShapes, BisectionBandwidthMatchesTheSpecSheetWithinTenPercent) {
  // docs/hardware.md, "Pods": v3 6.4 TB/s, v4 24 TB/s, v5e 1.6 TB/s, v6e 3.2 TB/s.
  struct Row {
    PodSpec pod;
    ChipSpec chip;
    double published;
  };
  const std::vector<Row> rows = {
      {make_pod({32, 32}, {1, 1}, {2, 2}), make_chip("v3", 4, 100), 6.4e12},
      {make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45), 24e12},
      {make_pod({16, 16}, {1, 1}, {4, 2}), make_chip("v5e", 4, 50), 1.6e12},
      {make_pod({16, 16}, {1, 1}, {4, 2}), make_chip("v6e", 4, 100), 3.2e12},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.chip.name);
    const double bw = bisection(build_topology(r.pod, r.chip)).bandwidth.value();
    EXPECT_NEAR(bw / r.published, 1.0, 0.10);
  }
  EXPECT_DOUBLE_EQ(bisection(build_topology(rows[0].pod, rows[0].chip)).bandwidth.value(), 6.4e12);
  EXPECT_DOUBLE_EQ(bisection(build_topology(rows[1].pod, rows[1].chip)).bandwidth.value(), 23.04e12);
  EXPECT_DOUBLE_EQ(bisection(build_topology(rows[2].pod, rows[2].chip)).bandwidth.value(), 1.6e12);
}

TEST(Diameter, BfsAgreesWithTheClosedFormOnSmallShapes) {
  const std::vector<PodSpec> pods = {
      make_pod({8}, {1}, {1}),          make_pod({7}, {1}, {1}),          make_pod({5}, {0}, {1}),
      make_pod({2, 4}, {1, 1}, {1, 1}), make_pod({5, 4}, {1, 0}, {1, 1}), make_pod({3, 6}, {0, 1}, {1, 1}),
      make_pod({4, 4, 4}, {1, 1, 1}, {1, 1, 1}), make_pod({2, 3, 5}, {1, 0, 1}, {1, 1, 1}),
      make_pod({4, 4, 1}, {1, 1, 1}, {1, 1, 1}), make_pod({16, 16}, {1, 1}, {1, 1}),
      make_pod({8, 8, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}),
  };
  for (const PodSpec& p : pods) {
    const Topology t = build_topology(p, make_chip("c", 6, 50));
    SCOPED_TRACE(t.chip_count());
    EXPECT_EQ(diameter_bfs(t), diameter_closed_form(t).value());
  }
}

TEST(Neighbours, TorusChipZeroHasItsFourRingNeighbours) {
  const Topology t = build_topology(make_pod({16, 16}, {1, 1}, {2, 2}), make_chip("v2", 4, 62));
  EXPECT_EQ(t.neighbours(ChipId(0)), (std::vector<ChipId>{ChipId(1), ChipId(15), ChipId(16), ChipId(240)}));
  EXPECT_EQ(t.out_links(ChipId(0)).size(), 4U);
  const Link& wrap = t.link(*t.out_link(ChipId(0), 0, -1));
  EXPECT_EQ(wrap.dst, ChipId(15));
  EXPECT_TRUE(wrap.wraparound);
  EXPECT_EQ(wrap.axis, 0);
  EXPECT_EQ(wrap.direction, -1);
  EXPECT_EQ(t.link(wrap.reverse).src, ChipId(15));
  EXPECT_EQ(t.link(wrap.reverse).direction, 1);
}

TEST(Neighbours, MeshCornerHasOnlyInwardLinks) {
  const Topology t = build_topology(make_pod({2, 2, 1}, {0, 0, 0}, {2, 2, 1}), make_chip("v4", 6, 45));
  EXPECT_EQ(t.neighbours(ChipId(0)), (std::vector<ChipId>{ChipId(1), ChipId(2)}));
  EXPECT_FALSE(t.out_link(ChipId(0), 0, -1).has_value());
  EXPECT_FALSE(t.out_link(ChipId(0), 2, 1).has_value());
  EXPECT_EQ(t.neighbours(ChipId(3)), (std::vector<ChipId>{ChipId(1), ChipId(2)}));
}

TEST(Neighbours, WrappedAxisOfLengthTwoHasTwoCablesBetweenThePair) {
  const Topology t = build_topology(make_pod({2, 4}, {1, 1}, {1, 1}), make_chip("c", 4, 50));
  // Axis 0: 2 cables per ring x 4 rings; axis 1: 4 cables per ring x 2 rings.
  EXPECT_EQ(t.link_count(), 2U * (8 + 8));
  const LinkId plus = *t.out_link(ChipId(0), 0, 1);
  const LinkId minus = *t.out_link(ChipId(0), 0, -1);
  EXPECT_NE(plus, minus);
  EXPECT_EQ(t.link(plus).dst, ChipId(1));
  EXPECT_EQ(t.link(minus).dst, ChipId(1));
  EXPECT_FALSE(t.link(plus).wraparound);
  EXPECT_TRUE(t.link(minus).wraparound);
  EXPECT_EQ(t.neighbours(ChipId(0)), (std::vector<ChipId>{ChipId(1), ChipId(2), ChipId(6)}));
  EXPECT_EQ(bisection(t).links, 4U);  // longest axis 1 (length 4): 2 chips x (middle + wraparound cut)
}

TEST(Neighbours, AxisOfLengthOneHasNoLinksEvenWithWraparound) {
  const Topology t = build_topology(make_pod({4, 4, 1}, {1, 1, 1}, {1, 1, 1}), make_chip("c", 6, 50));
  EXPECT_EQ(t.link_count(), 2U * (16 + 16));
  EXPECT_FALSE(t.out_link(ChipId(0), 2, 1).has_value());
  EXPECT_FALSE(t.out_link(ChipId(0), 2, -1).has_value());
}

TEST(Coordinates, ChipIdsRoundTripAndAxisZeroVariesFastest) {
  const Topology t = build_topology(make_pod({16, 20, 28}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v5p", 6, 90));
  EXPECT_EQ(at(t, 1, 0, 0), ChipId(1));
  EXPECT_EQ(at(t, 0, 1, 0), ChipId(16));
  EXPECT_EQ(at(t, 0, 0, 1), ChipId(320));
  EXPECT_EQ(at(t, 15, 19, 27), ChipId(8959));
  for (std::uint32_t i = 0; i < t.chip_count(); i += 97) EXPECT_EQ(t.chip_at(t.coord(ChipId(i))), ChipId(i));
}

TEST(Hosts, V4HostOwnsATwoByTwoByOneBlock) {
  const Topology t = build_topology(make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  EXPECT_EQ(t.chips_per_host(), 4);
  EXPECT_EQ(t.chips_of(HostId(0)), (std::vector<ChipId>{ChipId(0), ChipId(1), ChipId(16), ChipId(17)}));
  EXPECT_EQ(t.host_of(at(t, 3, 5, 7)), HostId(1 + 8 * (2 + 8 * 7)));
  for (std::uint32_t h = 0; h < t.host_count(); h += 31) {
    for (ChipId c : t.chips_of(HostId(h))) EXPECT_EQ(t.host_of(c), HostId(h));
  }
}

TEST(Hosts, V5eHostOwnsAFourByTwoBlock) {
  const Topology t = build_topology(make_pod({16, 16}, {1, 1}, {4, 2}), make_chip("v5e", 4, 50));
  EXPECT_EQ(t.chips_per_host(), 8);
  EXPECT_EQ(t.host_count(), 32U);
  EXPECT_EQ(t.host_of(at(t, 15, 15)), HostId(31));
}

TEST(Ocs, SingleCubeWraparoundGoesThroughTheOcsOfItsFacePosition) {
  const Topology t = build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  EXPECT_EQ(t.ocs_count(), 48);
  EXPECT_EQ(t.ocs_ports_used(), 2);
  const Link& inner = t.link(*t.out_link(at(t, 0, 0, 0), 0, 1));
  EXPECT_EQ(inner.kind, LinkKind::electrical);
  EXPECT_FALSE(inner.ocs.has_value());
  // + wraparound of (3,1,2) along axis 0: face position (y, z) = 1 + 4 * 2 = 9, so OCS 0 + 9.
  const Link& wrap = t.link(*t.out_link(at(t, 3, 1, 2), 0, 1));
  EXPECT_EQ(wrap.kind, LinkKind::optical);
  ASSERT_TRUE(wrap.ocs.has_value());
  EXPECT_EQ(wrap.ocs->ocs, OcsId(9));
  EXPECT_EQ(wrap.ocs->src_port, PortId(0));  // cube 0, + face
  EXPECT_EQ(wrap.ocs->dst_port, PortId(1));  // cube 0, - face
  // Axis 2 OCS follow the 16 of axis 0 and the 16 of axis 1; face position (x, y) = 3 + 4 * 1.
  const Link& up = t.link(*t.out_link(at(t, 3, 1, 3), 2, 1));
  EXPECT_EQ(up.ocs->ocs, OcsId(32 + 7));
}

TEST(Ocs, FullV4PodUses128PortsOnEachOf48SwitchesOncePerCable) {
  const Topology t = build_topology(make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  EXPECT_EQ(t.ocs_count(), 48);
  EXPECT_EQ(t.ocs_ports_used(), 128);
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> uses;  // (ocs, port) -> directed links
  for (const Link& l : t.links()) {
    if (!l.ocs) continue;
    ++uses[{l.ocs->ocs.value(), l.ocs->src_port.value()}];
    EXPECT_NE(l.ocs->src_port.value() % 2, l.ocs->dst_port.value() % 2);  // a + face meets a - face
  }
  EXPECT_EQ(uses.size(), 48U * 128U);
  for (const auto& [key, n] : uses) EXPECT_EQ(n, 1) << key.first << ":" << key.second;
  // Cube boundary (3,0,0) -> (4,0,0): cube 0's + face to cube 1's - face on OCS 0.
  const Link& cross = t.link(*t.out_link(at(t, 3, 0, 0), 0, 1));
  EXPECT_EQ(cross.kind, LinkKind::optical);
  EXPECT_EQ(cross.ocs->ocs, OcsId(0));
  EXPECT_EQ(cross.ocs->src_port, PortId(0));
  EXPECT_EQ(cross.ocs->dst_port, PortId(3));
  EXPECT_EQ(t.links_through(OcsId(0), PortId(0)).size(), 2U);
}

TEST(Ocs, V5pPodNeedsTwoPortsPerCubeOn48LogicalSwitches) {
  const Topology t = build_topology(make_pod({16, 20, 28}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v5p", 6, 90));
  EXPECT_EQ(t.ocs_count(), 48);
  EXPECT_EQ(t.ocs_ports_used(), 280);  // 4 x 5 x 7 cubes
}

TEST(Ocs, MeshWithoutCubeHasNoOcs) {
  const Topology t = build_topology(make_pod({4, 4}, {0, 0}, {4, 2}), make_chip("v5e", 4, 50));
  EXPECT_EQ(t.ocs_count(), 0);
  EXPECT_EQ(t.link_count(LinkKind::optical), 0U);
}

TEST(Twist, ShortAxisWraparoundMovesHalfTheLongAxis) {
  const Topology t =
      build_topology(make_pod({4, 4, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}, 1, true), make_chip("v4", 6, 45));
  EXPECT_EQ(t.link_count(), 128U * 6);
  EXPECT_EQ(t.link(*t.out_link(at(t, 3, 1, 2), 0, 1)).dst, at(t, 0, 1, 6));
  EXPECT_EQ(t.link(*t.out_link(at(t, 0, 1, 6), 0, -1)).dst, at(t, 3, 1, 2));
  EXPECT_EQ(t.link(*t.out_link(at(t, 2, 3, 5), 1, 1)).dst, at(t, 2, 0, 1));
  EXPECT_EQ(t.link(*t.out_link(at(t, 2, 1, 7), 2, 1)).dst, at(t, 2, 1, 0));  // long axis: plain ring
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) EXPECT_EQ(t.out_links(ChipId(c)).size(), 6U);
}

TEST(Twist, ShortensTheDiameterAndWidensTheBisectionOf4x4x8) {
  const ChipSpec chip = make_chip("v4", 6, 45);
  const Topology plain = build_topology(make_pod({4, 4, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), chip);
  const Topology twisted = build_topology(make_pod({4, 4, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}, 1, true), chip);
  EXPECT_EQ(diameter(plain), 8);
  EXPECT_EQ(diameter(twisted), 6);
  EXPECT_FALSE(diameter_closed_form(twisted).has_value());
  EXPECT_EQ(bisection(plain).links, 32U);
  EXPECT_EQ(bisection(plain).axis, 2);
  // Across z: the middle and wraparound cuts (2 x 16) plus the x and y wraparounds that jump z by 4 (2 axes x
  // 2 dirs x 16) = 96; across x (or y) the twist moves no link over the cut: 2 x 32 = 64, the narrowest.
  EXPECT_EQ(bisection(twisted).links, 64U);
  EXPECT_EQ(bisection(twisted).axis, 0);
}

// The bisection is the narrowest of the axes' halving cuts, not the cut across the longest axis.
TEST(Bisection, IsTheNarrowestCutOverTheAxes) {
  // A plain 8x8x8 torus: every axis is cut 2 x 64 = 128 times; the tie goes to the first axis.
  const Topology cube8 = build_topology(make_pod({8, 8, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  EXPECT_EQ(bisection(cube8).links, 128U);
  EXPECT_EQ(bisection(cube8).axis, 0);
  EXPECT_DOUBLE_EQ(bisection(cube8).bandwidth.value(), 128 * 45e9);
  // 16 x 12, wrapped on the 16-long axis only: across it 2 x 12 = 24 links, across the 12-long mesh axis 16.
  const Topology mixed = build_topology(make_pod({16, 12}, {1, 0}, {4, 2}), make_chip("v5e", 4, 50));
  EXPECT_EQ(bisection(mixed).links, 16U);
  EXPECT_EQ(bisection(mixed).axis, 1);
  EXPECT_DOUBLE_EQ(bisection(mixed).bandwidth.value(), 16 * 50e9);
}

TEST(Twist, FourByEightByEightTwistsBothLongAxes) {
  const ChipSpec chip = make_chip("v4", 6, 45);
  const Topology plain = build_topology(make_pod({4, 8, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), chip);
  const Topology twisted = build_topology(make_pod({4, 8, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}, 1, true), chip);
  EXPECT_EQ(twisted.link(*twisted.out_link(at(twisted, 3, 1, 2), 0, 1)).dst, at(twisted, 0, 5, 6));
  EXPECT_EQ(twisted.link(*twisted.out_link(at(twisted, 3, 5, 7), 1, 1)).dst, at(twisted, 3, 6, 7));  // long axis: plain ring
  EXPECT_EQ(diameter(plain), 10);
  // 6 is optimal for 256 chips of degree 6: an L1 ball of radius 5 in Z^3 holds only 231 points.
  EXPECT_EQ(diameter(twisted), 6);
  EXPECT_EQ(bisection(twisted).links, 2U * 32 + 2U * 32);
}

TEST(Twist, IsRejectedForShapesTheRuleDoesNotCover) {
  const ChipSpec chip = make_chip("v4", 6, 45);
  EXPECT_THROW((void)build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {1, 1, 1}, {}, 1, true), chip),
               std::invalid_argument);
  EXPECT_THROW((void)build_topology(make_pod({4, 4, 12}, {1, 1, 1}, {1, 1, 1}, {}, 1, true), chip),
               std::invalid_argument);
  EXPECT_THROW((void)build_topology(make_pod({4, 4, 8}, {1, 1, 0}, {1, 1, 1}, {}, 1, true), chip),
               std::invalid_argument);
}

TEST(Build, RejectsInconsistentSpecsWithTheFieldNamed) {
  const ChipSpec chip = make_chip("v5e", 4, 50);
  try {
    (void)build_topology(make_pod({16, 16}, {1, 1}, {3, 2}), chip);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("host_shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)build_topology(make_pod({16, 16}, {1}, {1, 1}), chip), std::invalid_argument);
  EXPECT_THROW((void)build_topology(make_pod({16, 16, 16}, {1, 1, 1}, {1, 1, 1}), chip), std::invalid_argument);
  EXPECT_THROW((void)build_topology(make_pod({16, 16}, {1, 1}, {1, 1}, {3, 4}), chip), std::invalid_argument);
  EXPECT_THROW((void)build_topology(make_pod({}, {}, {}), chip), std::invalid_argument);
}

TEST(Multislice, PodsAreIdenticalCopiesJoinedOnlyByPerHostDcn) {
  const Topology t = build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}, 2),
                                    make_chip("v4", 6, 45, 6.25));
  EXPECT_EQ(t.pods(), 2);
  EXPECT_EQ(t.chip_count(), 128U);
  EXPECT_EQ(t.link_count(), 768U);
  EXPECT_EQ(t.host_count(), 32U);
  EXPECT_EQ(t.ocs_count(), 96);
  EXPECT_DOUBLE_EQ(t.dcn_bandwidth_per_host().value(), 25e9);
  EXPECT_EQ(t.coord(ChipId(64)).pod, 1);
  EXPECT_EQ(t.host_of(ChipId(64)), HostId(16));
  for (const Link& l : t.links()) EXPECT_EQ(t.coord(l.src).pod, t.coord(l.dst).pod);
  EXPECT_EQ(t.link(*t.out_link(at(t, 3, 0, 0, 1), 0, 1)).ocs->ocs, OcsId(48));
  EXPECT_EQ(diameter(t), 6);
  EXPECT_EQ(bisection(t).links, 32U);
}

}  // namespace
}  // namespace tpusim
