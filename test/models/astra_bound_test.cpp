// The ASTRA-sim comparison (issue 21, bench_pod astra): an all-reduce on a 32x32 and a 16x16x16 torus of
// 100 GB/s links and 1 us hops, in the default fidelity (flow links, aggregate collectives), lands within 15%
// of the bound of nettest::all_reduce_bound (the bytes every chip must move over its 2 D links, plus the
// rings' 2 sum (N_i - 1) hops), and never below it. The smallest sizes, where the hops weigh most and the
// runtime's overheads (kCollectiveStartup, kCollectiveStepSync per step, the reductions) too; the bench
// prints the sizes up to 1 GiB. One simulation per test process.
#include <string>

#include "collective_test_support.h"
#include "support/simulate_step.h"
#include <gtest/gtest.h>

namespace tpusim::models::net::astra {  // its own namespace: the unity build joins this file with others
namespace {

using namespace nettest;

void expect_near_bound(const std::vector<int>& shape, std::uint64_t bytes) {
  const Scenario s = astra_torus(shape);
  ASSERT_EQ(s.fidelity.links, LinkFidelity::flow);
  ASSERT_EQ(s.fidelity.collectives, CollectiveFidelity::aggregate);
  const SimResult r = ::tpusim::testing::simulate_step(s, one_collective(CollectiveKind::all_reduce, bytes), {});
  const double bound = all_reduce_bound(shape, static_cast<double>(bytes), 100e9, 1e-6);
  const double t = r.step_time.value();
  EXPECT_GE(t, bound);
  EXPECT_LE(t, 1.15 * bound) << "simulated " << t << " s, bound " << bound << " s";
  ::testing::Test::RecordProperty("over_bound", std::to_string(t / bound));
}

TEST(AstraComparison, A1MiBAllReduceOnA32x32TorusIsWithin15PercentOfTheBound) {
  expect_near_bound({32, 32}, 1ULL << 20);
}

TEST(AstraComparison, A4MiBAllReduceOnA32x32TorusIsWithin15PercentOfTheBound) {
  expect_near_bound({32, 32}, 4ULL << 20);
}

TEST(AstraComparison, A1MiBAllReduceOnA16x16x16TorusIsWithin15PercentOfTheBound) {
  expect_near_bound({16, 16, 16}, 1ULL << 20);
}

TEST(AstraComparison, A4MiBAllReduceOnA16x16x16TorusIsWithin15PercentOfTheBound) {
  expect_near_bound({16, 16, 16}, 4ULL << 20);
}

}  // namespace
}  // namespace tpusim::models::net::astra
