// The text summary printed by `tpusim topo` and the DOT writer.
#include <sstream>
#include <stdexcept>

#include "specs.h"
#include "tpusim/topology/describe.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

using test::make_chip;
using test::make_pod;

TEST(Describe, V4PodSummaryNamesCountsDiameterAndBisection) {
  PodSpec pod = make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4});
  pod.name = "v4-4096";
  const std::string s = describe_topology(build_topology(pod, make_chip("v4", 6, 45)));
  EXPECT_NE(s.find("topology v4-4096 (chip v4): 16x16x16 3D torus, wraparound [1,1,1]"), std::string::npos) << s;
  EXPECT_NE(s.find("chips: 4096 (1 pod of 4096)"), std::string::npos) << s;
  EXPECT_NE(s.find("hosts: 1024 (4 chips per host, 2x2x1)"), std::string::npos) << s;
  EXPECT_NE(s.find("links: 24576 directed (12288 cables): 18432 electrical, 6144 optical"), std::string::npos) << s;
  EXPECT_NE(s.find("OCS: 48 switches, 128 ports used each"), std::string::npos) << s;
  EXPECT_NE(s.find("diameter: 24 hops"), std::string::npos) << s;
  EXPECT_NE(s.find("bisection: 512 links one way across axis 0 = "), std::string::npos) << s;
}

// Two slices of 16 chips, 4 per host at 2 GB/s each: each slice's uplink carries its 4 hosts' 8 GB/s / 4.
TEST(Describe, MultisliceSummaryNamesTheNicsAndAnOversubscribedFabric) {
  PodSpec pod = make_pod({4, 4}, {1, 1}, {2, 2});
  pod.pods = 2;
  const ChipSpec chip = make_chip("v5e", 4, 45, 2);
  const std::string plain = describe_topology(build_topology(pod, chip));
  EXPECT_NE(plain.find("DCN: 8 GB/s per host, 8 hosts"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("DCN fabric"), std::string::npos) << plain;
  pod.dcn_oversubscription = 4;
  const Topology topo = build_topology(pod, chip);
  EXPECT_DOUBLE_EQ(topo.dcn_uplink_bandwidth().value(), 8e9);
  EXPECT_DOUBLE_EQ(topo.dcn_bandwidth_per_chip().value(), 0.5e9);
  const std::string s = describe_topology(topo);
  EXPECT_NE(s.find("DCN fabric: one uplink per slice of 8 GB/s (4:1 oversubscribed)"), std::string::npos) << s;
}

TEST(Dot, SmallMeshHasOneEdgePerCable) {
  const Topology t = build_topology(make_pod({2, 2}, {0, 0}, {1, 1}), make_chip("c", 4, 50));
  std::ostringstream out;
  write_dot(t, out);
  const std::string s = out.str();
  EXPECT_EQ(s.rfind("graph \"test\" {", 0), 0U) << s;
  EXPECT_NE(s.find("c0 -- c1;"), std::string::npos) << s;
  EXPECT_NE(s.find("c0 -- c2;"), std::string::npos) << s;
  EXPECT_NE(s.find("c1 -- c3;"), std::string::npos) << s;
  EXPECT_NE(s.find("c2 -- c3;"), std::string::npos) << s;
  std::size_t edges = 0;
  for (std::size_t p = s.find(" -- "); p != std::string::npos; p = s.find(" -- ", p + 1)) ++edges;
  EXPECT_EQ(edges, 4U);
}

TEST(Dot, OpticalCablesAreDashedWithTheirOcsPorts) {
  const Topology t = build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  std::ostringstream out;
  write_dot(t, out);
  EXPECT_NE(out.str().find("c3 -- c0 [style=dashed, label=\"ocs0:0-1\", color=grey];"), std::string::npos);
}

TEST(Dot, RefusesTopologiesAboveTheLimitWithoutWriting) {
  const Topology t = build_topology(make_pod({16, 16, 16}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("v4", 6, 45));
  std::ostringstream out;
  EXPECT_THROW(write_dot(t, out), std::invalid_argument);
  EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace tpusim
