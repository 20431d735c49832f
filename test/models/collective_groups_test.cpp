// Collectives over groups that are not whole torus axes (kernels/collectives.h, "Groups") on the SystemC pod:
// the network maps group-space offsets to chips, so every group of a shape runs at once, on its own links or
// sharing them with the others. Flow links throughout (max-min fair sharing is what the closed forms assume).
// One simulation per test process; comparisons fork a child.
#include "collective_test_support.h"
#include "support/simulate_step.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

ir::CollectiveGroup group(std::array<std::uint32_t, 3> size, std::array<std::uint32_t, 3> stride = {1, 1, 1},
                          std::uint32_t pods = 1) {
  return ir::CollectiveGroup{size, stride, pods};
}

// One all-reduce of `bytes` over `g` (the program set's only group).
ir::ProgramSet over_group(const ir::CollectiveGroup& g, std::uint64_t bytes = k256MiB) {
  return one_collective_over(g, CollectiveKind::all_reduce, bytes, Algo::ring_bidirectional);
}

// A 4-chip tensor group inside a 16-ring: four segments, each a line of 4 with no link shared with another
// segment (the links between segments carry nothing). Each segment therefore runs exactly as the same
// all-reduce on a pod that is a 4-chip line, to the tick, and both take the closed form of a line of 4 plus
// the reductions and the runtime's overheads plus what the closed form leaves out on a line: the ring's wrap
// send goes back 3 hops, so each of the 6 steps waits 2 more hop latencies (12 a, 0.13% here). Every flow of a step shares each link
// direction with exactly one other, so max-min sharing gives all of them B / 2 and the bandwidth term is
// the closed form's.
TEST(CollectiveGroups, FourChipSegmentsOfASixteenRingRunAsIndependentLines) {
  const double line = in_child([] {
    return run_collective(pod_scenario({4}, false, LinkFidelity::flow),
                          one_collective(CollectiveKind::all_reduce, k256MiB, Algo::ring_bidirectional))
        .time();
  });
  const CollectiveRun r = run_collective(pod_scenario({16}, true, LinkFidelity::flow), over_group(group({4, 1, 1})));
  ASSERT_GT(line, 0);
  EXPECT_EQ(r.plan.participants, 4);
  EXPECT_EQ(r.time(), line);
  const double expected = r.ideal() + r.reduce + r.overhead + 6 * 2 * kHop;
  EXPECT_NEAR(r.time(), expected, 1e-6 * expected);
  ASSERT_EQ(r.result.collectives.size(), 1u);
  EXPECT_EQ(r.result.collectives[0].executions, 16u);
  // The links leaving chip 3 towards 4 (and so on) cross segment boundaries: unused.
  const Topology topo = build_topology(pod_scenario({16}, true).pod, pod_scenario({16}, true).chip);
  for (std::uint32_t c = 0; c < 16; ++c) {
    const auto plus = topo.out_link(ChipId(c), 0, +1);
    ASSERT_TRUE(plus.has_value());
    EXPECT_EQ(r.result.links.at(plus->value()).bytes.count() == 0, c % 4 == 3) << "chip " << c;
  }
}

// Every 4th chip of a 16-ring: four rings of 4 closed over the wraparound, each send crossing 4 links, and
// the four rings interleaved so that every link direction carries one send of each at every step. Max-min
// fair sharing gives each a quarter of the link: the closed form of the shared-link bound, rate 2B / 4 and
// 4 hop latencies per step, plus the reductions and the runtime's overheads.
TEST(CollectiveGroups, StridedGroupsShareEveryLinkAndMeetTheSharedLinkBound) {
  const CollectiveRun r =
      run_collective(pod_scenario({16}, true, LinkFidelity::flow), over_group(group({4, 1, 1}, {4, 1, 1})));
  EXPECT_EQ(r.plan.participants, 4);
  EXPECT_DOUBLE_EQ(r.ideal(), 2.0 * 3 / 4 * static_cast<double>(k256MiB) / (2 * kLinkRate / 4) + 6 * 4 * kHop);
  EXPECT_NEAR(r.time(), r.ideal() + r.reduce + r.overhead, 1e-6 * r.ideal());
  EXPECT_GT(r.result.link_utilization.min, 0.9);  // every link busy
}

// A 4x4 sub-box of an 8x8 torus: four boxes, each a 4x4 mesh (DOR routes between members stay inside the
// box: 3 hops back is shorter than 5 forward), so each runs exactly as the same all-reduce on a 4x4 mesh pod,
// and in the closed form of a 4x4 mesh plus reductions plus the line's 2 extra hop latencies in each of the
// 12 steps (as above).
TEST(CollectiveGroups, ASubBoxOverTwoAxesRunsAsAMeshOfItsShape) {
  const double mesh = in_child([] {
    return run_collective(pod_scenario({4, 4}, false, LinkFidelity::flow),
                          one_collective(CollectiveKind::all_reduce, k256MiB, Algo::ring_bidirectional))
        .time();
  });
  const CollectiveRun r = run_collective(pod_scenario({8, 8}, true, LinkFidelity::flow), over_group(group({4, 4, 1})));
  ASSERT_GT(mesh, 0);
  EXPECT_EQ(r.plan.participants, 16);
  EXPECT_EQ(r.time(), mesh);
  const double expected = r.ideal() + r.reduce + r.overhead + 12 * 2 * kHop;
  EXPECT_NEAR(r.time(), expected, 1e-6 * expected);
}

// Across two slices: each chip and its counterpart in the other pod (group of 1 chip per pod, 2 pods). A DCN
// ring of 2: a reduce-scatter step sending S/2 and reducing it, an all-gather step sending S/2, each at the
// NIC rate (one chip per host here) and each paying the DCN latency once, plus the runtime's overheads.
TEST(CollectiveGroups, AGroupAcrossTwoSlicesRunsOverTheDcn) {
  Scenario s = pod_scenario({4}, true, LinkFidelity::flow);
  s.pod.pods = 2;
  s.chip.host.dcn_bandwidth = BytesPerSecond(12.5e9);
  const std::uint64_t bytes = 64ULL << 20;
  const CollectiveRun r = run_collective(s, over_group(group({1, 1, 1}, {1, 1, 1}, 2), bytes));
  EXPECT_EQ(r.plan.participants, 2);
  ASSERT_EQ(r.plan.steps.size(), 2u);
  const double expected = 2 * (bytes / 2.0) / 12.5e9 + 2 * kDcnLatency.value() + r.reduce + r.overhead;
  EXPECT_DOUBLE_EQ(r.ideal(), 2 * (bytes / 2.0) / 12.5e9);
  EXPECT_NEAR(r.time(), expected, 1e-6 * expected);
  for (const LinkUsage& l : r.result.links) EXPECT_EQ(l.bytes.count(), 0u);  // no ICI traffic
  ASSERT_EQ(r.result.dcn_egress.size(), 8u);
  for (const LinkUsage& nic : r.result.dcn_egress) EXPECT_EQ(nic.bytes.count(), bytes);
}

// A group index past the program set's table is an error naming the instruction; a group that does not
// tile the pod is bad input naming the shape.
TEST(CollectiveGroups, AMissingGroupIsRejectedNamingTheInstruction) {
  ir::ProgramSet set = over_group(group({4, 1, 1}));
  set.groups.clear();
  try {
    (void)::tpusim::testing::simulate_step(pod_scenario({16}, true), set, {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.label(), "grads.collective");
    EXPECT_NE(std::string(e.what()).find("names group 0, but the program set has 0 groups"), std::string::npos)
        << e.what();
  }
}

TEST(CollectiveGroups, AGroupThatDoesNotTileThePodIsAConfigError) {
  try {
    (void)::tpusim::testing::simulate_step(pod_scenario({16}, true), over_group(group({4, 1, 1}, {3, 1, 1})), {});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().at(0).key_path, "group");
  }
}

// Send / recv in a group: peer is a member offset along the group's first axis. In stride-4 groups of a
// 16-ring, +1 is 4 chips on: each send crosses 4 links, all four lanes' sends share each link.
TEST(CollectiveGroups, SendAndRecvInAStridedGroupGoToTheNextMember) {
  ir::ProgramSet set;
  set.groups.push_back(group({4, 1, 1}, {4, 1, 1}));
  ir::Program p("shift");
  ir::Instruction send;
  send.kind = ir::OpKind::send;
  send.peer = 1;
  send.bytes = 8ULL << 20;
  send.group = 0;
  ir::Instruction recv = send;
  recv.kind = ir::OpKind::recv;
  recv.peer = -1;
  recv.bytes = 0;
  p.add(send, {}, "shift.send");
  p.add(recv, {}, "shift.recv");
  set.programs.push_back(std::move(p));
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({16}, true, LinkFidelity::flow), set, {});
  const double expected = 4.0 * (8ULL << 20) / kLinkRate + 4 * kHop;
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
  EXPECT_EQ(r.ici_transfers, 16u);
}

}  // namespace
}  // namespace tpusim::models::net
