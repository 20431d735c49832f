// Fault plans and jobs through the tpusim binary (docs/faults.md): bad plans exit 2 with their line and write
// nothing, a straggler slows the synchronous step by its own slowdown, a rerouted link's step and the job's
// timeline land in summary.json, and the same seed gives the same bytes.
#include <string>

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

TEST_F(FaultsCli, AFaultAfterTheJobOfStepsEndsIsBadInputWithItsLineAndNothingIsWritten) {
  const auto file = write("late.yaml", std::string(kJob) + "faults:\n  - {at: 1 d, kind: chip_down, target: [0, 0]}\n");
  const Outcome o = tpusim("run " + file.string() + " -o " + (dir_ / "out").string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("late.yaml:6:10: error: faults[0].at: the fault comes after the job ends"), std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
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

TEST_F(FaultsCli, ARerouteWritesBothStepsAndTheTimelineAndTheSameSeedTheSameBytes) {
  const auto file = write("r.yaml", R"(name: r
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
  ASSERT_EQ(a["job"]["simulated_steps"].size(), 2u);
  EXPECT_GT(a["job"]["simulated_steps"][1]["step_time_s"].get<double>(), a["metrics"]["step_time_s"].get<double>());
  const auto& first = a["faults"]["timeline"][0];
  EXPECT_EQ(first["kind"], "link_down");
  EXPECT_EQ(first["recovery"], "reroute");
  EXPECT_EQ(first["detected_s"].get<double>(), 30.0);  // heartbeat 5 s, timeout 30 s: last heard at 0 s
  EXPECT_EQ(first["lost_work_s"].get<double>(), 0.0);
  // The rerouted step's link heatmap beside the healthy one: no traffic on the cut cable.
  EXPECT_TRUE(std::filesystem::exists(dir_ / "a" / "links.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "a" / "links-fault-1.svg"));
  (void)summary(file.string(), "b");
  EXPECT_EQ(slurp(dir_ / "a" / "summary.json"), slurp(dir_ / "b" / "summary.json"));
  const auto other = summary(file.string() + " --set seed=6", "c");
  EXPECT_NE(a["faults"]["timeline"].dump(), other["faults"]["timeline"].dump());
}

}  // namespace
