// `tpusim sweep` as an architect runs it: every kind of axis lands in the table with the right values, seeds
// give a mean and a spread, a failed point records its error while the others go on, a sweep killed with
// kill -9 resumes with only the missing points, and the Slurm job array's tasks (run here by hand, exactly as
// sbatch would run them) merge into the same table byte for byte as a local run.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace fs = std::filesystem;
using tpusim::test::Outcome;
using tpusim::test::slurp;
using SweepCli = tpusim::test::CliTest;

namespace {

const char* kScenario = tpusim::test::kMinimalScenario;

// Both sweeps wrote the same table, byte for byte, in both forms.
void expect_same_tables(const fs::path& a, const fs::path& b) {
  EXPECT_EQ(slurp(a / "table.csv"), slurp(b / "table.csv"));
  EXPECT_EQ(slurp(a / "table.json"), slurp(b / "table.json"));
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (char c : row) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.push_back(cell), cell.clear();
    else cell += c;
  }
  out.push_back(cell);
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The row starts with `prefix` (a readable failure message when not).
::testing::AssertionResult starts_with(const std::string& row, const std::string& prefix) {
  if (row.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << row << "' does not start with '" << prefix << "'";
}

// Finished points: folders NNNNN with a summary (a run's staging folder, .NNNNN.partial-PID, is not one).
std::size_t count_summaries(const fs::path& points) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(points, ec)) {
    if (e.path().filename().string().front() == '.') continue;
    n += fs::exists(e.path() / "summary.json") ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_F(SweepCli, EveryAxisKindLandsInTheTableWithMeanAndSpreadOverSeeds) {
  write("s.yaml", kScenario);
  const fs::path sweep = write("w.yaml", R"(name: w
scenario: s.yaml
grid:
  shape:
    chip.mxu.rows: [128, 256]
    chip.mxu.cols: [128, 256]
  workload.batch: 8 .. 32 x 2
derive:
  chip.peak_bf16: 2 FLOP * chip.clock * chip.tensorcore.count * chip.mxu.count * chip.mxu.rows * chip.mxu.cols
filter: not (chip.mxu.rows == 256 and workload.batch == 32)
seeds: 2
columns:
  us_per_example: step_time_s / workload.batch / 1 us
analysis:
  - heatmap: {x: workload.batch, y: shape}
  - pareto: {x: max examples_per_s, y: step_time_s}
)");
  const fs::path out = dir_ / "sw";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("10 points (5 combinations x 2 seeds; 1 of 6 combinations dropped by filters), 0 already "
                       "done, running 10"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("tpusim sweep w: 1/10 points, "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(", ETA "), std::string::npos) << o.err;

  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_EQ(table.size(), 6u);  // header and 5 rows
  EXPECT_TRUE(starts_with(table[0], "point,chip.mxu.rows,chip.mxu.cols,workload.batch,chip.peak_bf16,status,runs_ok,"
                                     "step_time_s,mfu,hfu,model_flops,"));
  EXPECT_TRUE(starts_with(table[1], "0,\"128\",\"128\",\"8\",\"275.2512 TFLOP/s\",ok,2,"));
  EXPECT_TRUE(starts_with(table[5], "4,\"256\",\"256\",\"16\",\"1.1010048 PFLOP/s\",ok,2,"));
  const auto header = cells(table[0]);
  const auto first = cells(table[1]);
  ASSERT_EQ(header.size(), first.size());
  auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  // Nothing this scenario models depends on the seed: the spread is exactly zero, and the report says so.
  for (std::size_t r = 1; r <= 5; ++r) {
    for (const char* sd : {"step_time_s_sd", "mfu_sd", "hfu_sd", "examples_per_s_sd", "us_per_example_sd"}) {
      EXPECT_EQ(cells(table[r])[column(sd)], "0") << sd << " in " << table[r];
    }
  }
  EXPECT_NE(o.out.find("the spread is zero"), std::string::npos) << o.out;
  // The computed column is step time per example in microseconds.
  const double step = std::stod(first[column("step_time_s")]);
  EXPECT_NEAR(std::stod(first[column("us_per_example")]), step / 8 * 1e6, 1e-6 * step / 8 * 1e6);

  const auto runs = lines(slurp(out / "runs.csv"));
  EXPECT_EQ(runs.size(), 11u);
  EXPECT_TRUE(starts_with(runs[4], "3,1,2,\"128\",\"128\",\"16\",ok,"));

  const auto j = nlohmann::json::parse(slurp(out / "table.json"));
  EXPECT_EQ(j["format"], "tpusim-sweep-table");
  ASSERT_EQ(j["rows"].size(), 5u);
  EXPECT_EQ(j["rows"][4]["values"]["chip.peak_bf16"], "1.1010048 PFLOP/s");
  EXPECT_EQ(j["rows"][4]["spread"]["step_time_s"], 0.0);
  EXPECT_EQ(j["columns"][0]["name"], "step_time_s");
  EXPECT_EQ(j["columns"][0]["unit"], "s");

  // The filtered combination is a grey cell; the colour scale and axes are labelled with units.
  const std::string heat = slurp(out / "heatmap_step_time_s.svg");
  EXPECT_NE(heat.find("colour: step_time_s (s), mean over seeds"), std::string::npos);
  EXPECT_NE(heat.find("workload.batch = 32, shape = 256, 256: no result"), std::string::npos);
  EXPECT_EQ(count_of(heat, "stroke=\"#d62728\" stroke-width=\"3\""), 1u);  // the best cell, outlined
  EXPECT_NE(heat.find("red outline: lowest"), std::string::npos);
  EXPECT_NE(slurp(out / "step_time.svg").find("w: step time, mean of 2 seeds, bars +/- 1 sd"), std::string::npos);
  EXPECT_NE(slurp(out / "pareto_examples_per_s_step_time_s.svg").find("examples_per_s (1/s) (higher is better)"),
            std::string::npos);
}

// Random faults drawn from the seed make a job's goodput noisy: the table's goodput_sd is the sample standard
// deviation of the runs in runs.csv, and a line analysis draws the mean with bars of one standard deviation.
TEST_F(SweepCli, SeedsGiveGoodputUnderRandomFaultsASpreadAndALineWithNoiseBars) {
  write("j.yaml", R"(name: j
pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 4 MiB, axes: [], algorithm: auto}
  checkpoint: {every_steps: 10000}
job: {steps: 10000000, recovery: checkpoint_restart, restart: 1 s, repair: 0 s}
fault_rates: {chip_down: 10 min}
)");
  const fs::path sweep = write("w.yaml", R"(name: w
scenario: j.yaml
grid:
  workload.checkpoint.every_steps: [1000, 10000]
seeds: 3
analysis:
  - line: {metric: goodput}
)");
  const fs::path out = dir_ / "sw";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_EQ(table.size(), 3u);
  const auto header = cells(table[0]);
  auto column = [&](const std::vector<std::string>& h, const std::string& name) {
    return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  const auto runs = lines(slurp(out / "runs.csv"));
  ASSERT_EQ(runs.size(), 7u);
  const auto run_header = cells(runs[0]);
  for (std::size_t r = 1; r <= 2; ++r) {
    std::vector<double> g;
    for (std::size_t k = 1; k <= 6; ++k) {
      const auto c = cells(runs[k]);
      if (c[column(run_header, "point")] == std::to_string(r - 1)) g.push_back(std::stod(c[column(run_header, "goodput")]));
    }
    ASSERT_EQ(g.size(), 3u);
    const double mean = (g[0] + g[1] + g[2]) / 3;
    double ss = 0;
    for (double x : g) ss += (x - mean) * (x - mean);
    const double sd = std::sqrt(ss / 2);
    const auto row = cells(table[r]);
    EXPECT_GT(sd, 0.0) << "random faults should make goodput differ between seeds";
    EXPECT_NEAR(std::stod(row[column(header, "goodput")]), mean, 1e-5);
    EXPECT_NEAR(std::stod(row[column(header, "goodput_sd")]), sd, 1e-5 + 1e-3 * sd);
  }
  const std::string line = slurp(out / "line_goodput.svg");
  EXPECT_NE(line.find("w: goodput, mean of 3 seeds, bars +/- 1 sd"), std::string::npos);
  EXPECT_NE(o.out.find("line: "), std::string::npos) << o.out;

  const fs::path bad = write("b.yaml", "name: b\nscenario: j.yaml\ngrid:\n  seed: [1, 2]\nanalysis:\n  - line: {metric: goodptu}\n");
  const Outcome e = tpusim("sweep " + bad.string() + " -o " + (dir_ / "bad").string());
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("unknown metric 'goodptu'"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("goodput"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// step_time.svg of a sweep whose outer axis is written out of order: the legend is titled with that axis and
// lists its values by number (45, 90, 180 GB/s; as text 180 would come first); the x axis (bytes) is ticked in
// MiB, every point has a marker, and no text is in e-notation.
TEST_F(SweepCli, TheStepTimeChartsLegendNamesItsAxisAndListsItsValuesByNumber) {
  write("c.yaml", R"(name: c
pod: v4-2x2x1
workload:
  model: {kind: collective, name: ar, op: all_reduce, bytes: 1 MiB, axes: [], algorithm: auto}
)");
  const fs::path sweep = write("l.yaml", R"(name: l
scenario: c.yaml
grid:
  chip.ici.link_bandwidth: [180 GB/s, 45 GB/s, 90 GB/s]
  workload.model.bytes: [1 MiB, 2 MiB, 4 MiB]
)");
  const fs::path out = dir_ / "l";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string svg = slurp(out / "step_time.svg");
  const auto at = [&](const std::string& text) { return svg.find(">" + text + "</text>"); };
  ASSERT_NE(at("chip.ici.link_bandwidth"), std::string::npos) << svg;
  EXPECT_LT(at("chip.ici.link_bandwidth"), at("45 GB/s"));
  EXPECT_LT(at("45 GB/s"), at("90 GB/s"));
  EXPECT_LT(at("90 GB/s"), at("180 GB/s"));
  EXPECT_EQ(count_of(svg, "class=\"legend-entry\""), 3u);
  EXPECT_EQ(count_of(svg, "<circle"), 9u + 3u);  // a marker per point and per legend entry
  for (const char* tick : {"1 MiB", "2 MiB", "3 MiB", "4 MiB"}) EXPECT_NE(at(tick), std::string::npos) << tick;
  for (auto t = svg.find("<text"); t != std::string::npos; t = svg.find("<text", t + 1)) {
    const auto text = svg.substr(svg.find('>', t), svg.find("</text>", t) - svg.find('>', t));
    EXPECT_EQ(text.find("e+"), std::string::npos) << text;
    EXPECT_EQ(text.find("e-"), std::string::npos) << text;
  }
}

// A line asked for over an axis of words (job.recovery) cannot be drawn: the sweep says so instead of naming a
// line_goodput.svg it never wrote.
TEST_F(SweepCli, ALineOverAnAxisOfWordsSaysItWasNotDrawnInsteadOfNamingAFile) {
  const fs::path sweep = write("r.yaml", R"(name: r
scenario: straggler-v5e-2x2
grid:
  job.recovery: [fail, checkpoint_restart]
analysis:
  - line: {metric: goodput}
)");
  const fs::path out = dir_ / "r";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(fs::exists(out / "line_goodput.svg"));
  EXPECT_NE(o.out.find("line: line_goodput.svg not drawn: its innermost axis, job.recovery, is not numeric (fail)"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find((out / "line_goodput.svg").string()), std::string::npos) << o.out;
}

// A fault's field is an axis by its index in the list: the straggler moves through the job, and the job's
// slowdown shrinks by the steps the later fault leaves healthy, each slower by the two step times' difference.
TEST_F(SweepCli, AFaultsTimeIsAnAxisAndTheJobsSlowdownFollowsIt) {
  const fs::path sweep = write("w.yaml", R"(name: w
scenario: straggler-v5e-2x2
grid:
  faults[0].at: [1 s, 40 s]
)");
  const fs::path out = dir_ / "sw";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_TRUE(starts_with(table[0], "point,faults[0].at,status,")) << table[0];
  EXPECT_TRUE(starts_with(table[2], "1,\"40 s\",ok,")) << table[2];
  const auto job = [&](const char* point) {
    return nlohmann::json::parse(slurp(out / "points" / point / "summary.json"))["job"];
  };
  const auto early = job("00000"), late = job("00001");
  const double healthy = early["simulated_steps"][0]["step_time_s"].get<double>();
  const double slow = early["simulated_steps"][1]["step_time_s"].get<double>();
  ASSERT_GT(slow, healthy);
  // No checkpoint falls in the first 40 s (one every 5000 steps of 19 ms): 39 s more of healthy steps.
  const double expected = 39.0 / healthy * (slow - healthy);
  const double less = early["losses_s"]["slowdown"].get<double>() - late["losses_s"]["slowdown"].get<double>();
  EXPECT_NEAR(less, expected, 0.01 * expected);
}

TEST_F(SweepCli, AFailedPointRecordsItsErrorAndTheOthersGoOn) {
  // A job of 10 steps ends before its fault at 1 s, which its run finds only once the healthy step is simulated
  // (the checks before any point runs cannot: the job's end is 10 x a step no check knows); 10 million steps
  // take about 170 s of simulated time, so the fault hits.
  write("s.yaml", "name: s\npod: v5e-2x2\nworkload: {model: mlp-small, batch: 64, step: train}\njob: {steps: 10}\n"
                  "faults:\n  - {at: 1 s, kind: chip_down, target: [0, 0]}\n");
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  job.steps: [10, 10000000]\n");
  const fs::path out = dir_ / "sw";
  Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_GE(table.size(), 3u);
  // The run's own message (an input error found after the healthy step: exit 2) is in the row's error column.
  EXPECT_TRUE(starts_with(table[1], "0,\"10\",failed (exit 2),,,,")) << table[1];
  EXPECT_NE(table[1].find("the fault comes after the job ends"), std::string::npos) << table[1];
  EXPECT_TRUE(starts_with(table[2], "1,\"10000000\",ok,")) << table[2];
  EXPECT_EQ(table[2].back(), ',');  // no error
  EXPECT_NE(o.out.find("2 points, 1 ok, 1 failed, 0 not run"), std::string::npos) << o.out;

  // A rerun does not repeat the failure unless asked to.
  o = tpusim("sweep " + sweep.string() + " -o " + out.string());
  EXPECT_NE(o.err.find("2 already done (1 failed: --retry-failed runs them again), running 0"), std::string::npos)
      << o.err;
  o = tpusim("sweep " + sweep.string() + " --retry-failed -o " + out.string());
  EXPECT_NE(o.err.find("1 already done, running 1"), std::string::npos) << o.err;
  EXPECT_EQ(o.exit_code, 1);
}

// A point whose simulation fails (exit 1: faults every hour on a 30-day job of 2.2 ms steps with no checkpoint,
// so it never gets anywhere) records the failure's own line, not the closing "no output was written".
TEST_F(SweepCli, AFailedSimulationRecordsWhyItFailed) {
  write("s.yaml", "name: s\npod: v5e-2x2\nworkload: {model: mlp-quickstart, batch: 2048, step: train}\n"
                  "job: {duration: 30 d}\nfault_rates: {chip_down: 1000 h}\n");
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  fault_rates.chip_down: [1000 h, 1 h]\n");
  const fs::path out = dir_ / "sw";
  const Outcome o = tpusim("sweep " + sweep.string() + " -o " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_TRUE(starts_with(table[2], "1,\"1 h\",failed (exit 1),")) << table[2];
  EXPECT_NE(table[2].find("tpusim: simulation failed: the job met 1000000 faults"), std::string::npos) << table[2];
  EXPECT_EQ(table[2].find("no output was written"), std::string::npos) << table[2];
}

// A point whose step does not fit in HBM is a result of the sweep, not bad input: the others run, its row says
// "does not fit" with the memory plan's numbers, and the sweep succeeds (GPT-3 1.3B on one v4 chip: 8 sequences
// fit in its 32 GiB; 64 need 57.1 GiB per chip).
TEST_F(SweepCli, APointWhoseStepDoesNotFitInHbmIsARowOfItsOwnNotAFailure) {
  const fs::path sweep =
      write("w.yaml", "name: w\nscenario: gpt3-1.3b-train-v4\ngrid:\n  workload.batch: [8, 64]\n");
  const fs::path out = dir_ / "fit";
  const Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto table = lines(slurp(out / "table.csv"));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_TRUE(starts_with(table[1], "0,\"8\",ok,")) << table[1];
  EXPECT_TRUE(starts_with(table[2], "1,\"64\",does not fit,")) << table[2];
  EXPECT_NE(table[2].find("does not fit in HBM: 57.1 GiB per chip"), std::string::npos) << table[2];
  EXPECT_NE(o.out.find("2 points, 1 ok, 1 do not fit in HBM, 0 failed, 0 not run"), std::string::npos) << o.out;
  // The progress line agrees with the final one (it said "2/2 points, 1 failed").
  EXPECT_NE(o.err.find("2/2 points, 1 do not fit in HBM, "), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("failed"), std::string::npos) << o.err;
}

TEST_F(SweepCli, AKilledSweepResumesWithOnlyTheMissingPointsAndTheSameTable) {
  // Six quickstart training steps (about 0.1 s each) on one worker: slow enough to kill half-way.
  const fs::path sweep = write("w.yaml", "name: w\nscenario: quickstart\ngrid:\n  workload.batch: 128 .. 768 step 128\n");
  const fs::path out = dir_ / "killed", points = out / "points";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execl(TPUSIM_BIN, TPUSIM_BIN, "sweep", sweep.c_str(), "-j", "1", "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (count_summaries(points) < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the running point dies with the sweep
  const std::size_t done = count_summaries(points);
  ASSERT_GE(done, 2u);
  ASSERT_LT(done, 6u) << "the sweep finished before it could be killed";
  EXPECT_FALSE(fs::exists(out / "table.csv"));

  Outcome o = tpusim("sweep " + sweep.string() + " -j 2 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string resumed = "6 points, " + std::to_string(done) + " already done, running " + std::to_string(6 - done);
  EXPECT_NE(o.err.find(resumed), std::string::npos) << o.err;

  const fs::path fresh = dir_ / "fresh";
  o = tpusim("sweep " + sweep.string() + " -j 2 -o " + fresh.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  expect_same_tables(out, fresh);
}

TEST_F(SweepCli, SlurmArrayTasksRunSharesThatCollectIntoTheLocalTableByteForByte) {
  write("s.yaml", kScenario);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: 8 .. 64 x 2\n"
                                         "  workload.dtype: [bf16, int8]\n");
  const fs::path local = dir_ / "local", array = dir_ / "array";
  Outcome o = tpusim("sweep " + sweep.string() + " -o " + local.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;

  o = tpusim("sweep " + sweep.string() + " --slurm --tasks 3 --slurm-option=--time=10 -o " + array.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const fs::path script = array / "slurm" / "sweep.sbatch";
  EXPECT_NE(o.out.find("3 array tasks for 8 pending of 8 points"), std::string::npos) << o.out;
  const std::string text = slurp(script);
  EXPECT_NE(text.find("#SBATCH --array=0-2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#SBATCH --time=10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("--share \"${SLURM_ARRAY_TASK_ID}/3\""), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(array / "table.csv"));

  // Each task as sbatch runs it: the script with its array index in the environment, its output where the
  // script's --output puts it (inside the sweep's folder, which must not count it as the user's).
  const std::size_t expected_share[] = {3, 3, 2};  // points 0,3,6 / 1,4,7 / 2,5
  for (int task = 0; task < 3; ++task) {
    const fs::path log = array / "slurm" / ("task-" + std::to_string(task) + ".out");
    const std::string cmd =
        "SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " bash " + script.string() + " >" + log.string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
    EXPECT_NE(slurp(log).find("share " + std::to_string(task) + "/3 has " + std::to_string(expected_share[task])),
              std::string::npos)
        << slurp(log);
    EXPECT_FALSE(fs::exists(array / "table.csv")) << "a task must not write the table";
  }
  o = tpusim("sweep " + sweep.string() + " --collect -o " + array.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  expect_same_tables(array, local);
}

// Another process's lock on bytes [start, start + len) of a folder's marker (len 0: all), as a running study
// holds it (output_folder.h, PointsLock); released when the file is closed.
int hold_points(const fs::path& folder, off_t start, off_t len) {
  const int fd = ::open((folder / ".tpusim-output").c_str(), O_RDWR | O_CLOEXEC);
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = start;
  l.l_len = len;
  EXPECT_EQ(::fcntl(fd, F_OFD_SETLK, &l), 0);
  return fd;
}

TEST_F(SweepCli, ARunCollectOrShareRefusesWhileAnotherHoldsItsPointsAndOtherSharesGoOn) {
  write("s.yaml", kScenario);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: 8 .. 64 x 2\n");
  const fs::path local = dir_ / "local", array = dir_ / "array";
  Outcome o = tpusim("sweep " + sweep.string() + " -o " + local.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string table = slurp(local / "table.csv");

  int fd = hold_points(local, 0, 0);  // a whole sweep of the folder still running
  o = tpusim("sweep " + sweep.string() + " -o " + local.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("another tpusim is running or collecting points of " + local.string()), std::string::npos)
      << o.err;
  EXPECT_EQ(o.err.find("already done"), std::string::npos) << o.err;
  o = tpusim("sweep " + sweep.string() + " --collect -o " + local.string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_EQ(slurp(local / "table.csv"), table);
  ::close(fd);
  o = tpusim("sweep " + sweep.string() + " --collect -o " + local.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;

  // Four points, two array tasks (0, 2 / 1, 3): while share 1 runs, share 1 again is refused at its first
  // point, --collect is refused, and share 0 runs.
  o = tpusim("sweep " + sweep.string() + " --slurm --tasks 2 -o " + array.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  fd = hold_points(array, 1, 1);
  o = tpusim("sweep " + sweep.string() + " --share 1/2 -o " + array.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("point 1 of " + array.string()), std::string::npos) << o.err;
  o = tpusim("sweep " + sweep.string() + " --collect -o " + array.string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  o = tpusim("sweep " + sweep.string() + " --share 0/2 -o " + array.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(fs::exists(array / "points" / "00002" / "summary.json"));
  EXPECT_FALSE(fs::exists(array / "points" / "00001"));
  ::close(fd);
}

// The limits given to the sweep reach every run it starts, the Slurm tasks' included, and its pre-run check.
TEST_F(SweepCli, ItsLimitsReachEveryRunItStarts) {
  write("s.yaml", kScenario);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: [8, 16]\n");
  Outcome o = tpusim("--max-memory 3GiB sweep " + sweep.string() + " --emit-commands -o " + (dir_ / "e").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto commands = lines(o.out);
  ASSERT_EQ(commands.size(), 2u) << o.out;
  for (const std::string& c : commands) EXPECT_NE(c.find("'--max-memory' '3GiB' 'run'"), std::string::npos) << c;
  o = tpusim("sweep " + sweep.string() + " --max-pe-cycles 1000000 --slurm --tasks 2 -o " + (dir_ / "a").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(slurp(dir_ / "a" / "slurm" / "sweep.sbatch").find(" '--max-pe-cycles' '1000000' sweep "),
            std::string::npos);
  o = tpusim("sweep " + sweep.string() + " --max-memory 1KiB -o " + (dir_ / "r").string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("above the limit of 1 KiB (--max-memory)"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "r"));
}

TEST_F(SweepCli, ABadGridValueNamesTheSweepFilesLine) {
  write("s.yaml", kScenario);
  const fs::path sweep = write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  workload.batch: [8, eight]\n");
  const Outcome o = tpusim("sweep " + sweep.string() + " -o " + (dir_ / "sw").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(sweep.string() + ":4:23: error: workload.batch"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("--set"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "sw"));
}

// A fault plan that one point's values make wrong (both x cables of a 2x2x1 slice down split it in two, which
// reroute cannot route around, while checkpoint_restart repairs them) is refused before any point runs, as
// `run` refuses it, at the scenario's fault and naming the point.
TEST_F(SweepCli, AFaultPlanThatOnePointMakesWrongIsRefusedBeforeAnyPointRuns) {
  write("s.yaml",
        "name: s\npod: v4-2x2x1\nworkload: {model: mlp-small, batch: 64, step: train}\n"
        "job: {steps: 10000000, recovery: checkpoint_restart}\nfaults:\n"
        "  - {at: 1 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}\n"
        "  - {at: 3 s, kind: link_down, target: {chip: [0, 1, 0], dir: x+}}\n");
  const fs::path sweep =
      write("w.yaml", "name: w\nscenario: s.yaml\ngrid:\n  job.recovery: [checkpoint_restart, reroute]\n");
  const Outcome o = tpusim("sweep " + sweep.string() + " -o " + (dir_ / "sw").string());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("s.yaml:7:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("faults[1]"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("splits the pod into two parts"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("in the sweep's point job.recovery=reroute"), std::string::npos) << o.err;
  EXPECT_EQ(count_of(o.err, "splits the pod"), 1u) << o.err;
  EXPECT_NE(o.err.find("nothing was run"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "sw"));
}

TEST_F(SweepCli, BundledSweepsResolveAndExpandToTheirPointCounts) {
  const std::pair<const char*, int> kSweeps[] = {
      {"roofline", 54},      {"roofline-v4", 5},    {"allreduce-size-v4-4x4x4", 55}, {"allreduce-size-v4-pod", 11},
      {"alltoall-algorithms-v4-4x4x4", 36}, {"mxu-hbm-v4", 10}, {"ici-slices-v4", 9}, {"seeds-gemm-v4", 15},
      {"gpt3-1.3b-options-v4", 8}, {"dlrm-sparsecore-v4", 6}, {"dp-ici-slices-v4", 9}};
  for (const auto& [name, points] : kSweeps) {
    const Outcome o = tpusim(std::string("sweep ") + name + " --emit-commands -o " + (dir_ / name).string());
    EXPECT_EQ(o.exit_code, 0) << name << ": " << o.err;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), points) << name;
  }
}
