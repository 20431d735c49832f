// Running ahead (models/README.md, "Running ahead") must not change a single output byte: each scenario runs
// through the tpusim binary twice, with TPUSIM_RUN_AHEAD=off (every chip activation from the kernel) and as
// by default, with --trace, and every file of the two output folders must be equal. The scenarios cover
// overlapped asynchronous collectives (FSDP all-gathers in flight during compute, tensor all-reduces), a
// straggler chip with its own clock in a job whose cut link the collectives are re-planned around, expert
// all-to-all, data-parallel gradient all-reduces, and the 175B step cut to 64 chips (every bundled scenario was
// compared the same way by hand when running ahead came in: bench/README.md). The kernel-event counts (--perf)
// show that running ahead took place, so the comparison is not one of two identical runs of the same path.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "support/same_outputs.h"

namespace fs = std::filesystem;

namespace {

using tpusim::testing::read_file;

// Runs `args` with TPUSIM_RUN_AHEAD=`mode` into `out`; returns the kernel events --perf printed (0 if none).
unsigned long long run(const std::string& mode, const std::string& args, const fs::path& out) {
  const fs::path perf = out.string() + ".perf";
  const std::string cmd = "TPUSIM_RUN_AHEAD=" + mode + " " + std::string(TPUSIM_BIN) + " run " + args +
                          " --trace --perf -q -o " + out.string() + " 2> " + perf.string();
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << read_file(perf);
  std::smatch m;
  const std::string text = read_file(perf);
  fs::remove(perf);
  if (!std::regex_search(text, m, std::regex(R"([,;] (\d+) kernel events)"))) return 0;
  return std::stoull(m[1].str());
}

class RunAhead : public ::testing::TestWithParam<std::string> {};

TEST_P(RunAhead, OutputsAreByteIdenticalWithFewerKernelEvents) {
  const std::string args = GetParam();
  const fs::path base = fs::temp_directory_path() / ("tpusim-run-ahead-" + std::to_string(getpid()));
  fs::create_directories(base);
  const unsigned long long off = run("off", args, base / "off");
  const unsigned long long on = run("on", args, base / "on");
  const std::size_t files = tpusim::testing::expect_same_outputs(base / "off", base / "on");
  EXPECT_GE(files, 4u);  // summary.json, chips.csv, trace.json, timeline.svg at least
  fs::remove_all(base);
  ASSERT_GT(off, 0u) << "no kernel events in --perf";
  EXPECT_LT(on, off) << "running ahead saved no kernel event";
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, RunAhead,
    ::testing::Values("gpt3-1.3b-fsdp-tensor-v4-2x2x1", "straggler-gpt3-1.3b-v5e-2x2", "moe-layer-v5p",
                      "resnet50-dp-v4",
                      "gpt3-175b-train-v4-pod --set pod=v4-4x4x4 --set workload.mesh.data=1 "
                      "--set workload.mesh.fsdp=16 --set workload.batch=32 --set workload.model.layers=2"),
    [](const auto& info) {
      std::string n = info.param.substr(0, info.param.find(' '));
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

}  // namespace
