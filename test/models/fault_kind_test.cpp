// A fault kind added by one call (core's add_fault_kind) and nothing else: a scenario names it, its parameters
// and target are checked as its effect says, the job gives it a step of its own with the options its effect
// sets, and the timeline prices it. Pure C++ (no SystemC): the step runner is a fake that records its options.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/scenario_yaml.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/fault_plan.h"
#include "tpusim/models/job_steps.h"

namespace tpusim::models {
namespace {

// The test's own kind: a chip throttled by its temperature, which runs at a fraction of its clock.
FaultKindInfo thermal_throttle() {
  FaultKindInfo k;
  k.name = "thermal_throttle";
  k.component = FaultComponent::chip;
  k.effect = FaultEffect::slows_clock;
  return k;
}

// Adds the kind for one test and takes it out again, so that no other test sees it.
struct AddedKind {
  explicit AddedKind(FaultKindInfo k) : name(k.name), kind(add_fault_kind(std::move(k))) {}
  ~AddedKind() { remove_fault_kind(name); }
  AddedKind(const AddedKind&) = delete;
  AddedKind& operator=(const AddedKind&) = delete;
  std::string name;
  FaultKind kind;
};

// Answers every step in 1 s (2 s for a step with a chip slowed) and records the options it was asked with.
class RecordingRunner : public StepRunner {
 public:
  std::optional<StepReport> run(const Scenario&, const SimOptions& options, const std::string&) override {
    asked.push_back(options);
    StepReport r;
    r.step_time_s = options.degraded_chips.empty() ? 1.0 : 2.0;
    return r;
  }
  std::vector<SimOptions> asked;
};

// A job of 100 steps of 1 s on a 2x2 slice whose chip [1, 0] is slowed to half its clock 10.5 s in.
std::string job_with(const std::string& fault) {
  return R"(
name: fault-kind-test
pod: v4-2x2x1
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 0}}
job: {steps: 100}
faults: [{at: 10.5 s, )" +
         fault + "}]\n";
}

struct Priced {
  std::vector<SimOptions> asked;
  JobResult result;
};

Priced price(const std::string& fault) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(job_with(fault));
  const Topology topo = build_topology(s.pod, s.chip);
  RecordingRunner runner;
  const FaultSteps steps(s, topo, Seconds(1.0), runner);
  return {runner.asked, run_job_timeline(s, topo, Seconds(1.0), steps).result};
}

TEST(FaultKind, OneCallAddsAKindThatAScenarioNamesAndTheJobPricesByItsEffect) {
  const AddedKind added(thermal_throttle());
  EXPECT_EQ(static_cast<int>(added.kind), kBuiltInFaultKinds);
  EXPECT_EQ(fault_kind_name(added.kind), "thermal_throttle");
  EXPECT_FALSE(fault_stops(added.kind));
  EXPECT_EQ(fault_info(added.kind).parameters(), kClockFraction);

  const Priced throttled = price("kind: thermal_throttle, target: [1, 0, 0], clock_fraction: 0.5");
  // One step of its own, with chip 1 at half its clock and its HBM untouched.
  ASSERT_EQ(throttled.asked.size(), 1u);
  ASSERT_EQ(throttled.asked[0].degraded_chips.size(), 1u);
  EXPECT_EQ(throttled.asked[0].degraded_chips[0].chip, ChipId(1));
  EXPECT_EQ(throttled.asked[0].degraded_chips[0].clock_fraction, 0.5);
  EXPECT_EQ(throttled.asked[0].degraded_chips[0].hbm_bandwidth_fraction, 1.0);
  // The timeline: 10 steps of 1 s, the step in flight and the 89 after it at 2 s (a slowdown from the step
  // after the fault's), nothing lost or repaired: 10 + 90 x 2 = 190 s.
  ASSERT_EQ(throttled.result.events.size(), 1u);
  EXPECT_EQ(throttled.result.events[0].step, 10);
  EXPECT_EQ(throttled.result.events[0].step_after.value(), 2.0);
  EXPECT_EQ(throttled.result.events[0].recovery, "slowdown");
  EXPECT_EQ(throttled.result.wall.value(), 190.0);

  // The very job a straggler gives: same options, same timeline.
  const Priced straggler = price("kind: straggler, target: [1, 0, 0], clock_fraction: 0.5");
  ASSERT_EQ(straggler.asked.size(), 1u);
  EXPECT_EQ(straggler.asked[0].degraded_chips[0].chip, ChipId(1));
  EXPECT_EQ(straggler.asked[0].degraded_chips[0].clock_fraction, 0.5);
  EXPECT_EQ(throttled.result.wall.value(), straggler.result.wall.value());
  EXPECT_EQ(throttled.result.losses.slowdown.value(), straggler.result.losses.slowdown.value());
  EXPECT_GT(throttled.result.losses.slowdown.value(), 0.0);
}

// The first diagnostic loading the job with `fault` reports.
Diagnostic refusal(const std::string& fault) {
  try {
    (void)::tpusim::testing::scenario_from_yaml(job_with(fault));
  } catch (const ConfigError& e) {
    return e.diagnostics().at(0);
  }
  ADD_FAILURE() << "no ConfigError for " << fault;
  return {};
}

TEST(FaultKind, AnAddedKindIsCheckedAsItsEffectSaysAndMisspellingsSuggestIt) {
  // Without the kind the name is unknown.
  EXPECT_EQ(refusal("kind: thermal_throttle, target: [1, 0, 0]").key_path, "faults[0].kind");
  const AddedKind added(thermal_throttle());
  const Diagnostic misspelt = refusal("kind: thermal_throtle, target: [1, 0, 0]");
  EXPECT_EQ(misspelt.key_path, "faults[0].kind");
  EXPECT_NE((misspelt.expected + misspelt.hint).find("did you mean 'thermal_throttle'"), std::string::npos)
      << misspelt.str();
  // A chip's fault takes no link direction, and no bandwidth fraction: only the kinds whose effect has one do.
  EXPECT_EQ(refusal("kind: thermal_throttle, target: {chip: [1, 0, 0], dir: x+}").message,
            "a thermal_throttle fault takes no link direction");
  const Diagnostic bandwidth = refusal("kind: thermal_throttle, target: [1, 0, 0], bandwidth_fraction: 0.5");
  EXPECT_EQ(bandwidth.key_path, "faults[0].bandwidth_fraction");
  EXPECT_EQ(bandwidth.expected, "a fault of kind link_degraded or hbm_degraded");
}

TEST(FaultKind, TheCatalogueRefusesANamelessDuplicateOrMisplacedKind) {
  FaultKindInfo nameless = thermal_throttle();
  nameless.name.clear();
  EXPECT_THROW(add_fault_kind(nameless), std::invalid_argument);
  FaultKindInfo duplicate = thermal_throttle();
  duplicate.name = "straggler";
  EXPECT_THROW(add_fault_kind(duplicate), std::invalid_argument);
  FaultKindInfo misplaced = thermal_throttle();
  misplaced.component = FaultComponent::link;  // a clock on a link
  EXPECT_THROW(add_fault_kind(misplaced), std::invalid_argument);
  EXPECT_EQ(fault_kinds().size(), static_cast<std::size_t>(kBuiltInFaultKinds));
  EXPECT_FALSE(remove_fault_kind("straggler"));  // a built-in kind stays
  EXPECT_EQ(fault_kinds().size(), static_cast<std::size_t>(kBuiltInFaultKinds));
}

}  // namespace
}  // namespace tpusim::models
