// Mirrored chips (models/README.md "Mirrored chips") must not change a single output byte: each scenario runs
// through the tpusim binary with TPUSIM_MIRROR=off (every chip simulated) and as by default, with --trace, and
// every file of the two output folders must be equal; --perf must say that mirroring took place (how many
// chips ran) or, for the forced mismatch (TPUSIM_MIRROR=mismatch), that the run fell back to every chip (and
// a warning on stderr must say so once). The scenarios: the 175B step cut to 64 chips (one class of 64: FSDP
// all-gathers in flight during compute, tensor all-reduces, every chip traced), the same on 512 chips (tensor
// on 4-chip segments of x: 4 classes of 128), a two-slice data-parallel step over the DCN (8 classes), a
// 4-stage pipeline (send / recv, 4 classes), jobs with a link or a chip failing inside a step, a straggler and a
// degraded link (each step with a fault mirrored too, its classes refined), and the forced mismatch.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>

#include <regex>

#include <gtest/gtest.h>

#include "support/same_outputs.h"

namespace fs = std::filesystem;

namespace {

using tpusim::testing::read_file;

// Runs `args` with TPUSIM_MIRROR=`mode` into `out`; returns what --perf printed.
std::string run(const std::string& mode, const std::string& args, const fs::path& out) {
  const fs::path perf = out.string() + ".perf";
  const std::string cmd = "TPUSIM_MIRROR=" + mode + " " + std::string(TPUSIM_BIN) + " run " + args +
                          " --trace --perf -q -o " + out.string() + " 2> " + perf.string();
  const int status = std::system(cmd.c_str());
  const std::string text = read_file(perf);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << text;
  fs::remove(perf);
  return text;
}

struct Case {
  std::string name, args, mode, expected;  // expected: in --perf's "mirrored chips" line of the `mode` run
  // A scenario of the test's own, written to a file that {scenario} in `args` names (a job with faults).
  std::string yaml;
  // The job's steps with a fault, each with its --perf line: how many there are, and what each must say.
  int fault_steps = 0;
  std::string fault_steps_expected;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Mirrored : public ::testing::TestWithParam<Case> {};

TEST_P(Mirrored, OutputsAreByteIdenticalToSimulatingEveryChip) {
  const Case& c = GetParam();
  const fs::path base = fs::temp_directory_path() / ("tpusim-mirror-" + std::to_string(getpid()));
  fs::create_directories(base);
  std::string args = c.args;
  if (!c.yaml.empty()) {
    const fs::path scenario = base / "scenario.yaml";
    std::ofstream(scenario) << c.yaml;
    args.replace(args.find("{scenario}"), 10, scenario.string());
  }
  const std::string off = run("off", args, base / "off");
  const std::string on = run(c.mode, args, base / "on");
  // Each step with a fault runs in a process of its own, mirrored as the step without: its line says how.
  const std::regex step_line(R"(tpusim perf: step \d+ \([^\n]*\): wall [^;\n]*; mirroring ([^\n]*))");
  int steps = 0;
  for (auto it = std::sregex_iterator(on.begin(), on.end(), step_line); it != std::sregex_iterator(); ++it) {
    ++steps;
    EXPECT_NE((*it)[1].str().find(c.fault_steps_expected), std::string::npos) << (*it)[0].str();
  }
  EXPECT_EQ(steps, c.fault_steps) << on;
  EXPECT_NE(on.find("tpusim perf: mirroring " + c.expected), std::string::npos) << on;
  // A fall-back says so on stderr as it happens, once (the tool's parent process: tools/src/mirrored_step.h).
  const std::string warning = "[pod] warning: mirrored chips: " + c.expected + "\n";
  if (c.mode == "mismatch") {
    EXPECT_NE(on.find(warning), std::string::npos) << on;
    EXPECT_EQ(on.find(warning), on.rfind(warning)) << on;
  }
  EXPECT_NE(off.find("tpusim perf: mirroring not applied: mirrored chips off"), std::string::npos) << off;
  // Honest counts: the mirrored run executes only its simulated chips' instructions, and with the mirrored
  // ones they make up exactly what the full run executed.
  const auto counts = [](const std::string& text) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(text, m, std::regex(R"(instructions (\d+) executed, (\d+) mirrored)"))) << text;
    return m.size() == 3 ? std::pair{std::stoull(m[1].str()), std::stoull(m[2].str())} : std::pair{0ull, 0ull};
  };
  const auto [off_executed, off_mirrored] = counts(off);
  const auto [on_executed, on_mirrored] = counts(on);
  EXPECT_EQ(off_mirrored, 0u);
  EXPECT_EQ(on_executed + on_mirrored, off_executed);
  if (c.expected.find(" mirrored; inputs verified") != std::string::npos) {
    EXPECT_GT(on_mirrored, on_executed);
  }
  const std::size_t files = tpusim::testing::expect_same_outputs(base / "off", base / "on");
  EXPECT_GE(files, 5u);  // summary.json, chips.csv, links.csv, trace.json, timeline.svg at least
  fs::remove_all(base);
}

const std::string k175bCut =
    "gpt3-175b-train-v4-pod --set workload.mesh.data=1 ";

// Jobs whose faults land in their steps (docs/faults.md): each such step is mirrored, its classes refined
// until its run verifies (models/README.md "Mirrored chips"), and gives every chip's full run byte for byte.
const std::string kCubeStep =
    "pod: v4-4x4x4\n"
    "workload: {model: {from: gpt3-175b, layers: 2}, batch: 32, step: train, optimizer: adam, remat: full, "
    "mesh: {fsdp: 16, tensor: 4}}\n";
const std::string kLinkDown = "name: mirror-link-down\ndescription: a link fails mid-step\n" + kCubeStep +
                              "job: {steps: 4, recovery: reroute, in_flight: retransmit}\n"
                              "faults: [{at: 250 ms, kind: link_down, target: {chip: [1, 2, 3], dir: y+}}]\n";
// The same under lose (the default): the routes keep the cable until the fault's detection, and what is sent
// over it until then is lost and sent again at the detection.
const std::string kLinkDownLose = "name: mirror-link-down-lose\ndescription: a link fails mid-step\n" + kCubeStep +
                                  "job: {steps: 4, recovery: reroute}\n"
                                  "faults: [{at: 250 ms, kind: link_down, target: {chip: [1, 2, 3], dir: y+}}]\n";
const std::string kStraggler = "name: mirror-straggler\ndescription: a straggler\n" + kCubeStep +
                               "job: {steps: 4, recovery: reroute}\n"
                               "faults: [{at: 250 ms, kind: straggler, target: [1, 2, 3], clock_fraction: 0.8}]\n";
const std::string kDegraded = "name: mirror-degraded\ndescription: a degraded link\n" + kCubeStep +
                              "job: {steps: 4, recovery: reroute}\n"
                              "faults: [{at: 250 ms, kind: link_degraded, target: {chip: [2, 0, 1], dir: z-}, "
                              "bandwidth_fraction: 0.5}]\n";
// A chip stopping mid-step, its step simulated on to the detection: the others run on and stall.
const std::string kChipDown = "name: mirror-chip-down\ndescription: a chip fails mid-step\n" + kCubeStep +
                              "job: {steps: 4, recovery: checkpoint_restart, stopped_step: to_detection}\n"
                              "faults: [{at: 250 ms, kind: chip_down, target: [1, 2, 3]}]\n";
// The same simulated up to the stop (the default): mirrored as the healthy step, with the chip in a class of its
// own, and verified without refining.
const std::string kChipDownToStop = "name: mirror-chip-down-to-stop\ndescription: a chip fails mid-step\n" +
                                    kCubeStep + "job: {steps: 4, recovery: checkpoint_restart}\n"
                                    "faults: [{at: 250 ms, kind: chip_down, target: [1, 2, 3]}]\n";
const std::string kMirroredAfterRefining = " mirrored; inputs verified after ";

INSTANTIATE_TEST_SUITE_P(
    Scenarios, Mirrored,
    ::testing::Values(
        Case{"gpt3_175b_64_chips",
             k175bCut + "--set pod=v4-4x4x4 --set workload.mesh.fsdp=16 --set workload.batch=32 "
                        "--set workload.model.layers=2 --trace-chips 0-63",
             "on", "1 of 64 chips simulated, 63 mirrored; inputs verified"},
        Case{"gpt3_175b_512_chips",
             k175bCut + "--set pod=v4-8x8x8 --set workload.mesh.fsdp=128 --set workload.batch=256 "
                        "--set workload.model.layers=1 --trace-chips 0-9",
             "on", "4 of 512 chips simulated, 508 mirrored; inputs verified"},
        Case{"multislice_dcn", "multislice-v5e-2x16x16 --set fidelity.links=flow", "on",
             "8 of 512 chips simulated, 504 mirrored; inputs verified"},
        // Pipeline stages exchanging activations and gradients by send / recv, each charging the HBM at both
        // ends (a recv's write from the other stage's send): 4 stages of fsdp 4 x tensor 4 on a v4 cube.
        Case{"pipeline_send_recv",
             "gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set pod=v4-4x4x4 --set workload.mesh.fsdp=4 --set "
             "workload.mesh.tensor=4 --set workload.mesh.pipeline=4 --set workload.batch=32 --set "
             "workload.microbatches=4 --set workload.model.layers=4",
             "on", "4 of 64 chips simulated, 60 mirrored; inputs verified"},
        Case{"link_down_in_a_step", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kLinkDown, 2, kMirroredAfterRefining},
        // Its step with the cut falls back to every chip (an ICI input ties with a chip's own activation): the
        // outputs are the same either way.
        Case{"link_down_in_a_step_lost_until_detected", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kLinkDownLose, 2, ""},
        Case{"straggler", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kStraggler, 1, kMirroredAfterRefining},
        Case{"link_degraded", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kDegraded, 1, kMirroredAfterRefining},
        Case{"chip_down_in_a_step", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kChipDown, 1, kMirroredAfterRefining},
        Case{"chip_down_in_a_step_to_the_stop", "{scenario} --trace-chips 0-63", "on",
             "1 of 64 chips simulated, 63 mirrored; inputs verified", kChipDownToStop, 1,
             "2 of 64 chips simulated, 62 mirrored; inputs verified"},
        Case{"forced_mismatch_falls_back",
             k175bCut + "--set pod=v4-4x4x4 --set workload.mesh.fsdp=16 --set workload.batch=32 "
                        "--set workload.model.layers=1",
             "mismatch",
             "fell back to simulating every chip: chip 1 (mirroring chip 0): injected (TPUSIM_MIRROR=mismatch)"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
