// All-reduce and all-gather on the SystemC pod with the collective library's own plans
// (kernels::plan_collective through default_collective_planner()), against the plan's ideal_time. One
// simulation per test process (gtest_discover_tests); the tests that compare two runs fork() a child.
//
// Where the simulated time departs from plan.ideal_time (the link-rate bound plus one hop latency per ring
// step, kernels/collectives.h):
// - Reductions on the VPU. The model reduces a step's received elements after its receives and before the
//   next step (net/collective_engine.h), so their time adds up in full: reduction_seconds(plan), 15/16 S of bf16 at
//   1024 elements per cycle and 1.05 GHz = 117 us for S = 256 MiB, i.e. 2.1% of the 16-ring's time, 4.2% of
//   the 4x4 torus's, 6.0% of the 4x4x4's (the more axes, the shorter the bandwidth term).
// - Chunk pipelining. Every send of a ring plan is one hop on a link nobody else uses in that step (the
//   merged sub-buffers of one offset are one transfer), so 1 MiB chunks add no pipeline fill and no queueing;
//   what remains is rounding to whole picoseconds per chunk.
// - Hop latencies. One per step, 2 (N - 1) per axis for an all-reduce: already in ideal_time.
// - The runtime's overheads (net/collective_engine.h): the start-up and one synchronisation per step,
//   overhead_seconds(plan), outside ideal_time.
// So the large cases must land within 0.5% of ideal + reductions + overheads (all-gather: no reductions).
#include "collective_test_support.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

constexpr double kResidual = 0.005;  // chunk rounding; see the top of the file

void expect_ideal_plus_reductions(const CollectiveRun& r) {
  const double t = r.time();
  const double expected = r.ideal() + r.reduce + r.overhead;
  EXPECT_GE(t, r.ideal());
  EXPECT_NEAR(t, expected, kResidual * r.ideal()) << "time / ideal " << t / r.ideal() << ", reductions / ideal "
                                                  << r.reduce / r.ideal();
  ::testing::Test::RecordProperty("time_over_ideal", std::to_string(t / r.ideal()));
  ASSERT_EQ(r.result.network.collectives.size(), 1u);
  const CollectiveUsage& c = r.result.network.collectives[0];
  EXPECT_EQ(c.executions, r.result.cost.chips_simulated);
  EXPECT_EQ(c.steps, r.plan.steps.size());
  EXPECT_NEAR(c.time.value(), t, 1e-12);
  EXPECT_NEAR(c.bus_bandwidth.value(), c.algorithm_bandwidth().value() * r.plan.bus_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.ideal_time.value(), r.ideal());
  EXPECT_GT(r.result.network.link_utilization.max, 0.5);
  EXPECT_GT(r.result.breakdown.communication.value(), 0.9 * t);
}

CollectiveRun all_reduce(std::vector<int> shape, LinkFidelity links = LinkFidelity::chunked, bool wrap = true,
               std::uint64_t bytes = k256MiB, Algo algo = Algo::automatic) {
  return run_collective(pod_scenario(std::move(shape), wrap, links),
                        one_collective(CollectiveKind::all_reduce, bytes, algo));
}

CollectiveRun all_gather(std::vector<int> shape, std::uint64_t shard, LinkFidelity links = LinkFidelity::chunked) {
  return run_collective(pod_scenario(std::move(shape), true, links),
                        one_collective(CollectiveKind::all_gather, shard));
}

TEST(CollectiveRing, LargeAllReduceOnA16ChipRingIsIdealPlusReductions) {
  const CollectiveRun r = all_reduce({16});
  EXPECT_EQ(r.plan.algorithm, Algo::ring_bidirectional);
  EXPECT_EQ(r.plan.steps.size(), 30u);
  expect_ideal_plus_reductions(r);
}

TEST(CollectiveRing, LargeAllReduceOnA4x4TorusIsIdealPlusReductions) {
  const CollectiveRun r = all_reduce({4, 4});
  EXPECT_EQ(r.plan.steps.size(), 12u);
  expect_ideal_plus_reductions(r);
}

TEST(CollectiveRing, LargeAllReduceOnA4x4x4TorusIsIdealPlusReductions) {
  const CollectiveRun r = all_reduce({4, 4, 4});
  EXPECT_EQ(r.plan.steps.size(), 18u);
  expect_ideal_plus_reductions(r);
}

// All-gathers of a 16 MiB shard to 256 MiB per chip (4 MiB to 256 MiB on 64 chips): no reductions.
TEST(CollectiveRing, LargeAllGatherOnA16ChipRingIsWithinHalfAPercentOfIdeal) {
  const CollectiveRun r = all_gather({16}, 16ULL << 20);
  EXPECT_EQ(r.reduce, 0.0);
  expect_ideal_plus_reductions(r);
}

TEST(CollectiveRing, LargeAllGatherOnA4x4TorusIsWithinHalfAPercentOfIdeal) {
  expect_ideal_plus_reductions(all_gather({4, 4}, 16ULL << 20));
}

TEST(CollectiveRing, LargeAllGatherOnA4x4x4TorusIsWithinHalfAPercentOfIdeal) {
  expect_ideal_plus_reductions(all_gather({4, 4, 4}, 4ULL << 20));
}

// 4 KiB ring all-reduce over 16 chips (the automatic choice): 30 steps of two 128-byte sends (3 ns at 45 GB/s)
// and 64-element reductions (1 cycle, 1 ns), so the time is the start-up plus 30 x (hop latency + step
// synchronisation), plus under 1%.
TEST(CollectiveRing, SmallRingAllReduceTakesTheStartUpAndOneHopLatencyAndSyncPerStep) {
  const CollectiveRun r = all_reduce({16}, LinkFidelity::chunked, true, 4096);
  EXPECT_EQ(r.plan.algorithm, Algo::ring_bidirectional);
  ASSERT_EQ(r.plan.steps.size(), 30u);
  const double floor = kCollectiveStartup.value() + 30 * (kHop + kCollectiveStepSync.value());
  EXPECT_GE(r.time(), floor);
  EXPECT_LE(r.time(), floor * 1.01);
}

// 4 KiB on a 4x4x4 torus with `direct` (named: the automatic choice is the ring), 2 steps (reduce-scatter,
// all-gather) whose farthest peer is a diameter (2 + 2 + 2 = 6 hops) away, so the start-up plus 2 x (6 hop
// latencies + one step synchronisation); the sends are 64-byte blocks (4 KiB / 64 per peer, 63 peers over 6
// links: tens of ns) plus store-and-forward of one block per hop. Within 2%.
TEST(CollectiveRing, SmallDirectAllReduceOnA4x4x4TorusTakesTwoDiametersOfHops) {
  const CollectiveRun r = all_reduce({4, 4, 4}, LinkFidelity::chunked, true, 4096, Algo::direct);
  EXPECT_EQ(r.plan.algorithm, Algo::direct);
  ASSERT_EQ(r.plan.steps.size(), 2u);
  const double floor = 12 * kHop + r.overhead;
  EXPECT_GE(r.time(), floor);
  EXPECT_LE(r.time(), floor * 1.02);
}

// Chunked and flow agree: with one-hop sends on otherwise idle links, both give bytes / rate per send; the
// difference is per-chunk tick rounding. Within 0.1% on each topology.
void expect_modes_agree(std::vector<int> shape) {
  const double flow = in_child([shape] { return all_reduce(shape, LinkFidelity::flow).time(); });
  const CollectiveRun chunked = all_reduce(shape, LinkFidelity::chunked);
  ASSERT_GT(flow, 0);
  EXPECT_NEAR(chunked.time() / flow, 1.0, 0.001);
  ::testing::Test::RecordProperty("chunked_over_flow", std::to_string(chunked.time() / flow));
}

TEST(CollectiveRing, ChunkedAndFlowAgreeOnA16ChipRing) { expect_modes_agree({16}); }
TEST(CollectiveRing, ChunkedAndFlowAgreeOnA4x4Torus) { expect_modes_agree({4, 4}); }
TEST(CollectiveRing, ChunkedAndFlowAgreeOnA4x4x4Torus) { expect_modes_agree({4, 4, 4}); }

// The same all-reduce on a 16-chip line (no wraparound): the +1 send of the last chip goes back 15 hops over
// the links the -1 sends use (and symmetrically), so every link carries two sends per step and the bandwidth
// term doubles (plan.ideal_time says so too: a mesh axis has rate B, a torus axis 2B); each step also waits
// 15 hop latencies instead of 1. Expected, flow mode, reductions R equal in both:
//   mesh = 2 T_bw + 30 x 15 a + R + O,   torus = T_bw + 30 a + R + O;   ratio within 1%
// (O: the runtime's start-up and step synchronisations, overhead_seconds).
// The ring is what ring_bidirectional names; `auto` plans the line instead (next test).
TEST(CollectiveRing, AllReduceOnAMeshAxisIsSlowerThanOnATorusAxisByTheExpectedFactor) {
  const double mesh = in_child(
      [] { return all_reduce({16}, LinkFidelity::flow, false, k256MiB, Algo::ring_bidirectional).time(); });
  const CollectiveRun torus = all_reduce({16}, LinkFidelity::flow, true);
  ASSERT_GT(mesh, 0);
  const double t_bw = torus.ideal() - 30 * kHop;
  const double expected = (2 * t_bw + 30 * 15 * kHop + torus.reduce + torus.overhead) /
                          (t_bw + 30 * kHop + torus.reduce + torus.overhead);
  EXPECT_NEAR(mesh / torus.time(), expected, 0.01 * expected);
  ::testing::Test::RecordProperty("mesh_over_torus", std::to_string(mesh / torus.time()));
}

// `auto` on the 16-chip line plans it as a line (two one-hop chains per step, kernels/collectives.h): the
// same doubled bandwidth term, but one hop per step: mesh = 2 T_bw + 30 a + R + O (the line's reductions
// equal the ring's on the chip that reduces most), within 1%.
TEST(CollectiveRing, AutoPlansAMeshAxisAsALine) {
  const double mesh = in_child([] { return all_reduce({16}, LinkFidelity::flow, false).time(); });
  const CollectiveRun torus = all_reduce({16}, LinkFidelity::flow, true);
  ASSERT_GT(mesh, 0);
  const double t_bw = torus.ideal() - 30 * kHop;
  const double expected = (2 * t_bw + 30 * kHop + torus.reduce + torus.overhead) /
                          (t_bw + 30 * kHop + torus.reduce + torus.overhead);
  EXPECT_NEAR(mesh / torus.time(), expected, 0.01 * expected);
  ::testing::Test::RecordProperty("mesh_over_torus", std::to_string(mesh / torus.time()));
}

// The decode all-reduce shape (256 KiB per chip over a 4x4 mesh): auto plans both axes as lines, and the
// simulated time is the plan's closed form (CollectivePlan::estimate: lockstep steps of the busiest link's
// bytes + one hop) + the runtime's overheads + the reductions on the critical path: a line's chips reduce what
// their chain receives bring (LineChain::reduce_elements), between none and every chain send of each step.
// Measured: 18.272 us in [18.081, 18.310] us.
TEST(CollectiveRing, AutoOnA4x4MeshMeetsItsClosedForm) {
  const CollectiveRun r = all_reduce({4, 4}, LinkFidelity::flow, false, 256 << 10);
  ASSERT_EQ(r.plan.cut[0], 3);
  ASSERT_EQ(r.plan.cut[1], 3);
  const ChipSpec chip = pod_scenario({4, 4}, false).chip;
  Tick chains = 0;  // every chain send of each step reduced on one chip, rounded per step as the engine does
  for (const kernels::CollectiveStep& step : r.plan.steps) {
    std::uint64_t e = step.reduce_elements;
    for (const kernels::CollectiveSend& send : step.sends) e += send.chain.reduce_elements;
    if (e > 0) {
      chains += cycles_to_ticks(vpu_cycles(chip.vpu, ir::VectorOp::elementwise, static_cast<std::int64_t>(e)), chip.clock);
    }
  }
  const double low = r.plan.estimate.value() + r.overhead;
  const double high = low + to_seconds(chains).value();
  ::testing::Test::RecordProperty("time_us", std::to_string(r.time() * 1e6));
  ::testing::Test::RecordProperty("bounds_us", std::to_string(low * 1e6) + " " + std::to_string(high * 1e6));
  EXPECT_GE(r.time(), low * (1 - 1e-9));
  EXPECT_LE(r.time(), high * (1 + 1e-9));
}

}  // namespace
}  // namespace tpusim::models::net
