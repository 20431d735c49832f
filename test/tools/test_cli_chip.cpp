// The composed chip at the command line: `describe chip` shows its blocks and paths (text and SVG), and a
// chip whose composition is wrong is bad input (exit 2) named by file and line.
#include <algorithm>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace fs = std::filesystem;

namespace {

using tpusim::test::Outcome;
using tpusim::test::slurp;
using Cli = tpusim::test::CliTest;

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(Cli, DescribeChipShowsTheBlockTreeWithPathsAndEveryFieldWithItsSource) {
  const Outcome o = tpusim("describe chip v4");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("+-- tensorcore x2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("|   +-- mxu x4     128 x 128 systolic arrays, weight_stationary"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("results -> vpu"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("memory -> vmem, cmem, hbm, host"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("hbm.bandwidth              1.2 TB/s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("hardware.md [P]: HBM bandwidth / chip"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("default [assumption]"), std::string::npos) << o.out;
}

TEST_F(Cli, DescribeChipSvgDrawsOneBoxPerBlockAndOneArrowPerPath) {
  const fs::path svg = dir_ / "v4.svg";
  const Outcome o = tpusim("describe chip v4 --svg " + svg.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string drawing = slurp(svg);
  ASSERT_EQ(drawing.rfind("<svg", 0), 0u) << drawing.substr(0, 80);
  // v4: tensorcore (the frame), mxu, vpu, vmem, cmem, hbm, dma, ici, host, sparsecore; paths dma -> 4 memories,
  // mxu -> vpu, mxu -> hbm and vpu -> hbm (fused instructions' streams), sparsecore -> hbm.
  EXPECT_EQ(occurrences(drawing, R"(font-weight="bold")"), 10u);
  EXPECT_EQ(occurrences(drawing, "<line "), 8u);
  EXPECT_NE(drawing.find("<title>dma -&gt; hbm (memory)</title>"), std::string::npos);
  EXPECT_NE(drawing.find("<title>mxu -&gt; vpu (results)</title>"), std::string::npos);
}

TEST_F(Cli, DescribeSvgIsForChipsOnly) {
  const Outcome o = tpusim("describe pod v4-1x1x1 --svg " + (dir_ / "p.svg").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--svg draws a chip only"), std::string::npos) << o.err;
}

TEST_F(Cli, AChipFileWithAnUnknownBlockKindIsBadInputAtItsLine) {
  std::string chip = slurp(fs::path(TPUSIM_SOURCE_DIR) / "configs" / "chips" / "v5e.yaml");
  const auto at = chip.find("  kind: hbm");
  ASSERT_NE(at, std::string::npos);
  chip.replace(at, 11, "  kind: hmb");
  const auto line = 1 + std::count(chip.begin(), chip.begin() + static_cast<long>(at), '\n');
  const fs::path file = write("odd.yaml", chip);
  const Outcome o = tpusim("describe chip " + file.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(file.string() + ":" + std::to_string(line) + ":"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("hbm.kind"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'hbm'?"), std::string::npos) << o.err;
}

TEST_F(Cli, ADanglingPathInAScenarioOverrideIsBadInputAtTheScenarioLine) {
  const fs::path s = write("s.yaml", R"(name: t
pod: v5e-1x1
chip:
  paths: [dma -> vmem, dma -> hbm, dma -> host, mxu -> vpu,
          dma -> cmem]
workload:
  model: mlp-small
  batch: 8
  step: forward
)");
  const Outcome o = tpusim("validate " + s.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(s.string() + ":5:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("chip.paths[4]"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("dangling path: no block named 'cmem'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("nothing was simulated"), std::string::npos) << o.err;
}

TEST_F(Cli, AMovedKeyInASetOverrideSaysWhereItWent) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nworkload: {model: mlp-small, batch: 8, step: forward}\n");
  const Outcome o = tpusim("validate " + s.string() + " --set chip.tensorcores=1");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--set chip.tensorcores=1"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'tensorcore.count'?"), std::string::npos) << o.err;
}

TEST_F(Cli, ABlockFieldOverrideKeepsItsDottedPath) {
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nworkload: {model: mlp-small, batch: 8, step: forward}\n");
  const Outcome o = tpusim("describe scenario " + s.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("chip.hbm.bandwidth"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("chip.tensorcore.count"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("chip.paths"), std::string::npos) << o.out;
  const Outcome set = tpusim("validate " + s.string() + " --set chip.hbm.bandwidth=2TB/s --set chip.tensorcore.count=1"
                             " --set chip.peak_bf16=137.6TFLOP/s");
  EXPECT_EQ(set.exit_code, 0) << set.err;
}

}  // namespace

namespace {

double number_at(const nlohmann::json& j, const std::string& dotted) {
  const nlohmann::json* node = &j;
  std::size_t start = 0;
  while (true) {
    const auto dot = dotted.find('.', start);
    node = &node->at(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return node->get<double>();
    start = dot + 1;
  }
}

TEST_F(Cli, DlrmLookupsRunOnTheSparseCoresWhenTheChipHasThemAndTheStepIsShorter) {
  nlohmann::json with, without;
  for (const auto& [name, out] : {std::pair{"dlrm-v4", &with}, std::pair{"dlrm-v4-no-sparsecore", &without}}) {
    const fs::path dir = dir_ / name;
    const Outcome o = tpusim(std::string("run -q ") + name + " -o " + dir.string());
    ASSERT_EQ(o.exit_code, 0) << o.err;
    *out = nlohmann::json::parse(slurp(dir / "summary.json"));
  }
  // 26 tables: a gather each and, in a training step, a scatter each; none without SparseCores.
  EXPECT_EQ(number_at(with, "units.sparsecore.instructions"), 52);
  EXPECT_GT(number_at(with, "units.sparsecore.busy_s.mean"), 0);
  EXPECT_EQ(number_at(without, "units.sparsecore.instructions"), 0);
  // The same model FLOPs and HBM bytes (whole 256-byte rows either way); the TensorCore path runs more DMAs.
  EXPECT_EQ(number_at(with, "metrics.model_flops"), number_at(without, "metrics.model_flops"));
  EXPECT_EQ(number_at(with, "bytes.hbm_read"), number_at(without, "bytes.hbm_read"));
  EXPECT_GT(number_at(without, "units.dma.instructions"), number_at(with, "units.dma.instructions"));
  EXPECT_LT(number_at(with, "metrics.step_time_s"), number_at(without, "metrics.step_time_s"));
}

// v6e has two SparseCores of 16 subcores x 8 lanes (docs/hardware.md, jaxinfo): the DLRM step's lookups run on
// them there too (without them the TensorCores would gather, and the SparseCore row would count none).
TEST_F(Cli, V6eRunsDlrmLookupsOnItsTwoSparseCores) {
  const fs::path dir = dir_ / "dlrm-v6e";
  const Outcome o = tpusim("run -q dlrm-v4 --set pod=v6e-1x1 -o " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["scenario"]["chip"]["name"], "v6e");
  EXPECT_EQ(summary["scenario"]["chip"]["sparsecore"]["count"], 2);
  EXPECT_EQ(number_at(summary, "units.sparsecore.instructions"), 52);
  EXPECT_GT(number_at(summary, "units.sparsecore.busy_s.mean"), 0);
}

TEST_F(Cli, AWhatIfChipComposedInAScenarioRunsItsExtraBlock) {
  const fs::path dir = dir_ / "whatif";
  const Outcome o = tpusim("run -q whatif-v5e-sparsecore -o " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(number_at(summary, "units.sparsecore.instructions"), 52);  // v5e has none of its own
  EXPECT_EQ(summary["scenario"]["chip"]["sparsecore"]["count"], 4);
  EXPECT_EQ(summary["scenario"]["chip"]["paths"], "dma -> vmem, dma -> hbm, dma -> host, mxu -> vpu, sparsecore -> hbm");
}

}  // namespace

namespace {

// What-ifs of the chip's int8 rate and ICI ports, as a user reads them back.
TEST_F(Cli, TheEchoedInt8PeakFollowsAnInt8RateWhatIf) {
  // v4 runs int8 at the bf16 rate (275 TOP/s published); at int8_rate 2 the echo said 275 while int8 matmuls
  // ran at 2 x 275.251 TFLOP/s.
  const fs::path s = write("s.yaml", "name: t\npod: v4-1x1x1\nchip:\n  mxu:\n    int8_rate: 2\n"
                                     "workload: {model: mlp-small, batch: 8, step: forward, dtype: int8}\n");
  const Outcome d = tpusim("describe scenario " + s.string());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("chip.peak_int8                   550.502 TFLOP/s\n"), std::string::npos) << d.out;
  const auto j = summary(s.string(), "int8");
  EXPECT_EQ(j["scenario"]["chip"]["peak_int8"], "550.502 TFLOP/s");
  EXPECT_EQ(j["scenario"]["chip"]["mxu"]["int8_rate"], 2);
  const auto set = summary("gemm-v4 --set chip.mxu.int8_rate=2", "set");
  EXPECT_EQ(set["scenario"]["chip"]["peak_int8"], "550.502 TFLOP/s");
}

TEST_F(Cli, IciPortsASetAddsBeyondWhatTheTorusCablesAreNotedAsIdle) {
  // A v4 cube's 3-D torus cables 6 ports per chip; --set chip.ici.links=8 ran the same step with no word.
  const std::string small = "allreduce-v4-4x4x4 --set workload.model.bytes=1MiB";
  const fs::path dir = dir_ / "eight";
  const Outcome o = tpusim("run " + small + " --set chip.ici.links=8 -o " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string note = "idle ICI ports: chip v4 has 8 ICI ports (--set chip.ici.links=8), but a slice of shape "
                           "[4, 4, 4] cables at most 6 per chip (two per axis); the other 2 are idle and add no "
                           "bandwidth";
  EXPECT_NE(o.out.find("  note: " + note + "\n"), std::string::npos) << o.out;
  auto eight = nlohmann::json::parse(slurp(dir / "summary.json"));
  const auto six = summary(small, "six");  // the bundled ports: the same step and notes, without this one
  EXPECT_EQ(eight["metrics"]["step_time_s"], six["metrics"]["step_time_s"]);
  auto& notes = eight["notes"];
  const auto at = std::find(notes.begin(), notes.end(), nlohmann::json(note));
  ASSERT_NE(at, notes.end()) << notes.dump();
  notes.erase(at);
  EXPECT_EQ(notes, six["notes"]);
}

}  // namespace
