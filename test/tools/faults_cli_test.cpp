// Fault plans and jobs through the tpusim binary (docs/faults.md): bad plans exit 2 with their line and write
// nothing, a straggler slows the synchronous step by its own slowdown, a rerouted link's step and the job's
// timeline land in summary.json, and the same seed gives the same bytes.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace {

using tpusim::test::CliTest;
using tpusim::test::Outcome;
using tpusim::test::slurp;

using FaultsCli = CliTest;

constexpr const char* kJob = R"(name: job
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 100}}
job: {steps: 1000}
)";

// A 4 MiB all-reduce on a v4 2x2x1 rerouting around a link failing at 1 s (the faults list open for more).
constexpr const char* kRerouteAllReduce = R"(pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
job: {steps: 1000000, recovery: reroute, restart: 2 s, repair: 0 s}
faults:
  - {at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}
)";

TEST_F(FaultsCli, AFaultAfterTheJobOfStepsEndsIsBadInputWithItsLineAndNothingIsWritten) {
  const auto file = write("late.yaml", std::string(kJob) + "faults:\n  - {at: 1 d, kind: chip_down, target: [0, 0]}\n");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "out").string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("late.yaml:6:10: error: faults[0].at: the fault comes after the job ends"), std::string::npos)
      << o.err;
  // The job's end: 1000 steps and the 9 checkpoint writes between them, known only once the step is simulated,
  // which is what the last line says (and `validate`, which simulates nothing, notes).
  EXPECT_NE(o.err.find("with a checkpoint written every 100 steps"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("found once the healthy step was simulated ("), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("no step with a fault was simulated, nothing was written"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("nothing was simulated"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
  const Outcome v = tpusim("validate " + file.string());
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("note: the job is given in steps (1000), so its end is known only once its step is "
                       "simulated; run checks the fault's time against it before it simulates any step with a fault"),
            std::string::npos)
      << v.out;
  // Random faults only: the note names the bound on their rates, not a fault time.
  const auto random = write("random.yaml", std::string(kJob) + "fault_rates: {chip_down: 1000 d}\n");
  const Outcome r = tpusim("validate " + random.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("simulated; run bounds the fault rates by it before"), std::string::npos) << r.out;
}

// A chip's six cables failing one by one: under reroute the sixth cuts the chip off and the plan is refused
// (test/badinput/cases.yaml, fault-plan-cuts-every-cable-of-a-chip); under checkpoint_restart each failure is
// repaired at the restart its detection starts, so the plan runs, each fault a restart, and nothing else
// about the job changes.
TEST_F(FaultsCli, SixCablesOfAChipFailingOneByOneRunUnderCheckpointRestartAndAreRefusedUnderReroute) {
  std::string yaml = "name: s\npod: v4-4x4x4\nworkload: {model: mlp-small, batch: 64, step: train}\n"
                     "job: {steps: 100000000, recovery: checkpoint_restart, restart: 1 s, repair: 0 s}\nfaults:\n";
  const char* dirs[] = {"x+", "x-", "y+", "y-", "z+", "z-"};
  for (int i = 0; i < 6; ++i) {
    yaml += std::string("  - {at: ") + std::to_string(i + 1) + " min, kind: link_down, target: {chip: [1, 1, 1], dir: " +
            dirs[i] + "}}\n";
  }
  const auto file = write("six.yaml", yaml);
  const Outcome o = tpusim("run " + file.string() + " -q -o " + (dir_ / "out").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto s = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  const auto& timeline = s["faults"]["timeline"];
  ASSERT_EQ(timeline.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(timeline[i]["kind"], "link_down") << i;
    EXPECT_EQ(timeline[i]["recovery"], "checkpoint_restart") << i;
  }
  const Outcome refused = tpusim("validate " + file.string() + " --set job.recovery=reroute");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("six.yaml:11:"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("the last cable of chip [1, 1, 1]"), std::string::npos) << refused.err;
}

// A chip fails inside the first checkpoint write (issue 20's audit, item 9): GPT-3 1.3B under fsdp 4 on a v4
// 2x2x1 (batch 8) runs 1000 steps of 214.9 ms (214.896 s), then writes the 15.79 GB state (one host, 1 GB/s):
// 15.788679168 s. The fault at 220 s lands 5.1 s into that write: the write is lost, the job goes back to step
// 0 (no checkpoint yet) with the 220 s since the start lost, detected at 250 s (last heartbeat at 220 s, 30 s
// timeout), back after the 1 h repair and 10 min restart, with no restore (no checkpoint was written: the job
// starts again from its initial state). The report says where it landed: no step was in flight, so none was
// simulated with it.
// A fault planned before job.duration but after the job's last whole step is never met: it is listed as such
// (stdout and faults.after_the_end), not dropped without a word. An MLP step of 13.53 ms fits 266,090 times in
// the hour (the last ends 5.2 ms before it); the fault 0.5 ms before the hour falls after that.
TEST_F(FaultsCli, AFaultAfterTheJobsLastStepIsListedAsNotMet) {
  const auto file = write("e.yaml", R"(name: e
pod: v4-1x1x1
workload: {model: mlp-quickstart, batch: 2048}
job: {duration: 1 h}
faults:
  - {at: 3599.9995 s, kind: chip_down, target: [0, 0, 0]}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "e").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto s = nlohmann::json::parse(slurp(dir_ / "e" / "summary.json"));
  const double wall = s["job"]["wall_s"].get<double>();
  const double step = s["metrics"]["step_time_s"].get<double>();
  EXPECT_LE(wall, 3600.0);
  EXPECT_GT(wall + step, 3600.0);  // no further step fits
  EXPECT_LT(wall, 3599.9995);
  EXPECT_TRUE(s["faults"]["timeline"].empty());
  ASSERT_EQ(s["faults"]["after_the_end"].size(), 1u);
  EXPECT_EQ(s["faults"]["after_the_end"][0]["index"], 0);
  EXPECT_DOUBLE_EQ(s["faults"]["after_the_end"][0]["at_s"].get<double>(), 3599.9995);
  // Both times read 3600 s at four digits, as if the fault fell after itself: printed as far as they differ.
  EXPECT_NE(o.out.find("faults[0] at 3599.9995 s falls after the job's end (3599.9948 s): not met"), std::string::npos)
      << o.out;
}

TEST_F(FaultsCli, AFaultInACheckpointWriteIsReportedAsLandingThereAndLosesTheWrite) {
  const auto file = write("w.yaml", R"(name: w
pod: v4-2x2x1
workload: {model: gpt3-1.3b, batch: 8, step: train, mesh: {fsdp: 4}, checkpoint: {every_steps: 1000}}
job: {steps: 5000}
faults:
  - {at: 220 s, kind: chip_down, target: [1, 0, 0]}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "w").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto s = nlohmann::json::parse(slurp(dir_ / "w" / "summary.json"));
  const double step = s["metrics"]["step_time_s"].get<double>();
  EXPECT_NEAR(step, 0.2069, 1e-4);
  EXPECT_DOUBLE_EQ(s["job"]["checkpoint_write_s"].get<double>(), 15.788679168);
  ASSERT_EQ(s["faults"]["timeline"].size(), 1u);
  const auto& e = s["faults"]["timeline"][0];
  EXPECT_EQ(e["landed_in"], "checkpoint_write");
  EXPECT_EQ(e["step"], 1000);  // the steps done before the write
  EXPECT_EQ(e["recovery"], "checkpoint_restart");
  EXPECT_DOUBLE_EQ(e["detected_s"].get<double>(), 250.0);
  EXPECT_NEAR(e["lost_work_s"].get<double>(), 220.0, 1e-12);  // 1000 steps and 13.1 s of the write
  EXPECT_DOUBLE_EQ(e["resumed_s"].get<double>(), 250.0 + 3600 + 600);
  EXPECT_DOUBLE_EQ(s["job"]["losses_s"]["restore"].get<double>(), 0.0);
  EXPECT_EQ(e["step_time_hit_s"], 0.0);
  EXPECT_EQ(s["job"]["simulated_steps"].size(), 1u);  // the healthy step only
  EXPECT_EQ(s["job"]["checkpoints"], 4);
  EXPECT_NE(o.out.find("checkpoint_write"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1 fault stopped hardware during a checkpoint write: the write is lost"), std::string::npos)
      << o.out;
}

TEST_F(FaultsCli, AnUnknownKindAndAMissingTargetAreBadInputBeforeAnythingRuns) {
  const auto file = write("bad.yaml", std::string(kJob) + R"(faults:
  - {at: 1 s, kind: chip_failure, target: [0, 0]}
  - {at: 1 s, kind: chip_down, target: [2, 0]}
)");
  const Outcome o = tpusim("validate " + file.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("bad.yaml:6:21: error: faults[0].kind: invalid value"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("bad.yaml:7:40: error: faults[1].target: the pod has no chip there"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("2 errors in the input; nothing was simulated"), std::string::npos) << o.err;
}

TEST_F(FaultsCli, AStragglerSlowsTheSynchronousStepByItsOwnSlowdown) {
  // Four chips run the same program; the step ends with the slowest. With chip (1, 1) at half its clock (and
  // VMEM), the job's step equals that program's step on one chip at half the clock (v5e: 1.5 GHz, VMEM
  // 12288 GB/s, peak 197 TFLOP/s in configs/chips/v5e.yaml; all halved together).
  const auto file = write("s.yaml", std::string(kJob) + "faults: [{at: 0 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}]\n");
  const auto job = summary(file.string(), "job");
  const double healthy = job["job"]["simulated_steps"][0]["step_time_s"];
  const double straggling = job["job"]["simulated_steps"][1]["step_time_s"];
  EXPECT_EQ(healthy, job["metrics"]["step_time_s"].get<double>());
  const auto one = write("one.yaml", "name: one\npod: v5e-1x1\nworkload: {model: mlp-small, batch: 64, step: train}\n");
  ASSERT_EQ(tpusim("lower " + one.string() + " -o " + (dir_ / "prog.json").string()).exit_code, 0);
  const auto program = write("p.yaml", "name: p\npod: v5e-1x1\nworkload: {program: prog.json}\n");
  const auto base = summary(program.string(), "base");
  const auto slow = summary(program.string() + " --set chip.clock=750MHz --set chip.vmem.bandwidth=6144GB/s"
                                               " --set chip.peak_bf16=98.5TFLOP/s",
                            "slow");
  EXPECT_DOUBLE_EQ(base["metrics"]["step_time_s"].get<double>(), healthy);
  EXPECT_DOUBLE_EQ(slow["metrics"]["step_time_s"].get<double>(), straggling);
  EXPECT_GT(straggling, healthy);
  // Every step after the fault (at 0 s) runs at the straggler's time: the job is 1000 of them plus 9 checkpoints.
  const double wall = job["job"]["wall_s"];
  const double checkpoints = 9 * job["job"]["checkpoint_write_s"].get<double>();
  EXPECT_NEAR(wall, 1000 * straggling + checkpoints, 1e-9 * wall);
}

// A straggler lasts until its chip is replaced: chip [1,1] of a v5e 2x2 straggles from 1 s (step 52) and fails at
// 5 s (step 116), so the job rolls back to the checkpoint after step 100 and, the chip repaired, runs its other
// steps at the healthy step. The slowdown kept is the straggler's excess over the healthy step for steps 52 to 99.
// Before, every step after 1 s was charged the straggler's step: 3566 s of slowdown, goodput 29.25%.
TEST_F(FaultsCli, AStragglerEndsWhenItsChipIsRepaired) {
  const auto s = summary(write("s2.yaml", R"(name: s2
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 2048, step: train, checkpoint: {every_steps: 100}}
job: {steps: 300000}
faults:
  - {at: 1 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 5 s, kind: chip_down, target: [1, 1]}
)").string(), "s2");
  const auto& steps = s["job"]["simulated_steps"];
  const double healthy = steps[0]["step_time_s"], straggling = steps[1]["step_time_s"];
  EXPECT_GT(straggling, 1.5 * healthy);
  const auto& timeline = s["faults"]["timeline"];
  ASSERT_EQ(timeline.size(), 2u);
  EXPECT_EQ(timeline[0]["step"], 52);
  EXPECT_EQ(timeline[1]["step"], 116);
  EXPECT_EQ(timeline[1]["recovery"], "checkpoint_restart");
  EXPECT_EQ(timeline[1]["step_time_after_s"].get<double>(), healthy);
  EXPECT_NEAR(s["job"]["losses_s"]["slowdown"].get<double>(), 48 * (straggling - healthy), 1e-12);
  EXPECT_EQ(s["job"]["steps_done"], 300000);
}

TEST_F(FaultsCli, ARerouteWritesBothStepsAndTheTimelineAndTheSameSeedTheSameBytes) {
  // Per-step collectives: the counts below are the ring's sends (an aggregate flow cut at the tick counts one,
  // test/models/collective_aggregate_fault_test.cpp).
  const auto file = write("r.yaml", R"(name: r
fidelity: {collectives: per_step}
pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
  checkpoint: {every_steps: 10000}
job: {steps: 10000000, recovery: reroute, restart: 1 s, repair: 0 s}
faults: [{at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}]
fault_rates: {chip_down: 10 min}
seed: 5
)");
  const auto a = summary(file.string(), "a");
  // The healthy step, the step with the cable down from its start, and the step the fault lands in.
  ASSERT_EQ(a["job"]["simulated_steps"].size(), 3u);
  EXPECT_GT(a["job"]["simulated_steps"][1]["step_time_s"].get<double>(), a["metrics"]["step_time_s"].get<double>());
  const auto& hit = a["job"]["simulated_steps"][2];
  const auto& first = a["faults"]["timeline"][0];
  // job.in_flight lose (the default): the four sends on the cable when the fault lands 58.7 us into the step
  // (2 MiB) are lost and sent again at the detection, 29 s after the fault; the step in flight lasts that long
  // and more, and is kept.
  ASSERT_TRUE(hit.contains("fault_in_step"));
  const auto& in_step = hit["fault_in_step"];
  EXPECT_EQ(in_step["in_flight_policy"], "lose");
  EXPECT_EQ(in_step["transfers_cut"].get<double>(), 4.0);
  EXPECT_EQ(in_step["lost_bytes"], in_step["in_flight_bytes"]);
  EXPECT_EQ(in_step["retransmitted_bytes"].get<double>(), 0.0);
  EXPECT_GT(in_step["lost_bytes"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(in_step["detected_s"].get<double>() - in_step["at_s"].get<double>(), 29.0);
  EXPECT_GT(hit["step_time_s"].get<double>(), in_step["detected_s"].get<double>());
  EXPECT_EQ(first["step_time_hit_s"], hit["step_time_s"]);
  EXPECT_DOUBLE_EQ(first["resumed_s"].get<double>(), 1.0 - in_step["at_s"].get<double>() + hit["step_time_s"].get<double>());
  EXPECT_EQ(first["kind"], "link_down");
  EXPECT_EQ(first["recovery"], "reroute");
  EXPECT_EQ(first["detected_s"].get<double>(), 30.0);  // heartbeat 5 s, timeout 30 s: last heard at 0 s
  EXPECT_EQ(first["lost_work_s"].get<double>(), 0.0);
  // The rerouted step's link heatmap beside the healthy one: no traffic on the cut cable.
  EXPECT_TRUE(std::filesystem::exists(dir_ / "a" / "links.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "a" / "links-fault-1.svg"));
  // Its failed cable hatched: both directions, and nothing else.
  const std::string rerouted = slurp(dir_ / "a" / "links-fault-1.svg");
  std::size_t hatched = 0;
  for (auto at = rerouted.find("fill=\"url(#failed)\"><title>link"); at != std::string::npos;
       at = rerouted.find("fill=\"url(#failed)\"><title>link", at + 1)) {
    ++hatched;
  }
  EXPECT_EQ(hatched, 2u);
  (void)summary(file.string(), "b");
  EXPECT_EQ(slurp(dir_ / "a" / "summary.json"), slurp(dir_ / "b" / "summary.json"));
  const auto other = summary(file.string() + " --set seed=6", "c");
  EXPECT_NE(a["faults"]["timeline"].dump(), other["faults"]["timeline"].dump());
}

// Under reroute each step with a failed cable is simulated with that cable alone: with two down at once the
// job runs at the one-cable step, and the run says so (stderr, summary.json's job.notes, stdout); with one it
// does not.
TEST_F(FaultsCli, TwoCablesDownAtOnceUnderRerouteWarnThatTheStepModelsOneAndOneCableDoesNot) {
  const std::string two = R"(name: two
pod: v4-4x4x4
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
job: {steps: 1000000, recovery: reroute}
faults:
  - {at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}
  - {at: 2 s, kind: link_down, target: {chip: [0, 1, 0], dir: x+}}
)";
  const Outcome o = tpusim("run " + write("two.yaml", two).string() + " -o " + (dir_ / "two").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("tpusim: warning: up to 2 cables were down at once"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("note: up to 2 cables were down at once"), std::string::npos) << o.out;
  const auto j = nlohmann::json::parse(slurp(dir_ / "two" / "summary.json"));
  EXPECT_EQ(j["job"]["cables_down_at_most"], 2);
  ASSERT_EQ(j["job"]["notes"].size(), 1u);
  EXPECT_NE(j["job"]["notes"][0].get<std::string>().find("models one failed cable per axis"), std::string::npos);
  // What the note warns of: the second cable leaves the step where the first put it.
  const auto& timeline = j["faults"]["timeline"];
  ASSERT_EQ(timeline.size(), 2u);
  EXPECT_GT(timeline[0]["step_time_after_s"].get<double>(), j["metrics"]["step_time_s"].get<double>());
  EXPECT_EQ(timeline[1]["step_time_after_s"], timeline[0]["step_time_after_s"]);

  const std::string one = two.substr(0, two.rfind("  - {at: 2 s"));
  const Outcome single = tpusim("run " + write("one.yaml", one).string() + " -o " + (dir_ / "one").string());
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(single.err.find("warning"), std::string::npos) << single.err;
  EXPECT_EQ(single.out.find("cables were down at once"), std::string::npos) << single.out;
  const auto k = nlohmann::json::parse(slurp(dir_ / "one" / "summary.json"));
  EXPECT_EQ(k["faults"]["timeline"].size(), 1u);
  EXPECT_FALSE(k["job"].contains("cables_down_at_most"));
  EXPECT_FALSE(k["job"].contains("notes"));
}

// A second cable failing inside a step, while the job runs at the first cable's rerouted step: the hit step is
// simulated as the job runs it, with the first cable routed around, and charged at least the step before. Before,
// the hit step was charged its simulated time, the healthy step's here, so the step a fault hit came out faster
// than the steps around it; then it was simulated with the new cable alone, on the healthy step, and what it added
// to that step was added to the step as it ran.
TEST_F(FaultsCli, AStepHitByALaterCableIsNeverFasterThanTheStepsAroundIt) {
  const std::string yaml = R"(name: later
pod: v4-4x4x4
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
job: {steps: 10000000, recovery: reroute, in_flight: retransmit}
faults:
  - {at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}
  - {at: 100 s, kind: link_down, target: {chip: [0, 1, 0], dir: x+}}
)";
  const auto j = summary(write("later.yaml", yaml).string(), "later");
  const double healthy = j["metrics"]["step_time_s"].get<double>();
  const auto& timeline = j["faults"]["timeline"];
  const auto& steps = j["job"]["simulated_steps"];
  ASSERT_EQ(timeline.size(), 2u);
  ASSERT_EQ(steps.size(), 5u);  // healthy, each cable down, each cable landing in its step
  EXPECT_EQ(steps[4]["what"], "[0,1,0] x+ link_down landing 49.313 us into its step, under [0,0,0] x+ link_down");
  for (int k = 0; k < 2; ++k) {
    const auto& e = timeline[k];
    const double simulated = steps[3 + k]["step_time_s"].get<double>();
    const double before = e["step_time_before_s"].get<double>();
    EXPECT_EQ(e["landed_in"], "step");
    EXPECT_GE(e["step_time_hit_s"].get<double>(), before) << k;
    EXPECT_EQ(e["step_time_hit_s"].get<double>(), std::max(simulated, before)) << k;
    EXPECT_EQ(e["downtime_s"].get<double>(), std::max(0.0, simulated - before)) << k;
  }
  EXPECT_EQ(timeline[0]["step_time_before_s"].get<double>(), healthy);
  EXPECT_GT(timeline[1]["step_time_before_s"].get<double>(), healthy);  // the first cable's rerouted step
}

// stdout lists every step simulated in full, numbered as job.simulated_steps, with its time against the
// healthy step's: a reader sees what the rerouted step and the step the fault lands in cost without opening
// summary.json.
TEST_F(FaultsCli, StdoutListsEveryStepSimulatedInFullWithItsTimeAgainstTheHealthyOne) {
  const auto file = write("r.yaml", "name: r\n" + std::string(kRerouteAllReduce));
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "out").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  const auto& steps = j["job"]["simulated_steps"];
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_NE(o.out.find("steps simulated in full"), std::string::npos) << o.out;
  // Each row: its index, its name as in summary.json, then its time.
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::string what = steps[k]["what"].get<std::string>();
    const auto row = o.out.find(std::to_string(k) + "   " + what);
    EXPECT_NE(row, std::string::npos) << "row " << k << " (" << what << ") missing in:\n" << o.out;
  }
  // The rerouted step is slower than the healthy one, so its row carries a '+' change or a factor.
  const std::string rerouted = steps[1]["what"].get<std::string>();
  const auto at = o.out.find("1   " + rerouted);
  ASSERT_NE(at, std::string::npos);
  const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
  EXPECT_TRUE(line.find(" +") != std::string::npos || line.find(" x") != std::string::npos) << line;
}

// links-fault-K.svg marks the fault its step was simulated with, by the link id the step carries: the degraded
// link's one direction outlined (not hatched, nothing failed) in its step's map, the straggler's square in its
// own, and nothing else.
TEST_F(FaultsCli, TheLinkMapsOutlineTheDegradedLinkAndTheStragglerEachInItsStep) {
  const auto file = write("d.yaml", R"(name: d
pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
job: {steps: 1000000}
faults:
  - {at: 1 s, kind: link_degraded, target: {chip: [0, 0, 0], dir: x+}, bandwidth_fraction: 0.5}
  - {at: 2 s, kind: straggler, target: [1, 1, 0], clock_fraction: 0.5}
)");
  const auto j = summary(file.string(), "d");
  ASSERT_EQ(j["job"]["simulated_steps"].size(), 3u);
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string link = slurp(dir_ / "d" / "links-fault-1.svg");
  EXPECT_EQ(count(link, "class=\"link degraded\""), 1u);
  EXPECT_NE(link.find("link 0: chip (0,0,0) x+ to (1,0,0)"), std::string::npos);
  EXPECT_EQ(count(link, "<title>link 0: chip (0,0,0) x+ to (1,0,0)"), 1u);
  EXPECT_EQ(count(link, "class=\"chip degraded\""), 0u);
  EXPECT_EQ(count(link, "url(#failed)\"><title>"), 0u);
  const std::string straggler = slurp(dir_ / "d" / "links-fault-2.svg");
  EXPECT_EQ(count(straggler, "class=\"chip degraded\""), 1u);
  EXPECT_EQ(count(straggler, "(1,1,0): degraded</title>"), 1u);
  EXPECT_EQ(count(straggler, "class=\"link degraded\""), 0u);
  EXPECT_EQ(count(straggler, "url(#failed)\"><title>"), 0u);
  const std::string healthy = slurp(dir_ / "d" / "links.svg");
  EXPECT_EQ(count(healthy, "degraded\""), 0u);
}

// --trace with a job also writes job-trace.json (Perfetto): the job's span and its downtime on the job's
// tracks, and on each failed component's own track in the faults process an instant event at the fault and
// the detection span up to the timeout. The reroute's downtime runs from the detection to the end of the step
// in flight (simulated with the fault at its tick); the chip restarted from its checkpoint holds its restart.
TEST_F(FaultsCli, TheJobTraceHasTheFaultsAsInstantEventsAndTheirDetectionAndRecoveryAsSpans) {
  const auto file = write("t.yaml", std::string("name: t\n") + kRerouteAllReduce +
                                        "  - {at: 62 s, kind: chip_down, target: [1, 1, 0]}\n");
  const auto summary_json = summary(file.string() + " --trace", "t");
  const auto trace = nlohmann::json::parse(slurp(dir_ / "t" / "job-trace.json"));
  std::map<std::pair<int, std::string>, int> tids;  // (pid, track) -> tid
  std::vector<nlohmann::json> events;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "M") events.push_back(e);
    else if (e["name"] == "thread_name") tids[{e["pid"].get<int>(), e["args"]["name"].get<std::string>()}] = e["tid"];
  }
  const auto on = [&](int pid, const std::string& track) {
    std::vector<nlohmann::json> found;
    const auto it = tids.find({pid, track});
    if (it == tids.end()) return found;
    for (const auto& e : events) {
      if (e["pid"] == pid && e["tid"] == it->second) found.push_back(e);
    }
    return found;
  };
  const auto job = on(0, "job");
  ASSERT_EQ(job.size(), 1u);
  EXPECT_EQ(job[0]["name"], "job");
  EXPECT_DOUBLE_EQ(job[0]["dur"].get<double>(), summary_json["job"]["wall_s"].get<double>() * 1e6);
  const auto link = on(1, "[0,0,0] x+"), chip = on(1, "[1,1,0]");
  ASSERT_EQ(link.size(), 2u);
  EXPECT_EQ(link[0]["ph"], "i");
  EXPECT_EQ(link[0]["name"], "link_down [0,0,0] x+");
  EXPECT_DOUBLE_EQ(link[0]["ts"].get<double>(), 1e6);
  EXPECT_EQ(link[1]["name"], "detection");
  EXPECT_DOUBLE_EQ(link[1]["ts"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(link[1]["dur"].get<double>(), 29e6);  // heartbeats every 5 s, timeout 30 s: last heard at 0 s
  ASSERT_EQ(chip.size(), 2u);
  EXPECT_EQ(chip[0]["ph"], "i");
  EXPECT_DOUBLE_EQ(chip[0]["ts"].get<double>(), 62e6);
  EXPECT_DOUBLE_EQ(chip[1]["dur"].get<double>(), 28e6);  // last heard at 60 s, declared failed at 90 s
  // The job's downtime after each detection: the reroute's, then the restart's with its parts inside it.
  const auto recovery = on(0, "recovery");
  ASSERT_GE(recovery.size(), 2u);
  const auto& rerouted = summary_json["faults"]["timeline"][0];
  EXPECT_EQ(recovery[0]["name"], "recovery: reroute");
  EXPECT_DOUBLE_EQ(recovery[0]["ts"].get<double>(), rerouted["detected_s"].get<double>() * 1e6);
  EXPECT_DOUBLE_EQ(recovery[0]["dur"].get<double>(),
                   (rerouted["resumed_s"].get<double>() - rerouted["detected_s"].get<double>()) * 1e6);
  const auto& restarted = summary_json["faults"]["timeline"][1];
  EXPECT_EQ(recovery[1]["name"].get<std::string>().rfind("recovery: checkpoint_restart", 0), 0u);
  EXPECT_DOUBLE_EQ(recovery[1]["ts"].get<double>(), 90e6);
  EXPECT_DOUBLE_EQ(recovery[1]["dur"].get<double>(),
                   (restarted["resumed_s"].get<double>() - restarted["detected_s"].get<double>()) * 1e6);
  ASSERT_EQ(recovery.size(), 3u);  // job.restart 2 s, repair 0 s, no checkpoint to read: the restart alone
  EXPECT_EQ(recovery[2]["name"], "restart");
  EXPECT_DOUBLE_EQ(recovery[2]["ts"].get<double>(), 90e6);
  EXPECT_DOUBLE_EQ(recovery[2]["dur"].get<double>(), 2e6);
}

// With --trace, each step simulated with a fault writes trace-fault-K.json (K as job.simulated_steps[K]): the
// traced chips' instructions, and on the failed link's track the fault at its tick inside the step, the
// detection span ending at the detection tick and the resend of the two lost transfers from the detection to
// the last one's delivery; the chips' collective stalls until the resend. --trace-chips is honoured.
TEST_F(FaultsCli, AStepHitByALinkFaultTracesTheFaultAtItsTickAndTheStallToTheDetection) {
  // Per-step collectives: the resend below is the ring's four sends on two detours (an aggregate flow cut at the
  // tick is one transfer, test/models/collective_aggregate_fault_test.cpp).
  const auto file =
      write("ft.yaml", std::string("name: ft\nfidelity: {collectives: per_step}\n") + kRerouteAllReduce);
  const auto s = summary(file.string() + " --trace --trace-chips 1", "ft");
  const auto& steps = s["job"]["simulated_steps"];
  ASSERT_EQ(steps.size(), 3u);  // healthy, the cable down from the start, the step the fault lands in
  EXPECT_FALSE(steps[0].contains("trace"));
  EXPECT_EQ(steps[1]["trace"], "trace-fault-1.json");
  ASSERT_EQ(steps[2]["trace"], "trace-fault-2.json");
  const auto& in_step = steps[2]["fault_in_step"];
  const double at_us = in_step["at_s"].get<double>() * 1e6, detected_us = in_step["detected_s"].get<double>() * 1e6;
  const auto trace = nlohmann::json::parse(slurp(dir_ / "ft" / "trace-fault-2.json"));
  EXPECT_EQ(trace["otherData"]["generator"].get<std::string>().rfind("written by tpusim", 0), 0u);
  std::map<std::string, nlohmann::json> marks;
  std::set<int> pids;
  double ici_end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") continue;
    pids.insert(e["pid"].get<int>());
    if (e["cat"] == "fault") marks[e["name"]] = e;
    else if (e["cat"] == "ici") ici_end_us = std::max(ici_end_us, e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_EQ(pids, (std::set<int>{1, 4}));  // chip 1 (--trace-chips 1) and the failed links' process (4 chips)
  ASSERT_EQ(marks.size(), 3u);
  const auto& fault = marks["link_down [0,0,0] x+"];
  EXPECT_EQ(fault["ph"], "i");
  EXPECT_EQ(fault["ts"].get<double>(), at_us);  // the exact tick
  const auto& detection = marks["detection"];
  EXPECT_EQ(detection["tid"], fault["tid"]);
  EXPECT_EQ(detection["ts"].get<double>(), at_us);
  // 1e-6 us: the duration is a difference of two numbers near 29 s, rounded once.
  EXPECT_NEAR(detection["ts"].get<double>() + detection["dur"].get<double>(), detected_us, 1e-6);
  // The fault at the job's 1 s, last heard at 0 s, declared failed at 30 s (timeout 30 s): 29 s later.
  EXPECT_NEAR(detection["dur"].get<double>(), 29e6, 1e-6);
  const auto& resend = marks["resend (lost at the cut)"];
  EXPECT_EQ(resend["ts"].get<double>(), detected_us);
  EXPECT_EQ(resend["args"]["transfers"].get<double>(), 4.0);
  EXPECT_EQ(resend["args"]["bytes"], in_step["lost_bytes"]);
  const double resent_us = in_step["resent_done_s"].get<double>() * 1e6;
  EXPECT_NEAR(resend["ts"].get<double>() + resend["dur"].get<double>(), resent_us, 1e-6);
  // The four lost sends, 2 MiB, are sent again two and two over two disjoint 3-hop detours: under flow links
  // (the default) 1 MiB at 45 GB/s x 0.94 efficiency (24.79 us) plus the 3 hop latencies of 1 us. (Chunked
  // links add each send's store-and-forward at the two further hops: 52.6 us.)
  EXPECT_NEAR(resent_us - detected_us, 1048576 / (45e9 * 0.94) * 1e6 + 3, 0.01);
  // Chip 1's all-reduce waits for the lost sends: its last ICI span ends after they were resent.
  EXPECT_GE(ici_end_us, resent_us);
  EXPECT_LE(ici_end_us, s["job"]["simulated_steps"][2]["step_time_s"].get<double>() * 1e6 + 1e-6);
  // The lasting fault's trace: the fault at the step's start, no detection inside the step.
  const auto lasting = nlohmann::json::parse(slurp(dir_ / "ft" / "trace-fault-1.json"));
  int lasting_marks = 0;
  for (const auto& e : lasting["traceEvents"]) {
    if (e["ph"] == "M" || e["cat"] != "fault") continue;
    ++lasting_marks;
    EXPECT_EQ(e["name"], "link_down [0,0,0] x+ (from the step's start)");
    EXPECT_EQ(e["ts"].get<double>(), 0.0);
  }
  EXPECT_EQ(lasting_marks, 1);
}

// A chip_down landing inside a step: the step in flight is simulated with the chip stopping at its tick, up to
// the detection (trace-fault-1.json, job.simulated_steps[1]). On a v5e 2x2 the MLP's step is 22.09 us; the
// fault at 1 s lands in step 45037, 5.3 us in, and chip [1,0] (chip 1) stops there. Checkpoints every 20000
// steps (2.6 ms each: the 2.6 MB state, written by chip 0 alone at 1 GB/s): the timeline's lost work is the
// 5037 steps since the checkpoint at step 40000 plus the tick's offset
// into the step, exactly the offset the simulation ran with. Progress: what completed by the detection.
TEST_F(FaultsCli, AChipDownInsideAStepIsSimulatedToItsDetectionAndItsLostWorkIsTheOffsetPlusTheCheckpointsSteps) {
  const auto file = write("cd.yaml", R"(name: cd
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 20000}}
job: {steps: 100000, recovery: checkpoint_restart, restart: 2 s, repair: 0 s, stopped_step: to_detection}
faults:
  - {at: 1 s, kind: chip_down, target: [1, 0]}
)");
  const auto s = summary(file.string() + " --trace --trace-chips 0-3", "cd");
  const double step = s["metrics"]["step_time_s"].get<double>();
  const auto& steps = s["job"]["simulated_steps"];
  ASSERT_EQ(steps.size(), 2u);  // the healthy step, and the step the chip stops in
  const auto& stopped = steps[1];
  ASSERT_TRUE(stopped.contains("progress"));
  const auto& in_step = stopped["fault_in_step"];
  const auto& event = s["faults"]["timeline"][0];
  EXPECT_EQ(event["recovery"], "checkpoint_restart");
  const auto hit_step = event["step"].get<std::int64_t>();
  const double offset = in_step["at_s"].get<double>();
  // Where the fault lands: 1 s = 45037 steps, two checkpoint writes and the offset.
  EXPECT_EQ(hit_step, 45037);
  EXPECT_NEAR(1.0, 45037 * step + 2 * s["job"]["checkpoint_write_s"].get<double>() + offset, 1e-12);
  EXPECT_GT(offset, 0.0);
  EXPECT_LT(offset, step);
  // Lost work: the steps since the checkpoint after step 40000, plus the step in flight up to the tick.
  EXPECT_NEAR(event["lost_work_s"].get<double>(), (hit_step - 40000) * step + offset, 1e-15);
  // The simulation ran to the detection: 30 s (last heard at 0 s, timeout 30 s) - the step's start.
  EXPECT_NEAR(in_step["detected_s"].get<double>() - offset, 29.0, 1e-9);
  EXPECT_EQ(stopped["step_time_s"], in_step["detected_s"]);
  const auto& progress = stopped["progress"];
  EXPECT_EQ(progress["finished"], false);
  const double instructions = progress["instructions"].get<double>(), completed = progress["completed"].get<double>();
  EXPECT_EQ(std::fmod(instructions, 4.0), 0.0);  // the same program on the 4 chips
  EXPECT_LT(completed, instructions);            // chip 1 stopped 12.0 us into a 17.02 us step
  EXPECT_GT(completed, 3 * instructions / 4);    // the other three need nothing from it here
  EXPECT_DOUBLE_EQ(progress["fraction"].get<double>(), completed / instructions);
  EXPECT_LE(progress["last_completion_s"].get<double>(), step);
  // The trace: the chips' completed instructions (chip 1's all before the tick) and on chip 1's fault track the
  // fault at its tick, the detection span to the detection and the stall from the last completion.
  const auto trace = nlohmann::json::parse(slurp(dir_ / "cd" / stopped["trace"].get<std::string>()));
  std::map<std::string, nlohmann::json> marks;
  int spans = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") continue;
    if (e["cat"] == "fault") {
      marks[e["name"]] = e;
      EXPECT_EQ(e["pid"], 1);
      continue;
    }
    if (e["ph"] != "X" || !e["args"].contains("instruction")) continue;  // step and layer spans, flows
    ++spans;
    if (e["pid"] == 1) {
      EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), offset * 1e6 + 1e-6);
    }
  }
  EXPECT_EQ(spans, static_cast<int>(completed));
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks["chip_down [1,0]"]["ts"].get<double>(), offset * 1e6);
  EXPECT_NEAR(marks["detection"]["ts"].get<double>() + marks["detection"]["dur"].get<double>(),
              in_step["detected_s"].get<double>() * 1e6, 1e-6);
  EXPECT_EQ(marks["step stalled: nothing completes"]["ts"].get<double>(),
            progress["last_completion_s"].get<double>() * 1e6);
  EXPECT_EQ(progress["simulated_to"], "detection");
  // A chip_down aimed at a chip the pod lacks is still bad input, nothing written.
  const auto bad = write("cd-bad.yaml", R"(name: cd
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train}
job: {steps: 100000}
faults:
  - {at: 1 s, kind: chip_down, target: [2, 0]}
)");
  const Outcome o = tpusim("run " + bad.string() + " -o " + (dir_ / "cd-bad").string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cd-bad"));
}

// A chip that stops in a step a straggler lengthened, past the healthy step's length: chip [1,1] straggles from
// 1 s (step 52 on), chip [0,0] fails at 1.326 s, in step 62, further into it than a healthy step lasts. The step is
// simulated as the job runs it, with the straggler, so the chip stops inside it. Before, it was simulated on the
// healthy step, which had finished by the tick: the chip never stopped, and stdout said "0 transfers in flight on
// the cable" with no progress.
TEST_F(FaultsCli, AChipStoppingInAStepAStragglerLengthenedStopsInsideIt) {
  const auto file = write("s8.yaml", R"(name: s8
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 2048, step: train}
job: {steps: 1000}
faults:
  - {at: 1 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 1.326 s, kind: chip_down, target: [0, 0]}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "s8").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto s = nlohmann::json::parse(slurp(dir_ / "s8" / "summary.json"));
  const auto& steps = s["job"]["simulated_steps"];
  ASSERT_EQ(steps.size(), 3u);  // healthy, the straggler's, the step the chip stops in
  const double healthy = steps[0]["step_time_s"], straggling = steps[1]["step_time_s"];
  const auto& stopped = steps[2];
  EXPECT_EQ(stopped["what"], "[0,0] chip_down landing 25.0177 ms into its step, under [1,1] straggler");
  const double offset = stopped["fault_in_step"]["at_s"];
  EXPECT_NEAR(offset, 1.326 - 52 * healthy - 10 * straggling, 1e-12);
  EXPECT_GT(offset, healthy);
  EXPECT_LT(offset, straggling);
  ASSERT_TRUE(stopped.contains("progress"));
  const auto& progress = stopped["progress"];
  EXPECT_EQ(progress["simulated_to"], "stop");
  EXPECT_GT(progress["completed"].get<double>(), 0.0);
  EXPECT_LT(progress["completed"].get<double>(), progress["instructions"].get<double>());
  EXPECT_LE(progress["last_completion_s"].get<double>(), offset);
  EXPECT_EQ(s["faults"]["timeline"][1]["step"], 62);
  EXPECT_NE(o.out.find("the step with [0,0] chip_down landing 25.0177 ms into its step, under [1,1] straggler: "
                       "stopped; by the stop"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("transfers in flight on the cable"), std::string::npos) << o.out;
}

// The table of steps simulated in full says that the step a chip stopped in stopped, instead of setting how far it
// was simulated against the healthy step: chip [1,1] of a v5e 2x2 stopping 8.554 ms into a 19.07 ms MLP step
// read "8.554 ms  -55.1%", as if the fault had made the step faster.
TEST_F(FaultsCli, TheStepAChipStoppedInReadsStoppedNotFasterThanTheHealthyStep) {
  const auto file = write("stop.yaml", R"(name: stop
pod: v5e-2x2
workload: {model: mlp-quickstart, batch: 2048, step: train}
job: {steps: 1000}
faults:
  - {at: 1 s, kind: chip_down, target: [1, 1]}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "stop").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string row = "      1   [1,1] chip_down landing 8.55415 ms into its step";
  const std::size_t at = o.out.find(row);
  ASSERT_NE(at, std::string::npos) << o.out;
  const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
  EXPECT_NE(line.find("8.554 ms    stopped"), std::string::npos) << line;
  EXPECT_EQ(line.find('%'), std::string::npos) << line;
}

// A cable failing under reroute in a step a straggler lengthened, past the healthy step's length (docs/faults.md's
// case): GPT-3 1.3B under fsdp 4 on a v5e 2x2, a 336.6 ms step, 594.9 ms with chip [1,1] at half its clock from 1 s
// (step 2 on); the cable fails at 7.115 s, 493.2 ms into step 12. The step is simulated as the job runs it,
// with the straggler, so the cut catches the transfers on the cable (job.in_flight lose: sent again at the
// detection, 35 s) and the stall is charged: the step lasts its simulation, its excess over the straggling step
// charged to detection. Before, it was simulated on the healthy step, which had finished by the tick: nothing was
// cut and no stall charged (wall 600.76 s with the steps of then; now 622.23 s).
TEST_F(FaultsCli, ACableFailingInAStepAStragglerLengthenedCutsItsTransfersAndIsChargedTheStall) {
  const auto file = write("s9.yaml", R"(name: s9
pod: v5e-2x2
workload: {model: gpt3-1.3b, batch: 8, step: train, optimizer: adam, remat: full, mesh: {fsdp: 4}}
job: {steps: 1000, recovery: reroute}
faults:
  - {at: 1 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 7.115 s, kind: link_down, target: {chip: [0, 0], dir: x+}}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "s9").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto s = nlohmann::json::parse(slurp(dir_ / "s9" / "summary.json"));
  const auto& steps = s["job"]["simulated_steps"];
  ASSERT_EQ(steps.size(), 4u);  // healthy, the straggler's, the cable's rerouted step, the step it fails in
  const double healthy = steps[0]["step_time_s"], straggling = steps[1]["step_time_s"];
  const auto& hit = steps[3];
  EXPECT_EQ(hit["what"], "[0,0] x+ link_down landing 493.24 ms into its step, under [1,1] straggler");
  const double started = 2 * healthy + 10 * straggling;  // step 12
  const auto& in_step = hit["fault_in_step"];
  const double offset = in_step["at_s"];
  EXPECT_NEAR(offset, 7.115 - started, 1e-12);
  EXPECT_GT(offset, healthy);
  EXPECT_LT(offset, straggling);
  EXPECT_NEAR(in_step["detected_s"].get<double>(), 35.0 - started, 1e-12);
  // The cut catches the five transfers on the cable (120.1 MiB, 42.28 MiB of it delivered), lost and sent again at
  // the detection: the step ends after the last of them arrives.
  EXPECT_EQ(in_step["transfers_cut"].get<double>(), 5.0);
  EXPECT_EQ(in_step["in_flight_bytes"].get<double>(), 125882368.0);
  EXPECT_EQ(in_step["delivered_bytes"].get<double>(), 44336504.0);
  EXPECT_EQ(in_step["lost_bytes"], in_step["in_flight_bytes"]);
  EXPECT_GT(in_step["resent_done_s"].get<double>(), in_step["detected_s"].get<double>());
  EXPECT_LE(in_step["resent_done_s"].get<double>(), hit["step_time_s"].get<double>());
  const double simulated = hit["step_time_s"];
  const auto& e = s["faults"]["timeline"][1];
  EXPECT_EQ(e["step"], 12);
  EXPECT_EQ(e["step_time_before_s"].get<double>(), straggling);
  EXPECT_EQ(e["step_time_hit_s"].get<double>(), simulated);
  EXPECT_NEAR(e["downtime_s"].get<double>(), simulated - straggling, 1e-12);
  EXPECT_NEAR(e["resumed_s"].get<double>(), started + simulated, 1e-12);
  EXPECT_EQ(s["job"]["losses_s"]["detection"], e["downtime_s"]);
  // 2 healthy steps, 997 straggling and the hit one.
  EXPECT_NEAR(s["job"]["wall_s"].get<double>(), 2 * healthy + 997 * straggling + simulated, 1e-12);
  EXPECT_NE(o.out.find("the step with [0,0] x+ link_down landing 493.24 ms into its step, under [1,1] straggler: "
                       "28.48 s (healthy 336.6 ms); 5 transfers in flight on the cable"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.err.find("finished before the cable failed"), std::string::npos) << o.err;
}

// By default (job.stopped_step: to_stop) the step a chip stops in is simulated up to the stop: its figures
// cover the step until the tick, what completed by then (nothing of chip 1 after it), and the stop's cuts; the
// job's costs are those of a run to the detection.
TEST_F(FaultsCli, AChipDownInsideAStepIsSimulatedUpToTheStopByDefaultAndCostsTheJobTheSame) {
  const std::string job = R"(name: cd
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 20000}}
faults:
  - {at: 1 s, kind: chip_down, target: [1, 0]}
job: {steps: 100000, recovery: checkpoint_restart, restart: 2 s, repair: 0 s)";
  const auto to_stop = summary(write("stop.yaml", job + "}\n").string(), "stop");
  const auto to_detection =
      summary(write("detection.yaml", job + ", stopped_step: to_detection}\n").string(), "detection");
  const auto& stopped = to_stop["job"]["simulated_steps"][1];
  const auto& in_step = stopped["fault_in_step"];
  const double offset = in_step["at_s"].get<double>();
  EXPECT_NEAR(stopped["step_time_s"].get<double>(), offset, 1e-12);  // the tick, in whole picoseconds
  const auto& progress = stopped["progress"];
  EXPECT_EQ(progress["simulated_to"], "stop");
  EXPECT_LE(progress["last_completion_s"].get<double>(), offset);
  const auto& later = to_detection["job"]["simulated_steps"][1]["progress"];
  EXPECT_EQ(progress["instructions"], later["instructions"]);
  EXPECT_GT(progress["completed"].get<double>(), 0.0);
  EXPECT_LT(progress["completed"].get<double>(), later["completed"].get<double>());  // the others ran on
  // Those cut at the tick; a run to the detection also drops the later sends to or from the chip.
  const auto& dropped_later = to_detection["job"]["simulated_steps"][1]["fault_in_step"]["transfers_dropped"];
  EXPECT_LE(in_step["transfers_dropped"].get<double>(), dropped_later.get<double>());
  for (const char* key : {"wall_s", "goodput", "useful_s", "steps_done"}) {
    EXPECT_EQ(to_stop["job"][key], to_detection["job"][key]) << key;
  }
  EXPECT_EQ(to_stop["faults"]["timeline"], to_detection["faults"]["timeline"]);
}

// A decode job (a step that trains nothing) keeps every step it served: chip [1,1] stopping at 10 min, in step
// 94646, loses only that step's work since its start, then the detection (30 s), the repair (1 h) and the restart
// (10 min), no restore; the job goes on from step 94646. Before, it was charged as a training job with no
// checkpoint: 600 s of lost work (the 94756 steps then served and the offset), 100000 steps run again from the
// restart on, wall 5463 s, goodput 11.59% (now 4864 s, 13.03%); stdout said "a restart begins again from step 0".
TEST_F(FaultsCli, AnInferenceJobKeepsTheStepsItServedAndLosesOnlyTheStepInFlight) {
  const auto file = write("jdec.yaml", R"(name: jdec
pod: v5e-2x2
workload: {model: llama2-7b, batch: 4, step: decode, context: 1024, mesh: {tensor: 4}}
job: {steps: 100000, recovery: checkpoint_restart}
faults:
  - {at: 10 min, kind: chip_down, target: [1, 1]}
)");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "jdec").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("no checkpoints (the step trains nothing): every step done is kept; a fault loses only the "
                       "step in flight (a restart runs it again)"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("begins again from step 0"), std::string::npos) << o.out;
  const auto s = nlohmann::json::parse(slurp(dir_ / "jdec" / "summary.json"));
  const double step = s["metrics"]["step_time_s"].get<double>();
  const auto& e = s["faults"]["timeline"][0];
  EXPECT_EQ(e["step"], 94646);
  const double offset = 600.0 - 94646 * step;  // the step in flight, up to the stop
  EXPECT_GT(offset, 0.0);
  EXPECT_LT(offset, step);
  EXPECT_NEAR(e["lost_work_s"].get<double>(), offset, 1e-12);
  EXPECT_NEAR(e["downtime_s"].get<double>(), 30.0 + 3600 + 600, 1e-9);  // last heard at 600 s; no restore
  const auto& job = s["job"];
  const auto& l = job["losses_s"];
  EXPECT_NEAR(l["lost_work"].get<double>(), offset, 1e-12);
  EXPECT_EQ(l["detection"].get<double>(), 30.0);
  EXPECT_EQ(l["repair"].get<double>(), 3600.0);
  EXPECT_EQ(l["restart"].get<double>(), 600.0);
  EXPECT_EQ(l["restore"].get<double>(), 0.0);
  EXPECT_EQ(job["steps_done"], 100000);
  const double useful = 100000 * step, wall = useful + offset + 30 + 3600 + 600;
  EXPECT_NEAR(job["useful_s"].get<double>(), useful, 1e-12 * useful);
  EXPECT_NEAR(job["wall_s"].get<double>(), wall, 1e-12 * wall);
  EXPECT_NEAR(job["goodput"].get<double>(), useful / wall, 1e-12);
  double parts = job["useful_s"].get<double>();
  for (const auto& [cause, seconds] : l.items()) parts += seconds.get<double>();
  EXPECT_NEAR(parts, job["wall_s"].get<double>(), 1e-12 * wall);
}


// A one-layer GPT-3 XL, data parallel over two v5e 2x2 pods (fsdp 4 in each), with chip [1,0] of pod P stopping
// at 1 s. The target's pod is struck: its chip stops in the step simulated (the fault on chip 5's track, pod 1's
// [1,0], not chip 1's), and the pods being alike, the job costs the same either way. The target names its pod on
// stdout, in summary.json and in the job trace. (Before, a target had no pod: every fault struck pod 0.)
TEST_F(FaultsCli, AChipDownOnPodOneOfTwoStopsThatPodsChipAndCostsTheJobWhatPodZerosDoes) {
  const auto yaml = [](int pod) {
    return std::string(R"(name: dp
pod: {name: v5e-2x2x2, chip: v5e, shape: [2, 2], wraparound: [0, 0], host_shape: [2, 2], pods: 2}
workload:
  model: {from: gpt3-1.3b, layers: 1}
  batch: 8
  seq_len: 256
  step: train
  mesh: {data: 2, fsdp: 4}
  checkpoint: {every_steps: 1000}
job: {steps: 100000, recovery: checkpoint_restart, restart: 2 s, repair: 0 s}
faults:
  - {at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: )") + std::to_string(pod) + "}}\n";
  };
  const auto zero = summary(write("zero.yaml", yaml(0)).string() + " --trace --trace-chips 0-7", "zero");
  const Outcome o = tpusim("run " + write("one.yaml", yaml(1)).string() + " --trace --trace-chips 0-7 -o " +
                           (dir_ / "one").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto one = nlohmann::json::parse(slurp(dir_ / "one" / "summary.json"));
  const auto& e0 = zero["faults"]["timeline"][0];
  const auto& e1 = one["faults"]["timeline"][0];
  EXPECT_EQ(e0["target"], "[1,0] of pod 0");
  EXPECT_EQ(e1["target"], "[1,0] of pod 1");
  EXPECT_EQ(one["scenario"]["faults[0]"]["target"], "[1,0] of pod 1");
  EXPECT_NE(o.out.find("chip_down      [1,0] of pod 1"), std::string::npos) << o.out;
  // The same costs: the job, the fault's recovery, and the step it stops in, how far it got.
  for (const char* key : {"wall_s", "goodput", "useful_s", "steps_done", "checkpoints"}) {
    EXPECT_EQ(zero["job"][key], one["job"][key]) << key;
  }
  for (const char* key : {"step", "detected_s", "resumed_s", "lost_work_s", "downtime_s", "recovery"}) {
    EXPECT_EQ(e0[key], e1[key]) << key;
  }
  EXPECT_GT(e1["lost_work_s"].get<double>(), 0.0);
  const auto& stopped0 = zero["job"]["simulated_steps"][1];
  const auto& stopped1 = one["job"]["simulated_steps"][1];
  EXPECT_EQ(stopped1["what"].get<std::string>().rfind("[1,0] of pod 1 chip_down landing", 0), 0u) << stopped1;
  EXPECT_EQ(stopped0["step_time_s"], stopped1["step_time_s"]);
  EXPECT_EQ(stopped0["progress"], stopped1["progress"]);
  EXPECT_LT(stopped1["progress"]["completed"].get<double>(), stopped1["progress"]["instructions"].get<double>());
  // The chip that stops: the fault's marks are on chip 1's track for pod 0, chip 5's (4 + 1) for pod 1.
  const auto marks = [&](const std::string& run, const nlohmann::json& step) {
    std::map<std::string, int> pids;
    const auto trace = nlohmann::json::parse(slurp(dir_ / run / step["trace"].get<std::string>()));
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "M" && e["cat"] == "fault") pids[e["name"]] = e["pid"].get<int>();
    }
    return pids;
  };
  EXPECT_EQ(marks("zero", stopped0), (std::map<std::string, int>{{"chip_down [1,0] of pod 0", 1}, {"detection", 1},
                                                                 {"step stalled: nothing completes", 1}}));
  EXPECT_EQ(marks("one", stopped1), (std::map<std::string, int>{{"chip_down [1,0] of pod 1", 5}, {"detection", 5},
                                                                {"step stalled: nothing completes", 5}}));
  // The job trace names the fault with its pod too.
  const std::string job_trace = slurp(dir_ / "one" / "job-trace.json");
  EXPECT_NE(job_trace.find("\"chip_down [1,0] of pod 1\""), std::string::npos);
}

}  // namespace
