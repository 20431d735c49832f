// The job's table of steps simulated in full on stdout (tools/src/job_run.cpp, print_job) keeps its columns
// when a step's name is longer than the column's usual 54 characters.
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

}  // namespace
