// The sweep's metric table (tools/src/sweep/sweep_metrics.h) reads the transformer metrics a run reports.
#include "tools/src/sweep/sweep_metrics.h"

#include <gtest/gtest.h>

namespace {

using tpusim::tools::Better;
using tpusim::tools::find_metric;

TEST(SweepMetrics, TokenMetricsComeFromTheSummaryAndAreEmptyWhereARunHasNone) {
  const auto decode = nlohmann::ordered_json::parse(
      R"({"metrics": {"step_time_s": 0.02, "tokens_per_s": 200.0, "time_per_output_token_s": 0.02}})");
  const auto gemm = nlohmann::ordered_json::parse(R"({"metrics": {"step_time_s": 0.5}})");
  ASSERT_NE(find_metric("tokens_per_s"), nullptr);
  EXPECT_EQ(find_metric("tokens_per_s")->extract(decode), 200.0);
  EXPECT_EQ(find_metric("tokens_per_s")->better, Better::higher);
  EXPECT_EQ(find_metric("time_per_output_token_s")->extract(decode), 0.02);
  EXPECT_EQ(find_metric("time_per_output_token_s")->better, Better::lower);
  EXPECT_FALSE(find_metric("time_to_first_token_s")->extract(decode).has_value());
  EXPECT_FALSE(find_metric("tokens_per_s")->extract(gemm).has_value());
}

TEST(SweepMetrics, MemoryMetricsAreThePlanAndTheScheduledPeakAndEmptyWithoutAPlan) {
  const auto model = nlohmann::ordered_json::parse(
      R"({"metrics": {"step_time_s": 1.5}, "memory": {"total_bytes": 1806040000, "in_use": {"peak_bytes": 1908970000}}})");
  const auto gemm = nlohmann::ordered_json::parse(R"({"metrics": {"step_time_s": 0.5}})");
  ASSERT_NE(find_metric("hbm_plan_bytes"), nullptr);
  ASSERT_NE(find_metric("hbm_in_use_peak_bytes"), nullptr);
  EXPECT_EQ(find_metric("hbm_plan_bytes")->extract(model), 1806040000.0);
  EXPECT_EQ(find_metric("hbm_in_use_peak_bytes")->extract(model), 1908970000.0);
  EXPECT_EQ(find_metric("hbm_in_use_peak_bytes")->better, Better::lower);
  EXPECT_FALSE(find_metric("hbm_plan_bytes")->extract(gemm).has_value());
  EXPECT_FALSE(find_metric("hbm_in_use_peak_bytes")->extract(gemm).has_value());
}

}  // namespace

// A job that failed (job.recovery fail) has no goodput or wall time in the table: its useful / wall time covers
// the part it ran, so a sweep over job.recovery ranked the job that stopped halfway first (goodput 0.829 beside
// 0.0825 for the one that restarted and finished; wall 230 s beside 4625 s).
TEST(SweepMetrics, AFailedJobHasNoGoodputOrWallTimeToRankAgainstFinishedOnes) {
  const auto failed = nlohmann::ordered_json::parse(
      R"({"metrics": {"step_time_s": 0.019}, "job": {"steps": 20000, "steps_done": 10000, "failed": true,
          "wall_s": 230.0, "useful_s": 190.66, "goodput": 0.829}})");
  const auto finished = nlohmann::ordered_json::parse(
      R"({"metrics": {"step_time_s": 0.019}, "job": {"steps": 20000, "steps_done": 20000, "failed": false,
          "wall_s": 4624.7, "useful_s": 381.3, "goodput": 0.0825}})");
  ASSERT_NE(find_metric("goodput"), nullptr);
  ASSERT_NE(find_metric("job_wall_s"), nullptr);
  EXPECT_FALSE(find_metric("goodput")->extract(failed).has_value());
  EXPECT_FALSE(find_metric("job_wall_s")->extract(failed).has_value());
  EXPECT_EQ(find_metric("goodput")->extract(finished), 0.0825);
  EXPECT_EQ(find_metric("job_wall_s")->extract(finished), 4624.7);
}
