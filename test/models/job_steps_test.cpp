// The job layer's steps (tpusim/models/job_steps.h): the StepReport's encoding between processes, and which
// steps FaultSteps asks its runner for. Pure C++ (no SystemC): the runner is a fake that counts its calls.
#include <gtest/gtest.h>


#include <fmt/format.h>

#include "support/scenario_yaml.h"
#include "tpusim/models/job.h"
#include "tpusim/models/job_steps.h"

namespace tpusim::models {
namespace {

// Every field set to a value of its own.
StepReport full_report() {
  StepReport r;
  r.step_time_s = 1.5;
  r.link_utilization = {0.25, 0.0, 0.75};
  r.transfers_cut = 3;
  r.in_flight_bytes = 4096;
  r.delivered_bytes = 1024;
  r.retransmitted_bytes = 3072;
  r.lost_bytes = 5;
  r.resent_done_s = 0.125;
  r.dropped_transfers = 7;
  r.dropped_bytes = 8192;
  r.progress.stopped = true;
  r.progress.instructions = 100;
  r.progress.completed = 99;
  r.progress.last_completion_s = 0.875;
  r.cost.wall_s = 2.5;
  r.cost.chips_simulated = 32;
  r.cost.chips_mirrored = 4064;
  r.cost.mirroring = "32 of 4096 chips simulated, 4064 mirrored; inputs verified";
  r.traced = true;
  r.spans = {TraceSpan{2, 1, ir::UnitKind::ici, 17, Seconds(0.5), Seconds(0.75)},
             TraceSpan{3, 0, ir::UnitKind::sparsecore, 4'000'000'000u, Seconds(1e-12), Seconds(2e-12)}};
  return r;
}

TEST(StepReport, EveryFieldSurvivesTheRoundTrip) {
  const StepReport in = full_report();
  std::string why;
  const std::optional<StepReport> out = decode_step_report(encode_step_report(in), why);
  ASSERT_TRUE(out) << why;
  EXPECT_EQ(out->step_time_s, 1.5);
  EXPECT_EQ(out->link_utilization, (std::vector<double>{0.25, 0.0, 0.75}));
  EXPECT_EQ(out->transfers_cut, 3);
  EXPECT_EQ(out->in_flight_bytes, 4096);
  EXPECT_EQ(out->delivered_bytes, 1024);
  EXPECT_EQ(out->retransmitted_bytes, 3072);
  EXPECT_EQ(out->lost_bytes, 5);
  EXPECT_EQ(out->resent_done_s, 0.125);
  EXPECT_EQ(out->dropped_transfers, 7);
  EXPECT_EQ(out->dropped_bytes, 8192);
  EXPECT_TRUE(out->progress.stopped);
  EXPECT_EQ(out->progress.instructions, 100);
  EXPECT_EQ(out->progress.completed, 99);
  EXPECT_EQ(out->progress.last_completion_s, 0.875);
  EXPECT_EQ(out->cost.wall_s, 2.5);
  EXPECT_EQ(out->cost.chips_simulated, 32);
  EXPECT_EQ(out->cost.chips_mirrored, 4064);
  EXPECT_EQ(out->cost.mirroring, "32 of 4096 chips simulated, 4064 mirrored; inputs verified");
  EXPECT_TRUE(out->traced);
  ASSERT_EQ(out->spans.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out->spans[i].chip, in.spans[i].chip);
    EXPECT_EQ(out->spans[i].core, in.spans[i].core);
    EXPECT_EQ(out->spans[i].unit, in.spans[i].unit);
    EXPECT_EQ(out->spans[i].instruction, in.spans[i].instruction);
    EXPECT_EQ(out->spans[i].start.value(), in.spans[i].start.value());
    EXPECT_EQ(out->spans[i].end.value(), in.spans[i].end.value());
  }
  // An empty report too: no links, no spans, flags false.
  const std::optional<StepReport> empty = decode_step_report(encode_step_report(StepReport{}), why);
  ASSERT_TRUE(empty) << why;
  EXPECT_TRUE(empty->link_utilization.empty());
  EXPECT_TRUE(empty->spans.empty());
  EXPECT_FALSE(empty->progress.stopped);
  EXPECT_FALSE(empty->traced);
}

// 4 magic + 4 version + 8 step + 8 count + 3 x 8 links + 14 x 8 numbers + 2 flags + 8 count + 58 note bytes + 8
// count + 2 x 26 spans.
TEST(StepReport, TheEncodingHasTheSizeItsFieldsSay) {
  EXPECT_EQ(encode_step_report(full_report()).size(), 4u + 4 + 8 + 8 + 3 * 8 + 14 * 8 + 2 + 8 + 58 + 8 + 2 * 26);
}

TEST(StepReport, EveryShortMessageIsRefused) {
  const std::string bytes = encode_step_report(full_report());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::string why;
    EXPECT_FALSE(decode_step_report(std::string_view(bytes).substr(0, n), why)) << n << " bytes";
    EXPECT_FALSE(why.empty()) << n << " bytes";
  }
}

TEST(StepReport, MalformedMessagesAreRefusedSayingWhy) {
  const std::string good = encode_step_report(full_report());
  const auto refused = [](std::string bytes) {
    std::string why;
    EXPECT_FALSE(decode_step_report(bytes, why));
    return why;
  };
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_EQ(refused(bad), "not a step report (no TPSR at its start)");
  bad = good;
  bad[4] = 1;  // version 1 (little-endian)
  EXPECT_EQ(refused(bad), "a step report of version 1, expected 2");
  EXPECT_EQ(refused(good + "x"), "1 bytes after the step report's end");
  // A link count far beyond the message: refused before anything is allocated.
  bad = good;
  bad[4 + 4 + 8 + 7] = 0x10;
  EXPECT_EQ(refused(bad), "the step report ends early, in the link utilizations");
  // The flags (after the links and the 14 numbers), the note's length and a span's unit.
  const std::size_t flags = 4 + 4 + 8 + 8 + 3 * 8 + 14 * 8;
  bad = good;
  bad[flags] = 2;
  EXPECT_EQ(refused(bad), "a step report with a flag other than 0 or 1");
  bad = good;
  bad[flags + 2 + 7] = 0x10;
  EXPECT_EQ(refused(bad), "the step report ends early, in the mirroring note");
  bad = good;
  bad[flags + 2 + 8 + 58 + 8 + 4 + 1] = static_cast<char>(ir::unit_kind_count());
  EXPECT_EQ(refused(bad),
            fmt::format("a span of unit {}, expected below {}", ir::unit_kind_count(), ir::unit_kind_count()));
}

// Answers every step with a step time of its own and remembers what it was asked.
class CountingRunner : public StepRunner {
 public:
  std::optional<StepReport> run(const Scenario& s, const SimOptions& options, const std::string& what) override {
    calls.push_back(what);
    routing.push_back(s.fidelity.routing);
    asked.push_back(options);
    StepReport r;
    r.step_time_s = options.timed_links.empty() ? (options.failed.links.empty() ? 1.0 : 1.25) : 1.5;
    return r;
  }
  std::vector<std::string> calls;
  std::vector<RoutingPolicy> routing;
  std::vector<SimOptions> asked;
};

// No checkpoints, 1 s steps (the runner's healthy step): a fault at 252.5 s lands 0.5 s into step 252.
constexpr const char* kRerouteJob = R"(
name: job-steps-test
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: reroute}
faults: [{at: 252.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: y-}}]
)";

TEST(FaultSteps, OneTimedLinkFaultUnderRerouteAsksForItsLastingStepAndTheStepItLandsIn) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kRerouteJob);
  const Topology topo = build_topology(s.pod, s.chip);
  CountingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  // 2 simulations: the step with the cable down for good (rerouted: the steps after the fault) and the step the
  // fault lands in. The healthy step that places it is the caller's (the run's own), not simulated again.
  ASSERT_EQ(runner.calls.size(), 2u);
  EXPECT_EQ(runner.asked[0].failed.links.size(), 2u);  // the cable: both directions
  EXPECT_EQ(runner.routing[0], RoutingPolicy::fault_aware);
  ASSERT_EQ(runner.asked[1].timed_links.size(), 1u);
  EXPECT_DOUBLE_EQ(runner.asked[1].timed_links[0].at.value(), 0.5);
  EXPECT_EQ(runner.routing[1], s.fidelity.routing);
  ASSERT_EQ(steps.steps().size(), 2u);
  EXPECT_FALSE(steps.steps()[0].hit);
  EXPECT_EQ(steps.steps()[0].step_time_s, 1.25);
  EXPECT_TRUE(steps.steps()[1].hit);
  EXPECT_DOUBLE_EQ(steps.steps()[1].fault_at_s, 0.5);
  // The timeline finds the hit step at the same offset.
  const JobOutcome job = run_job_timeline(s, topo, Seconds(1.0), steps);
  ASSERT_EQ(job.result.events.size(), 1u);
  EXPECT_EQ(job.result.events[0].step, 252);
  EXPECT_EQ(job.result.events[0].step_hit.value(), 1.5);
  EXPECT_EQ(job.result.events[0].step_after.value(), 1.25);
}

// Two v4 2x2x2 pods; under reroute, a straggler and a cable fail in pod 1: the steps simulated with them hold pod
// 1's chip and cable (before, a target named pod 0's components only).
TEST(FaultSteps, FaultsOnPodOneAreSimulatedOnPodOnesChipAndCable) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: job-steps-test
pod: {name: v4-2x2x2x2, chip: v4, shape: [2, 2, 2], wraparound: [0, 0, 0], host_shape: [2, 2, 1], pods: 2}
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: reroute}
faults:
  - {at: 100 s, kind: straggler, target: {chip: [1, 1, 0], pod: 1}, clock_fraction: 0.5}
  - {at: 252.5 s, kind: link_down, target: {chip: [0, 0, 1], dir: y+, pod: 1}}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  CountingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  ASSERT_GE(runner.asked.size(), 3u);  // the straggler's step, the rerouted step, the step the cable fails in
  ASSERT_EQ(runner.asked[0].degraded_chips.size(), 1u);
  EXPECT_EQ(runner.asked[0].degraded_chips[0].chip, topo.chip_at(ChipCoord{1, {1, 1, 0}}));
  EXPECT_EQ(runner.calls[0], "[1,1,0] of pod 1 straggler");
  const std::vector<LinkId>& failed = runner.asked[1].failed.links;
  ASSERT_EQ(failed.size(), 2u);  // the cable: both directions, between pod 1's [0,0,1] and [0,1,1]
  const ChipId from = topo.chip_at(ChipCoord{1, {0, 0, 1}}), to = topo.chip_at(ChipCoord{1, {0, 1, 1}});
  EXPECT_EQ(from.value(), 12u);
  for (LinkId l : failed) {
    const Link& link = topo.link(l);
    EXPECT_TRUE((link.src == from && link.dst == to) || (link.src == to && link.dst == from)) << l.value();
  }
  EXPECT_EQ(runner.calls[1], "[0,0,1] y+ of pod 1 link_down");
  ASSERT_EQ(runner.asked[2].timed_links.size(), 1u);
  EXPECT_EQ(topo.link(runner.asked[2].timed_links[0].link).src, from);
}

// A step with no network (the mlp kind runs one chip's program on every chip, without collectives) reports no
// link utilization; a degraded link's step then sends nothing again. (It threw std::out_of_range, which `tpusim
// run` reported as a failed simulation.)
TEST(FaultSteps, ADegradedLinkInAStepWithNoNetworkSendsNothingAgain) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: job-steps-test
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 100}
faults: [{at: 10.5 s, kind: link_degraded, target: {chip: [0, 0], dir: x+}, bandwidth_fraction: 0.5,
          bit_error_rate: 1e-9}]
)");
  const Topology topo = build_topology(s.pod, s.chip);
  CountingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  ASSERT_EQ(runner.asked.size(), 1u);
  ASSERT_EQ(runner.asked[0].degraded_links.size(), 1u);
  EXPECT_EQ(runner.asked[0].degraded_links[0].bandwidth_fraction, 0.5);
  ASSERT_EQ(steps.steps().size(), 1u);
  EXPECT_TRUE(steps.steps()[0].link_utilization.empty());
  EXPECT_EQ(steps.steps()[0].retransmitted_bytes, 0.0);
}

// Fails the steps with a timed fault, or every step.
class FailingRunner : public CountingRunner {
 public:
  explicit FailingRunner(bool all) : all_(all) {}
  std::optional<StepReport> run(const Scenario& s, const SimOptions& options, const std::string& what) override {
    std::optional<StepReport> r = CountingRunner::run(s, options, what);
    if (all_ || !options.timed_links.empty()) return std::nullopt;
    return r;
  }

 private:
  bool all_;
};

TEST(FaultSteps, AHitStepThatFailsIsLeftOutAndTheTimelineStallsInstead) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kRerouteJob);
  const Topology topo = build_topology(s.pod, s.chip);
  FailingRunner runner(false);
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  EXPECT_EQ(runner.calls.size(), 2u);
  ASSERT_EQ(steps.steps().size(), 1u);
  EXPECT_TRUE(steps.steps()[0].ok);
  const JobOutcome job = run_job_timeline(s, topo, Seconds(1.0), steps);
  ASSERT_EQ(job.result.events.size(), 1u);
  EXPECT_EQ(job.result.events[0].step_hit.value(), 0.0);
}

TEST(FaultSteps, ALastingStepThatFailsFailsTheJob) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kRerouteJob);
  const Topology topo = build_topology(s.pod, s.chip);
  FailingRunner runner(true);
  try {
    (void)FaultSteps(s, topo, Seconds(1.0), runner);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the step with [0,0,0] y- link_down could not be simulated");
  }
}

// Answers a step with a chip slowed (any ChipDegradation) 2 s, else 1 s; a chip stopping at a tick before the
// step's end stops it; a cable failing at a tick before the step's end cuts one transfer and adds a 0.5 s stall
// (`slowed_hits: false` leaves the slowdowns out of a step a fault lands in, as those steps were simulated
// before).
class StragglingRunner : public StepRunner {
 public:
  explicit StragglingRunner(bool slowed_hits = true) : slowed_hits_(slowed_hits) {}
  std::optional<StepReport> run(const Scenario&, const SimOptions& options, const std::string& what) override {
    calls.push_back(what);
    asked.push_back(options);
    StepReport r;
    const bool hit = !options.timed_chips.empty() || !options.timed_links.empty();
    const bool slowed = !options.degraded_chips.empty() && (slowed_hits_ || !hit);
    r.step_time_s = slowed ? 2.0 : 1.0;
    if (!options.timed_chips.empty()) {
      r.progress.stopped = options.timed_chips[0].at.value() < r.step_time_s;
      r.step_time_s = options.timed_chips[0].at.value();  // run to the stop
    }
    if (!options.timed_links.empty() && options.timed_links[0].at.value() < r.step_time_s) {
      r.transfers_cut = 1;
      r.step_time_s += 0.5;
    }
    return r;
  }
  std::vector<std::string> calls;
  std::vector<SimOptions> asked;

 private:
  bool slowed_hits_;
};

// Chip [1,1] straggles from 10.5 s (2 s steps from step 10 at 10 s); chip [0,0] fails at 31.5 s, 1.5 s into
// step 20, which started at 30 s: past the healthy step's 1 s, inside the straggling step.
constexpr const char* kStragglerThenChipDown = R"(
name: job-steps-test
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 100}
faults:
  - {at: 10.5 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 31.5 s, kind: chip_down, target: [0, 0]}
)";

// The step a chip stops in is simulated as the job runs it, with the straggler, so the stop falls inside it.
// Before, it was simulated on the healthy step, which had finished by the tick: the chip never stopped, and the
// report showed a step of 1.5 s with nothing cut and no progress.
TEST(FaultSteps, TheStepAChipStopsInRunsWithTheSlowdownsLastingThen) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kStragglerThenChipDown);
  const Topology topo = build_topology(s.pod, s.chip);
  StragglingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  ASSERT_EQ(runner.asked.size(), 2u);  // the straggler's step, then the step the chip stops in
  const SimOptions& stopped = runner.asked[1];
  ASSERT_EQ(stopped.timed_chips.size(), 1u);
  EXPECT_EQ(stopped.timed_chips[0].chip, topo.chip_at(ChipCoord{0, {0, 0, 0}}));
  EXPECT_EQ(stopped.timed_chips[0].at.value(), 1.5);
  ASSERT_EQ(stopped.degraded_chips.size(), 1u);
  EXPECT_EQ(stopped.degraded_chips[0].chip, topo.chip_at(ChipCoord{0, {1, 1, 0}}));
  EXPECT_EQ(stopped.degraded_chips[0].clock_fraction, 0.5);
  EXPECT_EQ(runner.calls[1], "[0,0] chip_down landing 1.5 s into its step, under [1,1] straggler");
  ASSERT_EQ(steps.steps().size(), 2u);
  EXPECT_TRUE(steps.steps()[1].hit);
  EXPECT_TRUE(steps.steps()[1].progress.stopped);
  EXPECT_EQ(steps.steps()[1].fault_at_s, 1.5);
}

// A step that still finishes before the tick is not the step the job ran: it is left out of the report, saying
// that the stop could not be simulated (here the runner runs that step at the healthy 1 s despite the straggler).
TEST(FaultSteps, AStepThatFinishesBeforeTheChipsStopIsLeftOutSayingSo) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kStragglerThenChipDown);
  const Topology topo = build_topology(s.pod, s.chip);
  StragglingRunner runner(false);
  ::testing::internal::CaptureStderr();
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runner.asked.size(), 2u);
  EXPECT_EQ(steps.steps().size(), 1u);  // the straggler's step only
  EXPECT_EQ(err,
            "tpusim: the step with [0,0] chip_down landing 1.5 s into its step, under [1,1] straggler finished before "
            "the chip's stop: the stop could not be simulated, and the step is left out of the report (the job's "
            "costs do not depend on it)\n");
}

// The same under reroute with a cable failing at 31.5 s (detected at 60 s, 30 s after the start of step 20).
constexpr const char* kStragglerThenCable = R"(
name: job-steps-test
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 100, heartbeat: 5 s, timeout: 30 s, recovery: reroute}
faults:
  - {at: 10.5 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 31.5 s, kind: link_down, target: {chip: [0, 0], dir: x+}}
)";

// The step a cable fails in under reroute is simulated as the job runs it, with the straggler, so the tick falls
// inside it: the cut catches a transfer and its 0.5 s stall is charged, to detection (job.in_flight: lose). The
// steps around it run at 2 s (the straggler's; the cable's rerouted step is 1 s): 10 healthy, 90 straggling, and
// the stall. Before, it was simulated on the healthy step, which had finished by the tick: nothing was cut and the
// step was charged the straggling 2 s, no stall.
TEST(FaultSteps, TheStepACableFailsInRunsWithTheSlowdownsLastingThen) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kStragglerThenCable);
  const Topology topo = build_topology(s.pod, s.chip);
  StragglingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  ASSERT_EQ(runner.asked.size(), 3u);  // the straggler's step, the cable's rerouted step, the step it fails in
  const SimOptions& hit = runner.asked[2];
  ASSERT_EQ(hit.timed_links.size(), 1u);
  EXPECT_EQ(hit.timed_links[0].link, *topo.out_link(topo.chip_at(ChipCoord{0, {0, 0, 0}}), 0, +1));
  EXPECT_EQ(hit.timed_links[0].at.value(), 1.5);
  EXPECT_EQ(hit.timed_links[0].detected.value(), 30.0);
  ASSERT_EQ(hit.degraded_chips.size(), 1u);
  EXPECT_EQ(hit.degraded_chips[0].chip, topo.chip_at(ChipCoord{0, {1, 1, 0}}));
  EXPECT_EQ(hit.degraded_chips[0].clock_fraction, 0.5);
  EXPECT_TRUE(hit.failed.links.empty());
  EXPECT_EQ(runner.calls[2], "[0,0] x+ link_down landing 1.5 s into its step, under [1,1] straggler");
  ASSERT_EQ(steps.steps().size(), 3u);
  EXPECT_TRUE(steps.steps()[2].hit);
  EXPECT_EQ(steps.steps()[2].transfers_cut, 1.0);
  EXPECT_EQ(steps.steps()[2].step_time_s, 2.5);
  const JobOutcome job = run_job_timeline(s, topo, Seconds(1.0), steps);
  ASSERT_EQ(job.result.events.size(), 2u);
  const FaultEvent& e = job.result.events[1];
  EXPECT_EQ(e.step, 20);
  EXPECT_EQ(e.step_before.value(), 2.0);
  EXPECT_EQ(e.step_hit.value(), 2.5);
  EXPECT_EQ(e.downtime.value(), 0.5);
  EXPECT_EQ(e.resumed.value(), 32.5);
  EXPECT_EQ(e.step_after.value(), 2.0);
  EXPECT_EQ(job.result.losses.detection.value(), 0.5);
  EXPECT_EQ(job.result.losses.slowdown.value(), 90.0);
  EXPECT_EQ(job.result.wall.value(), 10 + 90 * 2.0 + 0.5);
}

// A step that still finishes before the cable's tick is not the step the job ran: it is left out of the report,
// saying so, and the timeline charges the step as a stall to the detection (28.5 s) and a rerun (its first 1.5 s
// lost), as for a step that could not be simulated (here the runner runs it at the healthy 1 s despite the
// straggler).
TEST(FaultSteps, AStepThatFinishesBeforeTheCablesTickIsLeftOutSayingSoAndStallsInstead) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(kStragglerThenCable);
  const Topology topo = build_topology(s.pod, s.chip);
  StragglingRunner runner(false);
  ::testing::internal::CaptureStderr();
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runner.asked.size(), 3u);
  EXPECT_EQ(steps.steps().size(), 2u);  // the straggler's step and the cable's rerouted step
  EXPECT_EQ(err,
            "tpusim: the step with [0,0] x+ link_down landing 1.5 s into its step, under [1,1] straggler finished "
            "before the cable failed: the cut could not be simulated, and the step is left out of the report; the "
            "job charges it as a stall to the detection and a rerun instead\n");
  const JobOutcome job = run_job_timeline(s, topo, Seconds(1.0), steps);
  ASSERT_EQ(job.result.events.size(), 2u);
  const FaultEvent& e = job.result.events[1];
  EXPECT_EQ(e.step_hit.value(), 0.0);
  EXPECT_EQ(e.downtime.value(), 28.5);
  EXPECT_EQ(e.lost_work.value(), 1.5);
  EXPECT_EQ(e.resumed.value(), 60.0);
  EXPECT_EQ(job.result.wall.value(), 60 + 80 * 2.0);
}

// A duration shorter than the step holds no step: bad input at its line (before, the job ran one step anyway,
// its wall time past the duration it was given).
TEST(JobSteps, ADurationShorterThanOneStepIsBadInputAtItsLine) {
  constexpr const char* kJob =
      "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 10}}\n";
  const Scenario s = ::tpusim::testing::scenario_from_yaml(std::string(kJob) + "job: {duration: 0.5 s}\n");
  for (const bool with_faults_check : {false, true}) {
    try {
      if (with_faults_check) check_fault_times_of_steps(s, Seconds(1));
      else (void)job_steps(s, Seconds(1), Seconds(5));
      ADD_FAILURE() << "no ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.diagnostics().at(0).key_path, "job.duration");
      EXPECT_EQ(e.diagnostics().at(0).loc.line, 4);
      EXPECT_EQ(e.diagnostics().at(0).found, "500 ms");
    }
  }
}

}  // namespace
}  // namespace tpusim::models
