// Many-host synchronisation in a simulated step (pod.host_jitter, models/src/host/step_jitter.h): the step
// ends the expected wait for the slowest host after its last chip, every chip idles through that wait, and a
// pod of one host never waits. One simulation per test process.
#include <algorithm>

#include "collective_test_support.h"
#include "host/step_jitter.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;

double last_finish(const SimResult& r) {
  double t = 0;
  for (const ChipResult& c : r.chips) t = std::max(t, c.finish.value());
  return t;
}

TEST(HostSync, AStepOverSixteenHostsWaitsForTheSlowest) {
  Scenario s = pod_scenario({4, 4}, true);  // one chip per host: 16 hosts
  s.pod.host_jitter = 0.05;
  s.seed = 9;
  const CollectiveRun r = run_collective(s, one_collective(CollectiveKind::all_reduce, 1ULL << 20));
  const double finish = last_finish(r.result);
  const double wait = host_sync_wait(16, 0.05, Seconds(finish), 9).value();
  // 0.05 x E[max - mean of 16 normals] (1.766) x the step: about 8.8% of it.
  EXPECT_GT(wait, 0.07 * finish);
  EXPECT_LT(wait, 0.11 * finish);
  EXPECT_NEAR(r.time(), finish + wait, 2e-12);  // to the picosecond tick
  for (const ChipResult& c : r.result.chips) EXPECT_GE(c.breakdown.idle.value(), wait - 2e-12);
  // The collective's own time is not the wait's: it ended before.
  ASSERT_EQ(r.result.network.collectives.size(), 1u);
  EXPECT_LE(r.result.network.collectives[0].time.value(), finish);
}

TEST(HostSync, AStepOnOneHostNeverWaits) {
  Scenario s = pod_scenario({4, 4}, true);
  s.pod.host_shape = {4, 4};  // one host for the 16 chips
  s.pod.host_jitter = 0.05;
  const CollectiveRun r = run_collective(s, one_collective(CollectiveKind::all_reduce, 1ULL << 20));
  EXPECT_EQ(r.time(), last_finish(r.result));
}

}  // namespace
}  // namespace tpusim::models::net
