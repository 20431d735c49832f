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
