// All-to-all on the SystemC pod: the ring algorithms against their closed forms (kernels/README.md, "Ring
// all-to-all"), and against direct. One simulation per test process; the comparisons fork() a child.
//
// Why the ring cases must land on the closed form: every send of a ring all-to-all plan is one hop on a link
// no other send of the step uses, there are no reductions, and the sizes below make every send a whole number
// of 1 MiB chunks, so a step takes its largest send / B plus one hop latency and the only residual is rounding
// to whole picoseconds per chunk. Bound: 0.5% (as the ring all-reduces in collective_ring_test.cpp).
#include "collective_test_support.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

constexpr double kAllToAllResidual = 0.005;
constexpr std::uint64_t k64MiB = 64ULL << 20;
constexpr std::uint64_t k96MiB = 96ULL << 20;  // 3 sub-buffers of 32 MiB on a 4x4x4 torus: 8 MiB blocks
const double kChunkTime = static_cast<double>(MiB(1).count()) / kLinkRate;

CollectiveRun all_to_all(std::vector<int> shape, std::uint64_t bytes, Algo algo) {
  return run_collective(pod_scenario(std::move(shape), true), one_collective(CollectiveKind::all_to_all, bytes, algo));
}

void expect_on(const CollectiveRun& r, double expected) {
  EXPECT_EQ(r.reduce, 0.0);
  EXPECT_GE(r.time(), expected);
  EXPECT_NEAR(r.time(), expected, kAllToAllResidual * expected) << "time / expected " << r.time() / expected;
  ::testing::Test::RecordProperty("time_over_ideal", std::to_string(r.time() / r.ideal()));
  ASSERT_EQ(r.result.network.collectives.size(), 1u);
  EXPECT_EQ(r.result.network.collectives[0].steps, r.plan.steps.size());
}

// 16-ring, S = 64 MiB: 8 steps, step i sending (8 - i) x 4 MiB + 2 MiB each way; N S / (8B) + 8 a = 2.98 ms + 8 us,
// which is ideal_time.
TEST(CollectiveAllToAll, BidirectionalRingOnA16ChipRingMeetsTheClosedForm) {
  const CollectiveRun r = all_to_all({16}, k64MiB, Algo::ring_bidirectional);
  EXPECT_EQ(r.plan.steps.size(), 8u);
  const double closed = 16.0 * static_cast<double>(k64MiB) / (8 * kLinkRate) + 8 * kHop;
  EXPECT_NEAR(r.ideal(), closed, 1e-12);
  expect_on(r, closed);
}

// 4x4x4 torus, S = 96 MiB: 6 steps of 6 one-hop sends (12 MiB, then 4 MiB, on every link direction), S / (2B) +
// 6 a = 1.118 ms + 6 us = ideal_time.
TEST(CollectiveAllToAll, BidirectionalRingOnA4x4x4TorusMeetsTheClosedForm) {
  const CollectiveRun r = all_to_all({4, 4, 4}, k96MiB, Algo::ring_bidirectional);
  EXPECT_EQ(r.plan.steps.size(), 6u);
  const double closed = static_cast<double>(k96MiB) / (2 * kLinkRate) + 6 * kHop;
  EXPECT_NEAR(r.ideal(), closed, 1e-12);
  expect_on(r, closed);
}

// The unidirectional ring on a 16-ring: 15 steps, step i sending (16 - i) x 4 MiB to +1: 120 blocks of S / 16
// = 7.5 S / B + 15 a, 3.75 times ideal_time's bandwidth term.
TEST(CollectiveAllToAll, UnidirectionalRingOnA16ChipRingTakesFifteenHalvesOfTheBufferPerLink) {
  const CollectiveRun r = all_to_all({16}, k64MiB, Algo::ring_unidirectional);
  EXPECT_EQ(r.plan.steps.size(), 15u);
  expect_on(r, 7.5 * static_cast<double>(k64MiB) / kLinkRate + 15 * kHop);
}

// direct against the ring. DOR sends every tie (the opposite chip of an even ring) the + way, so direct's
// busiest link carries k times the ring's per-link bytes (exact per-link loads in
// test/kernels/collectives_test.cpp): k = 3/2 on a 4x4x4 torus (3/4 S against S/2), 9/8 on a 16-ring (36
// blocks of S/16 against 32). direct is one step, so hop latencies overlap the transfers: with T_bw the ring's
// bandwidth term (ideal - diameter x a),
//   k T_bw + a  <=  direct  <=  k T_bw + D a + (D - 1) C / B     (D = diameter, C = 1 MiB chunk,
// stored and forwarded per hop).
void expect_direct_within_dor_bounds(double direct, const CollectiveRun& ring, double k, int diameter) {
  const double t_bw = ring.ideal() - diameter * kHop;
  EXPECT_GE(direct, k * t_bw + kHop);
  EXPECT_LE(direct, k * t_bw + diameter * kHop + (diameter - 1) * kChunkTime);
  EXPECT_GE(direct / ring.time(), k * t_bw / ring.ideal());
  ::testing::Test::RecordProperty("direct_over_ring", std::to_string(direct / ring.time()));
}

TEST(CollectiveAllToAll, OnA4x4x4TorusDirectIsThreeHalvesOfTheRingForLargeBuffers) {
  const double direct = in_child([] { return all_to_all({4, 4, 4}, k96MiB, Algo::direct).time(); });
  const CollectiveRun ring = all_to_all({4, 4, 4}, k96MiB, Algo::ring_bidirectional);
  ASSERT_GT(direct, 0);
  expect_direct_within_dor_bounds(direct, ring, 1.5, 6);
}

TEST(CollectiveAllToAll, OnA16ChipRingDirectIsNineEighthsOfTheRing) {
  const double direct = in_child([] { return all_to_all({16}, k64MiB, Algo::direct).time(); });
  const CollectiveRun ring = all_to_all({16}, k64MiB, Algo::ring_bidirectional);
  ASSERT_GT(direct, 0);
  expect_direct_within_dor_bounds(direct, ring, 9.0 / 8, 8);
}

}  // namespace
}  // namespace tpusim::models::net
