// Many-host synchronisation (models/src/host/step_jitter.h): the expected wait for the slowest host against
// the expected maximum of H standard normals, and its determinism.
#include <cmath>

#include <gtest/gtest.h>

#include "host/step_jitter.h"

namespace tpusim::models {
namespace {

TEST(HostJitter, OneHostNeverWaits) {
  EXPECT_EQ(expected_max_normal(1, kJitterTrials, 7), 0.0);
  EXPECT_EQ(host_sync_wait(1, 0.1, Seconds(2.0), 7).value(), 0.0);
  EXPECT_EQ(host_sync_wait(1024, 0.0, Seconds(2.0), 7).value(), 0.0);
}

TEST(HostJitter, TwoHostsWaitHalfTheirMeanDistance) {
  // max - mean of two draws is |z0 - z1| / 2, whose expectation is sqrt(2) E|z| / 2 = 1 / sqrt(pi) = 0.5642.
  // 20,000 steps: the estimate's standard error is 0.426 / sqrt(20000) = 0.003; bound 0.012 (4 errors).
  EXPECT_NEAR(expected_max_normal(2, 20000, 3), 1.0 / std::sqrt(M_PI), 0.012);
}

TEST(HostJitter, ManyHostsWaitTheExpectedMaximumOfTheirDraws) {
  // E[max of H standard normals] = integral of x H phi(x) Phi(x)^(H-1) dx (integrated numerically, step
  // 0.001 over [-10, 10]): H = 32: 2.0697, H = 1024: 3.2482; the mean of the H draws has expectation 0. Over kJitterTrials (256) steps the standard
  // error of the maximum is about 0.4 / 16 = 0.025 (its spread shrinks with H); bound 0.08 (3 errors).
  EXPECT_NEAR(expected_max_normal(32, kJitterTrials, 1), 2.0697, 0.08);
  EXPECT_NEAR(expected_max_normal(1024, kJitterTrials, 1), 3.2482, 0.08);
  // sqrt(2 ln H), the large-H asymptote, lies above the exact value: 3.72 at 1024 hosts.
  EXPECT_LT(expected_max_normal(1024, kJitterTrials, 1), std::sqrt(2 * std::log(1024.0)));
}

TEST(HostJitter, TheWaitScalesWithTheJitterAndTheStep) {
  const double z = expected_max_normal(256, kJitterTrials, 5);
  EXPECT_DOUBLE_EQ(host_sync_wait(256, 0.02, Seconds(10.0), 5).value(), 0.2 * z);
}

TEST(HostJitter, SameSeedSameWaitOtherSeedAnother) {
  EXPECT_EQ(expected_max_normal(96, kJitterTrials, 11), expected_max_normal(96, kJitterTrials, 11));
  EXPECT_NE(expected_max_normal(96, kJitterTrials, 11), expected_max_normal(96, kJitterTrials, 12));
}

}  // namespace
}  // namespace tpusim::models
