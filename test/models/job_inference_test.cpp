// A job whose step trains nothing (decode, prefill, forward; tpusim/models/job.h keeps_every_step): every step it
// completes is kept, so a fault that stops a component loses only the step in flight, and its recovery reads no
// checkpoint. Costs given by hand (a 1 s step, a 20 s restore that must not be read), closed forms throughout.
#include <gtest/gtest.h>

#include <string>

#include "job_test_support.h"
#include "support/scenario_yaml.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

using jobtest::round_costs;
using jobtest::sum_of_parts;

// 1000 decode steps on a v5e 2x2, heartbeats every 5 s, a 30 s timeout, a 600 s restart and a 3600 s repair; chip
// [1,1] stops at 252.5 s, half-way through step 252 (last heard at 250 s, declared failed at 280 s).
constexpr const char* kDecodeJob = R"(
name: serve
pod: v5e-2x2
workload: {model: llama2-7b, batch: 4, step: decode, context: 1024, mesh: {tensor: 4}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s}
faults:
  - {at: 252.5 s, kind: chip_down, target: [1, 1]}
)";

JobResult run(const std::string& yaml, const std::vector<std::string>& sets = {}, JobCosts costs = round_costs()) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(yaml, sets);
  return run_job(s, build_topology(s.pod, s.chip), costs);
}

TEST(InferenceJob, ARestartLosesOnlyTheStepInFlightAndReadsNoCheckpoint) {
  const JobResult r = run(kDecodeJob, {"job.recovery=checkpoint_restart"});
  ASSERT_EQ(r.events.size(), 1u);
  const FaultEvent& e = r.events[0];
  EXPECT_EQ(e.recovery, "checkpoint_restart");
  EXPECT_EQ(e.step, 252);
  EXPECT_DOUBLE_EQ(e.detected.value(), 280.0);
  // The 252 steps served are kept: only the half of step 252 done before the stop is lost (before: all 252.5 s).
  EXPECT_DOUBLE_EQ(e.lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(e.stages.repair.value(), 3600.0);
  EXPECT_DOUBLE_EQ(e.stages.restart.value(), 600.0);
  EXPECT_DOUBLE_EQ(e.stages.restore.value(), 0.0);  // no state to read back: the relaunch loads the weights
  EXPECT_DOUBLE_EQ(e.downtime.value(), 27.5 + 3600 + 600);
  EXPECT_DOUBLE_EQ(e.resumed.value(), 280.0 + 3600 + 600);
  const JobLosses& l = r.losses;
  EXPECT_DOUBLE_EQ(l.lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(l.detection.value(), 27.5);
  EXPECT_DOUBLE_EQ(l.repair.value(), 3600.0);
  EXPECT_DOUBLE_EQ(l.restart.value(), 600.0);
  EXPECT_DOUBLE_EQ(l.restore.value(), 0.0);
  EXPECT_DOUBLE_EQ(l.checkpoint.value(), 0.0);
  // The job goes on from step 252: the other 748 steps after the resumption.
  EXPECT_EQ(r.steps_done, 1000);
  EXPECT_DOUBLE_EQ(r.wall.value(), 1000 + 0.5 + 27.5 + 3600 + 600);
  EXPECT_NEAR(r.goodput, 1000.0 / 5228.0, 1e-12);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

TEST(InferenceJob, UnderFailTheStepsServedBeforeTheFaultAreKept) {
  const JobResult r = run(kDecodeJob, {"job.recovery=fail"});
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(r.steps_done, 252);  // before: 0, as if a training job rolled back to its start
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 27.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 280.0);
  EXPECT_NEAR(r.goodput, 252.0 / 280.0, 1e-12);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

TEST(InferenceJob, SlowStepsBeforeTheFaultStaySlowdownNotLostWork) {
  // Chip [1,1] straggles from 100 s (2 s steps); it stops at 300.5 s, half-way through step 200 (100 fast steps
  // and 100 slow ones done), last heard at 300 s, declared failed at 330 s. Its repair ends the straggler.
  std::string yaml = kDecodeJob;
  yaml.replace(yaml.find("  - {at: 252.5 s"), std::string::npos,
               "  - {at: 100 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}\n"
               "  - {at: 300.5 s, kind: chip_down, target: [1, 1]}\n");
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(2); };
  const JobResult r = run(yaml, {"job.recovery=checkpoint_restart"}, costs);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[1].step, 200);
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 0.5);
  const JobLosses& l = r.losses;
  EXPECT_DOUBLE_EQ(l.slowdown.value(), 100.0);  // the 100 slow steps were served: charged as they ran
  EXPECT_DOUBLE_EQ(l.lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(l.detection.value(), 29.5);
  // 300.5 s to the stop, the recovery, then the 800 steps left at the healthy step.
  EXPECT_DOUBLE_EQ(r.wall.value(), 300.5 + 29.5 + 3600 + 600 + 800);
  EXPECT_NEAR(r.goodput, 1000.0 / 5330.0, 1e-12);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

TEST(InferenceJob, ASpareCubeSwapReadsNoCheckpointEither) {
  // A forward step on a v4 pod of 64 cubes with a spare: chip [5,9,13]'s cube is switched out (one OCS
  // reconfiguration, 0.1 s), the job relaunched, and nothing read back; the 252 steps before the fault are kept.
  const JobResult r = run(R"(
name: serve
pod: v4-16x16x16
workload: {model: mlp-quickstart, batch: 64, step: forward}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: spare_cube,
      spare_cubes: 1}
faults:
  - {at: 252.5 s, kind: chip_down, target: [5, 9, 13]}
)");
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].recovery, "spare_cube");
  const JobLosses& l = r.losses;
  EXPECT_DOUBLE_EQ(l.lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(l.restore.value(), 0.0);
  EXPECT_DOUBLE_EQ(l.repair.value(), 0.0);
  EXPECT_NEAR(l.reconfiguration.value(), 0.1, 1e-9);
  EXPECT_NEAR(r.wall.value(), 1000 + 0.5 + 27.5 + 0.1 + 600, 1e-9);
  EXPECT_NEAR(r.goodput, 1000.0 / 1628.1, 1e-12);
  EXPECT_EQ(r.steps_done, 1000);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

}  // namespace
}  // namespace tpusim::models
