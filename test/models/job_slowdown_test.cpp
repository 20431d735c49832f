// What ends a slowdown on the job timeline (tpusim/models/job.h; docs/faults.md "Over the job"): a recovery that
// replaces a part (a chip or a cable repaired, a cube swapped for a spare, the cables around chips cut off) ends
// the lasting faults on it, and only those. Pure C++ (no SystemC), costs given by hand: a 1 s healthy step, 1.5 s
// with the slowdown (or 1.25 s with a cable routed around), a 10 s checkpoint write and a 20 s restore.
//
// Before, a slowdown lasted to the job's end: a straggler whose chip failed and was repaired an hour later still
// charged every later step its slow step (a v5e 2x2 MLP: 3566 s of slowdown where 0.57 s were due).
#include <gtest/gtest.h>

#include <string>

#include "job_test_support.h"
#include "support/scenario_yaml.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

using jobtest::kCubeJob;
using jobtest::sum_of_parts;

// The round costs with every lasting fault's step `slow` seconds long.
JobCosts slow_costs(double slow) {
  JobCosts c = jobtest::round_costs();
  c.step_with = [slow](const ConcreteFault&) { return Seconds(slow); };
  return c;
}

// The slowdown lands at 50.5 s, in step 50: steps 50 to 99 run at 1.5 s (to 125 s), the checkpoint is written (to
// 135 s). The failure at 200 s lands 0.5 s into step 143, 43 slow steps after the checkpoint: detected at 230 s,
// 43 x 1.5 + 0.5 = 65 s of work lost, repair, relaunch and restore to 4450 s, back at step 100. The 900 steps left
// and their 8 checkpoints take 980 s at the healthy step, 450 s more at the slow one.
JobResult slowdown_then_failure(const std::string& slowdown, const std::string& failure) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + "faults:\n  - {at: 50.5 s, " +
                                                           slowdown + "}\n  - {at: 200 s, " + failure + "}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  JobResult r = run_job(s, topo, slow_costs(1.5));
  EXPECT_EQ(r.events.size(), 2u);
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 65.0);
  EXPECT_DOUBLE_EQ(r.events.at(1).resumed.value(), 4450.0);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
  return r;
}

// Kept: the 50 slow steps before the checkpoint, 0.5 s each over the healthy step. Lost with the rollback: the
// 43 after it (lost work, not slowdown).
constexpr double kKeptSlowdown = 50 * 0.5;

TEST(JobSlowdown, AChipRepairedAfterItFailsNoLongerStraggles) {
  const JobResult r = slowdown_then_failure("kind: straggler, target: [1, 1, 1], clock_fraction: 0.5",
                                            "kind: chip_down, target: [1, 1, 1]");
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart");
  EXPECT_DOUBLE_EQ(r.events[1].step_before.value(), 1.5);
  EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), 1.0);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), kKeptSlowdown);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4450.0 + 980);
}

TEST(JobSlowdown, AStragglerGoesOnWhenAnotherChipOrItsHostIsRepaired) {
  // Chip [1,1,0] is on host 0, whose repair mends the host, not its chips.
  for (const std::string failure : {"kind: chip_down, target: [2, 2, 2]", "kind: host_down, target: {host: 0}"}) {
    const JobResult r =
        slowdown_then_failure("kind: straggler, target: [1, 1, 0], clock_fraction: 0.5", failure);
    EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), 1.5) << failure;
    EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), kKeptSlowdown + 900 * 0.5) << failure;
    EXPECT_DOUBLE_EQ(r.wall.value(), 4450.0 + 980 + 450) << failure;
  }
}

TEST(JobSlowdown, ACableRepairedAfterItFailsIsNoLongerDegradedInEitherDirection) {
  // [0,0,0] x+ and [1,0,0] x- are the two directions of one cable; the restart repairs the cable.
  for (const char* dir : {"{chip: [0, 0, 0], dir: x+}", "{chip: [1, 0, 0], dir: x-}"}) {
    const JobResult r = slowdown_then_failure(
        "kind: link_degraded, target: {chip: [0, 0, 0], dir: x+}, bandwidth_fraction: 0.1",
        std::string("kind: link_down, target: ") + dir);
    EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), 1.0) << dir;
    EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), kKeptSlowdown) << dir;
    EXPECT_DOUBLE_EQ(r.wall.value(), 4450.0 + 980) << dir;
  }
  // Another cable's repair leaves it degraded.
  const JobResult r =
      slowdown_then_failure("kind: link_degraded, target: {chip: [0, 0, 0], dir: x+}, bandwidth_fraction: 0.1",
                            "kind: link_down, target: {chip: [0, 0, 0], dir: y+}");
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), kKeptSlowdown + 900 * 0.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4450.0 + 980 + 450);
}

// On the full v4 pod under spare_cube the failure at 200 s swaps cube (1,2,3) for the spare: detected at 230 s,
// the OCS reconfiguration (0.1 s), relaunch and restore to 850.1 s. The swap replaces the cube's chips: a
// straggler among them ([4,8,12]) ends, one in another cube ([0,0,0]) goes on.
TEST(JobSlowdown, ACubeSwappedForASpareEndsTheSlowdownsOfItsChipsOnly) {
  for (const bool same_cube : {true, false}) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(R"(
name: spare
pod: v4-16x16x16
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: spare_cube, spare_cubes: 1}
faults:
  - {at: 200 s, kind: chip_down, target: [5, 9, 13]}
  - {at: 50.5 s, kind: straggler, clock_fraction: 0.5, target: )") + (same_cube ? "[4, 8, 12]}\n" : "[0, 0, 0]}\n"));
    const Topology topo = build_topology(s.pod, s.chip);
    const JobResult r = run_job(s, topo, slow_costs(1.5));
    ASSERT_EQ(r.events.size(), 2u);
    EXPECT_EQ(r.events[1].recovery, "spare_cube");
    EXPECT_NEAR(r.events[1].resumed.value(), 850.1, 1e-9);
    EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), same_cube ? 1.0 : 1.5);
    EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), kKeptSlowdown + (same_cube ? 0 : 900 * 0.5));
    EXPECT_NEAR(r.wall.value(), 850.1 + 980 + (same_cube ? 0 : 450), 1e-9);
    EXPECT_NEAR(sum_of_parts(r), r.wall.value(), 1e-9);
  }
}

// A chip found at a relaunch together with another (ChipsFoundAtOneRelaunchAreRepairedTogether in
// job_timeline_test: both repaired, resuming at 8720 s) ends its straggler too. Chip [0,0,0] straggles from
// 150.5 s (step 140 on, 60 slow steps to the checkpoint at 240 s), chip [1,2,3] fails at 252.5 s (1 s into step
// 201, itself 1.5 s: 2.5 s lost), [3,2,1] during its repair, [0,0,0] during its relaunch. The 800 steps left and
// their 7 checkpoints run at the healthy step.
TEST(JobSlowdown, AChipFoundAtTheRelaunchWithAnotherNoLongerStragglesOnceRepaired) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + R"(faults:
  - {at: 150.5 s, kind: straggler, target: [0, 0, 0], clock_fraction: 0.5}
  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}
  - {at: 1000.5 s, kind: chip_down, target: [3, 2, 1]}
  - {at: 4470.5 s, kind: chip_down, target: [0, 0, 0]}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, slow_costs(1.5));
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events[3].recovery, "checkpoint_restart, found at the relaunch");
  EXPECT_DOUBLE_EQ(r.events[3].resumed.value(), 8720.0);
  EXPECT_DOUBLE_EQ(r.events[2].step_after.value(), 1.5);  // [3,2,1]'s repair leaves [0,0,0] straggling
  EXPECT_DOUBLE_EQ(r.events[3].step_after.value(), 1.0);
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 2.5);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 60 * 0.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 8720.0 + 870);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// Under reroute the cable routed around at 10.5 s slows the steps to 1.25 s until the second x cable of the 2x2x1
// slice splits it at 60.5 s (CablesThatSplitThePodUnderRerouteRestartAfterTheirRepair in job_timeline_test): the
// restart after their repair brings both cables back, so the job, again from step 0 (no checkpoint yet), runs its
// 1000 steps and 9 checkpoints at the healthy step from 4290 s.
TEST(JobSlowdown, CablesRepairedAfterASplitAreNoLongerRoutedAround) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(jobtest::kSplitPodJob);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, slow_costs(1.25));
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_DOUBLE_EQ(r.events[0].step_after.value(), 1.25);
  EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), 1.0);
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 10 + 16 * 1.25 + 0.5);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4290.0 + 1090);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

}  // namespace
}  // namespace tpusim::models
