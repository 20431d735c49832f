// The fault plan and job input (core/fault_plan.h): every bad plan is reported with its location and key,
// all at once; good plans resolve to typed faults. Pure C++.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tpusim/core/scenario.h"

namespace tpusim {
namespace {

namespace fs = std::filesystem;

// Loads a scenario on `pod` whose text continues with `tail`; returns the diagnostics (empty when it resolves).
std::vector<Diagnostic> problems(const std::string& pod, const std::string& tail, Scenario* out = nullptr) {
  const fs::path dir = fs::temp_directory_path() / ("tpusim-faults-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "s.yaml";
  std::ofstream(file) << "name: f\npod: " << pod << "\nworkload: {model: mlp-quickstart, batch: 64}\n" << tail;
  std::vector<Diagnostic> found;
  try {
    Scenario s = load_scenario(file.string(), {});
    if (out) *out = std::move(s);
  } catch (const ConfigError& e) {
    found = e.diagnostics();
  }
  fs::remove_all(dir);
  return found;
}

TEST(FaultPlan, AScenarioWithoutFaultsHasNoJob) {
  Scenario s;
  ASSERT_TRUE(problems("v4-4x4x4", "", &s).empty());
  EXPECT_FALSE(s.job.enabled);
}

TEST(FaultPlan, TimedFaultsResolveSortedWithTheirTargetsAndParameters) {
  Scenario s;
  const auto p = problems("v4-4x4x4", R"(job: {steps: 100, recovery: reroute}
faults:
  - {at: 2 h, kind: link_degraded, target: {chip: [3, 0, 1], dir: x+}, bandwidth_fraction: 0.5, added_latency: 2 us}
  - {at: 30 min, kind: host_down, target: {host: 15}}
  - {at: 1 d, kind: straggler, target: random, clock_fraction: 0.8}
)", &s);
  ASSERT_TRUE(p.empty()) << p.front().str();
  EXPECT_TRUE(s.job.enabled);
  EXPECT_EQ(s.job.recovery, RecoveryPolicyKind::reroute);
  ASSERT_EQ(s.faults.faults.size(), 3u);
  EXPECT_EQ(s.faults.faults[0].kind, FaultKind::host_down);
  EXPECT_DOUBLE_EQ(s.faults.faults[0].at.value(), 1800.0);
  EXPECT_EQ(s.faults.faults[0].target.host, 15);
  const FaultSpec& link = s.faults.faults[1];
  EXPECT_EQ(link.index, 0);
  EXPECT_DOUBLE_EQ(link.at.value(), 7200.0);
  EXPECT_EQ(link.target.chip, (std::vector<int>{3, 0, 1}));
  EXPECT_EQ(link.target.axis, 0);
  EXPECT_EQ(link.target.sign, 1);  // x+ from x = 3 is the wraparound link of a 4-ring
  EXPECT_DOUBLE_EQ(link.bandwidth_fraction, 0.5);
  EXPECT_DOUBLE_EQ(link.added_latency.value(), 2e-6);
  EXPECT_TRUE(s.faults.faults[2].target.random);
  EXPECT_DOUBLE_EQ(s.faults.faults[2].clock_fraction, 0.8);
}

TEST(FaultPlan, EveryBadFaultIsReportedWithItsLineAndKey) {
  const auto p = problems("v4-4x4x4", R"(job: {duration: 1 h}
faults:
  - {at: 10 s, kind: chip_dwon, target: [0, 0, 0]}
  - {at: 10 s, kind: chip_down, target: [4, 0, 0]}
  - {at: 2 h, kind: chip_down, target: [0, 0, 0]}
  - {at: 10 s, kind: hbm_degraded, target: [0, 0, 0], bandwidth_fraction: 1.5}
  - {at: 10 s, kind: straggler, target: [0, 0, 0], bandwidth_fraction: 0.5}
  - {at: 10 s, kind: link_down, target: [0, 0, 0]}
  - {at: 10 s, kind: host_down, target: {host: 16}}
  - {at: 10 s, kind: ocs_port_down, target: {chip: [1, 0, 0], dir: x+}}
  - {at: 10 s, kind: chip_down, target: {chp: [0, 0, 0]}}
)");
  ASSERT_EQ(p.size(), 9u);
  auto has = [&](int line, const std::string& key, const std::string& text) {
    for (const auto& d : p) {
      if (d.loc.line == line && d.key_path == key && d.str().find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(6, "faults[0].kind", "did you mean 'chip_down'"));
  EXPECT_TRUE(has(7, "faults[1].target", "the pod has no chip there"));
  EXPECT_TRUE(has(8, "faults[2].at", "after the job ends"));
  EXPECT_TRUE(has(9, "faults[3].bandwidth_fraction", "(0, 1]"));
  EXPECT_TRUE(has(10, "faults[4].bandwidth_fraction", "does not apply to a straggler"));
  EXPECT_TRUE(has(11, "faults[5].target", "needs the link's direction"));
  EXPECT_TRUE(has(12, "faults[6].target", "no such host"));
  EXPECT_TRUE(has(13, "faults[7].target", "electrical, inside a cube"));
  EXPECT_TRUE(has(14, "faults[8].target.chp", "did you mean 'chip'"));
}

TEST(FaultPlan, MeshEdgesAndPodsWithoutOpticsHaveNoSuchLinksOrPorts) {
  const auto p = problems("v5e-4x4", R"(faults:
  - {at: 1 s, kind: link_down, target: {chip: [3, 0], dir: x+}}
  - {at: 1 s, kind: ocs_port_down, target: {chip: [0, 0], dir: y+}}
  - {at: 1 s, kind: link_down, target: {chip: [0, 0], dir: z+}}
job: {recovery: spare_cube}
)");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NE(p[0].str().find("optical switches"), std::string::npos);  // job.recovery: spare_cube on v5e
  EXPECT_NE(p[1].str().find("a mesh edge"), std::string::npos);
  EXPECT_NE(p[2].str().find("no optical switches"), std::string::npos);
  EXPECT_NE(p[3].str().find("no link along that axis"), std::string::npos);
}

// A rate draws among the pod's components of its kind: a pod without any (no OCS on a v4 2x2x1, no cable on one
// chip) is bad input at the rate's line, not a rate that silently draws nothing. A rate of 0 asks for nothing.
TEST(FaultPlan, ARateForComponentsThePodLacksIsBadInputAtTheRate) {
  const auto p = problems("v4-2x2x1", "fault_rates: {chip_down: 100 h,\n  ocs_port_down: 1 h}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].key_path, "fault_rates.ocs_port_down");
  EXPECT_EQ(p[0].loc.line, 5);
  EXPECT_EQ(p[0].loc.column, 18);
  EXPECT_EQ(p[0].message, "pod v4-2x2x1 has no OCS ports (no optical switches: no cube)");
  EXPECT_EQ(p[0].found, "'1 h'");
  const auto one = problems("v4-1x1x1", "fault_rates: {link_down: 1 h, host_down: 1 h}\n");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].key_path, "fault_rates.link_down");
  EXPECT_EQ(one[0].message, "pod v4-1x1x1 has no ICI cables (one chip per slice)");
  EXPECT_TRUE(problems("v4-2x2x1", "fault_rates: {ocs_port_down: 0 s, link_down: 1 h}\n").empty());
  EXPECT_TRUE(problems("v4-4x4x4", "fault_rates: {ocs_port_down: 1 h}\n").empty());
}

TEST(FaultPlan, RatesAndJobFieldsCheckTheirUnitsAndRules) {
  const auto p = problems("v4-4x4x4", R"(fault_rates: {chip_down: 5 GB, hosts_down: 1 h}
job: {heartbeat: 1 min, timeout: 10 s}
)");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].key_path, "fault_rates.hosts_down");
  EXPECT_NE(p[0].hint.find("host_down"), std::string::npos);
  EXPECT_EQ(p[1].key_path, "fault_rates.chip_down");
  EXPECT_EQ(p[2].key_path, "job.timeout");
}

TEST(FaultPlan, LateFaultsOfAJobOfStepsAreCheckedOnceTheStepIsKnown) {
  Scenario s;
  ASSERT_TRUE(problems("v4-4x4x4", "job: {steps: 10}\nfaults: [{at: 1 s, kind: chip_down, target: [0, 0, 0]}]\n", &s)
                  .empty());
  Diagnostics ok, late;
  check_fault_times(s.faults, Seconds(1.5), "10 steps of 150 ms", ok);
  check_fault_times(s.faults, Seconds(1.0), "10 steps of 100 ms", late);
  EXPECT_TRUE(ok.empty());
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late.items()[0].loc.line, 5);
  EXPECT_EQ(late.items()[0].key_path, "faults[0].at");
  EXPECT_EQ(late.items()[0].expected, "a time before the job's end (1 s: 10 steps of 100 ms)");
}

// Two v5e 4x4 pods, each of two hosts of 4x2 chips.
constexpr const char* kTwoPods =
    "{name: v5e-4x4x2, chip: v5e, shape: [4, 4], wraparound: [0, 0], host_shape: [4, 2], pods: 2}";

TEST(FaultPlan, AMapTargetNamesItsPodAndAListIsPodZero) {
  Scenario s;
  const auto p = problems(kTwoPods, R"(job: {steps: 100}
faults:
  - {at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: 1}}
  - {at: 2 s, kind: link_down, target: {chip: [1, 0], dir: y+, pod: 1}}
  - {at: 3 s, kind: host_down, target: {host: 1, pod: 1}}
  - {at: 4 s, kind: straggler, target: [1, 1], clock_fraction: 0.5}
  - {at: 5 s, kind: chip_down, target: {chip: [0, 1]}}
)", &s);
  ASSERT_TRUE(p.empty()) << p.front().str();
  ASSERT_EQ(s.faults.faults.size(), 5u);
  const auto& f = s.faults.faults;
  EXPECT_EQ(f[0].target.pod, 1);
  EXPECT_EQ(f[0].target.chip, (std::vector<int>{1, 0}));
  EXPECT_EQ(f[1].target.pod, 1);
  EXPECT_EQ(f[2].target.pod, 1);
  EXPECT_EQ(f[2].target.host, 1);
  EXPECT_EQ(f[3].target.pod, -1);  // the list form: pod 0
  EXPECT_EQ(f[3].target.pod_index(), 0);
  EXPECT_EQ(f[0].target.str(true), "[1,0] of pod 1");
  EXPECT_EQ(f[1].target.str(true), "[1,0] y+ of pod 1");
  EXPECT_EQ(f[2].target.str(true), "host 1 of pod 1");
  EXPECT_EQ(f[3].target.str(true), "[1,1] of pod 0");
  EXPECT_EQ(f[4].target.str(true), "[0,1] of pod 0");
  EXPECT_EQ(f[3].target.str(), "[1,1]");  // a scenario of one pod prints no pod
  // The scenario as rendered (describe, summary.json's scenario) names the pods too.
  const auto rendered = render_scenario(s);
  const auto it = std::find_if(rendered.begin(), rendered.end(),
                               [](const auto& kv) { return kv.first == "faults[1].target"; });
  ASSERT_NE(it, rendered.end());
  EXPECT_EQ(it->second, "[1,0] y+ of pod 1");
}

TEST(FaultPlan, APodTheScenarioLacksIsBadInputAtThePod) {
  const auto p = problems(kTwoPods, R"(job: {steps: 100}
faults:
  - {at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: 2}}
  - {at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: -1}}
  - {at: 1 s, kind: link_down, target: {chip: [1, 0], dir: y+, pod: 0.5}}
  - {at: 1 s, kind: chip_down, target: {random, pod: 1}}
  - {at: 1 s, kind: host_down, target: {host: 2, pod: 1}}
  - {at: 1 s, kind: chip_down, target: {chip: [4, 0], pod: 1}}
)");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].key_path, "faults[0].target.pod");
  EXPECT_EQ(p[0].loc.line, 6);
  EXPECT_EQ(p[0].loc.column, 60);
  EXPECT_EQ(p[0].message, "no such pod: the scenario joins 2 pods");
  EXPECT_EQ(p[0].expected, "a pod index below 2 (pod.pods)");
  EXPECT_EQ(p[0].found, "2");
  EXPECT_EQ(p[1].key_path, "faults[1].target.pod");
  EXPECT_EQ(p[1].message, "invalid pod");
  EXPECT_EQ(p[2].key_path, "faults[2].target.pod");
  EXPECT_EQ(p[2].message, "invalid pod");
  EXPECT_EQ(p[2].loc.line, 8);
  EXPECT_EQ(p[3].key_path, "faults[3].target.random");
  EXPECT_EQ(p[3].message, "a random target takes no pod: it is drawn among every pod's components");
  EXPECT_EQ(p[4].key_path, "faults[4].target");
  EXPECT_EQ(p[4].message, "the pod has no such host");
  EXPECT_EQ(p[4].found, "host 2 of pod 1");
  EXPECT_EQ(p[5].message, "the pod has no chip there");
  EXPECT_EQ(p[5].found, "[4,0] of pod 1");
  // A scenario of one pod has pod 0 only.
  const auto one = problems("v5e-2x2", "faults: [{at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: 1}}]\n");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].message, "no such pod: the scenario has one pod");
  EXPECT_TRUE(problems("v5e-2x2", "faults: [{at: 1 s, kind: chip_down, target: {chip: [1, 0], pod: 0}}]\n").empty());
}

}  // namespace
}  // namespace tpusim
