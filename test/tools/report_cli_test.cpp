// What a user reads after a run (issue 22): the header names the mesh and the sharding, the last line every
// file written; `tpusim compare` puts runs side by side; a mistyped subcommand or option gets a did-you-mean.
#include <algorithm>
#include <filesystem>
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
class ReportCli : public tpusim::test::CliTest {
 protected:
  // `tpusim run ARGS -o DIR/NAME`, expected to succeed: its stdout and its summary.json.
  std::pair<std::string, nlohmann::json> run(const std::string& args, const std::string& name) {
    const Outcome o = tpusim("run " + args + " -o " + (dir_ / name).string());
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return {o.out, nlohmann::json::parse(slurp(dir_ / name / "summary.json"))};
  }
};

}  // namespace

TEST_F(ReportCli, MistypedSubcommandGetsADidYouMean) {
  Outcome o = tpusim("rnu quickstart");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("tpusim: 'rnu' is not a subcommand; did you mean 'run'?"), std::string::npos) << o.err;
  o = tpusim("--log-level info comapre a b");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("tpusim: 'comapre' is not a subcommand; did you mean 'compare'?"), std::string::npos) << o.err;
  // Nothing close: the list.
  o = tpusim("frobnicate");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("tpusim: 'frobnicate' is not a subcommand; expected one of: run, validate, describe"),
            std::string::npos)
      << o.err;
}

TEST_F(ReportCli, MistypedOptionGetsTheClosestOptionOfItsSubcommand) {
  Outcome o = tpusim("run quickstart --prf");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("tpusim: '--prf' is not an option of tpusim run; did you mean '--perf'?"), std::string::npos)
      << o.err;
  o = tpusim("sweep roofline --retry-faild");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("'--retry-faild' is not an option of tpusim sweep; did you mean '--retry-failed'?"),
            std::string::npos)
      << o.err;
  // tpusim's own options, before the subcommand; a value given with '=' is not part of the name.
  o = tpusim("--log-levle=info run quickstart");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("'--log-levle' is not an option of tpusim; did you mean '--log-level'?"), std::string::npos)
      << o.err;
  EXPECT_EQ(o.out, "");  // nothing ran
}

// The last line of `tpusim run`: "  wrote DIR: a, b, c".
std::vector<std::string> files_written(const std::string& out, const fs::path& dir) {
  const std::string head = "\n  wrote " + dir.string() + ": ";
  const auto at = out.find(head);
  if (at == std::string::npos) return {};
  std::vector<std::string> files;
  std::stringstream list(out.substr(at + head.size(), out.find('\n', at + head.size()) - at - head.size()));
  for (std::string name; std::getline(list, name, ',');) files.push_back(name.substr(name[0] == ' ' ? 1 : 0));
  return files;
}

TEST_F(ReportCli, RunHeaderNamesTheMeshAsPlacedAndTheShardingInForce) {
  const Outcome two_by_two = tpusim("run gpt3-1.3b-fsdp-tensor-v4-2x2x1 -o " + (dir_ / "a").string());
  ASSERT_EQ(two_by_two.exit_code, 0) << two_by_two.err;
  // Tensor, the heavier axis, takes the contiguous chips of x, fsdp those of y (kernels/mesh.h); the default
  // rules split the batch and the weights (embed) over fsdp, heads, MLP and vocabulary over tensor.
  EXPECT_NE(two_by_two.out.find("\n  mesh                  fsdp 2 on y, tensor 2 on x\n"), std::string::npos)
      << two_by_two.out;
  EXPECT_NE(two_by_two.out.find("\n  sharding              batch, embed over fsdp; heads, kv_heads, mlp, vocab over "
                                "tensor\n"),
            std::string::npos)
      << two_by_two.out;
  const Outcome data = tpusim("run gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set 'workload.mesh={data: 4}' -o " +
                              (dir_ / "b").string());
  ASSERT_EQ(data.exit_code, 0) << data.err;
  EXPECT_NE(data.out.find("\n  mesh                  data 4 on x y\n  sharding              batch over data\n"),
            std::string::npos)
      << data.out;
  // One chip has no mesh to show.
  const Outcome one = tpusim("run llama2-7b-decode-v5e -o " + (dir_ / "c").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.find("  mesh "), std::string::npos) << one.out;
}

// The top-ops table: instructions grouped by label without the layer index, timed as the op classes are (so
// the ops add up to the same time), with their FLOPs counted exactly.
TEST_F(ReportCli, TopOpsGroupTheLayersAndAddUpToTheOpClassesTime) {
  const auto [out, j] = run("gpt3-1.3b-train-v4", "g");
  const auto& top = j["top_ops"];
  ASSERT_FALSE(top.empty());
  for (std::size_t i = 1; i < top.size(); ++i) {
    EXPECT_GE(top[i - 1]["time_s"].get<double>(), top[i]["time_s"].get<double>()) << i;
  }
  // ops.csv has every op; their times add up to the op classes' (both split each interval the same way).
  const std::string csv = slurp(dir_ / "g" / "ops.csv");
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.substr(0, 26), "op,unit,instructions,time_");
  double ops_time = 0;
  std::size_t rows = 0;
  bool qkv = false;
  while (std::getline(lines, line)) {
    ++rows;
    std::vector<std::string> cells;
    std::stringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 12u) << line;
    ops_time += std::stod(cells[3]);
    if (cells[0] == "layer*.fwd.qkv") {
      qkv = true;
      // 24 layers, each split over v4's 2 TensorCores; per layer 2 x tokens x d x 3d FLOPs: 8 sequences of
      // 2048 tokens (the scenario), d = 2048.
      EXPECT_EQ(cells[1], "mxu");
      EXPECT_EQ(std::stod(cells[2]), 48.0);
      EXPECT_DOUBLE_EQ(std::stod(cells[6]), 24.0 * 2 * (8.0 * 2048) * 2048 * (3 * 2048));
    }
  }
  EXPECT_TRUE(qkv) << csv;
  EXPECT_GT(rows, top.size() - 1);
  double classes_time = 0;
  for (const auto& [k, v] : j["op_classes"].items()) {
    if (v.is_object()) classes_time += v["time_s"].get<double>();
  }
  EXPECT_NEAR(ops_time, classes_time, 1e-6 * classes_time);
  EXPECT_NE(out.find("top ops by time"), std::string::npos) << out;
}

TEST_F(ReportCli, RunListsEveryFileItWroteAndNoOther) {
  const fs::path out = dir_ / "r";
  const Outcome o = tpusim("run gpt3-1.3b-fsdp-tensor-v4-2x2x1 --trace --trace-chips 0-1 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<std::string> listed = files_written(o.out, out);
  EXPECT_EQ(listed, (std::vector<std::string>{"summary.json", "chips.csv", "ops.csv", "links.csv", "links.svg",
                                              "trace.json", "timeline.svg"}))
      << o.out;
  std::vector<std::string> present;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name != ".tpusim-output" && name != ".tpusim-manifest") present.push_back(name);
  }
  std::sort(present.begin(), present.end());
  std::vector<std::string> sorted = listed;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(present, sorted);
}

TEST_F(ReportCli, JobRunListsItsTraceFilesToo) {
  // A job with a lasting link fault writes the job trace and the fault step's heatmap and trace as well.
  const fs::path out = dir_ / "j";
  const Outcome o = tpusim("run link-failure-v4-4x4x4 --trace --trace-chips 0 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::vector<std::string> listed = files_written(o.out, out), present;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name != ".tpusim-output" && name != ".tpusim-manifest") present.push_back(name);
  }
  EXPECT_NE(std::find(listed.begin(), listed.end(), "job-trace.json"), listed.end()) << o.out;
  std::sort(listed.begin(), listed.end());
  std::sort(present.begin(), present.end());
  EXPECT_EQ(present, listed) << o.out;
}

namespace {

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

const nlohmann::json& row(const nlohmann::json& compare, const std::string& metric) {
  for (const auto& r : compare["rows"]) {
    if (r["metric"] == metric) return r;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no row " << metric;
  return none;
}

// compare.csv's cells of the row `metric`.
std::vector<std::string> csv_row(const std::string& csv, const std::string& metric) {
  std::stringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric + ",", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    return cells;
  }
  ADD_FAILURE() << "no CSV row " << metric;
  return {};
}

}  // namespace

TEST_F(ReportCli, CompareSetsOverlapOffAgainstOnWithTheRunsOwnNumbers) {
  const fs::path on = dir_ / "on", off = dir_ / "off", out = dir_ / "cmp";
  const auto a = summary("gpt3-1.3b-fsdp-tensor-v4-2x2x1", "on");
  const auto b = summary("gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.overlap=off", "off");
  // A folder and a summary.json file alike.
  const Outcome o = tpusim("compare " + on.string() + " " + (off / "summary.json").string() + " -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto c = read_json(out / "compare.json");
  EXPECT_EQ(c["format"], "tpusim-compare");
  EXPECT_EQ(c["runs"][0]["path"], on.string());
  EXPECT_EQ(c["scenario_differences"], (nlohmann::json{{"workload.overlap", {"on", "off"}}}));

  const std::string csv = slurp(out / "compare.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "metric,unit,run1,run2,run2_delta,run2_delta_pct");
  for (const auto& [metric, path] : std::vector<std::pair<std::string, nlohmann::json::json_pointer>>{
           {"metrics.step_time_s", nlohmann::json::json_pointer("/metrics/step_time_s")},
           {"metrics.mfu", nlohmann::json::json_pointer("/metrics/mfu")},
           {"breakdown.communication_s", nlohmann::json::json_pointer("/breakdown/communication_s")},
           {"memory.total_bytes", nlohmann::json::json_pointer("/memory/total_bytes")},
           {"exposed_communication.all_reduce_s", nlohmann::json::json_pointer("/exposed_communication/all_reduce_s")},
           {"links.utilization.mean", nlohmann::json::json_pointer("/links/utilization/mean")}}) {
    const double x = a.at(path).get<double>(), y = b.at(path).get<double>();
    const auto& r = row(c, metric);
    EXPECT_EQ(r["values"][0].get<double>(), x) << metric;
    EXPECT_EQ(r["values"][1].get<double>(), y) << metric;
    EXPECT_EQ(r["delta"][1].get<double>(), y - x) << metric;
    if (x != 0) {
      EXPECT_DOUBLE_EQ(r["delta_pct"][1].get<double>(), 100 * (y - x) / x) << metric;
    }
    const auto cells = csv_row(csv, metric);
    ASSERT_EQ(cells.size(), 6u) << metric;
    EXPECT_EQ(std::stod(cells[2]), x) << metric;  // the shortest text that reads back to the same double
    EXPECT_EQ(std::stod(cells[3]), y) << metric;
    EXPECT_EQ(std::stod(cells[4]), y - x) << metric;
  }
  // Serialising the collectives costs time: the step is longer, the same work is done.
  EXPECT_GT(row(c, "metrics.step_time_s")["delta"][1].get<double>(), 0);
  EXPECT_EQ(row(c, "metrics.model_flops")["delta"][1].get<double>(), 0);
  EXPECT_EQ(row(c, "metrics.step_time_s")["unit"], "s");
  EXPECT_EQ(row(c, "memory.total_bytes")["unit"], "B");

  // Collectives per kind: the count and the summed time of every instance in summary.json.
  for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter"}) {
    for (std::size_t run = 0; run < 2; ++run) {
      double count = 0, time = 0;
      for (const auto& coll : (run == 0 ? a : b)["collectives"]) {
        if (coll["op"] != kind) continue;
        count += 1;
        time += coll["time_s"].get<double>();
      }
      EXPECT_GT(count, 0) << kind;
      EXPECT_EQ(row(c, std::string("collectives.") + kind + ".count")["values"][run].get<double>(), count) << kind;
      EXPECT_EQ(row(c, std::string("collectives.") + kind + ".time_s")["values"][run].get<double>(), time) << kind;
    }
  }

  // The table: the differing field, then the step time with its readable values and deltas.
  EXPECT_NE(o.out.find("    workload.overlap"), std::string::npos) << o.out;
  const double x = a["metrics"]["step_time_s"], y = b["metrics"]["step_time_s"];
  char pct[32];
  std::snprintf(pct, sizeof pct, "%+.3g%%", 100 * (y - x) / x);
  const auto line_at = o.out.find("    step_time_s ");
  ASSERT_NE(line_at, std::string::npos) << o.out;
  const std::string line = o.out.substr(line_at, o.out.find('\n', line_at) - line_at);
  EXPECT_NE(line.find(pct), std::string::npos) << line;
  EXPECT_NE(line.find(" ms"), std::string::npos) << line;
  EXPECT_NE(o.out.find("wrote " + out.string() + ": compare.csv, compare.json"), std::string::npos) << o.out;
}

TEST_F(ReportCli, CompareOfHandWrittenSummariesPrintsExactDeltas) {
  const auto make = [&](const std::string& name, double step, double mfu, const std::string& batch) {
    fs::create_directories(dir_ / name);
    write(name + "/summary.json", nlohmann::json{{"format", "tpusim-summary"},
                                                 {"schema_version", 2},
                                                 {"seed", 1},
                                                 {"scenario", {{"name", "s"}, {"workload", {{"batch", batch}}}}},
                                                 {"metrics", {{"step_time_s", step}, {"mfu", mfu}}}}
                                      .dump());
  };
  make("x", 0.002, 0.5, "8");
  make("y", 0.003, 0.25, "16");
  make("z", 0.001, 0.5, "8");
  const Outcome o = tpusim("compare " + (dir_ / "x").string() + " " + (dir_ / "y").string() + " " +
                           (dir_ / "z").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("tpusim compare: 3 runs, differences against run 1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n    workload.batch                 8     16      8\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n    mfu            50%    25%  -25 pp  -50%    50%  +0 pp   +0%\n"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("\n    step_time_s   2 ms   3 ms   +1 ms  +50%   1 ms  -1 ms  -50%\n"), std::string::npos)
      << o.out;
}

TEST_F(ReportCli, CompareHasHelpNamingItsArguments) {
  const Outcome o = tpusim("compare --help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("Usage: tpusim compare [OPTIONS] runs..."), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("compare.csv and compare.json"), std::string::npos) << o.out;
}

TEST_F(ReportCli, CompareRefusesWhatIsNotARunOfThisFormatNamingThePath) {
  const fs::path good = dir_ / "good";
  fs::create_directories(good);
  write("good/summary.json", R"({"format": "tpusim-summary", "schema_version": 2, "metrics": {"step_time_s": 1}})");
  // Exit 2, and the error starts with the refused path.
  const auto refused = [&](const fs::path& run, const std::string& why) {
    const Outcome o = tpusim("compare " + good.string() + " " + run.string());
    EXPECT_EQ(o.exit_code, 2) << run;
    EXPECT_NE(o.err.find("tpusim compare: " + run.string() + why), std::string::npos) << o.err;
    EXPECT_EQ(o.out, "");
  };
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  refused(empty, ": no summary.json in this folder");
  refused(write("other.json", R"({"format": "chrome-trace", "schema_version": 2})"),
          ": key 'format': not a tpusim summary: expected \"tpusim-summary\", found \"chrome-trace\"");
  refused(write("old.json", R"({"format": "tpusim-summary", "schema_version": 1})"),
          ": key 'schema_version': a summary of another format version: expected 2, found 1");
  refused(write("broken.json", "{\n  \"format\": tpusim\n}\n"), ":2:");  // line 2 of the file
  refused(dir_ / "missing", ": no such file or folder");

  Outcome o = tpusim("compare " + good.string() + " " + (dir_ / "broken.json").string());
  EXPECT_NE(o.err.find("expected JSON"), std::string::npos) << o.err;
  o = tpusim("compare " + good.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("expected two or more runs"), std::string::npos) << o.err;
}

TEST_F(ReportCli, CompareWritesOnlyWhereTpusimMayAndNeverOverARunItReads) {
  for (const char* name : {"a", "b"}) {
    fs::create_directories(dir_ / name);
    write(std::string(name) + "/summary.json",
          R"({"format": "tpusim-summary", "schema_version": 2, "metrics": {"step_time_s": 1}})");
  }
  const std::string runs = (dir_ / "a").string() + " " + (dir_ / "b").string();
  // A user's folder (no .tpusim-output marker) is not replaced.
  fs::create_directories(dir_ / "mine");
  write("mine/notes.txt", "keep");
  Outcome o = tpusim("compare " + runs + " -o " + (dir_ / "mine").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(slurp(dir_ / "mine" / "notes.txt"), "keep");
  EXPECT_FALSE(fs::exists(dir_ / "mine" / "compare.csv"));
  EXPECT_EQ(o.out, "");  // refused before the table

  // A run's own folder (tpusim's, with its marker) would lose its summary.json: refused too, as a folder of
  // another kind.
  const Outcome run = tpusim("run quickstart -q -o " + (dir_ / "run").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  o = tpusim("compare " + (dir_ / "run").string() + " " + (dir_ / "a").string() + " -o " + (dir_ / "run").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("holds a run's output (tpusim run), not a comparison"), std::string::npos) << o.err;
  EXPECT_TRUE(fs::exists(dir_ / "run" / "summary.json"));
}

namespace {

// The value of a "  label   value" line of the run table.
std::string table_value(const std::string& out, const std::string& label) {
  const auto at = out.find("\n  " + label + " ");
  if (at == std::string::npos) return "";
  const auto start = out.find_first_not_of(' ', at + 3 + label.size());
  return out.substr(start, out.find('\n', start) - start);
}

// "12.73 k" -> 12730: a count as the table prints it.
double count_value(const std::string& text) {
  std::size_t used = 0;
  double v = std::stod(text, &used);
  const std::string prefix = text.substr(std::min(text.size(), used + 1));
  if (prefix == "k") v *= 1e3;
  if (prefix == "M") v *= 1e6;
  return v;
}

}  // namespace

TEST_F(ReportCli, PrefillReportsTokensPerSecondAndTimeToFirstToken) {
  const auto [out, j] = run("llama2-7b-prefill-v5e", "p");
  const double step = j["metrics"]["step_time_s"];
  // 4 prompts of 1024 tokens, all in one step whose end is the first token.
  EXPECT_DOUBLE_EQ(j["metrics"]["tokens_per_s"].get<double>(), 4.0 * 1024 / step);
  EXPECT_DOUBLE_EQ(j["metrics"]["examples_per_s"].get<double>(), 4.0 / step);
  EXPECT_EQ(j["metrics"]["time_to_first_token_s"].get<double>(), step);
  EXPECT_FALSE(j["metrics"].contains("time_per_output_token_s"));
  EXPECT_EQ(table_value(out, "time to first token"), table_value(out, "step time")) << out;
  EXPECT_NEAR(count_value(table_value(out, "tokens/s")) / (4.0 * 1024 / step), 1.0, 5e-4) << out;
  EXPECT_NEAR(count_value(table_value(out, "prompts/s")) / (4.0 / step), 1.0, 5e-4) << out;
  EXPECT_EQ(table_value(out, "time per output token"), "") << out;
}

TEST_F(ReportCli, DecodeReportsTokensPerSecondAndTimePerOutputTokenNotExamples) {
  const auto [out, j] = run("llama2-7b-decode-v5e", "d");
  const double step = j["metrics"]["step_time_s"];
  // 4 sequences, one new token each per step.
  EXPECT_DOUBLE_EQ(j["metrics"]["tokens_per_s"].get<double>(), 4.0 / step);
  EXPECT_EQ(j["metrics"]["time_per_output_token_s"].get<double>(), step);
  EXPECT_FALSE(j["metrics"].contains("time_to_first_token_s"));
  EXPECT_EQ(table_value(out, "time per output token"), table_value(out, "step time")) << out;
  EXPECT_NEAR(count_value(table_value(out, "tokens/s")) / (4.0 / step), 1.0, 5e-4) << out;
  // The examples of a decode step are its tokens: one line, tokens/s, says it.
  EXPECT_EQ(out.find("examples/s"), std::string::npos) << out;
}

TEST_F(ReportCli, ValidateStatesTheMemoryEstimateToFourDigitsEvenBelowAMebibyte) {
  // One chip's step of a 1.3B model simulates in well under 1 MiB; rounded down to whole MiB it read "about 0 B".
  const Outcome o = tpusim("validate gpt3-1.3b-train-v4");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("on v4-1x1x1, 1 chip, 1 program of "), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("about 0 B"), std::string::npos) << o.out;
  const auto at = o.out.find("; about ");
  ASSERT_NE(at, std::string::npos) << o.out;
  EXPECT_GT(std::stod(o.out.substr(at + 8)), 0.0) << o.out;
}

TEST_F(ReportCli, HbmInUseOnOneChipPeaksAtThePlansTotalWithNothingOverlapping) {
  // One chip, no collectives: every op runs on the TensorCores' chains in program order, so the HBM held as the
  // step ran peaks at exactly what the plan's program-order sweep counts (2 bytes: each category and the peak
  // are rounded to whole bytes apart). Every one of the 100 slices holds at least the persistent bytes (weights,
  // gradients, optimizer state), the highest slice is the peak, and the slices cover the step.
  const auto [out, j] = run("gpt3-1.3b-train-v4 --set workload.model.layers=2", "in-use");
  const auto& memory = j["memory"];
  const auto& in_use = memory["in_use"];
  const auto& cats = memory["categories"];
  const double persistent = cats["weights"].get<double>() + cats["gradients"].get<double>() +
                            cats["optimizer_state"].get<double>();
  EXPECT_EQ(in_use["chip"], 0);
  EXPECT_NEAR(in_use["peak_bytes"].get<double>(), memory["total_bytes"].get<double>(), 2.0);
  const auto slices = in_use["slice_peak_bytes"].get<std::vector<double>>();
  ASSERT_EQ(slices.size(), 100u);
  EXPECT_EQ(*std::max_element(slices.begin(), slices.end()), in_use["peak_bytes"].get<double>());
  for (double b : slices) EXPECT_GE(b, persistent - 2.0);
  EXPECT_NEAR(in_use["slice_s"].get<double>() * 100, j["metrics"]["step_time_s"].get<double>(), 1e-12);
  const double at = in_use["peak_at_s"];
  EXPECT_GT(at, 0);
  EXPECT_LT(at, j["metrics"]["step_time_s"].get<double>());
  EXPECT_NE(table_value(out, "HBM in use").find("on chip 0"), std::string::npos) << out;
}

// summary.json's first note that starts with `prefix`, or "" when none does.
std::string note_starting(const nlohmann::json& summary, const std::string& prefix) {
  for (const std::string& n : summary["notes"].get<std::vector<std::string>>()) {
    if (n.rfind(prefix, 0) == 0) return n;
  }
  return "";
}

TEST_F(ReportCli, AScheduleHoldingMoreHbmThanTheChipHasIsSaidAlthoughThePlanFits) {
  // C4's step (MaxText 52B, FSDP 192 on v4) cut to 2 layers: the plan is 13.24 GiB per chip, and as the step runs
  // chip 0 holds 16.7 GiB 822 ms in, in the backward pass, while collectives hold buffers past their place in
  // program order. With 15 GiB of HBM the plan fits and the step runs, and the report says the schedule does not.
  const auto [out, j] = run(std::string(TPUSIM_SOURCE_DIR) +
                                "/calibration/scenarios/c4-maxtext-52b-v4-384.yaml --set workload.model.layers=2 "
                                "--set chip.hbm.capacity=15GiB",
                            "over");
  const double capacity = j["memory"]["capacity_bytes"], total = j["memory"]["total_bytes"];
  const double peak = j["memory"]["in_use"]["peak_bytes"];
  ASSERT_LT(total, capacity);
  ASSERT_GT(peak, capacity);
  const std::string note = note_starting(j, "HBM over capacity as scheduled");
  EXPECT_NE(note.find("chip 0 holds 16.7 GiB"), std::string::npos) << note;
  EXPECT_NE(out.find("note: HBM over capacity as scheduled"), std::string::npos) << out;
}

TEST_F(ReportCli, AStepWhoseRunAheadGathersWouldNotFitHoldsThemBackAndSaysSo) {
  // The 2-layer FSDP x tensor step holds 1.778 GiB per chip with each layer's weight all-gathers run during the
  // layer before (trace_cli_test.cpp), which the plan counts from where they may start. With 1850 MB (1.723 GiB)
  // of HBM that does not fit, and the step runs with the gathers held back: each waits for the op before its
  // first reader, the plan is the program-order 1.682 GiB, and the run holds no more than that. Before, the plan
  // counted each gather from itself (1.682 GiB), the step ran with them run ahead and held 1.778 GiB, above the
  // chip's HBM, with a note.
  const std::string scenario = "gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.model.layers=2";
  const auto [out, j] = run(scenario + " --set chip.hbm.capacity=1850MB", "held");
  const double capacity = j["memory"]["capacity_bytes"], total = j["memory"]["total_bytes"];
  const double peak = j["memory"]["in_use"]["peak_bytes"];
  EXPECT_EQ(total, 1806041088.0);  // 1.682 GiB
  EXPECT_LE(peak, total);
  EXPECT_LT(peak, capacity);
  EXPECT_NE(note_starting(j, "FSDP all-gathers held back"), "") << j["notes"].dump();
  EXPECT_NE(out.find("note: FSDP all-gathers held back"), std::string::npos) << out;
  // With the default 32 GiB the gathers run ahead: the plan is what the run holds, and the step is faster.
  const auto [out2, j2] = run(scenario, "fits");
  EXPECT_EQ(out2.find("held back"), std::string::npos) << out2;
  EXPECT_EQ(j2["memory"]["total_bytes"].get<double>(), 1908969472.0);  // 1.778 GiB
  EXPECT_EQ(j2["memory"]["in_use"]["peak_bytes"].get<double>(), j2["memory"]["total_bytes"].get<double>());
  EXPECT_LT(j2["metrics"]["step_time_s"].get<double>(), j["metrics"]["step_time_s"].get<double>());
}

// A DMA between HBM and a slower memory is timed by that memory and counted by HBM too (models/src/dma/dma.cpp).
// On a v4 whose HBM is made faster than VMEM (10 TB/s against 8602 GB/s per TensorCore), each TensorCore's VMEM
// times its load of 8.602 MB (1 us; within its 16 MiB): HBM reads both, 17.204 MB in the 1 us step, 17.2 TB/s of
// its 10 TB/s.
// The faster end is assumed to keep up, so the step time is optimistic, and the run says so.
TEST_F(ReportCli, HbmCountsLoadsVmemTimesAndNotesWhenTheyExceedItsRate) {
  write("p.json", R"({"format":"tpusim-program","version":2,"role_of_chip":[],"programs":[{"name":"p",
"instructions":[
{"op":"dma","label":"load0","src":"hbm","dst":"vmem","pattern":"contiguous","bytes":8602000,"deps":[]},
{"op":"dma","label":"load1","core":1,"src":"hbm","dst":"vmem","pattern":"contiguous","bytes":8602000,"deps":[]}
]}]})");
  const fs::path s = write("fast-hbm.yaml", "name: fast-hbm\npod: v4-1x1x1\nworkload:\n  program: p.json\n");
  const auto [out, j] = run(s.string() + " --set chip.hbm.bandwidth=10TB/s", "fast-hbm");
  EXPECT_EQ(j["bytes"]["hbm_read"], 17'204'000) << out;
  EXPECT_EQ(j["bytes"]["hbm_written"], 0);
  EXPECT_NEAR(j["metrics"]["step_time_s"].get<double>(), 1e-6, 1e-12);
  EXPECT_NEAR(j["units"]["hbm"]["utilization"]["max"].get<double>(), 1.7204, 1e-9);
  ASSERT_EQ(j["notes"].size(), 2u) << j["notes"];
  EXPECT_EQ(j["notes"][0], "memory-bound: compute waited on HBM transfers 100% of the step");
  EXPECT_NE(j["notes"][1].get<std::string>().find("HBM over its rate: a chip moved 172% of HBM's peak in the step, "
                                                  "above the 90% it can serve"),
            std::string::npos)
      << j["notes"];
}

// An mlp is not sharded: on 4 chips each runs its own step on the batch (4 x the examples of one chip), and a
// training step synchronises no gradients. The run says so; on one chip, or for a transformer, it does not.
TEST_F(ReportCli, AnUnshardedModelOnSeveralChipsSaysEachChipRunsItsOwnStep) {
  const fs::path s =
      write("m.yaml", "name: m\npod: v5e-2x2\nworkload: {model: mlp-quickstart, batch: 2048, step: train}\n");
  const auto [out, j] = run(s.string(), "m");
  const double step = j["metrics"]["step_time_s"].get<double>();
  EXPECT_NEAR(j["metrics"]["examples_per_s"].get<double>() * step, 4 * 2048, 1e-6) << j["metrics"];
  const auto notes = j["notes"].get<std::vector<std::string>>();
  const std::string expect =
      "not sharded: each of the 4 chips runs its own one-chip mlp step on workload.batch (2048) examples, so the pod "
      "does 4 times one chip's work; no gradient all-reduce is modelled";
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(),
                          [&](const std::string& n) { return n.rfind(expect, 0) == 0; }),
            1)
      << j["notes"];
  EXPECT_NE(out.find("note: not sharded"), std::string::npos) << out;
  for (const std::string& other : {std::string("pod: v5e-1x1\nworkload: {model: mlp-quickstart, batch: 2048}"),
                                   std::string("pod: v5e-2x2\nworkload: {model: gpt3-1.3b, batch: 4, seq_len: 128, "
                                               "mesh: {fsdp: 4}}")})
  {
    const fs::path o = write("o.yaml", "name: o\n" + other + "\n");
    const auto [o_out, o_j] = run(o.string(), "o");
    EXPECT_EQ(o_j["notes"].dump().find("not sharded"), std::string::npos) << other << o_j["notes"];
  }
}

// ops.csv's hbm_bytes counts every HBM byte an op moved on the chip, not only fused streams: a plain DMA load
// from HBM its payload, a store into HBM its payload, an HBM -> HBM copy its payload twice (read and written), a
// VMEM -> VMEM copy none. Each op's bytes here are one instruction's (v4-1x1x1, one chip).
TEST_F(ReportCli, OpsCsvHbmBytesCountADmasHbmEnds) {
  write("dma.json", R"({"format":"tpusim-program","version":2,"role_of_chip":[],"programs":[{"name":"p",
"instructions":[
{"op":"dma","label":"load","src":"hbm","dst":"vmem","pattern":"contiguous","bytes":1048576,"vmem_alloc":1048576,
 "deps":[]},
{"op":"dma","label":"spill","src":"vmem","dst":"vmem","pattern":"contiguous","bytes":8192,"deps":[0]},
{"op":"dma","label":"store","src":"vmem","dst":"hbm","pattern":"contiguous","bytes":4096,"vmem_free":1048576,
 "deps":[1]},
{"op":"dma","label":"copy","src":"hbm","dst":"hbm","pattern":"contiguous","bytes":2048,"deps":[2]}
]}]})");
  const fs::path s = write("dma.yaml", "name: dma\npod: v4-1x1x1\nworkload:\n  program: dma.json\n");
  const auto [out, j] = run(s.string(), "dma");
  EXPECT_EQ(j["bytes"]["hbm_read"], 1048576 + 2048) << out;
  EXPECT_EQ(j["bytes"]["hbm_written"], 4096 + 2048);
  std::istringstream lines(slurp(dir_ / "dma" / "ops.csv"));
  std::string line;
  std::getline(lines, line);
  ASSERT_EQ(line, "op,unit,instructions,time_s,share,active_s,flops,hbm_bytes,moved_bytes,flops_per_s,"
                  "hbm_bytes_per_s,bound_by");
  std::vector<std::pair<std::string, double>> hbm;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::stringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 12u) << line;
    hbm.emplace_back(cells[0], std::stod(cells[7]));
    const double rate = std::stod(cells[7]) / std::stod(cells[5]);  // over its active time
    EXPECT_NEAR(std::stod(cells[10]), rate, 1e-8 * rate) << line;
  }
  std::sort(hbm.begin(), hbm.end());
  const std::vector<std::pair<std::string, double>> expected{
      {"copy", 4096.0}, {"load", 1048576.0}, {"spill", 0.0}, {"store", 4096.0}};
  EXPECT_EQ(hbm, expected);
  // summary.json's top_ops carry the same numbers.
  for (const auto& op : j["top_ops"]) {
    if (op["op"] == "load") EXPECT_EQ(op["hbm_bytes"].get<double>(), 1048576.0);
  }
}

// A remote put written in a program file (a dma to `remote` with its peer): every chip of a v4 cube (a torus)
// puts 1 MiB into its +1 neighbour along axis 0. Each read leaves its chip's HBM, each write lands in the
// neighbour's; the step is point to point, not collective.
TEST_F(ReportCli, ARemotePutFromAProgramFileRunsAndCountsBothHbmEnds) {
  write("put.json", R"({"format":"tpusim-program","version":2,"role_of_chip":[],"programs":[{"name":"p",
"instructions":[
{"op":"dma","label":"put","src":"hbm","dst":"remote","pattern":"contiguous","bytes":1048576,"peer":1,"deps":[]}
]}]})");
  const fs::path s = write("put.yaml", "name: put\npod: v4-4x4x4\nworkload:\n  program: put.json\n");
  const auto [out, j] = run(s.string(), "put");
  EXPECT_EQ(j["bytes"]["hbm_read"], 64 * 1048576) << out;
  EXPECT_EQ(j["bytes"]["hbm_written"], 64 * 1048576);
  EXPECT_NE(out.find("point-to-point-bound"), std::string::npos) << out;
  EXPECT_EQ(out.find("communication-bound"), std::string::npos) << out;
}

// A collective workload's one instruction is communication in op_classes, as exposed_communication and the
// breakdown count it: a 4 MiB all-reduce on a v4 2x2x1 was 100% "other", its exposed all_reduce_s beside an
// op_classes.communication that did not exist.
TEST_F(ReportCli, ACollectiveWorkloadsTimeIsCommunicationInTheOpClasses) {
  const fs::path s = write("ar.yaml", R"(name: ar
pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
)");
  const auto [out, j] = run(s.string(), "ar");
  const double step = j["metrics"]["step_time_s"].get<double>();
  EXPECT_FALSE(j["op_classes"].contains("other")) << j["op_classes"].dump();
  EXPECT_EQ(j["op_classes"]["communication"]["time_s"].get<double>(), step);
  EXPECT_EQ(j["op_classes"]["communication"]["time_s"], j["exposed_communication"]["all_reduce_s"]);
  EXPECT_DOUBLE_EQ(j["breakdown"]["communication_s"].get<double>(), step);
}

// compare says which run's job failed before setting its goodput and wall time against a finished job's: a
// v5e 2x2 MLP job under job.recovery fail stops at the chip fault with 200 of its 1000 steps done (goodput 0.015%
// of a 30 s wall) beside the same job restarting and finishing; the table alone showed two goodputs and walls.
TEST_F(ReportCli, CompareSaysWhichRunsJobFailed) {
  const fs::path s = write("f.yaml", R"(name: f
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 100}}
job: {steps: 1000, recovery: fail}
faults:
  - {at: 10 ms, kind: chip_down, target: [1, 1]}
)");
  const auto failed = summary(s.string(), "failed");
  const auto finished = summary(s.string() + " --set job.recovery=checkpoint_restart", "finished");
  ASSERT_EQ(failed["job"]["failed"], true);
  ASSERT_EQ(finished["job"]["failed"], false);
  const Outcome o = tpusim("compare " + (dir_ / "finished").string() + " " + (dir_ / "failed").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("  run 2's job failed with 200 of 1000 steps done: its goodput and wall time are of the part "
                       "it ran\n"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("run 1's job failed"), std::string::npos) << o.out;
  // The other way round the wall time grows 141-fold, a change written out, not in e-notation (+1.4e+04%).
  const Outcome back = tpusim("compare " + (dir_ / "failed").string() + " " + (dir_ / "finished").string());
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_NE(back.out.find("+4200 s  +14000%\n"), std::string::npos) << back.out;
  EXPECT_EQ(back.out.find("e+0"), std::string::npos) << back.out;
}
