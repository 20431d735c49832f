// Collectives over groups that are not whole torus axes (kernels/README.md, "Groups") on the SystemC pod:
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

// A 4-chip tensor group inside a 16-ring: four segments, each a line of 4 with no link shared with another segment (the
// links between segments carry nothing). Each segment therefore runs exactly as the same all-reduce on a pod that is a
// 4-chip line, to the tick, and both take the closed form of a line of 4 plus the reductions and the runtime's
// overheads plus what the closed form leaves out on a line: the ring's wrap send goes back 3 hops, so each of the 6
// steps waits 2 more hop latencies (12 a, 0.13% here). Every flow of a step shares each link direction with exactly one
// other, so max-min sharing gives all of them B / 2 and the bandwidth term is the closed form's.
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
  ASSERT_EQ(r.result.network.collectives.size(), 1u);
  EXPECT_EQ(r.result.network.collectives[0].executions, 16u);
  // The links leaving chip 3 towards 4 (and so on) cross segment boundaries: unused.
  const Topology topo = build_topology(pod_scenario({16}, true).pod, pod_scenario({16}, true).chip);
  for (std::uint32_t c = 0; c < 16; ++c) {
    const auto plus = topo.out_link(ChipId(c), 0, +1);
    ASSERT_TRUE(plus.has_value());
    EXPECT_EQ(r.result.network.links.at(plus->value()).bytes.count() == 0, c % 4 == 3) << "chip " << c;
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
  EXPECT_GT(r.result.network.link_utilization.min, 0.9);  // every link busy
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
  for (const LinkUsage& l : r.result.network.links) EXPECT_EQ(l.bytes.count(), 0u);  // no ICI traffic
  ASSERT_EQ(r.result.network.dcn.egress.size(), 8u);
  for (const LinkUsage& nic : r.result.network.dcn.egress) EXPECT_EQ(nic.bytes.count(), bytes);
}

// A bidirectional ring step of collective matmul (a ring_bidirectional permute) over a group of several axes
// spreads its bytes over every axis's links (kernels/README.md, "Where the ring lies"). Link by link: a directed link
// between two members of a group carries `per_link`, every other link nothing.
void expect_every_group_link_carries(const Scenario& s, const CollectiveRun& r, const ir::CollectiveGroup& g,
                                     std::uint64_t per_link) {
  const Topology topo = build_topology(s.pod, s.chip);
  for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
    const Link& link = topo.link(LinkId(l));
    const ChipCoord a = topo.coord(link.src), b = topo.coord(link.dst);
    bool same_group = true;  // members of one block: the same block index on every axis
    for (std::size_t i = 0; i < 3; ++i) same_group = same_group && a.pos[i] / static_cast<int>(g.size[i]) == b.pos[i] / static_cast<int>(g.size[i]);
    EXPECT_EQ(r.result.network.links.at(l).bytes.count(), same_group ? per_link : 0u) << "link " << l;
  }
}

// A 4x2 block of a 4x4 torus (axis 0 a ring of 4, axis 1 a line of 2): 3 MiB per chip goes 1 MiB to +1 and -1
// of axis 0 and 1 MiB to the other member of axis 1, so each of a chip's three links carries 1 MiB, one hop:
// 1 MiB / B + a, plus the runtime's start-up and one step synchronisation. Along axis 0 as before this change
// the step put 1.5 MiB on each of two links.
TEST(CollectiveGroups, ABidirectionalRingStepOverAFourByTwoBlockLoadsEveryLinkOfTheBlockEqually) {
  const std::uint64_t mib = 1ULL << 20;
  const Scenario s = pod_scenario({4, 4}, true, LinkFidelity::flow);
  const ir::CollectiveGroup g = group({4, 2, 1});
  const CollectiveRun r = run_collective(s, one_collective_over(g, CollectiveKind::permute, 3 * mib, Algo::ring_bidirectional));
  EXPECT_EQ(r.plan.participants, 8);
  expect_every_group_link_carries(s, r, g, mib);
  const double expected = static_cast<double>(mib) / kLinkRate + kHop + r.overhead;
  EXPECT_DOUBLE_EQ(r.ideal(), static_cast<double>(mib) / kLinkRate + kHop);
  EXPECT_NEAR(r.time(), expected, 1e-6 * expected);
}

// A 2x2x2 block of a 4x4x4 torus (three lines of 2): 1 MiB to each of the three partners, on the block's links
// only, in 1 MiB / B + a plus the overheads.
TEST(CollectiveGroups, ABidirectionalRingStepOverATwoByTwoByTwoBlockLoadsEveryLinkOfTheBlockEqually) {
  const std::uint64_t mib = 1ULL << 20;
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  const ir::CollectiveGroup g = group({2, 2, 2});
  const CollectiveRun r = run_collective(s, one_collective_over(g, CollectiveKind::permute, 3 * mib, Algo::ring_bidirectional));
  EXPECT_EQ(r.plan.participants, 8);
  expect_every_group_link_carries(s, r, g, mib);
  const double expected = static_cast<double>(mib) / kLinkRate + kHop + r.overhead;
  EXPECT_NEAR(r.time(), expected, 1e-6 * expected);
}

// The whole decomposed all-gather of collective matmul on the 4x2 block (N = 8, shards of 1.5 MiB, as
// kernels/src/sharding/sharding_points.cpp chains them): three exchanges of two shards (3 MiB: 1 MiB per link) and the
// opposite shard half from each side (1.5 MiB: 0.5 MiB per link), each waiting for the one before. 3.5 MiB / B
// + 4 a plus each permute's start-up and synchronisation; the multi-axis all-gather it replaces moves the same
// 7 x 1.5 MiB / (3 links) per link.
TEST(CollectiveGroups, ADecomposedGatherOverAFourByTwoBlockTakesItsStepsClosedForm) {
  const std::uint64_t mib = 1ULL << 20;
  const Scenario s = pod_scenario({4, 4}, true, LinkFidelity::flow);
  ir::ProgramSet set;
  set.groups.push_back(group({4, 2, 1}));
  ir::Program p("ring");
  std::vector<std::uint32_t> deps;
  double overhead = 0;
  for (std::uint64_t bytes : {3 * mib, 3 * mib, 3 * mib, 3 * mib / 2}) {
    ir::Instruction ins;
    ins.kind = ir::OpKind::collective;
    ins.comm.collective = CollectiveKind::permute;
    ins.bytes = bytes;
    ins.dtype = DType::bf16;
    ins.comm.group = 0;
    ins.comm.algorithm = static_cast<std::uint8_t>(Algo::ring_bidirectional);
    deps = {p.add(ins, deps, "layer0.forward.tp_ring_permute")};
    ir::ProgramSet one;
    one.groups = set.groups;
    ir::Program q("one");
    q.add(ins, {}, "step");
    one.programs.push_back(std::move(q));
    overhead += overhead_seconds(plan_of(s, one));
  }
  set.programs.push_back(std::move(p));
  const SimResult r = simulate(s, set, {});
  const double expected = 3.5 * static_cast<double>(mib) / kLinkRate + 4 * kHop + overhead;
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
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
  send.comm.peer = 1;
  send.bytes = 8ULL << 20;
  send.comm.group = 0;
  ir::Instruction recv = send;
  recv.kind = ir::OpKind::recv;
  recv.comm.peer = -1;
  recv.bytes = 0;
  p.add(send, {}, "shift.send");
  p.add(recv, {}, "shift.recv");
  set.programs.push_back(std::move(p));
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({16}, true, LinkFidelity::flow), set, {});
  const double expected = 4.0 * (8ULL << 20) / kLinkRate + 4 * kHop;
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
  EXPECT_EQ(r.network.ici_transfers, 16u);
}

}  // namespace
}  // namespace tpusim::models::net
