// The tpusim command line as a user meets it: bad input gives exit code 2 and an error naming file:line and
// the key; good input gives complete, byte-identical output.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace fs = std::filesystem;

namespace {

using tpusim::test::Outcome;
using tpusim::test::slurp;
using Cli = tpusim::test::CliTest;

const char* kGood = tpusim::test::kMinimalScenario;

// How many times `part` occurs in `text` (elements of a written SVG).
std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_F(Cli, VersionPrintsTheReleaseVersion) {
  const Outcome o = tpusim("--version");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("tpusim 0.1.0"), std::string::npos) << o.out;
}

TEST_F(Cli, EverySubcommandHasHelp) {
  for (const char* sub : {"run", "validate", "describe", "lower", "topo", "sweep", "calibrate"}) {
    const Outcome o = tpusim(std::string(sub) + " --help");
    EXPECT_EQ(o.exit_code, 0) << sub;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub << ": " << o.out;
  }
}

TEST_F(Cli, ValidScenarioValidates) {
  const Outcome o = tpusim("validate " + write("s.yaml", kGood).string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("t: ok"), std::string::npos) << o.out;
}

// TPUSIM_DATA_DIR (read by the tool, passed to core: tools/src/environment.h) is searched before the bundled data.
TEST_F(Cli, TheDataDirFromTheEnvironmentIsSearchedFirst) {
  fs::create_directories(dir_ / "data" / "scenarios");
  std::ofstream(dir_ / "data" / "scenarios" / "only-here.yaml") << kGood;
  const Outcome without = tpusim("validate only-here");
  EXPECT_EQ(without.exit_code, 2) << without.err;
  const std::string cmd = "TPUSIM_DATA_DIR=" + (dir_ / "data").string() + " " + std::string(TPUSIM_BIN) +
                          " validate only-here > " + (dir_ / "out.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "out.txt");
  EXPECT_NE(slurp(dir_ / "out.txt").find("t: ok"), std::string::npos) << slurp(dir_ / "out.txt");
}

TEST_F(Cli, UnknownKeyNamesFileLineKeyAndSuggestsTheRightOne) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nworkload:\n  modle: mlp-small\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":4:3"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("workload.modle"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'model'?"), std::string::npos) << o.err;
}

TEST_F(Cli, MissingRequiredKeyIsNamed) {
  const fs::path s = write("s.yaml", "pod: v4-1x1x1\nworkload:\n  model: mlp-small\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":1:1"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("name: missing required key"), std::string::npos) << o.err;
}

TEST_F(Cli, WrongTypeIsReportedWithExpectedAndFound) {
  const fs::path s = write("s.yaml", std::string(kGood) + "  optimizer: [adam]\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":7:14"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("workload.optimizer"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("found:    a list"), std::string::npos) << o.err;
}

TEST_F(Cli, SizeWhereBandwidthIsExpectedIsAUnitError) {
  const fs::path s = write("s.yaml", std::string(kGood) + "chip:\n  hbm:\n    bandwidth: 100 GB\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":9:16"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("chip.hbm.bandwidth"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("'100 GB' is a size"), std::string::npos) << o.err;
}

TEST_F(Cli, ZeroAndNegativeSizesAreRejected) {
  const fs::path zero = write("z.yaml", std::string(kGood) + "chip:\n  vmem:\n    capacity: 0 MiB\n");
  Outcome o = tpusim("validate " + zero.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(zero.string() + ":9:15"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("chip.vmem.capacity"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("greater than zero"), std::string::npos) << o.err;

  const fs::path neg = write("n.yaml", std::string(kGood) + "chip:\n  hbm:\n    capacity: -4 GiB\n");
  o = tpusim("validate " + neg.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("chip.hbm.capacity"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("non-negative"), std::string::npos) << o.err;
}

TEST_F(Cli, UnknownPodAndChipNamesSuggestBundledOnes) {
  const fs::path pod = write("p.yaml", "name: t\npod: v4-4x4x5\nworkload:\n  model: mlp-small\n");
  Outcome o = tpusim("validate " + pod.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(pod.string() + ":2:6"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("unknown name 'v4-4x4x5'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'v4-4x4x4'?"), std::string::npos) << o.err;

  o = tpusim("describe chip v44");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("did you mean"), std::string::npos) << o.err;
}

TEST_F(Cli, MalformedYamlGivesTheLine) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nworkload: [unclosed\n  model: x\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("malformed YAML"), std::string::npos) << o.err;
}

TEST_F(Cli, SetOnAMissingKeyIsAnErrorNamingTheOverride) {
  const fs::path s = write("s.yaml", kGood);
  const Outcome o = tpusim("validate " + s.string() + " --set chip.hbm.bandwdth=2TB/s");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--set chip.hbm.bandwdth=2TB/s"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'bandwidth'?"), std::string::npos) << o.err;
}

TEST_F(Cli, SetOverridesAreCheckedLikeTheFile) {
  const fs::path s = write("s.yaml", kGood);
  Outcome o = tpusim("validate " + s.string() + " --set chip.hbm.bandwidth=2TB");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("'2TB' is a size"), std::string::npos) << o.err;
  o = tpusim("validate " + s.string() + " --set chip.hbm.bandwidth=2TB/s --set workload.batch=16");
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

TEST_F(Cli, AllErrorsAreReportedAtOnce) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nwrkload: 1\nseed: x\n");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown key 'wrkload'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("seed"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("workload: missing required key"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("3 errors"), std::string::npos) << o.err;
}

TEST_F(Cli, BadInputToRunSimulatesNothingAndWritesNothing) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nworkload:\n  modle: x\n");
  const Outcome o = tpusim("run " + s.string() + " -o " + (dir_ / "out").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  EXPECT_NE(o.err.find("nothing was simulated"), std::string::npos) << o.err;
}

TEST_F(Cli, DescribeChipShowsUnitsAndSources) {
  const Outcome o = tpusim("describe chip v4");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("1.2 TB/s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("hardware.md"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("assumption"), std::string::npos) << o.out;
}

TEST_F(Cli, DescribeScenarioShowsAWhatIfResolvedAsRunResolvesIt) {
  const Outcome o =
      tpusim("describe scenario gpt3-1.3b-train-v4 --set chip.hbm.latency=3us --set chip.mxu.int8_rate=2");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("scenario gpt3-1.3b-train-v4 (resolved, with --set)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  chip.hbm.latency                 3 us\n"), std::string::npos) << o.out;
  // The int8 peak follows the rate the what-if gave (2 x the v4's bf16 arithmetic, 275.251 TFLOP/s).
  EXPECT_NE(o.out.find("  chip.peak_int8                   550.502 TFLOP/s\n"), std::string::npos) << o.out;
  // A key the resolver does not know is refused as run refuses it; --set on anything but a scenario too.
  const Outcome typo = tpusim("describe scenario gpt3-1.3b-train-v4 --set chip.hbm.latncy=3us");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'latency'?"), std::string::npos) << typo.err;
  const Outcome chip = tpusim("describe chip v4 --set chip.hbm.latency=3us");
  EXPECT_EQ(chip.exit_code, 2);
  EXPECT_NE(chip.err.find("--set applies to 'describe scenario NAME' only"), std::string::npos) << chip.err;
  EXPECT_TRUE(chip.out.empty()) << chip.out;
}

TEST_F(Cli, RunWritesASummaryThatIsByteIdenticalAcrossRuns) {
  const fs::path s = write("s.yaml", kGood);
  const Outcome a = tpusim("run -q " + s.string() + " -o " + (dir_ / "a").string());
  const Outcome b = tpusim("run -q " + s.string() + " -o " + (dir_ / "b").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string sa = slurp(dir_ / "a" / "summary.json");
  ASSERT_FALSE(sa.empty());
  EXPECT_EQ(sa, slurp(dir_ / "b" / "summary.json"));
  EXPECT_EQ(slurp(dir_ / "a" / "chips.csv"), slurp(dir_ / "b" / "chips.csv"));

  const auto j = nlohmann::json::parse(sa);
  EXPECT_EQ(j["tpusim_version"], "0.1.0");
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["scenario"]["pod"]["name"], "v4-1x1x1");
  EXPECT_EQ(j["scenario"]["chip"]["hbm"]["bandwidth"], "1.2 TB/s");
  EXPECT_EQ(j["scenario"]["workload"]["batch"], 8);
  for (const char* key : {"step_time_s", "model_flops", "hardware_flops", "mfu", "hfu", "examples_per_s"}) {
    EXPECT_TRUE(j["metrics"].contains(key)) << key;
  }
  EXPECT_GT(j["metrics"]["step_time_s"].get<double>(), 0.0);
}

TEST_F(Cli, TopoPrintsChipsLinksDiameterAndBisection) {
  const Outcome o = tpusim("topo v4-4x4x4");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("chips: 64"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("384 directed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("diameter: 6 hops"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("bisection: 32 links"), std::string::npos) << o.out;
}

TEST_F(Cli, TopoRefusesToDrawAFullPodAndWritesNothing) {
  const Outcome o = tpusim("topo v4-16x16x16 --dot " + (dir_ / "pod.dot").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "pod.dot"));
  EXPECT_NE(o.err.find("limited to 512 chips"), std::string::npos) << o.err;
}

TEST_F(Cli, TopoWritesDotForASmallSlice) {
  const Outcome o = tpusim("topo v4-2x2x1 --dot " + (dir_ / "s.dot").string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const std::string dot = slurp(dir_ / "s.dot");
  EXPECT_EQ(dot.rfind("digraph", 0) == 0 || dot.rfind("graph", 0) == 0, true) << dot.substr(0, 80);
}

TEST_F(Cli, TraceHoldsOneSpanPerInstructionOfTheTracedChip) {
  const fs::path s = write("s.yaml", kGood);
  const Outcome run = tpusim("run -q --trace " + s.string() + " -o " + (dir_ / "t").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Outcome lower = tpusim("lower " + s.string() + " -o " + (dir_ / "p.json").string());
  ASSERT_EQ(lower.exit_code, 0) << lower.err;
  const auto program = nlohmann::json::parse(slurp(dir_ / "p.json"));
  const auto trace = nlohmann::json::parse(slurp(dir_ / "t" / "trace.json"));
  std::size_t spans = 0;
  for (const auto& e : trace["traceEvents"]) spans += e["ph"] == "X" && e["args"].contains("instruction") ? 1 : 0;
  ASSERT_EQ(program["programs"].size(), 1u);
  EXPECT_EQ(spans, program["programs"][0]["instructions"].size());
  EXPECT_NE(slurp(dir_ / "t" / "timeline.svg").find("<rect"), std::string::npos);
}

TEST_F(Cli, LowerWritesTheVersionedProgramFormat) {
  const Outcome o = tpusim("lower " + write("s.yaml", kGood).string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["format"], "tpusim-program");
  EXPECT_EQ(j["version"], 2);
}

TEST_F(Cli, SweepRunsEveryPointOnceAndResumes) {
  const fs::path scenario = write("s.yaml", kGood);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: [8, 16]\n");
  const fs::path out = dir_ / "sw";
  Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("2 points, 0 already done, running 2"), std::string::npos) << o.err;
  const std::string table = slurp(out / "table.csv");
  EXPECT_NE(table.find("0,\"8\",ok,"), std::string::npos) << table;
  EXPECT_NE(table.find("1,\"16\",ok,"), std::string::npos) << table;
  // Each point's summary is that of a plain run with the override.
  const auto j = nlohmann::json::parse(slurp(out / "points" / "00001" / "summary.json"));
  EXPECT_EQ(j["scenario"]["workload"]["batch"], 16);

  o = tpusim("sweep " + sweep.string() + " -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("2 already done, running 0"), std::string::npos) << o.err;
  o = tpusim("sweep " + sweep.string() + " --emit-commands -o " + out.string());
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, "");  // nothing left to run
}

TEST_F(Cli, SweepEmitsOneCommandPerPointForAnExternalScheduler) {
  write("s.yaml", kGood);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: [8, 16, 32]\n");
  const Outcome o = tpusim("sweep " + sweep.string() + " --emit-commands -o " + (dir_ / "sw").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 3);
  EXPECT_NE(o.out.find("'--set' 'workload.batch=32'"), std::string::npos) << o.out;
}

TEST_F(Cli, SweepWithABadGridKeyRunsNothing) {
  write("s.yaml", kGood);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.bach: [8, 16]\n");
  const Outcome o = tpusim("sweep " + sweep.string() + " -o " + (dir_ / "sw").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("did you mean 'batch'?"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "sw"));
}

TEST_F(Cli, ParameterDocsMatchTheFieldTablesInTheCode) {
  const Outcome o = tpusim("describe params");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string doc = slurp(fs::path(TPUSIM_SOURCE_DIR) / "docs" / "parameters.md");
  const auto open = doc.find("```\n");
  const auto close = doc.rfind("```");
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, open);
  EXPECT_EQ(doc.substr(open + 4, close - open - 4), o.out)
      << "docs/parameters.md is stale: run scripts/gen-docs.sh";
}

// describe params covers the sharding keys from the parser's own tables: a rule for every logical axis it lists
// is accepted, and a logical axis it does not list is refused with a did-you-mean.
TEST_F(Cli, DescribeParamsListsEveryShardingKeyTheParserAccepts) {
  const Outcome o = tpusim("describe params");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // kernels/README.md "Rules" names these; core/mesh_spec.cpp holds them.
  for (const std::string axis : {"batch", "length", "embed", "heads", "kv_heads", "mlp", "vocab", "expert", "layers",
                                 "norm_length", "activation_embed"}) {
    EXPECT_NE(o.out.find("  sharding." + axis + " "), std::string::npos) << axis;
  }
  for (const std::string axis : {"data", "fsdp", "fsdp_transpose", "tensor", "tensor_sequence", "sequence", "pipeline",
                                 "expert"}) {
    EXPECT_NE(o.out.find("  mesh." + axis + " "), std::string::npos) << axis;
  }
  EXPECT_NE(o.out.find("  sharding.batch               list of mesh axes default [data, fsdp, fsdp_transpose, expert]"),
            std::string::npos);
  EXPECT_NE(o.out.find("  mesh_mapping.<axis>"), std::string::npos);
  const fs::path bad = write("shard.yaml", R"(name: s
pod: v4-2x2x1
workload:
  model: gpt3-1.3b
  batch: 8
  step: train
  mesh: {fsdp: 4}
  sharding: {embedd: [fsdp]}
)");
  const Outcome refused = tpusim("validate " + bad.string());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("shard.yaml:8:14: error: workload.sharding.embedd: unknown logical axis"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("did you mean 'embed'"), std::string::npos) << refused.err;
}

TEST_F(Cli, APodTheChipCannotFormIsBadInput) {
  // A 3D slice needs 6 ICI ports per chip; a chip overridden to 4 cannot form it.
  const fs::path s = write("s.yaml", std::string(kGood) + "chip:\n  ici:\n    links: 4\n");
  const Outcome o = tpusim("validate " + s.string() + " --set pod=v4-4x4x4");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("s.yaml:9:12: error: chip.ici.links: too few ICI ports for the pod"), std::string::npos)
      << o.err;
}

// docs/hardware.md "Useful derived checks": a chip turns compute-bound at peak FLOP/s / HBM bandwidth (v4 229,
// v5e 240, v5p 166 FLOP/B). sweeps/roofline.yaml runs GEMMs of rising m on one slice of each generation and
// measures the ridge as best achieved FLOP/s over best achieved HBM bandwidth.
TEST_F(Cli, RooflineSweepPutsTheRidgeWithinFivePercentOfPeakOverHbmBandwidth) {
  const fs::path out = dir_ / "rf";
  const Outcome o = tpusim("sweep roofline -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::istringstream csv(slurp(out / "roofline.csv"));
  std::string row;
  std::getline(csv, row);  // header
  int groups = 0;
  while (std::getline(csv, row)) {
    ++groups;
    std::vector<std::string> cells;
    std::istringstream cols(row);
    for (std::string cell; std::getline(cols, cell, ',');) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 9u) << row;
    if (cells[1] == "v2") continue;  // checked below
    EXPECT_LT(std::fabs(std::stod(cells[8])), 0.05) << row;
  }
  EXPECT_EQ(groups, 6);

  // v2 has one MXU per core. The model loads a weight tile one row per cycle (an assumption, see
  // models/src/mxu_weight_stationary.cpp), so its skinny GEMMs are bound by weight loading, not by HBM: the
  // m = 8 point loads (16384 / 128)^2 tiles over 2 MXUs at 128 cycles each, 8192 x 128 cycles at 700 MHz
  // (1.498 ms, i.e. 512 MiB of weights at 358.4 GB/s, half of v2's 700 GB/s). Its measured ridge is therefore
  // not peak / HBM bandwidth; this pins the reason (3% for the first load and the drain).
  std::istringstream table(slurp(out / "table.csv"));
  bool found = false;
  while (std::getline(table, row)) {
    if (row.find(",\"v2-2x2\",\"0 B\",\"8\",ok,") == std::string::npos) continue;
    found = true;
    const std::size_t at = row.find(",ok,") + 4;
    const double step = std::stod(row.substr(at, row.find(',', at) - at));
    const double weight_bound = 8192.0 * 128 / 700e6;
    EXPECT_GE(step, weight_bound) << row;
    EXPECT_LE(step, 1.03 * weight_bound) << row;
  }
  EXPECT_TRUE(found);
  EXPECT_NE(slurp(out / "roofline.svg").find("<polyline"), std::string::npos);
  EXPECT_NE(slurp(out / "step_time.svg").find("<polyline"), std::string::npos);
}

TEST_F(Cli, CollectiveRunReportsLinksAndTheCollective) {
  const Outcome o = tpusim("run -q allreduce-v4-4x4x4 -o " + (dir_ / "ar").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "ar" / "summary.json"));
  EXPECT_EQ(j["links"]["count"], 384);
  ASSERT_EQ(j["collectives"].size(), 1u);
  EXPECT_EQ(j["collectives"][0]["op"], "all_reduce");
  EXPECT_EQ(j["collectives"][0]["participants"], 64);
  // Within 10% of the bandwidth-optimal closed form at the achievable link rate (ideal / link efficiency; the
  // VPU reductions and the runtime's overheads make up the rest).
  const double link_efficiency = std::stod(j["scenario"]["chip"]["ici"]["link_efficiency"].get<std::string>());
  EXPECT_EQ(link_efficiency, 0.94);  // the calibrated default (core/include/tpusim/core/chip_spec.h)
  EXPECT_GT(j["collectives"][0]["efficiency"].get<double>(), 0.9 * link_efficiency);
  EXPECT_LE(j["collectives"][0]["efficiency"].get<double>(), link_efficiency);
  // links.svg: one segment per directed link, a square per chip, one panel per z plane; no e-notation in any text.
  const std::string map = slurp(dir_ / "ar" / "links.svg");
  EXPECT_EQ(occurrences(map, "<rect class=\"link\""), 384u);
  EXPECT_EQ(occurrences(map, "<rect class=\"chip\""), 64u);
  EXPECT_EQ(occurrences(map, ">z = "), 4u);
  for (auto at = map.find("<text"); at != std::string::npos; at = map.find("<text", at + 1)) {
    const auto open = map.find('>', at), close = map.find("</text>", at);
    EXPECT_EQ(map.substr(open, close - open).find("e+"), std::string::npos) << map.substr(open, close - open);
  }
  const std::string links = slurp(dir_ / "ar" / "links.csv");
  EXPECT_EQ(std::count(links.begin(), links.end(), '\n'), 385);  // a header and one row per directed link
}

// Issue "foundation", done-when: the bundled v4 chip through the real binary. Closed forms:
//   compute bound = 2 * 4096^3 FLOP / (2 cores x 4 MXUs x 128 x 128 MACs x 2 x 1.05 GHz) = 499.3 us,
//   plus one pipeline fill and drain of R + C + min(m, R) - 2 = 382 cycles = 0.364 us,
//   plus the MXU step overhead (chip.mxu.step_overhead, 0.35 us = 368 cycles) between the 64 back-to-back
//   matmul steps of each core (tpusim lower gemm-v4: tiles of 1024 x 512 x 1024), 63 x 368 cycles = 22.1 us;
//   tolerance 2% for the first operand loads and the last write-back that no schedule can hide.
TEST_F(Cli, Gemm4096OnV4RunsWithinTwoPercentOfFlopsOverPeakPlusFillAndDrainAndStepOverheads) {
  const Outcome o = tpusim("run -q gemm-v4 -o " + (dir_ / "g").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "g" / "summary.json"));
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const double peak = 2.0 * 4 * 128 * 128 * 2 * 1.05e9;
  const double bound = flops / peak + (382 + 63 * 368) / 1.05e9;
  const double step = j["metrics"]["step_time_s"].get<double>();
  EXPECT_GE(step, bound);
  EXPECT_LE(step, 1.02 * bound);
  // MFU comes from the program's FLOPs and the published peak.
  EXPECT_EQ(j["metrics"]["model_flops"].get<double>(), flops);
  EXPECT_DOUBLE_EQ(j["metrics"]["mfu"].get<double>(), flops / (step * 275e12));
}

// An 8 x 4096 x 4096 GEMM reuses each weight 8 times: it must move A, B and C once through HBM at 1.2 TB/s x
// the achievable fraction hbm.efficiency (0.9), (8*4096 + 4096*4096 + 8*4096) * 2 bytes / 1.08e12 B/s =
// 31.19 us; tolerance 5% (the HBM latency before the first tile and the last tile's matmul and drain).
TEST_F(Cli, SkinnyGemmOnV4IsBoundByHbmBandwidth) {
  const Outcome o = tpusim("run -q gemm-skinny-v4 -o " + (dir_ / "g").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "g" / "summary.json"));
  const double bytes = (8.0 * 4096 + 4096.0 * 4096 + 8.0 * 4096) * 2;
  const double efficiency = std::stod(j["scenario"]["chip"]["hbm"]["efficiency"].get<std::string>());
  EXPECT_EQ(efficiency, 0.9);  // the calibrated default (core/include/tpusim/core/chip_spec.h)
  const double bound = bytes / (1.2e12 * efficiency);
  const double step = j["metrics"]["step_time_s"].get<double>();
  EXPECT_GE(step, bound);
  EXPECT_LE(step, 1.05 * bound);
  EXPECT_LT(j["metrics"]["mfu"].get<double>(), 0.05);  // far below the ridge: the MXUs mostly wait
}

TEST_F(Cli, AProgramFileRunsLikeTheModelItWasLoweredFrom) {
  const fs::path s = write("s.yaml", kGood);
  ASSERT_EQ(tpusim("lower " + s.string() + " -o " + (dir_ / "p.json").string()).exit_code, 0);
  // The program path is relative to the scenario file that names it.
  const fs::path from_file = write("f.yaml", "name: f\npod: v4-1x1x1\nworkload:\n  program: p.json\n");
  const Outcome a = tpusim("run -q " + s.string() + " -o " + (dir_ / "a").string());
  const Outcome b = tpusim("run -q " + from_file.string() + " -o " + (dir_ / "b").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ja = nlohmann::json::parse(slurp(dir_ / "a" / "summary.json"));
  const auto jb = nlohmann::json::parse(slurp(dir_ / "b" / "summary.json"));
  EXPECT_EQ(ja["metrics"]["step_time_s"], jb["metrics"]["step_time_s"]);
  EXPECT_EQ(ja["metrics"]["model_flops"], jb["metrics"]["model_flops"]);
  EXPECT_EQ(jb["scenario"]["workload"]["program"], (dir_ / "p.json").string());
}

TEST_F(Cli, AMissingOrMalformedProgramFileIsBadInput) {
  Outcome o = tpusim("validate " + write("m.yaml", "name: m\npod: v4-1x1x1\nworkload:\n  program: none.json\n").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("workload.program: file not found"), std::string::npos) << o.err;

  write("bad.json", R"({"format": "tpusim-program", "version": 7, "programs": []})");
  o = tpusim("validate " + write("b.yaml", "name: b\npod: v4-1x1x1\nworkload:\n  program: bad.json\n").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("bad.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("version"), std::string::npos) << o.err;

  o = tpusim("validate " +
             write("both.yaml", "name: b\npod: v4-1x1x1\nworkload:\n  program: bad.json\n  model: mlp-small\n").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("not both"), std::string::npos) << o.err;
}

TEST_F(Cli, DescribeAssumptionsListsTheModelConstantsWithTheirValues) {
  const Outcome o = tpusim("describe assumptions");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("PCIe DMA latency"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("DCN latency                          10 us"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("MXU weight load"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("GEMM share of VMEM                   75%"), std::string::npos) << o.out;
  // The calibrated overheads (issue 13), each with its value.
  EXPECT_NE(o.out.find("ICI link efficiency                  0.94 (default of chip.ici.link_efficiency)"),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("MXU step overhead                    350 ns (default of chip.mxu.step_overhead)"),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("HBM efficiency                       0.9 (default of chip.hbm.efficiency)"),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("HBM read/write turnaround            0.07 (default of chip.hbm.turnaround)"),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("collective start-up                  500 ns"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("collective step synchronisation      10 ns"), std::string::npos) << o.out;
}

// ---- tpusim calibrate (issue 13) --------------------------------------------------------------------------

namespace {
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, {}));
      else cell += c;
    }
    cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}
}  // namespace

// Issue 13, done-when: every entry of C1-C3, predicted against measured, within the issue's bounds (written
// here, not read from the calibration file, so loosening a `within:` there cannot pass): C1 within 10% from
// S = 512 KiB up and within a factor 1.5 below; C2's matmul and copy within 10%; C3's matmul and reduce-scatter
// within 15%. The pod steps C4-C7 (issue 19) have issue 19's bounds (5 MFU points; C7's 32 / 1 slices ratio 3
// points), pinned here too; C5 and C6 must lie within them; C4 and C7 lie outside today (docs/calibration.md), so
// the run exits 1 and this test checks their rows' status against their numbers instead.
TEST_F(Cli, CalibrateRunsTheCalibrationSetAndEveryPointIsWithinTheIssuesBounds) {
  const Outcome o = tpusim("calibrate -o " + (dir_ / "cal").string());
  ASSERT_TRUE(o.exit_code == 0 || o.exit_code == 1) << o.out << o.err;
  const auto rows = csv_rows(slurp(dir_ / "cal" / "table.csv"));
  ASSERT_EQ(rows.size(), 34u);  // a header and 33 points
  ASSERT_EQ(rows[0][0], "id");
  std::map<std::string, int> per_id;
  int within = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), 10u);
    ++per_id[r[0]];
    const double measured = std::stod(r[3]);
    if (r[0] == "C1" || r[0] == "C2" || r[0] == "C3") {
      const double predicted = std::stod(r[4]);
      const double ratio = predicted / measured;
      EXPECT_NEAR(std::stod(r[5]), ratio - 1, 1e-4) << r[1];
      if (r[0] == "C1" && (r[1] == "S = 8 KiB" || r[1] == "S = 128 KiB")) {
        EXPECT_LE(ratio, 1.5) << r[1];
        EXPECT_GE(ratio, 1 / 1.5) << r[1];
      } else {
        EXPECT_LE(std::fabs(ratio - 1), r[0] == "C3" ? 0.15 : 0.10) << r[1];
      }
      EXPECT_EQ(r[7], "yes") << r[1];
      EXPECT_EQ(r[8], "ok") << r[1];
      ++within;
      continue;
    }
    // C4-C7: issue 19's bound on each fraction; the status follows the numbers.
    if (r[2] == "mfu") {
      EXPECT_EQ(r[6], "5 points") << r[0] << " " << r[1];
    }
    if (r[2] == "ratio") {
      EXPECT_EQ(r[6], "3 points") << r[1];
      EXPECT_EQ(r[1], "32 / 1 slices per-chip rate");
    }
    if (r[8] == "does not fit") {
      EXPECT_EQ(r[4], "") << r[1];
      continue;
    }
    ASSERT_NE(r[4], "") << r[0] << " " << r[1] << ": " << r[8];
    const double predicted = std::stod(r[4]);
    const double points = r[2] == "ratio" ? 0.03 : 0.05;  // issue 19: 3 points for the ratio, 5 for an MFU
    const bool inside = r[2] == "mfu" || r[2] == "ratio" ? std::fabs(predicted - measured) <= points
                                                         : std::fabs(predicted / measured - 1) <= 0.10;
    EXPECT_EQ(r[8], inside ? "ok" : "outside") << r[0] << " " << r[1];
    // C5 runs as published (the custom remat policy's host offload) and C6 with the collective matmul XLA's
    // default threshold turns on for its 2.5 GiB gathers (workload.collective_matmul: auto): both are held
    // within their bounds.
    if (r[0] == "C5" || r[0] == "C6") {
      EXPECT_TRUE(inside) << r[1] << ": measured " << measured << ", predicted " << predicted;
    }
    within += inside ? 1 : 0;
  }
  EXPECT_EQ(per_id, (std::map<std::string, int>{{"C1", 9}, {"C2", 2}, {"C3", 2}, {"C4", 2}, {"C5", 3}, {"C6", 2},
                                                {"C7", 13}}));
  EXPECT_NE(o.out.find("33 points in 22 runs"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(std::to_string(within) + " within bound"), std::string::npos) << o.out;
  EXPECT_EQ(o.exit_code, within == 33 ? 0 : 1);
  EXPECT_NE(slurp(dir_ / "cal" / "C1.svg").find("<polyline"), std::string::npos);
}

// The metrics and bounds of the pod entries on a small scenario, against its own runs: a one-block decoder
// training step on v5e 2x2 slices, one slice and two over the DCN. mfu is summary.json's metrics.mfu,
// flops_per_chip its model_flops / step time / chips, a ratio the quotient of two points' predictions; "5
// points" bounds |predicted - measured| <= 0.05; points of one run share it; a step that does not fit in HBM
// reports the memory plan's numbers, and a ratio of it does not fit either.
TEST_F(Cli, CalibrateReadsMfuAndFlopsPerChipAndDividesRatiosOfTwoPoints) {
  const fs::path s = write("small.yaml",
                           "name: cal-small\n"
                           "pod: {name: v5e-2x2-slices, chip: v5e, shape: [2, 2], wraparound: [0, 0], "
                           "host_shape: [2, 2], pods: 1}\n"
                           "workload:\n"
                           "  model: {kind: transformer, name: tiny, layers: 1, d_model: 256, heads: 2, d_ff: 512, "
                           "vocab: 1024, context: 128}\n"
                           "  batch: 4\n  seq_len: 128\n  step: train\n  mesh: {data: 1, fsdp: 4}\n");
  const std::string two = "--set pod.pods=2 --set workload.batch=8 --set workload.mesh.data=2";
  ASSERT_EQ(tpusim("run -q " + s.string() + " -o " + (dir_ / "one").string()).exit_code, 0);
  ASSERT_EQ(tpusim("run -q " + s.string() + " -o " + (dir_ / "two").string() + " " + two).exit_code, 0);
  const auto one = nlohmann::json::parse(slurp(dir_ / "one" / "summary.json"))["metrics"];
  const auto both = nlohmann::json::parse(slurp(dir_ / "two" / "summary.json"))["metrics"];
  const double mfu1 = one["mfu"].get<double>(), mfu2 = both["mfu"].get<double>();
  const double rate1 = one["model_flops"].get<double>() / one["step_time_s"].get<double>() / 4;
  ASSERT_EQ(both["chips"].get<int>(), 8);
  // Measured values around the predictions: 4 points above (within 5), 6 points above (outside), a rate 5%
  // above (within 10%), a ratio 2 points below (within 3).
  const auto num = [](const char* format, double v) {
    char b[64];
    std::snprintf(b, sizeof b, format, v);
    return std::string(b);
  };
  const fs::path cal = write(
      "cal.yaml",
      "name: small\nentries:\n  - id: S\n    scenario: " + s.string() + "\n    metric: mfu\n    points:\n" +
          "      - {label: one, measured: " + num("%.6f%%", 100 * mfu1 + 4) + ", within: 5 points}\n" +
          "      - {label: one rate, metric: flops_per_chip, measured: " + num("%.6g", rate1 * 1.05 / 1e9) +
          " GFLOP/s, within: 10%}\n" +
          "      - {label: two, set: {pod.pods: 2, workload.batch: 8, workload.mesh.data: 2}, measured: " +
          num("%.6f%%", 100 * mfu2 + 6) + ", within: 5 points}\n" +
          "      - {label: two / one, ratio: [two, one], measured: " + num("%.6f", mfu2 / mfu1 - 0.02) +
          ", within: 3 points}\n" +
          "      - {label: tiny hbm, set: {chip.hbm.capacity: 1 MiB}, measured: 50%, within: 5 points}\n" +
          "      - {label: tiny / one, ratio: [tiny hbm, one], measured: 1.0, within: 3 points}\n");
  const Outcome o = tpusim("calibrate " + cal.string() + " -o " + (dir_ / "out").string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("6 points in 3 runs"), std::string::npos) << o.out;  // one and one rate share a run
  EXPECT_NE(o.out.find("3 within bound, 1 outside, 2 do not fit, 0 failed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" -4.0 pt  5 points  ok"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" -6.0 pt  5 points  OUTSIDE"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" +2.0 pt  3 points  ok"), std::string::npos) << o.out;
  // The point's set: reaches its run as a --set, which the error names with the capacity.
  EXPECT_NE(o.out.find("DOES NOT FIT: 6.59 MiB per chip, chip v5e has 1 MiB (--set chip.hbm.capacity=1 MiB): "
                       "workspace 2.32 MiB, optimizer_state"),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("DOES NOT FIT: no ratio: 'tiny hbm' does not fit"), std::string::npos) << o.out;
  const auto rows = csv_rows(slurp(dir_ / "out" / "table.csv"));
  ASSERT_EQ(rows.size(), 7u);
  const std::vector<std::string> status{"ok", "ok", "outside", "ok", "does not fit", "does not fit"};
  const std::vector<double> predicted{mfu1, rate1, mfu2, mfu2 / mfu1};
  for (std::size_t i = 0; i < status.size(); ++i) {
    EXPECT_EQ(rows[i + 1][8], status[i]) << rows[i + 1][1];
    if (i < predicted.size()) {
      EXPECT_NEAR(std::stod(rows[i + 1][4]), predicted[i], 1e-5 * predicted[i]) << rows[i + 1][1];  // %.6g
    }
  }
  EXPECT_EQ(rows[2][2], "flops_per_chip");
  EXPECT_EQ(rows[4][2], "ratio");
  const auto plan = nlohmann::json::parse(slurp(dir_ / "out" / "calibration.json"))["points"];
  EXPECT_EQ(plan[0]["run"], plan[1]["run"]);
  EXPECT_NE(plan[0]["run"], plan[2]["run"]);
  EXPECT_EQ(plan[3]["ratio"], (nlohmann::json{"two", "one"}));
}

// The C1 plateau in closed form: a bidirectional ring all-gather of S = 1 GiB over 16 v5e chips takes 15 steps,
// each moving S / 32 per direction at 45 GB/s x ici.link_efficiency 0.94, plus one hop latency (1 us) and one
// step synchronisation (10 ns) per step and the start-up (0.5 us): t = 15/16 S / (2 x 42.3 GB/s) + 15.65 us.
TEST_F(Cli, CalibrateC1PlateauIsTheRingClosedFormAtTheAchievableLinkRate) {
  const Outcome o = tpusim("run -q " + std::string(TPUSIM_SOURCE_DIR) +
                           "/calibration/scenarios/c1-all-gather-v5e-8x16.yaml -o " + (dir_ / "c1").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "c1" / "summary.json"));
  const double s = 1024.0 * 1024 * 1024;
  const double t = 15.0 / 16 * s / (2 * 45e9 * 0.94) + 15 * (1e-6 + 10e-9) + 0.5e-6;
  EXPECT_NEAR(j["collectives"][0]["time_s"].get<double>(), t, 1e-4 * t);
  EXPECT_EQ(j["collectives"][0]["algorithm"], "ring_bidirectional");
}

// Each file holds the points given, on C2's matmul scenario, with metric step_time; nothing runs.
TEST_F(Cli, CalibrateRejectsABadCalibrationFileWithFileLineAndSuggestion) {
  const fs::path scenario = fs::path(TPUSIM_SOURCE_DIR) / "calibration/scenarios/c2-matmul-v6e.yaml";
  const auto refused = [&](const std::string& name, const std::string& points) {
    const fs::path f = write(name, "name: bad\nentries:\n  - id: X\n    scenario: " + scenario.string() +
                                       "\n    metric: " + points);
    const Outcome o = tpusim("calibrate " + f.string() + " -o " + (dir_ / "out").string());
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_NE(o.err.find("nothing was run"), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
    return std::make_pair(f.string(), o.err);
  };
  const auto [f, err] = refused("cal.yaml", "step_tme\n    points:\n"
                                            "      - {label: a, measured: 1 ms, within: 10}\n"
                                            "      - {label: b, measured: 1 GB/s, withn: 10%}\n");
  EXPECT_NE(err.find(f + ":5:13"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'step_time'?"), std::string::npos) << err;
  EXPECT_NE(err.find("entries[0].points[0].within"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'within'?"), std::string::npos) << err;
  // A points bound on a non-fraction, a ratio of a label the entry lacks, a fraction written as a duration.
  const auto [g, err2] = refused("cal2.yaml", "step_time\n    points:\n"
                                              "      - {label: matmul, measured: 1 ms, within: 5 points}\n"
                                              "      - {label: r, ratio: [matmull, matmul], measured: 1.0, within: 3 points}\n"
                                              "      - {label: m, metric: mfu, measured: 1 ms, within: 5 points}\n");
  EXPECT_NE(err2.find(g + ":7:"), std::string::npos) << err2;
  EXPECT_NE(err2.find("a bound in points applies to fractions"), std::string::npos) << err2;
  EXPECT_NE(err2.find("entries[0].points[1].ratio"), std::string::npos) << err2;
  EXPECT_NE(err2.find("did you mean 'matmul'?"), std::string::npos) << err2;
  EXPECT_NE(err2.find("a positive fraction such as 56.0% or 0.56 (metric mfu)"), std::string::npos) << err2;
}

// Issue 11: a folder or file tpusim wrote may be replaced by the next run; nothing else may (the refusals are
// in test/badinput/cases.yaml).
TEST_F(Cli, RunReplacesAFolderItWroteAndLeavesNoStagingBehind) {
  const fs::path s = write("s.yaml", kGood);
  const fs::path out = dir_ / "nested" / "o";
  ASSERT_EQ(tpusim("run -q " + s.string() + " -o " + out.string()).exit_code, 0);
  EXPECT_TRUE(fs::is_regular_file(out / ".tpusim-output"));
  EXPECT_TRUE(fs::is_regular_file(out / ".tpusim-manifest"));
  // A file the user put there is not in the manifest: the run is refused and the file kept.
  std::ofstream(out / "notes.txt") << "mine";
  const Outcome refused = tpusim("run -q " + s.string() + " -o " + out.string() + " --set workload.batch=16");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("holds 1 file tpusim did not write (or changed since):\n  notes.txt"),
            std::string::npos) << refused.err;
  EXPECT_EQ(slurp(out / "notes.txt"), "mine");
  fs::remove(out / "notes.txt");
  const Outcome again = tpusim("run -q " + s.string() + " -o " + out.string() + " --set workload.batch=16");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(out / "summary.json"))["scenario"]["workload"]["batch"], 16);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out.parent_path())) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"o"});  // no .o.partial-* or .o.old-* left
}

TEST_F(Cli, LowerAndTopoReplaceTheFilesTheyWrote) {
  const fs::path s = write("s.yaml", kGood);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(tpusim("lower " + s.string() + " -o " + (dir_ / "p.json").string()).exit_code, 0);
    const Outcome topo = tpusim("topo v4-2x2x1 --dot " + (dir_ / "t.dot").string() + " --svg " + (dir_ / "t.svg").string());
    EXPECT_EQ(topo.exit_code, 0) << topo.err;
  }
  EXPECT_NE(slurp(dir_ / "t.dot").find("written by tpusim"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "t.svg").find("<svg"), std::string::npos);
}

// topo --svg of a 4x4x4 cube: four 4x4 panels (one per z plane) of a fixed size, not a graph layout.
TEST_F(Cli, TopoDrawsACubeAsOnePanelPerZPlane) {
  const Outcome topo = tpusim("topo v4-4x4x4 --svg " + (dir_ / "c.svg").string());
  ASSERT_EQ(topo.exit_code, 0) << topo.err;
  const std::string svg = slurp(dir_ / "c.svg");
  EXPECT_EQ(occurrences(svg, "<rect class=\"chip\""), 64u);
  EXPECT_EQ(occurrences(svg, ">z = "), 4u);
  // 192 cables: 32 in-plane ones per plane drawn (wraparound ones as two stubs), the 64 along z named below.
  EXPECT_EQ(occurrences(svg, "class=\"cable\""), 4u * 24);
  EXPECT_EQ(occurrences(svg, "class=\"cable wraparound\""), 4u * 8);
  EXPECT_NE(svg.find(">64 more cables join each chip to the same (x, y) in the neighbouring z planes"), std::string::npos);
  const auto size = [&](const char* attribute) {
    const auto at = svg.find(std::string(attribute) + "=\"", svg.find("<svg "));
    return std::stod(svg.substr(at + std::string(attribute).size() + 2));
  };
  EXPECT_LE(size("width"), 1000.0);
  EXPECT_LE(size("height"), 1000.0);
}

TEST_F(Cli, ASweepResumesInAFolderItWroteButNotInAnotherOne) {
  write("s.yaml", kGood);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: [8]\n");
  ASSERT_EQ(tpusim("sweep " + sweep.string() + " -o " + (dir_ / "sw").string()).exit_code, 0);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "sw" / ".tpusim-output"));
  EXPECT_EQ(tpusim("sweep " + sweep.string() + " -o " + (dir_ / "sw").string()).exit_code, 0);
  fs::create_directories(dir_ / "mine");
  const Outcome o = tpusim("sweep " + sweep.string() + " -o " + (dir_ / "mine").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_TRUE(fs::is_empty(dir_ / "mine"));
}
