// A block kind of the test's own, added by one call (models' add_block_kind) and nothing else: a power meter
// that integrates the power of the blocks it watches. A scenario composes it into the chip in YAML, with a
// path to the MXU; the pod builds and simulates it; the run's report and summary.json list the energy it
// declared. Its parameters are checked as any block's are (units, did-you-mean), and `describe params` lists
// them.
#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "block/counters.h"
#include "block/registry.h"
#include "support/scenario_yaml.h"
#include "tools/src/report.h"
#include "tools/src/simulation_report.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

// ---- the kind: everything it is, in this one place ---------------------------------------------------------

// A meter that charges each block it reaches `active_power` over the intervals the block computes and
// `idle_power` over the others, from the chip's start to its finish.
class PowerMeter final : public Block {
 public:
  PowerMeter(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, b.block.kind, b.block.name, 0),
        idle_(b.chip.spec.added.value<Watts>("power_meter.idle_power")),
        active_(b.chip.spec.added.value<Watts>("power_meter.active_power")) {}

  void connect(Block& to) override { watched_.push_back(&to); }
  // Observers are accounted first: each watched block's activity is still that of the interval ending now.
  void account(Tick now) override {
    const double seconds = to_seconds(now - last_).value();
    for (const Block* b : watched_) {
      joules_ += (b->activity(now) == Activity::compute ? active_ : idle_).value() * seconds;
    }
    last_ = now;
  }
  void collect(ChipCounters& c) const override { c.declare(block_name(), "energy", StatUnit::joules, joules_); }

 private:
  Watts idle_, active_;
  std::vector<const Block*> watched_;
  Tick last_ = 0;
  double joules_ = 0;
};

std::unique_ptr<Block> make_power_meter(const BlockBuild& b) {
  return std::make_unique<PowerMeter>(b.block.name.c_str(), b);
}

const FieldTable<ChipSpec>& power_meter_fields() {
  static const FieldTable<ChipSpec> t = [] {
    FieldTable<ChipSpec> f;
    f.add<Watts>("idle_power", [](ChipSpec& s) -> Watts& { return s.added.at<Watts>("power_meter.idle_power"); },
                 std::nullopt, "power of a watched block that is not computing", positive<Watts>());
    f.add<Watts>("active_power", [](ChipSpec& s) -> Watts& { return s.added.at<Watts>("power_meter.active_power"); },
                 std::nullopt, "power of a watched block while it computes", positive<Watts>());
    return f;
  }();
  return t;
}

BlockKindInfo power_meter() {
  BlockKindInfo k;
  k.name = "power_meter";
  k.doc = "integrates the power of the blocks it reaches";
  k.min_count = 0;
  k.ports = {{"watches", "a block whose activity it meters", {BlockKind::mxu, BlockKind::vpu}, {}}};
  k.fields = &power_meter_fields();
  k.summary = "{idle_power} idle, {active_power} computing";
  k.observes = true;
  return k;
}

// ---- the tests -------------------------------------------------------------------------------------------

// Adds the kind for one test and takes it out again, so that no other test sees it.
struct AddedKind {
  AddedKind() : kind(add_block_kind(power_meter(), &make_power_meter)) {}  // the one catalogue line
  ~AddedKind() { remove_block_kind("power_meter"); }
  AddedKind(const AddedKind&) = delete;
  AddedKind& operator=(const AddedKind&) = delete;
  BlockKind kind;
};

constexpr double kIdleWatts = 20, kActiveWatts = 90;

// A 2x2 v5e slice running a small training step, each chip with a meter on its MXUs. `meter` is the block's
// entry in the chip overlay.
std::string scenario_yaml(const std::string& meter) {
  return R"(name: power-meter
pod: v5e-2x2
chip:
  meter: )" + meter + R"(
  paths: [dma -> vmem, dma -> hbm, dma -> host, mxu -> vpu, mxu -> hbm, vpu -> hbm, meter -> mxu]
workload: {model: mlp-quickstart, batch: 64}
)";
}

std::string error_of(const std::string& yaml) {
  try {
    (void)testing::scenario_from_yaml(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(BlockKind, OneAddedKindIsComposedFromYamlSimulatedAndReported) {
  const AddedKind added;
  const Scenario s =
      testing::scenario_from_yaml(scenario_yaml("{kind: power_meter, idle_power: 20 W, active_power: 90 W}"));
  ASSERT_NE(find_block(s.chip, added.kind), nullptr);
  const kernels::LoweredWorkload lowered = kernels::lower(s.workload, s.chip, s.pod);
  const SimResult r = simulate(s, lowered.programs, {});

  // Per chip: the MXU block of each TensorCore is idle over the chip's run, plus active - idle over its busy
  // time (ChipResult::busy is the mean over TensorCores).
  ASSERT_EQ(r.chips.size(), 4u);
  const double cores = s.chip.tensorcores;
  std::vector<double> expected;
  double total = 0;
  for (const ChipResult& c : r.chips) {
    ASSERT_GT(c.busy[static_cast<std::size_t>(HwUnit::mxu)].value(), 0);
    expected.push_back(kIdleWatts * cores * c.finish.value() +
                       (kActiveWatts - kIdleWatts) * cores * c.busy[static_cast<std::size_t>(HwUnit::mxu)].value());
    total += expected.back();
  }
  ASSERT_EQ(r.block_stats.size(), 1u);
  const BlockStat& energy = r.block_stats[0];
  EXPECT_EQ(energy.block, "meter");
  EXPECT_EQ(energy.name, "energy");
  EXPECT_NEAR(energy.total, total, 1e-9 * total);
  EXPECT_NEAR(energy.per_chip.min, *std::min_element(expected.begin(), expected.end()), 1e-9 * total);
  EXPECT_NEAR(energy.per_chip.max, *std::max_element(expected.begin(), expected.end()), 1e-9 * total);
  // Between all-idle and all-active over the step: the meter saw the MXU compute.
  EXPECT_GT(energy.total, 4 * kIdleWatts * cores * r.chips[0].finish.value());
  EXPECT_LT(energy.total, 4 * kActiveWatts * cores * r.step_time.value());

  // What a user reads: summary.json's "blocks" and the table's row.
  const tools::RunReport report = tools::make_report(s, lowered.programs, r, nullptr, &lowered);
  const auto summary = tools::summary_json(s, report);
  ASSERT_TRUE(summary.contains("blocks"));
  EXPECT_NEAR(summary["blocks"]["meter"]["energy_j"]["total"].get<double>(), total, 1e-9 * total);
  EXPECT_NEAR(summary["blocks"]["meter"]["energy_j"]["mean"].get<double>(), total / 4, 1e-9 * total);
  std::ostringstream table;
  tools::print_table(s, report, table);
  EXPECT_NE(table.str().find("meter.energy_j: "), std::string::npos) << table.str();
}

TEST(BlockKind, AnAddedKindsParametersAreCheckedAsABuiltInBlocksAre) {
  const AddedKind added;
  const std::string no_unit = error_of(scenario_yaml("{kind: power_meter, idle_power: 20, active_power: 90 W}"));
  EXPECT_NE(no_unit.find("chip.meter.idle_power"), std::string::npos) << no_unit;
  const std::string missing = error_of(scenario_yaml("{kind: power_meter, idle_power: 20 W}"));
  EXPECT_NE(missing.find("chip.meter.active_power"), std::string::npos) << missing;
  const std::string misspelt = error_of(scenario_yaml("{kind: power_meeter, idle_power: 20 W, active_power: 90 W}"));
  EXPECT_NE(misspelt.find("did you mean 'power_meter'?"), std::string::npos) << misspelt;

  // `describe params` lists the kind, its port and its fields.
  bool listed = false;
  for (const auto& [title, fields] : chip_field_sections()) {
    if (title.rfind("chip.power_meter ", 0) != 0) continue;
    listed = true;
    EXPECT_NE(title.find("reaches mxu|vpu"), std::string::npos) << title;
    ASSERT_EQ(fields.size(), 4u);  // kind, count, idle_power, active_power
    EXPECT_EQ(fields[2].key, "idle_power");
    EXPECT_EQ(fields[2].kind, "power");
  }
  EXPECT_TRUE(listed);
}

TEST(BlockKind, ACatalogueEntryThatCannotBeRightIsRefusedAndARemovedKindIsUnknownAgain) {
  {
    const AddedKind added;
    EXPECT_THROW(add_block_kind(power_meter(), &make_power_meter), std::invalid_argument);  // its name is taken
    BlockKindInfo nameless = power_meter();
    nameless.name = "";
    EXPECT_THROW(add_block_kind(nameless, &make_power_meter), std::invalid_argument);
    BlockKindInfo no_fields = power_meter();
    no_fields.name = "meter_without_fields";
    no_fields.fields = nullptr;
    EXPECT_THROW(add_block_kind(no_fields, &make_power_meter), std::invalid_argument);
    BlockKindInfo no_factory = power_meter();
    no_factory.name = "meter_without_factory";
    EXPECT_THROW(add_block_kind(no_factory, nullptr), std::invalid_argument);
    EXPECT_EQ(block_kinds().size(), static_cast<std::size_t>(kBuiltInBlockKinds) + 1);
  }
  EXPECT_EQ(block_kinds().size(), static_cast<std::size_t>(kBuiltInBlockKinds));
  const std::string unknown = error_of(scenario_yaml("{kind: power_meter, idle_power: 20 W, active_power: 90 W}"));
  EXPECT_NE(unknown.find("chip.meter.kind"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace tpusim::models
