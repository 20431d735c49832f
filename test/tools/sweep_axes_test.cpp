// Sweep plans as architects write them: each kind of axis expands to exactly the expected points, derived
// values carry units, filters drop combinations before anything runs, seeds repeat every combination, and
// bad plans name the sweep file's line.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "tools/src/sweep/sweep_analysis.h"
#include "tools/src/sweep/sweep_axes.h"
#include "tools/src/sweep/sweep_expr.h"
#include "tools/src/sweep/sweep_runner.h"
#include "tpusim/core/diagnostics.h"

namespace fs = std::filesystem;
using namespace tpusim;
using namespace tpusim::tools;

namespace {

// ---- expressions ---------------------------------------------------------------------------------------------

Value eval(const std::string& text, const std::map<std::string, std::string>& names = {}) {
  return Expression::parse(text).eval([&](const std::string& n) -> std::optional<Value> {
    const auto it = names.find(n);
    if (it == names.end()) return std::nullopt;
    return value_from_text(it->second);
  });
}

std::string eval_text(const std::string& text, const std::map<std::string, std::string>& names = {}) {
  return value_to_text(eval(text, names)).value_or("(no unit)");
}

TEST(SweepExpression, ArithmeticFollowsPrecedence) {
  EXPECT_EQ(eval("1 + 2 * 3").si, 7);
  EXPECT_EQ(eval("(1 + 2) * 3").si, 9);
  EXPECT_EQ(eval("2 ^ 3 ^ 2").si, 512);  // right-associative
  EXPECT_EQ(eval("-2 ^ 2").si, -4);      // unary minus binds looser than ^, as in mathematics
  EXPECT_EQ(eval("7 / 2").si, 3.5);
  EXPECT_EQ(eval("max(3, 9, 4) - min(3, 9, 4)").si, 6);
  EXPECT_EQ(eval("log2(4096) + ceil(2.1) + floor(2.9) + round(2.5) + abs(-1)").si, 12 + 3 + 2 + 3 + 1);
}

TEST(SweepExpression, UnitsMultiplyAndRenderBackAsAFieldTakesThem) {
  // v4: 2 TensorCores x 4 MXUs x 128 x 128 x 2 FLOP at 1.05 GHz = 275.2512 TFLOP/s (docs/hardware.md).
  EXPECT_EQ(eval_text("2 FLOP * chip.clock * 2 * 4 * chip.mxu.rows * chip.mxu.cols",
                      {{"chip.clock", "1.05 GHz"}, {"chip.mxu.rows", "128"}, {"chip.mxu.cols", "128"}}),
            "275.2512 TFLOP/s");
  EXPECT_EQ(eval_text("1 TB/s * 2"), "2 TB/s");
  EXPECT_EQ(eval_text("16 MiB / 1 KiB"), "16384");
  EXPECT_EQ(eval_text("1 GiB / (100 GB/s)"), "10.73741824 ms");
  EXPECT_EQ(eval_text("1 / 2 ns"), "500 MHz");
  EXPECT_EQ(eval_text("3 * 1 KiB"), "3072 B");
  EXPECT_EQ(value_to_text(eval("2 B * 1 s")), std::nullopt);  // B*s: no field takes it
  EXPECT_EQ(unit_dim_label(eval("2 B * 1 s").dim), "B*s");
  EXPECT_EQ(unit_dim_label(eval("1 FLOP / 1 B").dim), "FLOP/B");
  EXPECT_EQ(eval("275 TFLOP/s / 1200 GB/s < 230 FLOP/B").si, 1);  // v4's ridge point, 229 FLOP per byte
  EXPECT_EQ(eval("275 TFLOP/s / 1200 GB/s < 229 FLOP/B").si, 0);
}

TEST(SweepExpression, ComparisonsAndLogicWorkOnQuantitiesTextAndTruth) {
  const std::map<std::string, std::string> env{{"pod", "v4-2x2x1"}, {"bw", "1200 GB/s"}};
  EXPECT_EQ(eval("bw >= 1.2 TB/s and pod == \"v4-2x2x1\"", env).kind, Value::Kind::boolean);
  EXPECT_EQ(eval("bw >= 1.2 TB/s and pod == \"v4-2x2x1\"", env).si, 1);
  EXPECT_EQ(eval("bw > 1.2 TB/s or pod != 'v4-2x2x1'", env).si, 0);
  EXPECT_EQ(eval("not bw < 1 TB/s", env).si, 1);
  EXPECT_EQ(eval("if(bw < 1 TB/s, 1, 2)", env).si, 2);
  // Short-circuit: the right side is not evaluated when the left decides.
  EXPECT_EQ(eval("false and 1 / 0 > 1").si, 0);
}

TEST(SweepExpression, MismatchedUnitsAndUnknownNamesAreErrorsWithTheirColumn) {
  try {
    (void)eval("1 TB/s + 2 s");
    FAIL() << "adding a bandwidth to a time must fail";
  } catch (const ExprError& e) {
    EXPECT_STREQ(e.what(), "'+' needs the same unit on both sides, found B/s and s");
    EXPECT_EQ(e.column(), 7u);
  }
  try {
    (void)eval("2 * chip.clok");
    FAIL();
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'chip.clok'"), std::string::npos) << e.what();
    EXPECT_EQ(e.column(), 4u);
  }
  EXPECT_THROW((void)Expression::parse("2 * (3"), ExprError);
  EXPECT_THROW((void)Expression::parse("2 3"), ExprError);
  EXPECT_THROW((void)eval("log2(1 GB)"), ExprError);
  EXPECT_THROW((void)eval("1 / 0"), ExprError);
  EXPECT_THROW((void)eval("system(1)"), ExprError);
}

// A fuzzer found "y^e^e^sGFLOP": a power tower whose exponent overflows. A unit's power is bounded, a plain
// number may be raised to any power, and a result that is not finite is refused rather than shown as "inf".
TEST(SweepExpression, PowersStayFiniteAndAUnitsPowerIsBounded) {
  EXPECT_DOUBLE_EQ(eval("2 ^ 10").si, 1024.0);
  EXPECT_EQ(eval_text("(2 s) ^ 2"), eval_text("4 s * 1 s"));
  try {
    (void)eval("(1 s) ^ 65");
    FAIL() << "a time to the 65th power must be refused";
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("at most the power 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)eval("((1 s) ^ 40) ^ 2"), ExprError);
  EXPECT_THROW((void)eval("3 ^ 3 ^ 3 ^ 3"), ExprError);  // 3^7625597484987 overflows a double
  EXPECT_THROW((void)eval("1e300 * 1e300"), ExprError);
  EXPECT_THROW((void)eval("3 ^ 1e30"), ExprError);
  EXPECT_DOUBLE_EQ(eval("0.5 ^ 1e30").si, 0.0);
}

std::string repeat(const std::string& piece, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += piece;
  return out;
}

TEST(SweepExpression, NestingIsBoundedAtSixtyFourLevelsWithTheColumnWhereItGoesPast) {
  // 64 parentheses around 1 are the deepest accepted; the 65th opens one level too many.
  EXPECT_EQ(eval(repeat("(", 64) + "1" + repeat(")", 64)).si, 1);
  try {
    (void)Expression::parse(repeat("(", 65) + "1" + repeat(")", 65));
    FAIL() << "65 nested parentheses must be refused";
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 64 levels deep"), std::string::npos) << e.what();
    EXPECT_EQ(e.column(), 65u);  // just past the 65th '('
  }
  // Signs, 'not', calls and '^' open levels too: 64 minus signs negate 64 times, 65 are refused.
  EXPECT_EQ(eval(repeat("-", 64) + "2").si, 2);
  EXPECT_THROW((void)Expression::parse(repeat("-", 65) + "2"), ExprError);
  EXPECT_EQ(eval(repeat("not ", 63) + "true").si, 0);  // 63 negations of true
  EXPECT_THROW((void)Expression::parse(repeat("not ", 65) + "true"), ExprError);
  EXPECT_EQ(eval(repeat("abs(", 63) + "-3" + repeat(")", 63)).si, 3);  // 63 calls and a sign
  EXPECT_THROW((void)Expression::parse(repeat("abs(", 65) + "3" + repeat(")", 65)), ExprError);
  EXPECT_EQ(eval(repeat("1 ^ ", 64) + "1").si, 1);
  EXPECT_THROW((void)Expression::parse(repeat("1 ^ ", 65) + "1"), ExprError);
  // The 20 KB of parentheses that crashed the parser before the bound is an error, not a stack overflow.
  EXPECT_THROW((void)Expression::parse(repeat("(", 20'000)), ExprError);
}

TEST(SweepExpression, LengthIsBoundedAt4096CharactersAndLongFlatRunsEvaluateWithoutRecursion) {
  // 1+1+...+1 with 2,048 ones is 4,095 characters: accepted, and it sums exactly (a chain, not a deep tree).
  const std::string sum = repeat("1+", 2047) + "1";
  ASSERT_EQ(sum.size(), 4095u);
  EXPECT_EQ(eval(sum).si, 2048);
  EXPECT_EQ(eval(sum + " ").si, 2048);  // 4,096 characters, the bound itself
  try {
    (void)Expression::parse(sum + "  ");
    FAIL() << "4,097 characters must be refused";
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("longer than 4096 characters (4097 here)"), std::string::npos) << e.what();
    EXPECT_EQ(e.column(), 0u);
  }
  // Left to right within one level: 2048 / 2 / 2 / ... / 2 (11 halvings) is 1, and 1 - 1 - 1 is -1.
  EXPECT_EQ(eval("2048" + repeat(" / 2", 11)).si, 1);
  EXPECT_EQ(eval("1 - 1 - 1").si, -1);
  // The operator's column still locates an error in the middle of a chain.
  try {
    (void)eval("1 s + 2 s + 3 B + 4 s");
    FAIL();
  } catch (const ExprError& e) {
    EXPECT_STREQ(e.what(), "'+' needs the same unit on both sides, found s and B");
    EXPECT_EQ(e.column(), 10u);
  }
  // 'and' and 'or' stop at the first operand that decides them: the unknown name after it is never looked up.
  EXPECT_EQ(eval("false and nothing.here and 1 > 0").si, 0);
  EXPECT_EQ(eval("1 > 2 or true or nothing.here").si, 1);
  EXPECT_THROW((void)eval("true and nothing.here"), ExprError);
}

// ---- ranges --------------------------------------------------------------------------------------------------

std::vector<std::string> range(const std::string& text) { return expand_range(text).value(); }

TEST(SweepRange, GeometricRangesKeepTheFirstBoundsUnit) {
  EXPECT_EQ(range("1 TB/s .. 4 TB/s x 2"), (std::vector<std::string>{"1 TB/s", "2 TB/s", "4 TB/s"}));
  EXPECT_EQ(range("8 .. 4096 x 8"), (std::vector<std::string>{"8", "64", "512", "4096"}));
  EXPECT_EQ(range("1 KiB .. 1 MiB x 32"), (std::vector<std::string>{"1 KiB", "32 KiB", "1024 KiB"}));
  // The last bound is a ceiling, not a promise: 100 is not a power of 3 times 1.
  EXPECT_EQ(range("1 .. 100 x 3"), (std::vector<std::string>{"1", "3", "9", "27", "81"}));
}

TEST(SweepRange, ArithmeticRangesLandOnTheirStepsExactly) {
  EXPECT_EQ(range("128 .. 512 step 128"), (std::vector<std::string>{"128", "256", "384", "512"}));
  // 0.1 GHz steps summed in floating point would drift; each value is first + i x step, rounded.
  EXPECT_EQ(range("0.9 GHz .. 1.2 GHz step 0.1 GHz"),
            (std::vector<std::string>{"0.9 GHz", "1 GHz", "1.1 GHz", "1.2 GHz"}));
  EXPECT_EQ(range("100 GB/s .. 50 GB/s step -25 GB/s"), (std::vector<std::string>{"100 GB/s", "75 GB/s", "50 GB/s"}));
  EXPECT_EQ(range("1 TB/s .. 2 TB/s points 5"),
            (std::vector<std::string>{"1 TB/s", "1.25 TB/s", "1.5 TB/s", "1.75 TB/s", "2 TB/s"}));
  EXPECT_EQ(range("1 GB/s .. 1000 GB/s log points 4"),
            (std::vector<std::string>{"1 GB/s", "10 GB/s", "100 GB/s", "1000 GB/s"}));
}

TEST(SweepRange, MalformedRangesSayWhatIsWrong) {
  EXPECT_EQ(expand_range("v4-2x2x1"), std::nullopt);            // no "..": not a range
  EXPECT_EQ(expand_range("../programs/a.json"), std::nullopt);  // no number first: a path, not a range
  EXPECT_THROW((void)expand_range("1 TB/s .. 4 s x 2"), ExprError);
  EXPECT_THROW((void)expand_range("1 TB/s .. 4 TB/s"), ExprError);
  EXPECT_THROW((void)expand_range("1 .. 4 x 1"), ExprError);
  EXPECT_THROW((void)expand_range("1 .. 4 step -1"), ExprError);
  EXPECT_THROW((void)expand_range("1 .. 4 step 1 GB"), ExprError);
  EXPECT_THROW((void)expand_range("1 .. 1000000 step 1"), ExprError);  // more than 10000 values
}

// ---- plans ---------------------------------------------------------------------------------------------------

class SweepPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("tpusim-plan-") + info->name() + "-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << "name: s\n";  // only its existence matters here
  }
  void TearDown() override { fs::remove_all(dir_); }

  SweepPlan plan(const std::string& body) {
    const fs::path p = dir_ / "w.yaml";
    std::ofstream(p) << "name: w\nscenario: s.yaml\n" << body;
    return load_sweep_plan(p.string());
  }
  std::string error(const std::string& body) {
    try {
      (void)expand_plan(plan(body), fields_);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }
  // Every run's overrides joined, one string per run.
  static std::vector<std::string> runs(const Expansion& e) {
    std::vector<std::string> out;
    for (const auto& r : e.runs) {
      std::string s;
      for (const auto& o : r.overrides) s += (s.empty() ? "" : " ") + o;
      out.push_back(s);
    }
    return out;
  }

  fs::path dir_;
  // A stand-in for the resolved scenario: a v4-like chip's clock and TensorCore count.
  FieldLookup fields_ = [](const std::vector<std::string>&, const std::string& path) -> std::optional<std::string> {
    if (path == "chip.clock") return "1.05 GHz";
    if (path == "chip.tensorcore.count") return "2";
    return std::nullopt;
  };
};

TEST_F(SweepPlanTest, AGridIsTheProductWithTheLastAxisFastest) {
  const Expansion e = expand_plan(plan("grid:\n  a: [1, 2]\n  b: [x, y, z]\n"), fields_);
  EXPECT_EQ(e.combinations, 6u);
  EXPECT_EQ(runs(e), (std::vector<std::string>{"a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"}));
}

TEST_F(SweepPlanTest, ZippedPathsVaryTogetherAsOneAxis) {
  const SweepPlan p = plan(
      "grid:\n  mxu:\n    chip.mxu.rows: [128, 256]\n    chip.mxu.cols: [128, 256]\n  workload.batch: [8, 16]\n");
  ASSERT_EQ(p.axes.size(), 2u);
  EXPECT_EQ(p.axes[0].name, "mxu");
  EXPECT_EQ(p.axes[0].label(1), "256, 256");
  EXPECT_EQ(runs(expand_plan(p, fields_)),
            (std::vector<std::string>{"chip.mxu.rows=128 chip.mxu.cols=128 workload.batch=8",
                                      "chip.mxu.rows=128 chip.mxu.cols=128 workload.batch=16",
                                      "chip.mxu.rows=256 chip.mxu.cols=256 workload.batch=8",
                                      "chip.mxu.rows=256 chip.mxu.cols=256 workload.batch=16"}));
}

TEST_F(SweepPlanTest, RangesAndListsMixInOneAxis) {
  const Expansion e =
      expand_plan(plan("grid:\n  chip.hbm.bandwidth: [600 GB/s, 1 TB/s .. 4 TB/s x 2]\n  bw2: 1 .. 3 step 1\n"),
                  fields_);
  EXPECT_EQ(e.combinations, 12u);
  EXPECT_EQ(e.runs[0].overrides[0], "chip.hbm.bandwidth=600 GB/s");
  EXPECT_EQ(e.runs[3].overrides[0], "chip.hbm.bandwidth=1 TB/s");
  EXPECT_EQ(e.runs[11].overrides[0], "chip.hbm.bandwidth=4 TB/s");
  EXPECT_EQ(e.runs[11].overrides[1], "bw2=3");
}

TEST_F(SweepPlanTest, DerivedValuesUseAxesAndResolvedFieldsWithUnits) {
  const Expansion e = expand_plan(plan("grid:\n  mxu:\n    chip.mxu.rows: [128, 256]\n    chip.mxu.cols: [128, 256]\n"
                                       "derive:\n  chip.peak_bf16: 2 FLOP * chip.clock * chip.tensorcore.count * 4 * "
                                       "chip.mxu.rows * chip.mxu.cols\n"),
                                  fields_);
  ASSERT_EQ(e.configs.size(), 2u);
  EXPECT_EQ(e.configs[0].derived_values, std::vector<std::string>{"275.2512 TFLOP/s"});
  EXPECT_EQ(e.configs[1].derived_values, std::vector<std::string>{"1.1010048 PFLOP/s"});
  EXPECT_EQ(e.runs[1].overrides.back(), "chip.peak_bf16=1.1010048 PFLOP/s");
}

TEST_F(SweepPlanTest, FiltersDropCombinationsBeforeTheyAreNumbered) {
  const Expansion e = expand_plan(plan("grid:\n  chip.hbm.bandwidth: 1 TB/s .. 4 TB/s x 2\n  workload.batch: [8, 16, "
                                       "32]\nfilter:\n  - chip.hbm.bandwidth / workload.batch >= 100 GB/s\n"
                                       "  - workload.batch != 16\n"),
                                  fields_);
  EXPECT_EQ(e.combinations, 9u);
  // 1 TB/s: 8 (125 GB/s per example); 2 TB/s: 8; 4 TB/s: 8, 32 (125 GB/s); 16 is dropped everywhere.
  EXPECT_EQ(runs(e), (std::vector<std::string>{"chip.hbm.bandwidth=1 TB/s workload.batch=8",
                                               "chip.hbm.bandwidth=2 TB/s workload.batch=8",
                                               "chip.hbm.bandwidth=4 TB/s workload.batch=8",
                                               "chip.hbm.bandwidth=4 TB/s workload.batch=32"}));
  EXPECT_EQ(e.configs.back().index, 3u);
}

TEST_F(SweepPlanTest, SeedsRepeatEveryCombinationAsTheInnermostLoop) {
  const Expansion e = expand_plan(plan("grid:\n  a: [1, 2]\nseeds: 3\n"), fields_);
  EXPECT_EQ(e.configs.size(), 2u);
  EXPECT_EQ(runs(e), (std::vector<std::string>{"a=1 seed=1", "a=1 seed=2", "a=1 seed=3", "a=2 seed=1", "a=2 seed=2",
                                               "a=2 seed=3"}));
  EXPECT_EQ(e.runs[4].config, 1u);
  EXPECT_EQ(e.runs[4].seed, 2);
  EXPECT_EQ(plan("grid:\n  a: [1]\nseeds: [7, 11]\n").seeds, (std::vector<std::int64_t>{7, 11}));
  EXPECT_EQ(plan("grid:\n  a: [1]\nseeds: 10 .. 30 step 10\n").seeds, (std::vector<std::int64_t>{10, 20, 30}));
}

TEST_F(SweepPlanTest, BadPlansNameTheLineOfTheProblem) {
  const std::string w = (dir_ / "w.yaml").string();
  // Lines: 1 name, 2 scenario, 3 grid, 4 first axis, ...
  EXPECT_NE(error("grid:\n  a: 1 .. 4 x 0.5\n").find(w + ":4:6"), std::string::npos) << error("grid:\n  a: 1 .. 4 x 0.5\n");
  const std::string zip = error("grid:\n  z:\n    a: [1, 2]\n    b: [1, 2, 3]\n");
  EXPECT_NE(zip.find(w + ":6:8"), std::string::npos) << zip;
  EXPECT_NE(zip.find("zipped lists differ in length"), std::string::npos) << zip;
  const std::string unit = error("grid:\n  a: [1 TB/s]\nderive:\n  b: a + 1 s\n");
  EXPECT_NE(unit.find(w + ":6:8"), std::string::npos) << unit;
  EXPECT_NE(unit.find("'+' needs the same unit on both sides, found B/s and s"), std::string::npos) << unit;
  EXPECT_NE(unit.find("at a = 1 TB/s"), std::string::npos) << unit;
  const std::string filter = error("grid:\n  a: [1]\nfilter: a + 1\n");
  EXPECT_NE(filter.find("a filter must be true or false"), std::string::npos) << filter;
  const std::string heat = error("grid:\n  a: [1]\n  b: [2]\nanalysis:\n  - heatmap: {x: a, y: c}\n");
  EXPECT_NE(heat.find("unknown axis 'c'"), std::string::npos) << heat;
  const std::string pareto = error("grid:\n  a: [1]\nanalysis:\n  - pareto: {x: chips, y: step_time}\n");
  EXPECT_NE(pareto.find("did you mean 'step_time_s'?"), std::string::npos) << pareto;
  EXPECT_NE(error("grid:\n  a: [1]\nderive:\n  a: 2\n").find("a derived field is also an axis"), std::string::npos);
  EXPECT_NE(error("grid:\n  a: [1]\ncolumns:\n  mfu: 2\n").find("cannot take the name of a metric"), std::string::npos);
  const std::string key = error("grid:\n  a: [1]\nseed: 3\n");
  EXPECT_NE(key.find("did you mean 'seeds'?"), std::string::npos) << key;
}

TEST_F(SweepPlanTest, ComputedColumnsDeclareTheirDirectionAndAFrontNeedsOne) {
  // Lines: 1 name, 2 scenario, 3 grid, 4 axis, 5 columns, 6 first column, ...
  const SweepPlan p = plan("grid:\n  a: [1]\ncolumns:\n  cs: {expr: chips * step_time_s, better: lower}\n"
                           "  speed: {expr: 1 / step_time_s, better: higher}\n  bare: chips + 1\n");
  ASSERT_EQ(p.columns.size(), 3u);
  EXPECT_EQ(p.columns[0].better, ::tpusim::tools::Better::lower);
  EXPECT_EQ(p.columns[1].better, ::tpusim::tools::Better::higher);
  EXPECT_EQ(p.columns[2].better, ::tpusim::tools::Better::neither);
  EXPECT_EQ(p.columns[1].expr.text(), "1 / step_time_s");
  // A declared column is a Pareto objective as it stands; a bare one, or a metric with no direction, needs min / max.
  EXPECT_EQ(error("grid:\n  a: [1]\ncolumns:\n  cs: {expr: chips * step_time_s, better: lower}\nanalysis:\n"
                  "  - pareto: {x: cs, y: step_time_s}\n"),
            "(no error)");
  const std::string bare = error("grid:\n  a: [1]\ncolumns:\n  cs: chips * step_time_s\nanalysis:\n"
                                 "  - pareto: {x: cs, y: step_time_s}\n");
  EXPECT_NE(bare.find(":8:13: error: analysis.pareto: 'cs' has no better direction"), std::string::npos) << bare;
  EXPECT_NE(bare.find("'min cs' or 'max cs', or the column declared as {expr: ..., better: higher}"), std::string::npos)
      << bare;
  EXPECT_EQ(error("grid:\n  a: [1]\ncolumns:\n  cs: chips * step_time_s\nanalysis:\n"
                  "  - pareto: {x: min cs, y: step_time_s}\n"),
            "(no error)");
  const std::string flops = error("grid:\n  a: [1]\nanalysis:\n  - pareto: {x: model_flops, y: step_time_s}\n");
  EXPECT_NE(flops.find("'model_flops' has no better direction"), std::string::npos) << flops;
  const std::string typo = error("grid:\n  a: [1]\ncolumns:\n  cs: {expr: chips, better: hihger}\n");
  EXPECT_NE(typo.find(":6:29: error: columns.cs.better: invalid value"), std::string::npos) << typo;
  EXPECT_NE(typo.find("did you mean 'higher'?"), std::string::npos) << typo;
  const std::string key = error("grid:\n  a: [1]\ncolumns:\n  cs: {exp: chips}\n");
  EXPECT_NE(key.find("columns.cs.exp: unknown key 'exp'"), std::string::npos) << key;
  EXPECT_NE(key.find("did you mean 'expr'?"), std::string::npos) << key;
  EXPECT_NE(key.find("a column's map needs its expression"), std::string::npos) << key;
}

// ---- analyses ------------------------------------------------------------------------------------------------

TEST(SweepPareto, TheFrontIsEveryRowNoOtherBeatsOnOneAndMatchesOnTheOther) {
  // (x, y) per row; both lower is better unless asked otherwise. A row without a value is never on it.
  const std::vector<std::pair<double, double>> xy{{1, 5}, {2, 3}, {3, 4}, {4, 1}, {2, 3}, {5, 1}};
  std::vector<Config> configs(xy.size() + 1);
  SweepTable t;
  t.columns = {{"x", {}, Better::lower, "{}", ""}, {"y", {}, Better::lower, "{}", ""}};
  for (std::size_t i = 0; i <= xy.size(); ++i) {
    configs[i].index = i;
    TableRow r;
    r.config = &configs[i];
    if (i < xy.size()) r.mean = {xy[i].first, xy[i].second};
    else r.mean = {0.0, std::nullopt};  // a failed point: no y
    t.rows.push_back(r);
  }
  auto indices = [](const std::vector<const TableRow*>& rows) {
    std::vector<std::size_t> out;
    for (const TableRow* r : rows) out.push_back(r->config->index);
    return out;
  };
  // (3,4) loses to (2,3); (5,1) to (4,1); the two equal (2,3) rows do not beat each other.
  EXPECT_EQ(indices(pareto_front(t, 0, false, 1, false)), (std::vector<std::size_t>{0, 1, 3, 4}));
  // Lower x, higher y: (1,5) has the lowest x and the highest y, so it beats every other row.
  EXPECT_EQ(indices(pareto_front(t, 0, false, 1, true)), (std::vector<std::size_t>{0}));
  // Both higher: (2,3) loses to (3,4) and (4,1) to (5,1).
  EXPECT_EQ(indices(pareto_front(t, 0, true, 1, true)), (std::vector<std::size_t>{0, 2, 5}));
}

TEST(SweepProgress, DurationsReadAsAPersonWouldSayThem) {
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(7380), "2h03m");
}

TEST(SweepProgress, ALogGetsALinePerTenthOfTheWorkWithAnEta) {
  std::ostringstream out;
  Progress p("w", 20, out, false);
  for (std::size_t i = 1; i <= 20; ++i) p.update(i, i == 20 ? 1 : 0);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10);  // at 2, 4, ..., 20 of 20
  EXPECT_NE(text.find("tpusim sweep w: 2/20 points, 0s elapsed, ETA 0s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tpusim sweep w: 20/20 points, 1 failed, 0s elapsed\n"), std::string::npos) << text;
}

}  // namespace
