// Collective plans for the surviving topology (kernels/README.md, "Around failed links"): which
// chips send each chain send of a line, the line's alpha-beta time against its closed form on a ring, a 2D and
// a 3D torus, the detour's against its own, that the planner takes the faster, and that no send of a line
// plan crosses the failed link.
#include <gtest/gtest.h>

#include "collective_test_support.h"
#include "tpusim/topology/routing.h"

namespace tpusim::kernels {
namespace {

using namespace testing;

// The cable leaving chip 0 in the + direction of axis 0.
FaultSet cut_cable_at_origin(const Topology& topo) {
  for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
    const Link& link = topo.link(LinkId(l));
    if (link.src == ChipId(0) && link.axis == 0 && link.direction == 1) {
      FaultSet f;
      f.add_cable(topo, LinkId(l));
      return f;
    }
  }
  throw std::logic_error("no such link");
}

// The cables leaving chips `srcs` in the + direction of axis 0.
FaultSet cut_cables(const Topology& topo, const std::vector<std::uint32_t>& srcs) {
  FaultSet f;
  for (const std::uint32_t src : srcs) {
    for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
      const Link& link = topo.link(LinkId(l));
      if (link.src == ChipId(src) && link.axis == 0 && link.direction == 1) f.add_cable(topo, LinkId(l));
    }
  }
  return f;
}

Topology torus(std::vector<int> shape) {
  const std::vector<int> ones(shape.size(), 1);
  return build_topology(test::make_pod(shape, ones, ones), test::make_chip("c", 6, 45));
}

double network_time(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group,
                    const FaultSet& failed) {
  const std::optional<Seconds> t = plan_network_time(topo, plan, group, failed);
  EXPECT_TRUE(t.has_value());
  return t ? t->value() : 0;
}

// Line of 4 members cut between members 3 and 0 (cut = 3): positions = members for the + direction.
TEST(LineChain, TheReduceChainGrowsFromTheLineStartAndTheBroadcastChainShrinksTowardsItsEnd) {
  const auto senders = [](bool gather, int step) {
    std::string out;
    for (int p = 0; p < 4; ++p) out += chain_sends(LineChain{0, gather, static_cast<std::uint8_t>(step)}, p, 4) ? '1' : '0';
    return out;
  };
  EXPECT_EQ(senders(false, 1), "1000");
  EXPECT_EQ(senders(false, 2), "1100");
  EXPECT_EQ(senders(false, 3), "1110");
  EXPECT_EQ(senders(true, 1), "1110");
  EXPECT_EQ(senders(true, 2), "0110");
  EXPECT_EQ(senders(true, 3), "0010");
  // Cut between members 1 and 2: + positions start at member 2, - positions at member 1.
  EXPECT_EQ(chain_position(2, 1, 4, 1), 0);
  EXPECT_EQ(chain_position(1, 1, 4, 1), 3);
  EXPECT_EQ(chain_position(1, 1, 4, -1), 0);
  EXPECT_EQ(chain_position(2, 1, 4, -1), 3);
}

// A 16-ring with its cable 0-1 cut: the line's all-reduce is the mesh closed form exactly,
// 2 (N-1)/N x S / B + 2 (N-1) a; the detour (15 hops back round the ring) pays 15 a per step instead of a.
TEST(ReplannedCollective, AllReduceOnACutRingRunsAsALineAtTheMeshClosedForm) {
  const Topology ring = ring16();
  const FaultSet cut = cut_cable_at_origin(ring);
  const ir::CollectiveGroup group = whole_axes_group(ring, 0);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan plan = plan_collective(ring, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, cut);
  ASSERT_EQ(plan.replan, CollectivePlan::Replan::line);
  EXPECT_EQ(plan.cut[0], 0);
  EXPECT_EQ(plan.steps.size(), 30u);
  const double n = 16, line = 2 * (n - 1) / n * kS / kB + 2 * (n - 1) * kHop;
  EXPECT_NEAR(plan.estimate.value(), line, 1e-9 * line);
  const CollectivePlan ring_plan = plan_collective(ring, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double detour = network_time(ring, ring_plan, group, cut);
  EXPECT_NEAR(detour, line + 30 * 14 * kHop, 1e-9 * line);
}

// Every chain send of `plan` is one hop along its group axis (stride links, DOR) on links that have not failed:
// no line crosses a failed cable.
// Returns how many chain sends the chips make.
std::size_t expect_chain_sends_avoid(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group,
                                     const FaultSet& failed) {
  std::size_t made = 0;
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    for (const CollectiveStep& step : plan.steps) {
      for (const CollectiveSend& send : step.sends) {
        if (send.chain.axis < 0) continue;
        const int length = static_cast<int>(group.size[static_cast<std::size_t>(send.chain.axis)]);
        if (!chain_sends(send.chain, line_position(topo, plan, group, ChipId(c), send), length)) continue;
        ++made;
        const std::optional<Path> dor = dor_route(topo, ChipId(c), group_destination(topo, group, ChipId(c), send.offset, 0));
        EXPECT_TRUE(dor && dor->size() == group.stride[static_cast<std::size_t>(send.chain.axis)]) << "chip " << c;
        for (const LinkId l : dor.value_or(Path{})) {
          for (const LinkId dead : failed.links) EXPECT_NE(l, dead) << "chip " << c;
        }
      }
    }
  }
  return made;
}

// On a 2D and a 3D torus the line's steps carry twice the healthy step's bytes on the cut axis at one hop,
// the detour's the same bytes at three hops: 2 (T - n a) + n a against 2 (T - n a) + 3 n a, T the healthy
// plan's time, n its steps. The planner takes the line.
void expect_line_beats_detour(const Topology& topo) {
  const FaultSet cut = cut_cable_at_origin(topo);
  const ir::CollectiveGroup group = whole_axes_group(topo, 0);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan healthy = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double t = network_time(topo, healthy, group, {});
  const double n = static_cast<double>(healthy.steps.size());
  const CollectivePlan plan = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, cut);
  ASSERT_EQ(plan.replan, CollectivePlan::Replan::line);
  EXPECT_EQ(plan.steps.size(), healthy.steps.size());
  const double line = 2 * (t - n * kHop) + n * kHop;
  EXPECT_NEAR(plan.estimate.value(), line, 1e-9 * line);
  EXPECT_NEAR(network_time(topo, healthy, group, cut), 2 * (t - n * kHop) + 3 * n * kHop, 1e-9 * line);

  // Each line of N members makes N (N - 1) / 2 sends per chain per phase (sum over t of the senders above),
  // two chains, two phases, once per rotation (k axes): chips x k x 2 (N - 1) in all.
  // No send of the line crosses the cut (expect_chain_sends_avoid).
  const std::size_t k = static_cast<std::size_t>(topo.axes()), n_cut = static_cast<std::size_t>(topo.shape()[0]);
  EXPECT_EQ(expect_chain_sends_avoid(topo, plan, group, cut), topo.chip_count() * k * 2 * (n_cut - 1));
}

TEST(ReplannedCollective, AllReduceOnA4x4TorusWithACutCableRunsTheCutAxisAsALine) {
  expect_line_beats_detour(torus({4, 4}));
}

TEST(ReplannedCollective, AllReduceOnA4x4x4TorusWithACutCableRunsTheCutAxisAsALine) {
  expect_line_beats_detour(torus({4, 4, 4}));
}

// What the line cannot serve keeps its plan: a failed link on an axis the collective does not use, and
// halving_doubling (not a ring plan).
TEST(ReplannedCollective, PlansThatTheCutDoesNotTouchAreUnchanged) {
  const Topology topo = torus({4, 4});
  const FaultSet cut = cut_cable_at_origin(topo);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan y_only =
      plan_collective(topo, Kind::all_reduce, s, DType::bf16, whole_axes_group(topo, 2u), Algo::automatic, cut);
  EXPECT_EQ(y_only.replan, CollectivePlan::Replan::none);
  const CollectivePlan hd = plan_collective(topo, Kind::all_reduce, s, DType::bf16, whole_axes_group(topo, 0),
                                            Algo::halving_doubling, cut);
  EXPECT_EQ(hd.replan, CollectivePlan::Replan::none);
  EXPECT_EQ(hd.cut[0], -1);
}

// The planner's choice against every candidate it had: the ring kept (its sends through the cuts detouring)
// and a line starting after each failed cable alone (the plan for that cable alone when it is a line), each
// timed on the surviving graph with every cable failed. Returns the ring's time.
double expect_fastest_candidate(const Topology& topo, const ir::CollectiveGroup& group, const std::vector<std::uint32_t>& srcs,
                     const CollectivePlan& chosen) {
  const FaultSet failed = cut_cables(topo, srcs);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan ring = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double ring_time = network_time(topo, ring, group, failed);
  EXPECT_LE(chosen.estimate.value(), ring_time);
  EXPECT_NEAR(network_time(topo, chosen, group, failed), chosen.estimate.value(), 1e-12);
  for (const std::uint32_t src : srcs) {
    const CollectivePlan one =
        plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, cut_cables(topo, {src}));
    EXPECT_EQ(one.replan, CollectivePlan::Replan::line);
    EXPECT_LE(chosen.estimate.value(), network_time(topo, one, group, failed)) << "line after chip " << src;
  }
  return ring_time;
}

// Two cables of one ring down (chips 0-1 and 2-3 of the row y = 0, z = 0): the kept ring's two sends through
// them detour at every step, each on 3 hops sharing a link with a one-hop send (the two detours use different
// links), so the ring costs what one cut costs, 2 (T - n a) + 3 n a. A line starting after one cut still
// crosses the other: its hop there detours and loads the links it shares with the neighbouring rows' chains,
// which already carry twice the ring's bytes: 3.33x T on the 4x4 torus, 3.33x on the 4x4x4 (computed). The
// planner keeps the ring.
void expect_two_cuts_on_one_ring_keep_it(const Topology& topo) {
  const ir::CollectiveGroup group = whole_axes_group(topo, 0);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan healthy = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double t = network_time(topo, healthy, group, {});
  const double n = static_cast<double>(healthy.steps.size());
  const CollectivePlan plan =
      plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, cut_cables(topo, {0, 2}));
  EXPECT_EQ(plan.replan, CollectivePlan::Replan::detour);
  EXPECT_NEAR(plan.estimate.value(), 2 * (t - n * kHop) + 3 * n * kHop, 1e-9 * t);
  EXPECT_NEAR(expect_fastest_candidate(topo, group, {0, 2}, plan), plan.estimate.value(), 1e-12);
}

TEST(ReplannedCollective, TwoCutCablesOnOneRingOfA4x4TorusKeepTheRingWithTwoDetours) {
  expect_two_cuts_on_one_ring_keep_it(torus({4, 4}));
}

TEST(ReplannedCollective, TwoCutCablesOnOneRingOfA4x4x4TorusKeepTheRingWithTwoDetours) {
  expect_two_cuts_on_one_ring_keep_it(torus({4, 4, 4}));
}

// Cables on two rows of axis 0 down at different places (chips 0-1 of row y = 0 and 2-3 of row y = 1): each
// ring runs as a line starting after its own cut (CollectivePlan::ring_cuts), so no chain send crosses a
// failed cable and the plan is the one-cut line, 2 (T - n a) + n a; the kept ring's two detours share a link
// (3 T).
void expect_cuts_on_two_rows_run_as_lines(const Topology& topo) {
  const ir::CollectiveGroup group = whole_axes_group(topo, 0);
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan healthy = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double t = network_time(topo, healthy, group, {});
  const double n = static_cast<double>(healthy.steps.size());
  const FaultSet failed = cut_cables(topo, {0, 6});
  const CollectivePlan plan = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, failed);
  ASSERT_EQ(plan.replan, CollectivePlan::Replan::line);
  ASSERT_EQ(plan.ring_cuts.size(), 2u);
  EXPECT_EQ(line_cut(topo, plan, group, ChipId(1), 0), 0);  // (1,0): its row is cut between x = 0 and 1
  EXPECT_EQ(line_cut(topo, plan, group, ChipId(5), 0), 2);  // (1,1): between x = 2 and 3
  EXPECT_NEAR(plan.estimate.value(), 2 * (t - n * kHop) + n * kHop, 1e-9 * t);
  EXPECT_NEAR(expect_fastest_candidate(topo, group, {0, 6}, plan), 3 * t, 1e-9 * t);
  const std::size_t k = static_cast<std::size_t>(topo.axes());
  EXPECT_EQ(expect_chain_sends_avoid(topo, plan, group, failed), topo.chip_count() * k * 2 * 3);
}

TEST(ReplannedCollective, CutCablesOnTwoRowsOfA4x4TorusRunEachRowAsALineFromItsOwnCut) {
  expect_cuts_on_two_rows_run_as_lines(torus({4, 4}));
}

TEST(ReplannedCollective, CutCablesOnTwoRowsOfA4x4x4TorusRunEachRowAsALineFromItsOwnCut) {
  expect_cuts_on_two_rows_run_as_lines(torus({4, 4, 4}));
}

// A strided group axis (4 members 2 apart on an 8x2 torus: the data-parallel group beside a tensor group of 2
// neighbours): the cable between x = 0 and 1 lies on the 2-hop send of member 0 in lane 0 (chips 0, 2, 4, 6) and
// of member 3 in lane 1 (chips 1, 3, 5, 7 wrapping to 1), so each lane's line starts after its own member. Each
// step of the healthy plan has 2 hops per send (a = 2 hop latencies): the line 2 (T - 2 n a) + 2 n a, the kept
// ring's detour 4 hops, 2 (T - 2 n a) + 4 n a. The planner takes the line.
TEST(ReplannedCollective, StridedGroupAxisWithACutCableRunsEachLaneAsALineFromItsOwnMember) {
  const Topology topo = torus({8, 2});
  const ir::CollectiveGroup group{{4, 1, 1}, {2, 1, 1}, 1};
  const auto s = static_cast<std::uint64_t>(kS);
  const CollectivePlan healthy = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic);
  const double t = network_time(topo, healthy, group, {});
  const double n = static_cast<double>(healthy.steps.size());
  ASSERT_EQ(n, 6);
  const FaultSet failed = cut_cables(topo, {0});
  const CollectivePlan plan = plan_collective(topo, Kind::all_reduce, s, DType::bf16, group, Algo::automatic, failed);
  ASSERT_EQ(plan.replan, CollectivePlan::Replan::line);
  EXPECT_EQ(line_cut(topo, plan, group, ChipId(2), 0), 0);
  EXPECT_EQ(line_cut(topo, plan, group, ChipId(3), 0), 3);
  EXPECT_EQ(line_cut(topo, plan, group, ChipId(11), 0), 0);  // (3,1): no failed cable in row y = 1, cut[0]
  EXPECT_NEAR(plan.estimate.value(), 2 * (t - 2 * n * kHop) + 2 * n * kHop, 1e-9 * t);
  EXPECT_NEAR(expect_fastest_candidate(topo, group, {0}, plan), 2 * (t - 2 * n * kHop) + 4 * n * kHop, 1e-9 * t);
  // Per lane and phase N (N - 1) / 2 sends per chain (N = 4), two chains, two phases: 12 per lane of 4 chips.
  EXPECT_EQ(expect_chain_sends_avoid(topo, plan, group, failed), topo.chip_count() * 2 * 3);
}

}  // namespace
}  // namespace tpusim::kernels
