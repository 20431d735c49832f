// The job timeline (tpusim/models/job.h): checkpoints, detection, the recovery policies and goodput, composed
// from step and checkpoint costs given by hand. Pure C++ (no SystemC): scenarios are read from YAML written
// here, costs are round numbers so every expectation is a closed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "tpusim/models/failed_cables.h"
#include "job_test_support.h"
#include "net/ocs.h"
#include "support/scenario_yaml.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

using jobtest::kCubeJob;
using jobtest::round_costs;
using jobtest::sum_of_parts;

// A long random job: every step done, the wall time exactly its useful time and losses (to rounding).
void expect_done_and_accounted(const JobResult& r, std::int64_t steps) {
  EXPECT_EQ(r.steps_done, steps);
  EXPECT_NEAR(sum_of_parts(r), r.wall.value(), 1e-9 * r.wall.value());
}

TEST(JobTimeline, WithoutFaultsTheJobIsItsStepsAndCheckpoints) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kCubeJob);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  // 1000 steps of 1 s and a checkpoint after every 100th step but the last: 9 x 10 s.
  EXPECT_EQ(r.steps_done, 1000);
  EXPECT_EQ(r.checkpoints, 9);
  EXPECT_DOUBLE_EQ(r.wall.value(), 1090.0);
  EXPECT_DOUBLE_EQ(r.goodput, 1000.0 / 1090.0);
  EXPECT_TRUE(r.events.empty());
}

TEST(JobTimeline, CheckpointRestartCostsDetectionRepairRestartRestoreAndTheWorkSinceTheCheckpoint) {
  // Checkpoints end at 110 s and 220 s; at 252.5 s 32 steps have run since and the 33rd is half done. Heartbeats every 5 s: the last one
  // before 252.5 s was at 250 s, so the chip is declared failed at 280 s.
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + "faults: [{at: 252.5 s, kind: chip_down, target: [1, 2, 3]}]\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 1u);
  const FaultEvent& e = r.events[0];
  EXPECT_EQ(e.recovery, "checkpoint_restart");
  EXPECT_EQ(e.step, 232);
  EXPECT_DOUBLE_EQ(e.detected.value(), 280.0);
  EXPECT_DOUBLE_EQ(e.lost_work.value(), 32.5);
  EXPECT_DOUBLE_EQ(e.resumed.value(), 280.0 + 3600 + 600 + 20);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 27.5);
  // The fault-free 1090 s, plus everything between the last checkpoint and the resumption.
  EXPECT_DOUBLE_EQ(r.wall.value(), 1090.0 + 32.5 + 27.5 + 3600 + 600 + 20);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
}

TEST(JobTimeline, FailStopsTheJobAtDetectionAndLosesTheWorkSinceTheCheckpoint) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + "faults: [{at: 252.5 s, kind: host_down, target: {host: 3}}]\n",
                                   {"job.recovery=fail"});
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(r.steps_done, 200);
  EXPECT_DOUBLE_EQ(r.wall.value(), 280.0);
  EXPECT_DOUBLE_EQ(r.goodput, 200.0 / 280.0);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.events.at(0).recovery, "failed");
}

TEST(JobTimeline, RerouteKeepsTheWorkStallsUntilDetectionAndRunsAtTheReroutedStepTime) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) + "faults: [{at: 252.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}]\n",
      {"job.recovery=reroute"});
  const Topology topo = build_topology(s.pod, s.chip);
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
  const JobResult r = run_job(s, topo, costs);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].recovery, "reroute");
  EXPECT_EQ(r.events[0].fault.link, *topo.out_link(ChipId(0), 1, -1));
  EXPECT_DOUBLE_EQ(r.events[0].step_after.value(), 1.25);
  // The step in flight (from 252 s) stalls 27.5 s from the fault and runs again from its start at 1.25 s, as
  // do the 767 steps after it: its first 0.5 s are lost (before, they were left out of the wall time).
  EXPECT_DOUBLE_EQ(r.events[0].lost_work.value(), 0.5);
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 280.0);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 768 * 0.25);
  EXPECT_DOUBLE_EQ(r.wall.value(), 1090.0 + 0.5 + 27.5 + 768 * 0.25);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// The same fault with the step in flight simulated with the cable failing at its tick (JobCosts::step_hit, here
// by hand: 29 s, as if its lost transfers waited for the detection 27.5 s after the tick): the step in flight
// (from 252 s, the fault 0.5 s into it, detected 28 s after its start) completes at 252 + 29 s and counts; its
// excess over the step, 28 s, is charged to detection (job.in_flight: lose), or to slowdown (retransmit); the
// 767 steps after it run at 1.25 s.
TEST(JobTimeline, RerouteWithTheHitStepSimulatedChargesItsExcessAndKeepsIt) {
  for (const char* policy : {"lose", "retransmit"}) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(
        std::string(kCubeJob) + "faults: [{at: 252.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}]\n",
        {"job.recovery=reroute", std::string("job.in_flight=") + policy});
    const Topology topo = build_topology(s.pod, s.chip);
    JobCosts costs = round_costs();
    costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
    double offset = -1, detection = -1;
    costs.step_hit = [&](const ConcreteFault&, Seconds at, Seconds detected,
                         const std::vector<ConcreteFault>& lasting) -> std::optional<Seconds> {
      EXPECT_TRUE(lasting.empty());
      offset = at.value();
      detection = detected.value();
      return Seconds(29);
    };
    const JobResult r = run_job(s, topo, costs);
    ASSERT_EQ(r.events.size(), 1u);
    const FaultEvent& e = r.events[0];
    EXPECT_DOUBLE_EQ(offset, 0.5);
    EXPECT_DOUBLE_EQ(detection, 28.0);
    EXPECT_DOUBLE_EQ(e.step_started.value(), 252.0);
    EXPECT_DOUBLE_EQ(e.step_hit.value(), 29.0);
    EXPECT_DOUBLE_EQ(e.resumed.value(), 281.0);
    EXPECT_DOUBLE_EQ(e.downtime.value(), 28.0);
    EXPECT_DOUBLE_EQ(e.lost_work.value(), 0.0);
    const bool lose = std::string(policy) == "lose";
    // Under retransmit the routes change at the tick: detected then, before the job resumes (it read 280 s).
    EXPECT_DOUBLE_EQ(e.detected.value(), lose ? 280.0 : 252.5);
    EXPECT_LE(e.detected.value(), e.resumed.value());
    EXPECT_DOUBLE_EQ(r.losses.detection.value(), lose ? 28.0 : 0.0);
    EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 767 * 0.25 + (lose ? 0.0 : 28.0));
    EXPECT_DOUBLE_EQ(r.wall.value(), 1090.0 + 28.0 + 767 * 0.25);
    EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
    EXPECT_EQ(r.steps_done, 1000);
  }
}

// Chip [1,1,1] of the 4x4x4 cube loses its six cables one by one under reroute (faults at 0.5 s past a heartbeat:
// each is detected 29.5 s after it, 0.5 s into a step). The first five are routed around: each stalls the step
// in flight until its detection and runs it again, its first 0.5 s lost (steps 10, 20, 30, 60 and 70). The
// sixth, at 300.5 s, cuts the chip off: no route reaches it, so it is the chip failing, and reroute's
// recovery of a chip applies: restart after repair from the checkpoint written at 260 s (after step 100), the
// 40 steps since it and 0.5 s of step 140 lost.
TEST(JobTimeline, ACableThatCutsAChipOffUnderRerouteFailsTheChipAndRestartsFromTheCheckpoint) {
  std::string yaml = std::string(kCubeJob) + "faults:\n";
  const char* dirs[] = {"x+", "x-", "y+", "y-", "z+", "z-"};
  const double at[] = {10.5, 50.5, 90.5, 150.5, 190.5, 300.5};
  for (int i = 0; i < 6; ++i) {
    yaml += fmt::format("  - {{at: {} s, kind: link_down, target: {{chip: [1, 1, 1], dir: {}}}}}\n", at[i], dirs[i]);
  }
  const Scenario s = ::tpusim::testing::scenario_from_yaml(yaml, {"job.recovery=reroute"});
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.events[static_cast<std::size_t>(i)].recovery, "reroute") << i;
    EXPECT_DOUBLE_EQ(r.events[static_cast<std::size_t>(i)].lost_work.value(), 0.5) << i;
  }
  const FaultEvent& cut = r.events[5];
  EXPECT_EQ(cut.recovery, "checkpoint_restart (chip [1,1,1] cut off: every cable down)");
  EXPECT_EQ(cut.step, 140);
  EXPECT_DOUBLE_EQ(cut.detected.value(), 330.0);
  EXPECT_DOUBLE_EQ(cut.lost_work.value(), 40.5);
  EXPECT_DOUBLE_EQ(cut.resumed.value(), 330.0 + 3600 + 600 + 20);
  // From 4550 s the 900 steps left and 8 checkpoints.
  EXPECT_DOUBLE_EQ(r.wall.value(), 4550.0 + 900 + 80);
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 43.0);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 6 * 29.5);
  EXPECT_DOUBLE_EQ(r.losses.repair.value(), 3600.0);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
  EXPECT_FALSE(r.failed);
}

// Both x cables of the 2x2x1 slice (under reroute) split it into its x = 0 and x = 1 columns, no chip alone:
// the second, at 60.5 s, is met as the pod split (the columns cannot reach each other; a timed plan that does
// this is refused before the run, tools/src/preflight.cpp, so here it stands for random draws): restart after
// repair from the start (no checkpoint yet, so no restore), the 30 steps since the first fault's rerun and 0.5 s
// lost.
TEST(JobTimeline, CablesThatSplitThePodUnderRerouteRestartAfterTheirRepair) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(jobtest::kSplitPodJob);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].recovery, "reroute");
  EXPECT_EQ(r.events[1].recovery,
            "checkpoint_restart (pod split by 2 cables down: 2 chips [1,0,0] to [1,1,0] cut off from the other 2)");
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 30.5);
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 90.0 + 3600 + 600);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 2 * 29.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4290.0 + 1000 + 90);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// A link that fails while the step stalls for another's detection is still routed around (or fails its chip):
// it is met when the job runs again, detected from its own heartbeat (before, it was recorded as "during
// recovery" and forgotten). The first at 10.5 s stalls step 10 until 40 s (the step runs again from its start);
// the second, at 20.5 s, is detected at 50 s: the job stalls again from 40 s to 50 s.
TEST(JobTimeline, ALinkFailingDuringARerouteStallIsRoutedAroundWhenTheJobRunsAgain) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
          "faults:\n  - {at: 10.5 s, kind: link_down, target: {chip: [1, 1, 1], dir: x+}}\n"
          "  - {at: 20.5 s, kind: link_down, target: {chip: [2, 2, 2], dir: y+}}\n",
      {"job.recovery=reroute"});
  const Topology topo = build_topology(s.pod, s.chip);
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault& f) { return Seconds(f.spec.index == 0 ? 1.25 : 1.5); };
  const JobResult r = run_job(s, topo, costs);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[1].recovery, "reroute");
  EXPECT_DOUBLE_EQ(r.events[1].detected.value(), 50.0);
  EXPECT_DOUBLE_EQ(r.events[1].step_after.value(), 1.5);
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 50.0);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 29.5 + 10);
  // Every step from step 10 on runs at the slower rerouted step, 1.5 s.
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 990 * 0.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 1090.0 + 0.5 + 29.5 + 10 + 990 * 0.5);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// Random link failures under reroute on the 2x2x1 slice, dense enough that faults land in the recoveries of
// others: the cable that cuts a chip off is met as the chip failing (a restart from the checkpoint), never a
// "reroute" with the chip unreachable; the restart's repair brings the chip's cables back; a cable that fails
// while the job is down is found at the relaunch and routed around (or cuts a chip off) then; one already
// routed around costs nothing. Checked event by event against the cables each event has taken down. (On main
// every fault landing in a restart's repair was "during recovery" at no cost.)
TEST(ConcreteFault, ARandomTargetNamesTheComponentItsKindStrikes) {
  // The catalogue (core's fault_kinds()) says what each kind strikes: a chip, a link (degraded ones too), a
  // host. The draw is seeded: the same seed gives the same component.
  const Scenario s = ::tpusim::testing::scenario_from_yaml("name: t\npod: v4-2x2x1\nworkload: {model: mlp-quickstart}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const auto drawn = [&](FaultKind kind) {
    FaultSpec spec;
    spec.kind = kind;
    spec.target.random = true;
    return concrete_fault(spec, topo, 7);
  };
  for (FaultKind kind : {FaultKind::link_down, FaultKind::link_degraded}) {
    const ConcreteFault f = drawn(kind);
    EXPECT_EQ(topo.link(f.link).src, f.chip);
    EXPECT_EQ(f.target(), fmt::format("random: chip {} link {}", f.chip.value(), f.link.value()));
    EXPECT_EQ(drawn(kind).target(), f.target());
  }
  for (FaultKind kind : {FaultKind::chip_down, FaultKind::straggler, FaultKind::hbm_degraded}) {
    const ConcreteFault f = drawn(kind);
    EXPECT_LT(f.chip.value(), topo.chip_count());
    EXPECT_EQ(f.target(), fmt::format("random: chip {}", f.chip.value()));
  }
  const ConcreteFault h = drawn(FaultKind::host_down);
  EXPECT_EQ(h.target(), fmt::format("random: host {}", h.host.value()));
  EXPECT_EQ(topo.host_of(h.chip), h.host);
}

// Two v4 2x2x2 pods of two hosts each (2x2x1 chips a host), a job of 1000 steps as kCubeJob's.
constexpr const char* kTwoPodJob = R"(
name: job-test
pod: {name: v4-2x2x2x2, chip: v4, shape: [2, 2, 2], wraparound: [0, 0, 0], host_shape: [2, 2, 1], pods: 2}
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s}
)";

// A target's coordinates and host index are those within its pod: pod 1's chip, link and host are struck (before,
// every timed fault struck pod 0's), and the target names its pod. The list form is pod 0.
TEST(ConcreteFault, ATargetOnPodOneStrikesPodOnesChipLinkAndHost) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kTwoPodJob) + R"(faults:
  - {at: 1 s, kind: chip_down, target: {chip: [1, 0, 0], pod: 1}}
  - {at: 2 s, kind: link_down, target: {chip: [1, 0, 0], dir: y+, pod: 1}}
  - {at: 3 s, kind: host_down, target: {host: 1, pod: 1}}
  - {at: 4 s, kind: chip_down, target: [1, 0, 0]}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  ASSERT_EQ(topo.chips_per_pod(), 8u);
  ASSERT_EQ(topo.host_count(), 4u);
  const auto& plan = s.faults.faults;
  const ConcreteFault chip = concrete_fault(plan[0], topo, s.seed);
  EXPECT_EQ(chip.chip.value(), 9u);  // pod 1's chip x = 1: 8 + 1
  EXPECT_EQ(topo.coord(chip.chip).pod, 1);
  EXPECT_EQ(chip.host.value(), 2u);  // pod 1's first host
  EXPECT_EQ(chip.pod, 1);
  EXPECT_EQ(chip.target(), "[1,0,0] of pod 1");
  const ConcreteFault link = concrete_fault(plan[1], topo, s.seed);
  EXPECT_EQ(topo.link(link.link).src.value(), 9u);
  EXPECT_EQ(topo.link(link.link).dst.value(), 11u);  // [1,1,0] of pod 1
  EXPECT_EQ(topo.link(link.link).axis, 1);
  EXPECT_EQ(link.target(), "[1,0,0] y+ of pod 1");
  const ConcreteFault host = concrete_fault(plan[2], topo, s.seed);
  EXPECT_EQ(host.host.value(), 3u);
  EXPECT_EQ(topo.chips_of(host.host), (std::vector<ChipId>{ChipId(12), ChipId(13), ChipId(14), ChipId(15)}));
  EXPECT_EQ(host.target(), "host 1 of pod 1");
  const ConcreteFault list = concrete_fault(plan[3], topo, s.seed);
  EXPECT_EQ(list.chip.value(), 1u);
  EXPECT_EQ(list.target(), "[1,0,0] of pod 0");
  // The same fault in a scenario of one pod reads as before.
  const Scenario one = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) + "faults: [{at: 1 s, kind: chip_down, target: [1, 0, 0]}]\n");
  const Topology cube = build_topology(one.pod, one.chip);
  const ConcreteFault alone = concrete_fault(one.faults.faults[0], cube, one.seed);
  EXPECT_EQ(alone.pod, -1);
  EXPECT_EQ(alone.target(), "[1,0,0]");
}

// The job's recovery on pod 1's chip costs what it costs on pod 0's: the pods are identical.
TEST(JobTimeline, AChipDownOnPodOneCostsTheJobWhatTheSameChipOfPodZeroDoes) {
  auto run = [](const std::string& target) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kTwoPodJob) +
                                                             "faults: [{at: 252.5 s, kind: chip_down, target: " +
                                                             target + "}]\n");
    const Topology topo = build_topology(s.pod, s.chip);
    return run_job(s, topo, round_costs());
  };
  const JobResult zero = run("{chip: [1, 0, 0], pod: 0}"), one = run("{chip: [1, 0, 0], pod: 1}");
  ASSERT_EQ(zero.events.size(), 1u);
  ASSERT_EQ(one.events.size(), 1u);
  EXPECT_EQ(zero.events[0].fault.chip.value(), 1u);
  EXPECT_EQ(one.events[0].fault.chip.value(), 9u);
  EXPECT_EQ(one.events[0].fault.target(), "[1,0,0] of pod 1");
  EXPECT_EQ(one.events[0].recovery, "checkpoint_restart");
  EXPECT_DOUBLE_EQ(one.wall.value(), 1090.0 + 32.5 + 27.5 + 3600 + 600 + 20);  // as on one cube, above
  EXPECT_DOUBLE_EQ(one.wall.value(), zero.wall.value());
  EXPECT_DOUBLE_EQ(one.events[0].lost_work.value(), zero.events[0].lost_work.value());
}

// Random targets and fault rates draw among every pod's components, and a drawn target names its pod; the ids
// are the multislice's.
TEST(ConcreteFault, RandomTargetsAndRatesDrawAmongEveryPodsComponents) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kTwoPodJob) +
                                                           "fault_rates: {chip_down: 16000 s, host_down: 4000 s}\n",
                                                           {"job.steps=1000000", "job.restart=0 s", "job.repair=0 s"});
  const Topology topo = build_topology(s.pod, s.chip);
  const std::vector<RandomFaultSource> sources = random_fault_sources(s, topo);
  EXPECT_EQ(sources[0].components, 16u);  // both pods' chips
  EXPECT_EQ(sources[3].components, 4u);   // and hosts
  EXPECT_DOUBLE_EQ(sources[0].per_second, 16.0 / 16000);
  std::set<int> pods_hit;
  for (std::int64_t seed = 0; seed < 16; ++seed) {
    FaultSpec spec;
    spec.kind = FaultKind::chip_down;
    spec.target.random = true;
    const ConcreteFault f = concrete_fault(spec, topo, seed);
    EXPECT_EQ(f.pod, topo.coord(f.chip).pod);
    EXPECT_EQ(f.target(), fmt::format("random: chip {} in pod {}", f.chip.value(), f.pod));
    pods_hit.insert(f.pod);
  }
  EXPECT_EQ(pods_hit, (std::set<int>{0, 1}));
  const JobResult r = run_job(s, topo, round_costs());
  std::array<int, 2> chips{}, hosts{};
  for (const FaultEvent& e : r.events) {
    const int pod = topo.coord(e.fault.chip).pod;
    EXPECT_EQ(e.fault.pod, pod);
    (e.fault.spec.kind == FaultKind::host_down ? hosts : chips)[static_cast<std::size_t>(pod)]++;
    if (e.fault.spec.kind == FaultKind::host_down) {
      EXPECT_EQ(e.fault.target(), fmt::format("random: host {} in pod {}", e.fault.host.value(), pod));
    }
  }
  // About 1,000 chip faults and as many host faults over the job, half on each pod: each pod's share within 15%
  // of half (more than 4 standard deviations).
  const double half_chips = (chips[0] + chips[1]) / 2.0, half_hosts = (hosts[0] + hosts[1]) / 2.0;
  for (std::size_t pod = 0; pod < 2; ++pod) {
    EXPECT_NEAR(chips[pod], half_chips, 0.15 * half_chips);
    EXPECT_NEAR(hosts[pod], half_hosts, 0.15 * half_hosts);
  }
  EXPECT_GT(half_chips, 300);
  EXPECT_GT(half_hosts, 300);
}

TEST(JobTimeline, RandomLinkFailuresThatCutAChipOffRestartTheJobNeverReroute) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}\n"
      "job: {steps: 20000, heartbeat: 5 s, timeout: 30 s, restart: 60 s, repair: 600 s, recovery: reroute}\n"
      "fault_rates: {link_down: 2000 s}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  job::FailedCables oracle(topo);
  auto same_cable = [&topo](LinkId a, LinkId b) { return a == b || topo.link(a).reverse == b; };
  int cuts = 0, found = 0, unused = 0, joined = 0;
  for (const FaultEvent& e : r.events) {
    ASSERT_TRUE(e.fault.drawn);
    ASSERT_NE(e.recovery, "during recovery");
    if (e.recovery == "not in use (failed before: not yet found)") {
      // Its cable failed earlier while the job was down, and was found at the relaunch after it landed.
      const auto first = std::find_if(r.events.begin(), r.events.end(), [&](const FaultEvent& o) {
        return same_cable(o.fault.link, e.fault.link) &&
               o.recovery.find(", found at the relaunch") != std::string::npos &&
               o.fault.spec.at < e.fault.spec.at && o.step_started > e.fault.spec.at;
      });
      EXPECT_NE(first, r.events.end()) << e.fault.spec.at.value();
      ++unused;
      continue;
    }
    if (e.recovery.rfind("not in use", 0) == 0) {
      EXPECT_EQ(e.recovery, "not in use (cable routed around)");
      EXPECT_TRUE(oracle.down(e.fault.link)) << e.fault.spec.at.value() << " " << e.recovery;
      EXPECT_DOUBLE_EQ(e.lost_work.value(), 0.0);
      ++unused;
      continue;
    }
    ASSERT_FALSE(oracle.down(e.fault.link)) << e.fault.spec.at.value() << " " << e.recovery;
    const std::optional<std::vector<ChipId>> cut = oracle.fail(e.fault.link);
    const bool relaunch = e.recovery.find(", found at the relaunch") != std::string::npos;
    if (relaunch) {
      ++found;
      EXPECT_LT(e.fault.spec.at.value(), e.step_started.value());  // it landed while the job was down
      EXPECT_EQ(e.landed, FaultLanded::recovery);
    }
    // What the step (or checkpoint write) in flight had done; none for a fault met after a stall or a restore.
    if (e.recovery.find(", detected with the fault before it") != std::string::npos) {
      // Landed before an earlier fault that rolls back was detected: found by its own heartbeat and recovered
      // with that one, so it loses nothing more (the job goes back to the checkpoint once).
      ++joined;
      EXPECT_EQ(e.landed, FaultLanded::recovery);
      EXPECT_DOUBLE_EQ(e.lost_work.value(), 0.0);
      EXPECT_GE(e.detected.value(), e.fault.spec.at.value());
      EXPECT_GE(e.resumed.value(), e.detected.value());
      if (cut) oracle.repair_around(*cut);
      continue;
    }
    const double partial = std::max(0.0, (e.fault.spec.at - e.step_started).value());
    // Landed while the job was down (found at a relaunch) or stalled (a reroute's): before the step it is met in.
    const bool down = e.fault.spec.at < e.step_started;
    EXPECT_EQ(e.landed == FaultLanded::recovery, down) << e.fault.spec.at.value();
    if (!down && e.landed != FaultLanded::restore) {  // more than a step's 1 s in: in the write after it
      EXPECT_EQ(e.landed, partial >= 1.0 ? FaultLanded::checkpoint_write : FaultLanded::step)
          << e.fault.spec.at.value();
    }
    if (!cut) {
      EXPECT_EQ(e.recovery.rfind("reroute", 0), 0u) << e.fault.spec.at.value() << " " << e.recovery;
      EXPECT_DOUBLE_EQ(e.lost_work.value(), partial);
      continue;
    }
    ++cuts;
    EXPECT_EQ(e.recovery.rfind("checkpoint_restart (", 0), 0u) << e.recovery;
    EXPECT_NE(e.recovery.find("cut off"), std::string::npos) << e.recovery;
    // The steps since the checkpoint and the part of the step (or checkpoint write: more than a step's 1 s
    // into it) in flight are lost.
    const double since = partial >= 1.0 ? 100.0 : static_cast<double>(e.step % 100);
    EXPECT_DOUBLE_EQ(e.lost_work.value(), since + partial);
    // The repair and relaunch are paid (the restore too, unless a later fault interrupted it or was found first).
    EXPECT_GE(e.resumed.value(), e.detected.value() + 600 + 60) << e.fault.spec.at.value();
    EXPECT_LE(e.resumed.value(), e.detected.value() + 600 + 60 + 20) << e.fault.spec.at.value();
    oracle.repair_around(*cut);
  }
  EXPECT_GT(cuts, 0);
  EXPECT_GT(found, 0);
  EXPECT_GT(unused, 0);
  EXPECT_GT(joined, 0);  // cables that failed before an earlier cut was detected
  expect_done_and_accounted(r, 20000);
}

// Random chip failures under checkpoint_restart on the 2x2x1 slice (a chip every 750 s on average against a
// recovery of about 710 s), so that many land in another's recovery; checked event by event. On main every
// one landing in a repair or relaunch was "during recovery", free.
TEST(JobTimeline, RandomChipFailuresDuringRecoveriesAreFoundAtTheRelaunchOrNotInUse) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}\n"
      "job: {steps: 20000, heartbeat: 5 s, timeout: 30 s, restart: 60 s, repair: 600 s}\n"
      "fault_rates: {chip_down: 3000 s}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  int found = 0, unused = 0, alone = 0;
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const FaultEvent& e = r.events[i];
    ASSERT_NE(e.recovery, "during recovery");
    const double at = e.fault.spec.at.value();
    const double own = std::floor(at / 5) * 5 + 30;  // its heartbeat's timeout
    if (e.recovery == "not in use (failed before: in repair)") {
      // An earlier fault of the same chip is still in its repair (from its fault to detection + 600 s).
      bool covered = false;
      for (std::size_t j = 0; j < i; ++j) {
        const FaultEvent& o = r.events[j];
        covered |= o.fault.chip == e.fault.chip && o.recovery.rfind("checkpoint_restart", 0) == 0 &&
                   o.detected.value() + 600 > at;
      }
      EXPECT_TRUE(covered) << at;
      EXPECT_DOUBLE_EQ(e.downtime.value(), 0.0);
      ++unused;
      continue;
    }
    if (e.recovery.rfind("not in use", 0) == 0) {
      EXPECT_EQ(e.recovery, "not in use (failed before: not yet found)") << at;
      ++unused;
      continue;
    }
    EXPECT_EQ(e.recovery.rfind("checkpoint_restart", 0), 0u) << e.recovery;
    if (e.recovery.find(", found at the relaunch") != std::string::npos) {
      // Landed while the job was down; met when it started again, nothing more lost.
      ++found;
      EXPECT_LT(at, e.step_started.value());
      EXPECT_GE(e.detected.value(), std::max(e.step_started.value(), own) - 1e-9) << at;
      EXPECT_DOUBLE_EQ(e.lost_work.value(), 0.0);
      continue;
    }
    if (e.recovery == "checkpoint_restart") {
      ++alone;
      EXPECT_DOUBLE_EQ(e.detected.value(), std::max(at, own)) << at;
    }
    // Detection, repair and relaunch paid; the restore too unless a fault found or landing in it cut it short.
    EXPECT_GE(e.resumed.value(), e.detected.value() + 660 - 1e-9) << at;
    EXPECT_LE(e.resumed.value(), e.detected.value() + 680 + 1e-9) << at;
  }
  EXPECT_GT(found, 0);
  EXPECT_GT(unused, 0);
  EXPECT_GT(alone, 0);
  expect_done_and_accounted(r, 20000);
}

// The cables of one chip: the last to fail cuts it off (and only it); the repair around it brings all back.
// Every cable along x cuts the 2x2x1 slice into its two x = 0 and x = 1 columns: the side without the last
// cable's source is cut off.
TEST(FailedCables, TheLastCableOfAChipCutsItOffAndAllCablesAlongAnAxisSplitThePod) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      "name: cables\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  job::FailedCables cables(topo);
  const std::vector<LinkId> out = topo.out_links(ChipId(0));
  ASSERT_GE(out.size(), 2u);
  for (std::size_t i = 0; i + 1 < out.size(); ++i) EXPECT_EQ(cables.fail(out[i]), std::nullopt) << i;
  EXPECT_EQ(cables.fail(out.front()), std::nullopt);  // already down
  const auto alone = cables.fail(out.back());
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(*alone, std::vector<ChipId>{ChipId(0)});
  cables.repair_around(*alone);
  EXPECT_EQ(cables.size(), 0u);

  std::vector<LinkId> along_x;
  for (std::uint32_t i = 0; i < topo.link_count(); ++i) {
    if (topo.link(LinkId(i)).axis == 0) along_x.emplace_back(i);
  }
  std::optional<std::vector<ChipId>> split;
  LinkId last{};
  for (LinkId l : along_x) {
    split = cables.fail(l);
    last = l;
    if (split) break;
  }
  // Only the last of the x cables (each is two of the links) splits the slice.
  EXPECT_EQ(cables.size(), along_x.size() / 2);
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->size(), 2u);
  const int x = topo.coord(topo.link(last).dst).pos[0];
  for (ChipId c : *split) EXPECT_EQ(topo.coord(c).pos[0], x);
}

// A fault landing in a checkpoint write (the first runs from 100 s to 110 s) loses that checkpoint: under
// checkpoint_restart the job goes back to the start (no checkpoint to read: no restore), the 100 steps and the
// 5.5 s written lost, and the checkpoint is not counted; under reroute the write stalls until the detection and
// is written again from its start, the 5.5 s written lost.
TEST(JobTimeline, AFaultInACheckpointWriteLosesThatCheckpoint) {
  const std::string chip = std::string(kCubeJob) + "faults: [{at: 105.5 s, kind: chip_down, target: [1, 2, 3]}]\n";
  const Scenario s = ::tpusim::testing::scenario_from_yaml(chip);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].landed, FaultLanded::checkpoint_write);
  EXPECT_EQ(fault_landed_name(r.events[0].landed), "checkpoint_write");
  EXPECT_EQ(r.events[0].step, 100);
  EXPECT_DOUBLE_EQ(r.events[0].step_started.value(), 100.0);
  EXPECT_DOUBLE_EQ(r.events[0].lost_work.value(), 105.5);
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 135.0 + 3600 + 600);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 0.0);
  EXPECT_EQ(r.checkpoints, 9);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4335.0 + 1090);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());

  const Scenario link = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) + "faults: [{at: 105.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}]\n",
      {"job.recovery=reroute"});
  const JobResult l = run_job(link, topo, round_costs());
  ASSERT_EQ(l.events.size(), 1u);
  EXPECT_EQ(l.events[0].recovery, "reroute");
  EXPECT_EQ(l.events[0].landed, FaultLanded::checkpoint_write);
  EXPECT_DOUBLE_EQ(l.events[0].lost_work.value(), 5.5);
  EXPECT_DOUBLE_EQ(l.events[0].resumed.value(), 135.0);
  // Written again from 135 s to 145 s, then the 900 steps and 8 checkpoints left.
  EXPECT_EQ(l.checkpoints, 9);
  EXPECT_DOUBLE_EQ(l.wall.value(), 145.0 + 900 + 80);
  EXPECT_DOUBLE_EQ(l.losses.checkpoint.value(), 90.0);
  EXPECT_DOUBLE_EQ(sum_of_parts(l), l.wall.value());
}

// A fault in a restore restarts it. The chip fault at 252.5 s is detected at 280 s; repair and restart end at
// 4480 s and the restore would end at 4500 s. A second chip fails at 4490.5 s, 10.5 s into the restore: the
// restore stops there (the 9.5 s left are not paid), the fault is detected at 4520 s, and its own repair,
// restart and restore end at 8740 s; nothing more is lost (the job is at the checkpoint of step 200). Before,
// the second fault was "during recovery" at no cost. Under reroute a link failing in the restore is routed
// around and the checkpoint read again from its detection: 4520 + 20 s.
TEST(JobTimeline, AFaultInARestoreRestartsTheRestore) {
  const std::string yaml = std::string(kCubeJob) +
                           "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n"
                           "  - {at: 4490.5 s, kind: chip_down, target: [3, 2, 1]}\n";
  const Scenario s = ::tpusim::testing::scenario_from_yaml(yaml);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 4490.5);
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart, in the restore: read again");
  EXPECT_EQ(r.events[0].landed, FaultLanded::step);
  EXPECT_EQ(r.events[1].landed, FaultLanded::restore);
  EXPECT_EQ(r.events[1].step, 200);
  EXPECT_DOUBLE_EQ(r.events[1].detected.value(), 4520.0);
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 4520.0 + 3600 + 600 + 20);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 10.5 + 20);
  EXPECT_DOUBLE_EQ(r.losses.repair.value(), 2 * 3600.0);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 27.5 + 29.5);
  // The 800 steps and 7 checkpoints left.
  EXPECT_DOUBLE_EQ(r.wall.value(), 8740.0 + 800 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);

  const Scenario link = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
          "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n"
          "  - {at: 4490.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}\n",
      {"job.recovery=reroute"});
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
  const JobResult l = run_job(link, topo, costs);
  ASSERT_EQ(l.events.size(), 2u);
  EXPECT_EQ(l.events[1].recovery, "reroute, in the restore: read again");
  EXPECT_DOUBLE_EQ(l.events[1].resumed.value(), 4540.0);
  EXPECT_DOUBLE_EQ(l.losses.restore.value(), 10.5 + 20);
  EXPECT_DOUBLE_EQ(l.losses.slowdown.value(), 800 * 0.25);
  EXPECT_DOUBLE_EQ(l.wall.value(), 4540.0 + 800 * 1.25 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(l), l.wall.value());
}

// Faults while the job is down for a restart cost what they cost (on main each was "during recovery", free: the
// wall was that of the one recovery, 1090 + 32.5 + 27.5 + 4220 = 5370 s). The chip fault at 252.5 s is detected
// at 280 s; its repair runs to 3880 s and the relaunch to 4480 s. Chip [3,2,1] fails at 1000.5 s, during that
// repair: the relaunch finds it (its own detection, 1030 s, is long past), so the restore is not read; its
// repair, relaunch and restore run from 4480 s to 8700 s. Chip [1,2,3] failing again at 2000 s, while in
// repair, is not in use: nothing.
TEST(JobTimeline, AChipFailingDuringAnothersRepairIsFoundAtTheRelaunchAndRepairedInTurn) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
      "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n"
      "  - {at: 1000.5 s, kind: chip_down, target: [3, 2, 1]}\n  - {at: 2000 s, kind: chip_down, target: [1, 2, 3]}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].recovery, "checkpoint_restart");
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 4480.0);
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart, found at the relaunch");
  EXPECT_EQ(r.events[1].landed, FaultLanded::recovery);
  EXPECT_DOUBLE_EQ(r.events[1].detected.value(), 4480.0);
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 8700.0);
  EXPECT_EQ(r.events[2].recovery, "not in use (failed before: in repair)");
  EXPECT_DOUBLE_EQ(r.events[2].downtime.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.losses.repair.value(), 7200.0);
  EXPECT_DOUBLE_EQ(r.losses.restart.value(), 1200.0);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 20.0);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 27.5);
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 32.5);
  // The 800 steps and 7 checkpoints left.
  EXPECT_DOUBLE_EQ(r.wall.value(), 8700.0 + 800 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
}

// Two chips stopping before the first is detected are both found by their heartbeats and repaired together
// (found by a helper's probe: a v5e 2x2 job with two chips down at 200 s took 8825 s against 4625 s for one, the
// second "found at the relaunch" and repaired after the first's relaunch). Chip [1,2,3] fails at 252.5 s and is
// detected at 280 s (heartbeat 5 s, timeout 30 s): repair to 3880 s, relaunch to 4480 s, restore to 4500 s, as
// alone. Chip [3,2,1] failing at 253 s is detected at 280 s too and adds nothing: the wall is the one fault's,
// 4500 + 800 steps + 7 checkpoints = 5370 s. Failing at 262.5 s it is detected at 290 s, so its repair ends
// 10 s after the first's: 10 s more repair, resumed at 4510 s.
TEST(JobTimeline, TwoChipsStoppingBeforeTheFirstIsDetectedAreRepairedTogether) {
  const auto job = [](const char* second_at) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(
        std::string(kCubeJob) + "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n" +
        (second_at == nullptr ? std::string()
                              : fmt::format("  - {{at: {}, kind: chip_down, target: [3, 2, 1]}}\n", second_at)));
    return run_job(s, build_topology(s.pod, s.chip), round_costs());
  };
  const JobResult alone = job(nullptr);
  ASSERT_EQ(alone.events.size(), 1u);
  EXPECT_DOUBLE_EQ(alone.events[0].resumed.value(), 4500.0);
  EXPECT_DOUBLE_EQ(alone.wall.value(), 5370.0);

  const JobResult same = job("253 s");
  ASSERT_EQ(same.events.size(), 2u);
  EXPECT_EQ(same.events[0].recovery, "checkpoint_restart");
  EXPECT_EQ(same.events[1].recovery, "checkpoint_restart, detected with the fault before it");
  EXPECT_EQ(same.events[1].landed, FaultLanded::recovery);
  EXPECT_DOUBLE_EQ(same.events[1].detected.value(), 280.0);
  EXPECT_DOUBLE_EQ(same.events[1].downtime.value(), 0.0);
  EXPECT_DOUBLE_EQ(same.events[1].lost_work.value(), 0.0);
  for (const FaultEvent& e : same.events) EXPECT_DOUBLE_EQ(e.resumed.value(), 4500.0);
  EXPECT_DOUBLE_EQ(same.losses.repair.value(), 3600.0);
  EXPECT_DOUBLE_EQ(same.losses.restart.value(), 600.0);
  EXPECT_DOUBLE_EQ(same.losses.restore.value(), 20.0);
  EXPECT_DOUBLE_EQ(same.losses.lost_work.value(), alone.losses.lost_work.value());
  EXPECT_DOUBLE_EQ(same.wall.value(), alone.wall.value());
  EXPECT_DOUBLE_EQ(sum_of_parts(same), same.wall.value());

  const JobResult later = job("262.5 s");
  ASSERT_EQ(later.events.size(), 2u);
  EXPECT_EQ(later.events[1].recovery, "checkpoint_restart, detected with the fault before it");
  EXPECT_DOUBLE_EQ(later.events[1].detected.value(), 290.0);
  EXPECT_DOUBLE_EQ(later.events[1].downtime.value(), 10.0);
  for (const FaultEvent& e : later.events) EXPECT_DOUBLE_EQ(e.resumed.value(), 4510.0);
  EXPECT_DOUBLE_EQ(later.losses.repair.value(), 3610.0);
  EXPECT_DOUBLE_EQ(later.wall.value(), 5380.0);
  EXPECT_DOUBLE_EQ(sum_of_parts(later), later.wall.value());
  EXPECT_EQ(later.steps_done, 1000);
}

// A slowdown never stops the job: it is detected and the job goes on at the fault's own time, although its slower
// steps count from the start of the step it hits (252 s here). Before, resumed_s was that step's start, before
// the fault itself. Steps 233 to 1000 at 1.25 s and 7 checkpoints: wall 252 + 768 x 1.25 + 70 s.
TEST(JobTimeline, AStragglerResumesAtItsOwnTimeAndSlowsTheStepItHits) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) + "faults: [{at: 252.5 s, kind: straggler, target: [1, 1, 0], clock_fraction: 0.8}]\n");
  const Topology topo = build_topology(s.pod, s.chip);
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
  const JobResult r = run_job(s, topo, costs);
  ASSERT_EQ(r.events.size(), 1u);
  const FaultEvent& e = r.events[0];
  EXPECT_EQ(e.recovery, "slowdown");
  EXPECT_DOUBLE_EQ(e.detected.value(), 252.5);
  EXPECT_DOUBLE_EQ(e.resumed.value(), 252.5);
  EXPECT_DOUBLE_EQ(e.downtime.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 768 * 0.25);
  EXPECT_DOUBLE_EQ(r.wall.value(), 252.0 + 768 * 1.25 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// A host's repair mends the host, not its chips: a straggler landing on one of its chips while the host is down
// slows the job once it runs again, as one landing before the host failed does. Host 0 fails at 252.5 s (detected
// at 280 s; repair, relaunch and restore to 4500 s, back at the checkpoint of step 200); chip [1, 1, 0], one of
// its chips, straggles at 1000 s. The 800 steps left run at 1.25 s: wall 4500 + 1000 + 70 s of checkpoints. Before,
// the straggler was "not in use (failed before: in repair)" and vanished: the chip ran at full speed (5370 s).
TEST(JobTimeline, AStragglerOnAChipWhoseHostIsInRepairSlowsTheJobAfterTheRepair) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
      "faults:\n  - {at: 252.5 s, kind: host_down, target: {host: 0}}\n"
      "  - {at: 1000 s, kind: straggler, target: [1, 1, 0], clock_fraction: 0.8}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
  const JobResult r = run_job(s, topo, costs);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].recovery, "checkpoint_restart");
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 4500.0);
  const FaultEvent& e = r.events[1];
  EXPECT_EQ(topo.host_of(e.fault.chip), r.events[0].fault.host);  // the straggler is on the failed host
  EXPECT_EQ(e.recovery, "slowdown");
  EXPECT_EQ(e.landed, FaultLanded::recovery);
  EXPECT_DOUBLE_EQ(e.resumed.value(), 4500.0);
  EXPECT_DOUBLE_EQ(e.step_after.value(), 1.25);
  EXPECT_DOUBLE_EQ(r.losses.slowdown.value(), 800 * 0.25);
  EXPECT_DOUBLE_EQ(r.wall.value(), 4500.0 + 800 * 1.25 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
}

// The same holds for a chip failing outright: the host's repair does not mend it, so the relaunch after the repair
// finds it, as it finds a chip that failed during another's repair (above). Host 0 fails at 252.5 s; chip
// [1, 1, 0], one of its chips, goes down at 1000 s. Before, the chip_down was "not in use (failed before: in
// repair)", free, and the job ran on with a dead chip after the host came back (wall 5370 s).
TEST(JobTimeline, AChipFailingOnAHostInRepairIsFoundAtTheRelaunchAndRepaired) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
      "faults:\n  - {at: 252.5 s, kind: host_down, target: {host: 0}}\n"
      "  - {at: 1000 s, kind: chip_down, target: [1, 1, 0]}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(topo.host_of(r.events[1].fault.chip), r.events[0].fault.host);
  EXPECT_EQ(r.events[0].recovery, "checkpoint_restart");
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 4480.0);  // the relaunch's end: its restore is not read
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart, found at the relaunch");
  EXPECT_EQ(r.events[1].landed, FaultLanded::recovery);
  EXPECT_DOUBLE_EQ(r.events[1].detected.value(), 4480.0);
  EXPECT_DOUBLE_EQ(r.events[1].lost_work.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 4480.0 + 3600 + 600 + 20);
  EXPECT_DOUBLE_EQ(r.wall.value(), 8700.0 + 800 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
  EXPECT_EQ(r.steps_done, 1000);
}

// Two chips found at one relaunch are repaired together. As above, chip [3,2,1] fails during the first repair;
// chip [0,0,0] fails at 4470.5 s, in the relaunch, and is declared failed at 4500 s, after the relaunch ends
// (4480 s). Both are found then: [3,2,1]'s repair would end at 8080 s, [0,0,0]'s, from 4500 s, at 8100 s, so the
// pair adds 20 s of repair to one relaunch and restore, resuming at 8720 s (one after the other, as each found
// fault met at the next relaunch, they would resume at 8680 + 4220 = 12900 s).
TEST(JobTimeline, ChipsFoundAtOneRelaunchAreRepairedTogether) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
      "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n"
      "  - {at: 1000.5 s, kind: chip_down, target: [3, 2, 1]}\n  - {at: 4470.5 s, kind: chip_down, target: [0, 0, 0]}\n");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_DOUBLE_EQ(r.events[0].resumed.value(), 4480.0);
  for (std::size_t i : {1u, 2u}) {
    EXPECT_EQ(r.events[i].recovery, "checkpoint_restart, found at the relaunch") << i;
    EXPECT_DOUBLE_EQ(r.events[i].resumed.value(), 8720.0) << i;
    EXPECT_DOUBLE_EQ(r.events[i].lost_work.value(), 0.0) << i;
  }
  EXPECT_DOUBLE_EQ(r.events[1].detected.value(), 4480.0);
  EXPECT_DOUBLE_EQ(r.events[2].detected.value(), 4500.0);
  EXPECT_DOUBLE_EQ(r.events[2].downtime.value(), 20.0);
  EXPECT_DOUBLE_EQ(r.losses.repair.value(), 2 * 3600.0 + 20);
  EXPECT_DOUBLE_EQ(r.losses.restart.value(), 2 * 600.0);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 20.0);
  EXPECT_DOUBLE_EQ(r.wall.value(), 8720.0 + 800 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

// A cable failing during the relaunch (4200.5 s, in 3880-4480 s) is found when the job starts again: under
// checkpoint_restart it is repaired then (to 8700 s, as a chip would be); under reroute it is routed around at
// 4480 s (its own detection, 4230 s, is past), the restore read, and the 800 steps left run at the rerouted
// 1.25 s. On main it was "during recovery": never repaired nor routed around, the steps at 1 s (wall 5370 s).
TEST(JobTimeline, ALinkFailingDuringARestartIsRepairedOrRoutedAroundAtTheRelaunch) {
  const std::string yaml = std::string(kCubeJob) +
                           "faults:\n  - {at: 252.5 s, kind: chip_down, target: [1, 2, 3]}\n"
                           "  - {at: 4200.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}\n";
  const Topology topo = build_topology(::tpusim::testing::scenario_from_yaml(yaml).pod,
                                       ::tpusim::testing::scenario_from_yaml(yaml).chip);
  JobCosts costs = round_costs();
  costs.step_with = [](const ConcreteFault&) { return Seconds(1.25); };
  const JobResult r = run_job(::tpusim::testing::scenario_from_yaml(yaml), topo, costs);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart, found at the relaunch");
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 8700.0);
  EXPECT_DOUBLE_EQ(r.wall.value(), 8700.0 + 800 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());

  const JobResult l = run_job(::tpusim::testing::scenario_from_yaml(yaml, {"job.recovery=reroute"}), topo, costs);
  ASSERT_EQ(l.events.size(), 2u);
  EXPECT_EQ(l.events[0].recovery, "checkpoint_restart (a failed chip or host cannot be routed around)");
  EXPECT_EQ(l.events[1].recovery, "reroute, found at the relaunch");
  EXPECT_DOUBLE_EQ(l.events[1].detected.value(), 4480.0);
  EXPECT_DOUBLE_EQ(l.events[1].resumed.value(), 4500.0);
  EXPECT_DOUBLE_EQ(l.events[1].step_after.value(), 1.25);
  EXPECT_DOUBLE_EQ(l.losses.restore.value(), 20.0);
  EXPECT_DOUBLE_EQ(l.losses.slowdown.value(), 800 * 0.25);
  EXPECT_DOUBLE_EQ(l.wall.value(), 4500.0 + 800 * 1.25 + 70);
  EXPECT_DOUBLE_EQ(sum_of_parts(l), l.wall.value());
}

// The kCubeJob timing on the full v4 pod under spare_cube with `spares` spare cubes and the fault list `faults`.
Scenario spare_cube_job(int spares, const std::string& faults) {
  return ::tpusim::testing::scenario_from_yaml(fmt::format(
      "name: spare\npod: v4-16x16x16\n"
      "workload: {{model: mlp-quickstart, batch: 64, checkpoint: {{every_steps: 100}}}}\n"
      "job: {{steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: spare_cube, "
      "spare_cubes: {}}}\nfaults:{}",
      spares, faults));
}

// Faults around a spare-cube swap (two spares, ocs_reconfiguration 0.1 s). Chip [5,9,13] fails at 252.5 s:
// detected at 280 s, its cube (1,2,3) swapped out, relaunch to 880.1 s. Chip [4,8,12], of the same cube, at
// 270.5 s is not in use (the cube is being swapped out). Chip [0,0,0] at 500.5 s, during the relaunch, is
// found at 880.1 s: the second spare takes its cube, relaunch to 1480.2 s, restore to 1500.2 s. Chip
// [15,15,15] fails at 1490.5 s, 10.3 s into that restore: detected at 1520 s, no spare left, restart after
// repair to 5740 s, reading the checkpoint again. On main the first two were "during recovery", the job ran
// from 900.1 s, and the last fault hit a running step and took the second spare.
TEST(JobTimeline, FaultsDuringASpareCubeSwapAreSwappedInTurnOrNotInUse) {
  const Scenario s = spare_cube_job(2, R"(
  - {at: 252.5 s, kind: chip_down, target: [5, 9, 13]}
  - {at: 270.5 s, kind: chip_down, target: [4, 8, 12]}
  - {at: 500.5 s, kind: chip_down, target: [0, 0, 0]}
  - {at: 1490.5 s, kind: chip_down, target: [15, 15, 15]}
)");
  ASSERT_DOUBLE_EQ(s.pod.ocs_reconfiguration.value(), 0.1);
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events[0].recovery, "spare_cube");
  EXPECT_NEAR(r.events[0].resumed.value(), 880.1, 1e-9);
  EXPECT_EQ(r.events[1].recovery, "not in use (cube swapped out)");
  EXPECT_EQ(r.events[2].recovery, "spare_cube, found at the relaunch");
  EXPECT_NEAR(r.events[2].detected.value(), 880.1, 1e-9);
  EXPECT_NEAR(r.events[2].resumed.value(), 1490.5, 1e-9);
  EXPECT_EQ(r.events[3].recovery, "checkpoint_restart (no spare cube left), in the restore: read again");
  EXPECT_DOUBLE_EQ(r.events[3].detected.value(), 1520.0);
  EXPECT_DOUBLE_EQ(r.events[3].resumed.value(), 5740.0);
  EXPECT_EQ(r.spare_cubes_left, 0);
  EXPECT_NEAR(r.losses.reconfiguration.value(), 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(r.losses.restart.value(), 3 * 600.0);
  EXPECT_NEAR(r.losses.restore.value(), 10.3 + 20, 1e-9);
  EXPECT_DOUBLE_EQ(r.losses.detection.value(), 27.5 + 29.5);
  EXPECT_DOUBLE_EQ(r.losses.lost_work.value(), 32.5);
  EXPECT_DOUBLE_EQ(r.wall.value(), 5740.0 + 800 + 70);
  EXPECT_NEAR(sum_of_parts(r), r.wall.value(), 1e-9);
}

TEST(JobTimeline, ASpareCubeOnTheFullV4PodCostsDetectionReconfigurationRestartRestoreAndLostWork) {
  const Scenario s = spare_cube_job(1, R"(
  - {at: 252.5 s, kind: chip_down, target: [5, 9, 13]}
  - {at: 1500 s, kind: chip_down, target: [0, 0, 0]}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  const JobResult r = run_job(s, topo, round_costs());
  ASSERT_EQ(r.events.size(), 2u);
  const FaultEvent& e = r.events[0];
  EXPECT_EQ(e.recovery, "spare_cube");
  EXPECT_EQ(e.fault.cube, 1 + 4 * 2 + 16 * 3);  // cube (1, 2, 3) of the 4x4x4 grid of cubes
  // Detection 27.5 s, the OCS reconfiguration (pod.ocs_reconfiguration), restart, restore, 32.5 s lost.
  const double reconfiguration = s.pod.ocs_reconfiguration.value();
  EXPECT_DOUBLE_EQ(e.downtime.value(), 27.5 + reconfiguration + 600 + 20);
  EXPECT_DOUBLE_EQ(e.lost_work.value(), 32.5);
  EXPECT_DOUBLE_EQ(r.losses.reconfiguration.value(), reconfiguration);
  // Every OCS of the pod (48) remaps the cube's two face ports.
  EXPECT_EQ(r.ocs_remaps, 96u);
  // The second failure finds no spare left: a restart after repair.
  EXPECT_EQ(r.events[1].recovery, "checkpoint_restart (no spare cube left)");
  EXPECT_EQ(r.spare_cubes_left, 0);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

TEST(OcsSpareCube, TheSpareTakesOverEveryCircuitOfTheFailedCube) {
  const Topology topo = build_topology(load_pod("v4-16x16x16"), load_chip("v4"));
  net::OcsFabric ocs(topo, Seconds(0.1), 2);
  const int cube = 7;
  const auto failed = static_cast<std::uint32_t>(2 * cube);
  const auto spare = static_cast<std::uint32_t>(ocs.ports_used() + 2);  // spare cube 1
  std::vector<std::optional<PortId>> peers;
  for (int o = 0; o < topo.ocs_count(); ++o) {
    for (std::uint32_t f = 0; f < 2; ++f) peers.push_back(ocs.peer(OcsId(o), PortId(failed + f), 0));
  }
  const Tick up = ocs.swap_in_spare(0, cube, 1, 1000);
  EXPECT_EQ(up, 1000 + to_ticks(Seconds(0.1)));
  EXPECT_EQ(ocs.remaps(), 2u * 48);
  for (int o = 0; o < topo.ocs_count(); ++o) {
    for (std::uint32_t f = 0; f < 2; ++f) {
      const auto was = peers[static_cast<std::size_t>(2 * o) + f];
      ASSERT_TRUE(was.has_value());
      EXPECT_EQ(ocs.peer(OcsId(o), PortId(failed + f), kNever), std::nullopt);
      EXPECT_EQ(ocs.peer(OcsId(o), PortId(spare + f), kNever), was);
      EXPECT_EQ(ocs.peer(OcsId(o), *was, kNever), PortId(spare + f));
    }
  }
}

TEST(OcsSpareCube, ACubeThatIsItsOwnNeighbourKeepsThatCircuitOnTheSpare) {
  // One 4x4x4 cube with wraparound: its + face is cabled to its own - face through every OCS.
  const Topology topo = build_topology(load_pod("v4-4x4x4"), load_chip("v4"));
  net::OcsFabric ocs(topo, Seconds(0.1), 1);
  ASSERT_EQ(ocs.peer(OcsId(0), PortId(0), 0), PortId(1));
  (void)ocs.swap_in_spare(0, 0, 0, 0);
  EXPECT_EQ(ocs.peer(OcsId(0), PortId(2), kNever), PortId(3));
  EXPECT_EQ(ocs.peer(OcsId(0), PortId(0), kNever), std::nullopt);
  EXPECT_EQ(ocs.remaps(), static_cast<std::uint64_t>(topo.ocs_count()));
}

TEST(JobTimeline, TheSameSeedGivesTheSameRandomFaultsAndAnotherSeedOthers) {
  // About one fault per 14,000 s of the pod's time (with the hour-long repairs a fault every 140 s, as before,
  // leaves the job no window to run in once faults during recovery cost what they cost).
  const std::string yaml = std::string(kCubeJob) + "fault_rates: {chip_down: 2000000 s, link_down: 5000000 s}\n";
  auto timeline = [&](const std::string& seed) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(yaml, {"seed=" + seed, "job.steps=200000"});
    const Topology topo = build_topology(s.pod, s.chip);
    const JobResult r = run_job(s, topo, round_costs());
    std::string text;
    for (const auto& e : r.events) {
      text += fmt::format("{:.17g} {} {} {:.17g}\n", e.fault.spec.at.value(), fault_kind_name(e.fault.spec.kind),
                          e.fault.target(), e.resumed.value());
    }
    return text;
  };
  const std::string a = timeline("7");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, timeline("7"));
  EXPECT_NE(a, timeline("8"));
}

TEST(JobTimeline, RandomFaultsArriveAtThePodsRate) {
  // 64 chips with a 64,000 s MTBF each: one failure per 1,000 s of pod time. Over about 2e6 s of wall time
  // the count is Poisson(~2000): within 10% (more than 4 standard deviations).
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + "fault_rates: {chip_down: 64000 s}\n",
                                   {"job.steps=1500000", "job.restart=0 s", "job.repair=0 s"});
  const Topology topo = build_topology(s.pod, s.chip);
  JobCosts costs = round_costs();
  const JobResult r = run_job(s, topo, costs);
  const double expected = r.wall.value() / 1000.0;
  EXPECT_NEAR(static_cast<double>(r.events.size()), expected, 0.1 * expected);
  EXPECT_NEAR(sum_of_parts(r), r.wall.value(), 1e-9 * r.wall.value());
}

TEST(JobTimeline, TheBestCheckpointIntervalIsNearYoungsSquareRootOfTwoTimesCostTimesMtbf) {
  // Pod MTBF M = 64 chips x 640,000 s / 64 = 10,000 s, checkpoint C = 60 s: Young's optimum
  // sqrt(2 C M) = 1095 s, 1095 steps of 1 s. Goodput over about 1e7 s (about 1,000 failures) at intervals
  // around it, with the same seed: the best lies within 30% of Young's (the curve is flat near its optimum:
  // first-order waste C/tau + tau/(2M) changes by 0.5% between 0.7 and 1.3 tau*).
  JobCosts costs;
  costs.step = Seconds(1);
  costs.checkpoint_write = Seconds(60);
  costs.checkpoint_restore = Seconds(60);
  const double young = std::sqrt(2 * 60.0 * 10000.0);
  int best = 0;
  double best_goodput = 0;
  for (int every : {300, 500, 700, 900, 1100, 1300, 1600, 2000, 3000}) {
    const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kCubeJob) + "fault_rates: {chip_down: 640000 s}\n",
                                     {"job.steps=10000000", "job.restart=60 s", "job.repair=0 s",
                                      fmt::format("workload.checkpoint.every_steps={}", every)});
    const Topology topo = build_topology(s.pod, s.chip);
    const JobResult r = run_job(s, topo, costs);
    if (r.goodput > best_goodput) {
      best_goodput = r.goodput;
      best = every;
    }
  }
  EXPECT_NEAR(best, young, 0.3 * young) << "best goodput " << best_goodput;
  // First-order goodput at the optimum, failures arriving per wall second: a failure costs R = detection
  // (27.5 s on average: timeout - heartbeat / 2) + restart + restore = 147.5 s and on average half of a
  // checkpoint period (tau + C) of lost work; checkpoints add C per tau of work. So
  // G = (1 - (R + (tau + C)/2) / M) / (1 + C/tau); the timeline agrees within 0.5%.
  const double tau = best;
  const double first_order = (1 - (147.5 + (tau + 60) / 2) / 10000.0) / (1 + 60 / tau);
  EXPECT_NEAR(best_goodput, first_order, 0.005);
}

// A job given by its duration runs as many whole steps as fit, as the timeline runs them: with 1 s steps and a
// 5 s write after every 10, 1000 s hold 66 intervals of 15 s (990 s) and then 10 more steps without a write
// (1000 s exactly): 670 steps, where the amortized count, 1000 / 1.5, gave 666. At 999 s: 669.
TEST(JobTimeline, ADurationHoldsTheWholeStepsAndWritesThatFitInIt) {
  constexpr const char* kJob =
      "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 10}}\n";
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kJob) + "job: {duration: 1000 s}\n");
  EXPECT_EQ(job_steps(s, Seconds(1), Seconds(5)), 670);
  const Scenario less = ::tpusim::testing::scenario_from_yaml(std::string(kJob) + "job: {duration: 999 s}\n");
  EXPECT_EQ(job_steps(less, Seconds(1), Seconds(5)), 669);
  const Scenario one = ::tpusim::testing::scenario_from_yaml(std::string(kJob) + "job: {duration: 1 s}\n");
  EXPECT_EQ(job_steps(one, Seconds(1), Seconds(5)), 1);  // no write after the last step
}

TEST(JobTimeline, ADurationOfMoreStepsThanAnInt64CountsIsBadInputAtItsLine) {
  constexpr const char* kLong = "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64}\n";
  // 2^62 s of 1 s steps still count exactly; 1e30 s would wrap (before: to a one-step job).
  const Scenario fits = ::tpusim::testing::scenario_from_yaml(std::string(kLong) + "job: {duration: 4611686018427387904 s}\n");
  EXPECT_EQ(job_steps(fits, Seconds(1), Seconds(0)), std::int64_t{1} << 62);
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kLong) + "job: {duration: 1e30 s}\n");
  try {
    (void)job_steps(s, Seconds(1), Seconds(0));
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().at(0).key_path, "job.duration");
    EXPECT_EQ(e.diagnostics().at(0).loc.line, 4);
  }
}

TEST(JobTimeline, ACableFoundAtARelaunchBeforeAnyCheckpointReadsNoRestore) {
  // Chip [1,1,1] stops at 52.5 s, before the first checkpoint (step 100), so its restart reads nothing. A cable
  // fails at 1000.5 s while the job is down for that repair; it is found at the relaunch and routed around, and
  // there is still no checkpoint to read (the 20 s restore was charged for it).
  const Scenario s = ::tpusim::testing::scenario_from_yaml(
      std::string(kCubeJob) +
          "faults:\n  - {at: 52.5 s, kind: chip_down, target: [1, 1, 1]}\n"
          "  - {at: 1000.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}\n",
      {"job.recovery=reroute"});
  const JobResult r = run_job(s, build_topology(s.pod, s.chip), round_costs());
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].recovery.rfind("checkpoint_restart", 0), 0u) << r.events[0].recovery;
  EXPECT_NE(r.events[1].recovery.find(", found at the relaunch"), std::string::npos) << r.events[1].recovery;
  EXPECT_DOUBLE_EQ(r.events[0].stages.restore.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.events[1].stages.restore.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.losses.restore.value(), 0.0);
  // Detected at 80 s (last heard at 50 s), repaired and relaunched by 80 + 3600 + 600 s, where the job resumes
  // from step 0 with the cable routed around.
  EXPECT_DOUBLE_EQ(r.events[1].resumed.value(), 80.0 + 3600 + 600);
  EXPECT_DOUBLE_EQ(sum_of_parts(r), r.wall.value());
}

}  // namespace
}  // namespace tpusim::models
