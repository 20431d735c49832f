// A block kind of the test's own that runs instructions, added by one call (models' add_block_kind with the unit
// kind it runs) and nothing else: a compression engine that takes `latency` + bytes / `throughput` per
// instruction, one at a time. A program file names it in `custom` instructions; a scenario composes the block
// into the chip in YAML; the pod builds it, issues it its queue in program order with dependencies on the other
// units, and the report lists what it declared and what the MXU waited on it for.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "block/unit_blocks.h"
#include "support/scenario_yaml.h"
#include "tools/src/report.h"
#include "tools/src/simulation_report.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/models/errors.h"
#include "tpusim/models/estimate.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

// ---- the kind: everything it is, in this one place ---------------------------------------------------------

class Compressor final : public Block, public InstructionUnit {
 public:
  Compressor(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, b.block.kind, b.block.name, 0),
        throughput_(b.chip.spec.added.value<BytesPerSecond>("compressor.throughput")),
        latency_(b.chip.spec.added.value<Seconds>("compressor.latency")) {}

  // One instruction at a time, first come first served.
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !busy_; }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    busy_ = true;
    instr_ = instr;
    started_ = now;
    end_ = now + to_ticks(latency_ + Seconds(static_cast<double>(ins.bytes) / throughput_.value()));
    bytes_ += ins.bytes;
    ++started_count_;
  }
  bool retire(Tick now, CompletionSink& sink) override {
    if (!busy_ || end_ > now) return false;
    busy_ = false;
    busy_ticks_ += end_ - started_;
    sink.complete(instr_, started_, end_);
    return true;
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick /*now*/) const override { return busy_; }
  [[nodiscard]] bool full(int /*lane*/, Tick /*now*/) const override { return busy_; }

  [[nodiscard]] Tick next_event(Tick /*now*/) const override { return busy_ ? end_ : kNever; }
  [[nodiscard]] Activity activity(Tick /*now*/) const override { return busy_ ? Activity::compute : Activity::idle; }
  // Its busy time and bytes go to its own row of the report's units (named after its unit kind, zip); a
  // statistic the units do not have is declared.
  void collect(ChipCounters& c) const override {
    UnitCounters& zip = c.unit(hw_unit_of(block_kind()));
    zip.busy += busy_ticks_;
    zip.bytes += bytes_;
    c.declare(block_name(), "instructions_started", StatUnit::count, static_cast<double>(started_count_));
  }

 private:
  BytesPerSecond throughput_;
  Seconds latency_;
  bool busy_ = false;
  std::uint32_t instr_ = 0;
  Tick started_ = 0, end_ = 0, busy_ticks_ = 0;
  std::uint64_t bytes_ = 0;
  int started_count_ = 0;
};

std::unique_ptr<Block> make_compressor(const BlockBuild& b) {
  return std::make_unique<Compressor>(b.block.name.c_str(), b);
}

const FieldTable<ChipSpec>& compressor_fields() {
  static const FieldTable<ChipSpec> t = [] {
    FieldTable<ChipSpec> f;
    f.add<BytesPerSecond>("throughput",
                          [](ChipSpec& s) -> BytesPerSecond& {
                            return s.added.at<BytesPerSecond>("compressor.throughput");
                          },
                          std::nullopt, "bytes compressed per second", positive<BytesPerSecond>());
    f.add<Seconds>("latency", [](ChipSpec& s) -> Seconds& { return s.added.at<Seconds>("compressor.latency"); },
                   std::nullopt, "time from an instruction's start to its first byte", non_negative<Seconds>());
    return f;
  }();
  return t;
}

BlockKindInfo compressor() {
  BlockKindInfo k;
  k.name = "compressor";
  k.doc = "compresses buffers: custom instructions on unit zip";
  k.min_count = 0;
  k.fields = &compressor_fields();
  k.summary = "{throughput}, {latency} per instruction";
  return k;
}

// The unit kind its blocks run: a program's `custom` instructions with "unit": "zip". Compute for the time
// breakdown (rank 1); a wait on its instructions is reported as dependency_zip.
constexpr ir::UnitKindInfo kZip{"zip", false, 1, "dependency_zip"};

// ---- the tests -------------------------------------------------------------------------------------------

struct AddedKind {
  AddedKind() : kind(add_block_kind(compressor(), &make_compressor, kZip)) {}  // the one catalogue line
  ~AddedKind() { remove_block_kind("compressor"); }
  AddedKind(const AddedKind&) = delete;
  AddedKind& operator=(const AddedKind&) = delete;
  BlockKind kind;
};

constexpr double kThroughput = 10e9, kLatency = 2e-6;

// Two compressions one after the other, a 128^3 matmul that waits for the second, a third compression that waits
// for the matmul, and a DMA beside them.
constexpr const char* kProgram = R"({"format":"tpusim-program","version":2,"role_of_chip":[],"programs":[{"name":"p",
"instructions":[
{"op":"custom","label":"zip.a","unit":"zip","bytes":1000000,"deps":[]},
{"op":"custom","label":"zip.b","unit":"zip","bytes":3000000,"deps":[0]},
{"op":"matmul","label":"mm","m":128,"k":128,"n":128,"dtype":"bf16","model_flops":4194304.0,
 "hardware_flops":4194304.0,"deps":[1]},
{"op":"dma","label":"load","src":"hbm","dst":"vmem","pattern":"contiguous","bytes":65536,"vmem_alloc":65536,
 "vmem_free":65536,"deps":[]},
{"op":"custom","label":"zip.c","unit":"zip","bytes":1000000,"deps":[2]}
]}]})";

class UnitKindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tpusim-unit-kind-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A scenario on one v5e chip running `program`, its chip with `zip` (a block entry) when not empty.
  Scenario scenario(const std::string& program, const std::string& zip) {
    std::ofstream(dir_ / "p.json") << program;
    std::string yaml = "name: zip\npod: v5e-1x1\nworkload: {program: " + (dir_ / "p.json").string() + "}\n";
    if (!zip.empty()) yaml += "chip:\n  zip: " + zip + "\n";
    return testing::scenario_from_yaml(yaml);
  }
  // What the check before a run (tpusim's preflight calls it) says of the scenario's program, or "".
  static std::string refusal(const Scenario& s) {
    try {
      check_program_fits(ir::read_program_json(s.workload.program).programs[0], s.chip, 0);
    } catch (const SimulationError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
};

constexpr const char* kZipBlock = "{kind: compressor, throughput: 10 GB/s, latency: 2 us}";

TEST_F(UnitKindTest, AnAddedKindRunsItsInstructionsInOrderWithDependenciesAndIsReported) {
  const AddedKind added;
  const Scenario s = scenario(kProgram, kZipBlock);
  const ir::ProgramSet programs = ir::read_program_json(s.workload.program);
  std::vector<TraceSpan> spans;
  SimOptions options;
  options.trace = [&](const TraceSpan& t) { spans.push_back(t); };
  const SimResult r = simulate(s, programs, options);

  // zip.a: 2 us + 1 MB / 10 GB/s = 102 us; zip.b starts as it ends and takes 2 us + 300 us; the matmul starts
  // as zip.b ends.
  auto span_of = [&](std::uint32_t instr) {
    for (const TraceSpan& t : spans) {
      if (t.instruction == instr) return t;
    }
    ADD_FAILURE() << "no span of instruction " << instr;
    return TraceSpan{};
  };
  const double a_end = kLatency + 1e6 / kThroughput, b_end = a_end + kLatency + 3e6 / kThroughput;
  ir::UnitKind zip{};
  ASSERT_TRUE(ir::unit_kind_named("zip", zip));
  EXPECT_EQ(span_of(0).unit, zip);
  EXPECT_DOUBLE_EQ(span_of(0).start.value(), 0);
  EXPECT_DOUBLE_EQ(span_of(0).end.value(), a_end);
  EXPECT_DOUBLE_EQ(span_of(1).start.value(), a_end);
  EXPECT_DOUBLE_EQ(span_of(1).end.value(), b_end);
  EXPECT_EQ(span_of(2).unit, ir::UnitKind::mxu);
  EXPECT_DOUBLE_EQ(span_of(2).start.value(), b_end);
  EXPECT_LT(span_of(3).end.value(), a_end);  // the DMA ran beside the compressions
  EXPECT_GT(r.step_time.value(), b_end);
  EXPECT_DOUBLE_EQ(span_of(4).start.value(), span_of(2).end.value());
  const double matmul = span_of(2).end.value() - span_of(2).start.value(), c_end = span_of(4).end.value();
  EXPECT_NEAR(c_end - span_of(4).start.value(), a_end, 1e-15);
  EXPECT_NEAR(r.step_time.value(), c_end, 1e-12);
  EXPECT_EQ(r.instructions_per_unit[static_cast<std::size_t>(zip)], 3u);

  // Its row of the units: busy while a compression runs, stalled on the MXU while zip.c waits for the matmul;
  // what the MXU waited on it for.
  const HwUnit zip_row = hw_unit_of(added.kind);
  ASSERT_EQ(hw_units().size(), static_cast<std::size_t>(kBuiltInHwUnits) + 1);
  EXPECT_EQ(hw_unit_name(zip_row), "zip");
  const UnitUsage& usage = r.unit(zip_row);
  EXPECT_NEAR(usage.busy.value(), b_end + a_end, 1e-15);
  EXPECT_EQ(usage.bytes.count(), 5'000'000u);
  EXPECT_NEAR(usage.utilization.mean, (b_end + a_end) / r.step_time.value(), 1e-12);
  EXPECT_NEAR(usage.stalled.value(), matmul, 1e-12);
  EXPECT_NEAR(usage.stalled_by[static_cast<std::size_t>(stall_on(ir::UnitKind::mxu))].value(), matmul, 1e-12);
  EXPECT_NEAR(usage.idle.value(), r.step_time.value() - b_end - a_end - matmul, 1e-12);
  const UnitUsage& mxu = r.unit(HwUnit::mxu);
  EXPECT_NEAR(mxu.stalled_by[static_cast<std::size_t>(stall_on(zip))].value(), b_end, 1e-12);
  ASSERT_EQ(r.block_stats.size(), 1u);
  EXPECT_EQ(r.block_stats[0].block, "zip");
  EXPECT_EQ(r.block_stats[0].total, 3.0);

  const tools::RunReport report = tools::make_report(s, programs, r, nullptr, nullptr);
  const auto summary = tools::summary_json(s, report);
  EXPECT_EQ(summary["units"]["zip"]["bytes"].get<std::uint64_t>(), 5'000'000u);
  EXPECT_EQ(summary["units"]["zip"]["instructions"].get<std::uint64_t>(), 3u);
  EXPECT_NEAR(summary["units"]["zip"]["busy_s"]["mean"].get<double>(), b_end + a_end, 1e-15);
  EXPECT_NEAR(summary["units"]["zip"]["stalled_by_s"]["dependency_mxu"].get<double>(), matmul, 1e-12);
  EXPECT_DOUBLE_EQ(summary["blocks"]["zip"]["instructions_started"]["total"].get<double>(), 3.0);
  std::ostringstream table;
  tools::print_table(s, report, table);
  EXPECT_NE(table.str().find("\n  zip "), std::string::npos) << table.str();  // its row of the unit table
  EXPECT_NE(table.str().find("zip.instructions_started: 3 over all chips"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("dependency_zip"), std::string::npos) << table.str();
}

TEST_F(UnitKindTest, AProgramFileNamesTheUnitAndReadsBackAsItWasWritten) {
  const AddedKind added;
  const ir::ProgramSet set = ir::parse_program_json(kProgram, "p.json");
  ir::UnitKind zip{};
  ASSERT_TRUE(ir::unit_kind_named("zip", zip));
  EXPECT_EQ(ir::unit_of(set.programs[0][1].kind), zip);
  EXPECT_EQ(ir::op_name(set.programs[0][1].kind), "custom");
  std::ostringstream written;
  ir::write_program_json(set, written);
  EXPECT_NE(written.str().find(R"("op":"custom","label":"zip.b","unit":"zip","bytes":3000000)"), std::string::npos)
      << written.str();
  std::ostringstream again;
  ir::write_program_json(ir::parse_program_json(written.str(), "again.json"), again);
  EXPECT_EQ(again.str(), written.str());
}

TEST_F(UnitKindTest, AnUnknownUnitAndAChipWithoutTheBlockAreRefusedBeforeTheRun) {
  {
    const AddedKind added;
    std::string misspelt = kProgram;
    misspelt.replace(misspelt.find(R"("unit":"zip")"), 12, R"("unit":"zipp")");
    try {
      (void)ir::parse_program_json(misspelt, "p.json");
      ADD_FAILURE() << "a misspelt unit was read";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("/programs/0/instructions/0/unit"), std::string::npos) << what;
      EXPECT_NE(what.find("one of the added unit kinds: zip"), std::string::npos) << what;
      EXPECT_NE(what.find("did you mean 'zip'?"), std::string::npos) << what;
    }
    // The chip has no compressor: refused at the instruction, nothing simulated.
    const std::string no_block = refusal(scenario(kProgram, ""));
    EXPECT_NE(no_block.find("instruction 0 'zip.a'"), std::string::npos) << no_block;
    EXPECT_NE(no_block.find("a custom instruction runs on unit zip, but chip v5e has no compressor block"),
              std::string::npos)
        << no_block;
    EXPECT_EQ(refusal(scenario(kProgram, kZipBlock)), "");
  }
  // Once the kind is removed, its unit row is gone, and a program naming its unit is refused as naming none.
  EXPECT_EQ(hw_units().size(), static_cast<std::size_t>(kBuiltInHwUnits));
  try {
    (void)ir::parse_program_json(kProgram, "p.json");
    ADD_FAILURE() << "a removed unit was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a unit kind added to the simulator (none is)"), std::string::npos)
        << e.what();
  }
}

TEST_F(UnitKindTest, AUnitKindThatCannotBeRightIsRefusedAndLeavesNoBlockKindBehind) {
  const std::size_t kinds = block_kinds().size();
  const int units = ir::unit_kind_count();
  for (const ir::UnitKindInfo bad : {ir::UnitKindInfo{"mxu", false, 1, "dependency_mxu2"},  // a taken name
                                     ir::UnitKindInfo{"", false, 1, "x"}, ir::UnitKindInfo{"zip", false, 1, ""},
                                     ir::UnitKindInfo{"zip", true, 1, "dependency_zip"},  // per TensorCore
                                     ir::UnitKindInfo{"zip", false, 0, "dependency_zip"},
                                     ir::UnitKindInfo{"zip", false, ir::kTimeRanks, "dependency_zip"}}) {
    EXPECT_THROW(add_block_kind(compressor(), &make_compressor, bad), std::invalid_argument) << bad.name;
    EXPECT_EQ(block_kinds().size(), kinds);
    EXPECT_EQ(ir::unit_kind_count(), units);
  }
}

}  // namespace
}  // namespace tpusim::models
