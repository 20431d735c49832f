// The job's tables on stdout (tools/src/job_run.cpp, print_job) keep their columns when a cell is longer than
// its column's usual width: the steps simulated in full (54 characters for a step's name), and the fault timeline
// (28 for a target, 22 for a recovery).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace {

using tpusim::test::CliTest;
using tpusim::test::Outcome;
using tpusim::test::slurp;

using JobTableCli = CliTest;

// The second cable fails while the first is down: its step is named "... landing X into its step, under ...".
constexpr const char* kTwoCables = R"(name: two
pod: v4-4x4x4
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
job: {steps: 1000000, recovery: reroute}
faults:
  - {at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}
  - {at: 2 s, kind: link_down, target: {chip: [0, 1, 0], dir: x+}}
)";

TEST_F(JobTableCli, AStepNameLongerThanTheColumnWidensItAndEveryRowKeepsItsTimeUnderTheHeader) {
  const Outcome o = tpusim("run " + write("two.yaml", kTwoCables).string() + " -o " + (dir_ / "out").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  const auto& steps = j["job"]["simulated_steps"];
  std::size_t longest = 0;
  for (const auto& step : steps) longest = std::max(longest, step["what"].get<std::string>().size());
  ASSERT_GT(longest, 54U);  // the case this test is about
  const auto header_at = o.out.find("      #   step");
  ASSERT_NE(header_at, std::string::npos) << o.out;
  const std::string header = o.out.substr(header_at, o.out.find('\n', header_at) - header_at);
  const std::size_t name_column = header.find("step");
  const std::size_t time_end = header.find("time") + 4;  // right-aligned: every row's time ends here
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::string what = steps[k]["what"].get<std::string>();
    const auto row_at = o.out.find(std::to_string(k) + "   " + what);
    ASSERT_NE(row_at, std::string::npos) << "row " << k << " missing in:\n" << o.out;
    const auto start = o.out.rfind('\n', row_at) + 1;
    const std::string row = o.out.substr(start, o.out.find('\n', start) - start);
    EXPECT_EQ(row.find(what), name_column) << row;
    EXPECT_LT(name_column + what.size(), time_end - 10) << row;  // the name stays left of the time field
    ASSERT_GE(row.size(), time_end) << row;
    EXPECT_NE(row[time_end - 1], ' ') << row;
    EXPECT_TRUE(row.size() == time_end || row[time_end] == ' ') << row;
  }
}


// A host failing while a chip's repair is under way is found at the relaunch: its recovery reads
// "checkpoint_restart, found at the relaunch" (41 characters), which the timeline printed cut to its first 22
// ("checkpoint_restart, fo"). The column now widens: the cell is whole and each row's downtime ends under its
// header.
TEST_F(JobTableCli, ARecoveryLongerThanItsColumnIsPrintedWholeAndTheColumnsAfterItStayInLine) {
  const Outcome o = tpusim("run " + write("relaunch.yaml", R"(name: relaunch
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 100}}
job: {steps: 100000000}
faults:
  - {at: 1 s, kind: chip_down, target: [1, 1]}
  - {at: 100 s, kind: host_down, target: {host: 0}}
)").string() + " -o " + (dir_ / "relaunch").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "relaunch" / "summary.json"));
  const auto& timeline = j["faults"]["timeline"];
  ASSERT_EQ(timeline.size(), 2U);
  const std::string relaunch = timeline[1]["recovery"];
  ASSERT_EQ(relaunch, "checkpoint_restart, found at the relaunch");  // the case this test is about
  const auto kind_at = o.out.find("at  kind");
  ASSERT_NE(kind_at, std::string::npos) << o.out;
  const auto header_at = o.out.rfind('\n', kind_at) + 1;
  const std::string header = o.out.substr(header_at, o.out.find('\n', header_at) - header_at);
  const std::size_t recovery_column = header.find("recovery");
  const std::size_t downtime_end = header.find("downtime") + 8;  // right-aligned: every row's downtime ends here
  ASSERT_LT(recovery_column + relaunch.size(), downtime_end - 8) << header;  // wide enough for the whole cell
  for (const std::string kind : {"chip_down", "host_down"}) {
    const auto row_at = o.out.find(kind, header_at + header.size());
    ASSERT_NE(row_at, std::string::npos) << o.out;
    const auto start = o.out.rfind('\n', row_at) + 1;
    const std::string row = o.out.substr(start, o.out.find('\n', start) - start);
    const nlohmann::json& e = timeline[kind == "chip_down" ? 0 : 1];
    EXPECT_EQ(row.find(e["recovery"].get<std::string>()), recovery_column) << row;
    ASSERT_GT(row.size(), downtime_end) << row;
    EXPECT_NE(row[downtime_end - 1], ' ') << row;
    EXPECT_EQ(row[downtime_end], ' ') << row;
  }
}

}  // namespace
