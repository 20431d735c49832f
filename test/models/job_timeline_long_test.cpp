// Long jobs on the job timeline (tpusim/models/job.h): whole checkpoint intervals are composed in closed form, so
// a job of 2^63 steps with a checkpoint after each takes no longer than a short one and keeps its faults' exact
// times; Ctrl-C and SIGTERM stop a timeline; faults that land by the million in a recovery stop the job at the
// cap instead of filling memory; what the job was doing when a fault landed is reported. Pure C++ (no SystemC).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <limits>
#include <string>

#include "support/scenario_yaml.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

// A step and a checkpoint write of half a second each (an interval of one step and its write is 1 s), a 20 s
// restore.
JobCosts half_second_costs() {
  JobCosts c;
  c.step = Seconds(0.5);
  c.checkpoint_write = Seconds(0.5);
  c.checkpoint_restore = Seconds(20);
  return c;
}

// A checkpoint after every step; job.steps is set by each test.
constexpr const char* kEveryStep = R"(
name: long-job
pod: v4-2x2x1
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 1}}
job: {heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s}
)";

Scenario every_step_job(std::int64_t steps, const std::string& faults = "") {
  return ::tpusim::testing::scenario_from_yaml(std::string(kEveryStep) + faults,
                                               {"job.steps=" + std::to_string(steps)});
}

// 2^63 - 1 steps, each followed by a checkpoint but the last: 2^63 - 2 writes. The intervals after the first
// 100,000 (walked one by one: their start times are recorded) are composed at once, so this takes microseconds
// where a loop over them took centuries. In doubles the wall time is 2^63 - 0.5 s rounded: 2^63 s.
TEST(JobTimelineLong, AJobOfTwoToTheSixtyThreeStepsWithACheckpointAfterEachIsComposedInClosedForm) {
  constexpr std::int64_t kSteps = std::numeric_limits<std::int64_t>::max();
  const Scenario s = every_step_job(kSteps);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, half_second_costs());
  EXPECT_EQ(r.steps, kSteps);
  EXPECT_EQ(r.steps_done, kSteps);
  EXPECT_EQ(r.checkpoints, kSteps - 1);
  EXPECT_EQ(r.wall.value(), 0x1p63);
  EXPECT_DOUBLE_EQ(r.goodput, 0.5);
  EXPECT_EQ(r.checkpoint_writes.size(), kMaxRecordedCheckpoints);
  EXPECT_EQ(r.checkpoint_writes.back().value(), 99999.5);  // the 100,000th write: after 100,000 steps of 0.5 s
}

// 2^40 + 1 steps (a checkpoint after each but the last): 2^40 + 0.5 s without faults, every sum exact in doubles.
// A chip fails at 10^12 s + 0.25 s: 10^12 intervals of 1 s are done, the fault is 0.25 s into step 10^12 (its
// landed: step), detected at 10^12 + 30 s (heartbeat at 10^12 s, timeout 30 s), back after repair, restart and
// the restore at 10^12 + 4250 s; lost: the 0.25 s of the step. Another fails 0.75 s later, in the write after
// the first step since (its landed: checkpoint_write): that write is lost with the step before it, 0.75 s;
// detected at 10^12 + 4280 s, back at 10^12 + 8500 s. Each fault adds 4250 s to the job.
TEST(JobTimelineLong, FaultsInAHugeJobLandAtTheirExactStepAndCheckpointWrite) {
  const Scenario s = every_step_job((std::int64_t{1} << 40) + 1, R"(faults:
  - {at: 1000000000000.25 s, kind: chip_down, target: [1, 0, 0]}
  - {at: 1000000004250.75 s, kind: chip_down, target: [0, 1, 0]}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, half_second_costs());
  ASSERT_EQ(r.events.size(), 2u);
  const FaultEvent& step = r.events[0];
  EXPECT_EQ(step.landed, FaultLanded::step);
  EXPECT_EQ(step.step, 1'000'000'000'000);
  EXPECT_EQ(step.step_started.value(), 1e12);
  EXPECT_EQ(step.lost_work.value(), 0.25);
  EXPECT_EQ(step.detected.value(), 1e12 + 30);
  EXPECT_EQ(step.resumed.value(), 1e12 + 4250);
  const FaultEvent& write = r.events[1];
  EXPECT_EQ(write.landed, FaultLanded::checkpoint_write);
  EXPECT_EQ(write.step, 1'000'000'000'001);  // the steps done before the write
  EXPECT_EQ(write.step_started.value(), 1e12 + 4250.5);
  EXPECT_EQ(write.lost_work.value(), 0.75);
  EXPECT_EQ(write.detected.value(), 1e12 + 4280);
  EXPECT_EQ(write.resumed.value(), 1e12 + 8500);
  EXPECT_EQ(r.steps_done, (std::int64_t{1} << 40) + 1);
  EXPECT_EQ(r.checkpoints, std::int64_t{1} << 40);
  EXPECT_EQ(r.wall.value(), 0x1p40 + 0.5 + 8500);
  EXPECT_EQ(r.losses.checkpoint.value(), 0x1p39);
  EXPECT_EQ(r.losses.lost_work.value(), 1.0);
  EXPECT_EQ(r.losses.detection.value(), 29.75 + 29.25);
}

// Ctrl-C and SIGTERM (core/interrupt.h) stop the timeline: it throws Interrupted, which the tool turns into
// exit 130 or 143 with nothing written.
TEST(JobTimelineLong, AnInterruptStopsTheTimeline) {
  const Scenario s = every_step_job(1000);
  const Topology topo = build_topology(s.pod, s.chip);
  simulate_interrupt(SIGTERM);
  try {
    (void)run_job(s, topo, half_second_costs());
    ADD_FAILURE() << "the timeline ran on after SIGTERM";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.exit_code(), 143);
  }
  simulate_interrupt(0);
}

// An OCS port fails every microsecond on a v4 cube (96 ports, one failing every 1 us each: 9.6e7 faults/s). The
// first one's recovery (an hour's repair) meets them by the million while the job is down: the job stops at the
// cap of faults a job meets (kMaxJobFaults), as it does between steps, instead of holding each one found.
TEST(JobTimelineLong, FaultsByTheMillionDuringARecoveryStopTheJobAtTheCap) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: port-storm
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}
job: {duration: 365 d}
fault_rates: {ocs_port_down: 1 us}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  try {
    (void)run_job(s, topo, half_second_costs());
    ADD_FAILURE() << "the job ran to its end";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the job met 1000000 faults and has done 0 of ", 0), 0u) << e.what();
  }
}

// The rate of random faults each kind draws on a v4 cube: 64 chips, 192 cables, 96 OCS ports (the 48 wraparound
// cables are optical, two ports each), 16 hosts, each over its mean time between failures.
TEST(JobTimelineLong, RandomFaultSourcesCountEveryComponentOfEachKind) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: sources
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64}
fault_rates: {chip_down: 64 h, link_down: 0 s, ocs_port_down: 1 h, host_down: 16 s}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  const std::vector<RandomFaultSource> sources = random_fault_sources(s, topo);
  ASSERT_EQ(sources.size(), 4u);
  EXPECT_EQ(sources[0].kind, FaultKind::chip_down);
  EXPECT_EQ(sources[0].components, 64u);
  EXPECT_DOUBLE_EQ(sources[0].per_second, 1.0 / 3600);
  EXPECT_EQ(sources[1].kind, FaultKind::link_down);
  EXPECT_EQ(sources[1].components, 192u);
  EXPECT_EQ(sources[1].per_second, 0.0);
  EXPECT_EQ(sources[2].kind, FaultKind::ocs_port_down);
  EXPECT_EQ(sources[2].components, 96u);
  EXPECT_DOUBLE_EQ(sources[2].per_second, 96.0 / 3600);
  EXPECT_EQ(sources[3].kind, FaultKind::host_down);
  EXPECT_EQ(sources[3].components, 16u);
  EXPECT_DOUBLE_EQ(sources[3].per_second, 1.0);
}

}  // namespace
}  // namespace tpusim::models
