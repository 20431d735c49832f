// A study folder's plan.json: a rerun goes on only with the same study over the same base. What the points
// resolve to is fingerprinted, so an edit to the base scenario or to a file it reads is found; an edit that
// changes no result (the description, a comment) is not.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tools/src/study_plan.h"
#include "tpusim/core/scenario.h"

namespace fs = std::filesystem;
using namespace tpusim;
using namespace tpusim::tools;
using json = nlohmann::ordered_json;

namespace {

class StudyPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tpusim-study-plan-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void put(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  [[nodiscard]] std::string fingerprint(const std::vector<std::string>& overrides = {}) const {
    ResolvedFingerprint f;
    f.add(load_scenario((dir_ / "s.yaml").string(), overrides));
    return f.str();
  }
  fs::path dir_;
};

TEST_F(StudyPlan, FingerprintChangesWithTheScenarioAFileItReadsAndTheOverridesButNotWithItsDescription) {
  put("m.yaml", "name: m\nkind: mlp\nwidths: [512, 512]\n");
  put("s.yaml", "name: s\ndescription: one\npod: v4-1x1x1\nworkload: {model: m.yaml, batch: 8, step: forward}\n");
  const std::string first = fingerprint();
  EXPECT_EQ(first.rfind("fnv1a64:", 0), 0u) << first;
  EXPECT_EQ(first.size(), 8u + 16u);
  EXPECT_EQ(fingerprint(), first);  // the same files, the same fingerprint
  put("s.yaml", "name: s\ndescription: two  # a comment\npod: v4-1x1x1\nworkload: {model: m.yaml, batch: 8, "
                "step: forward}\n");
  EXPECT_EQ(fingerprint(), first);
  EXPECT_NE(fingerprint({"workload.batch=16"}), first);
  put("m.yaml", "name: m\nkind: mlp\nwidths: [512, 1024]\n");
  EXPECT_NE(fingerprint(), first);
}

TEST_F(StudyPlan, FingerprintOfSeveralPointsDependsOnTheirOrder) {
  put("s.yaml", "name: s\npod: v4-1x1x1\nworkload: {model: mlp-small, batch: 8, step: forward}\n");
  const Scenario a = load_scenario((dir_ / "s.yaml").string(), {"workload.batch=8"});
  const Scenario b = load_scenario((dir_ / "s.yaml").string(), {"workload.batch=16"});
  ResolvedFingerprint ab, ba;
  ab.add(a);
  ab.add(b);
  ba.add(b);
  ba.add(a);
  EXPECT_NE(ab.str(), ba.str());
}

TEST(PlanDifference, NamesTheStudyThePointsOrTheBaseThatDiffers) {
  const json now{{"sweep", "w"}, {"scenario", "/s.yaml"}, {"points", {{"workload.batch=8"}, {"workload.batch=16"}}},
                 {"base", "fnv1a64:0000000000000001"}};
  EXPECT_FALSE(plan_difference(now, now).has_value());

  json other = now;
  other["sweep"] = "v";
  EXPECT_EQ(plan_difference(other, now)->what, "it is sweep \"v\", not \"w\"");
  other = now;
  other["scenario"] = "/t.yaml";
  EXPECT_EQ(plan_difference(other, now)->what, "its base scenario is \"/t.yaml\", not \"/s.yaml\"");
  other = now;
  other["points"][1] = {"workload.batch=32"};
  EXPECT_EQ(plan_difference(other, now)->what,
            "its axes differ: point 1 was [\"workload.batch=32\"], now [\"workload.batch=16\"]");

  other = now;
  other["base"] = "fnv1a64:0000000000000002";
  const auto changed = plan_difference(other, now);
  ASSERT_TRUE(changed.has_value());
  EXPECT_TRUE(changed->base_changed);
  EXPECT_NE(changed->what.find("its base scenario changed since the folder was made"), std::string::npos);
  const std::string refusal = plan_refusal("sweep", "/out/w", *changed);
  EXPECT_NE(refusal.find("choose another -o, or remove /out/w to run the sweep again"), std::string::npos)
      << refusal;

  other.erase("base");  // an older tpusim's plan: whether the base changed cannot be told
  const auto older = plan_difference(other, now);
  ASSERT_TRUE(older.has_value());
  EXPECT_TRUE(older->base_changed);
  EXPECT_NE(older->what.find("an older tpusim wrote it"), std::string::npos);

  EXPECT_EQ(plan_difference(json::array(), now)->what, "its plan.json is not one tpusim wrote");
}

TEST(PlanDifference, OfALayoutSearchNamesItsOptions) {
  const json now{{"scenario", "lay.yaml"}, {"set", json::array()}, {"axes", {"fsdp"}}, {"points", {{"m"}}},
                 {"base", "b"}};
  json other = now;
  other["axes"] = {"fsdp", "data"};
  EXPECT_EQ(plan_difference(other, now)->what, "its --axes values are [\"fsdp\",\"data\"], not [\"fsdp\"]");
  other = now;
  other["points"] = {{"m"}, {"n"}};
  EXPECT_EQ(plan_difference(other, now)->what, "its points differ: 2 points, now 1");
  const std::string refusal = plan_refusal("layouts", "L", *plan_difference(other, now));
  EXPECT_EQ(refusal, "tpusim layouts: L holds the results of a different layout search (its points differ: 2 "
                     "points, now 1); choose another -o");
}

}  // namespace
