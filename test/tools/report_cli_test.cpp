// What a user reads after a run (issue 22): the header names the mesh and the sharding, the last line every
// file written; `tpusim compare` puts runs side by side; a mistyped subcommand or option gets a did-you-mean.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace fs = std::filesystem;

namespace {

using tpusim::test::Outcome;
using tpusim::test::slurp;
using ReportCli = tpusim::test::CliTest;

}  // namespace

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

TEST_F(ReportCli, RunListsEveryFileItWroteAndNoOther) {
  const fs::path out = dir_ / "r";
  const Outcome o = tpusim("run gpt3-1.3b-fsdp-tensor-v4-2x2x1 --trace --trace-chips 0-1 -o " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<std::string> listed = files_written(o.out, out);
  EXPECT_EQ(listed, (std::vector<std::string>{"summary.json", "chips.csv", "links.csv", "links.svg", "trace.json",
                                              "timeline.svg"}))
      << o.out;
  std::vector<std::string> present;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().filename() != ".tpusim-output") present.push_back(e.path().filename().string());
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
    if (e.path().filename() != ".tpusim-output") present.push_back(e.path().filename().string());
  }
  EXPECT_NE(std::find(listed.begin(), listed.end(), "job-trace.json"), listed.end()) << o.out;
  std::sort(listed.begin(), listed.end());
  std::sort(present.begin(), present.end());
  EXPECT_EQ(present, listed) << o.out;
}
