// Collective plans for the surviving topology (kernels/collectives.h, "Re-planned around failed links"): which
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

  // No send of the line crosses the cut: every chain send a chip makes is one hop on a surviving link.
  const std::unique_ptr<Router> router = make_fault_aware_router(topo, cut);
  std::size_t chain_sends_made = 0;
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    for (const CollectiveStep& step : plan.steps) {
      for (const CollectiveSend& send : step.sends) {
        if (send.chain.axis < 0) continue;
        const auto a = static_cast<std::size_t>(send.chain.axis);
        const int length = topo.shape()[a];
        const int member = group_member(topo, group, ChipId(c), send.chain.axis);
        if (!chain_sends(send.chain, chain_position(member, plan.cut[a], length, send.offset[a]), length)) continue;
        ++chain_sends_made;
        const ChipId dst = group_destination(topo, group, ChipId(c), send.offset, 0);
        const std::optional<Path> dor = dor_route(topo, ChipId(c), dst);
        ASSERT_TRUE(dor && dor->size() == 1u);
        for (const LinkId dead : cut.links) EXPECT_NE(dor->front(), dead) << "chip " << c;
      }
    }
  }
  // Each line of N members makes N (N - 1) / 2 sends per chain per phase (sum over t of the senders above),
  // two chains, two phases, once per rotation (k axes): chips x k x 2 (N - 1) in all.
  const std::size_t k = static_cast<std::size_t>(topo.axes()), n_cut = static_cast<std::size_t>(topo.shape()[0]);
  EXPECT_EQ(chain_sends_made, topo.chip_count() * k * 2 * (n_cut - 1));
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

}  // namespace
}  // namespace tpusim::kernels
