// The findings a run notes (summary.json `notes`, the table's "note:" lines) name what they are made of.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace {

using tpusim::test::Outcome;
using tpusim::test::slurp;

class FindingsCli : public tpusim::test::CliTest {
 protected:
  // The notes of `tpusim run ARGS`, from summary.json; the table's lines in `out`.
  std::vector<std::string> notes(const std::string& args, std::string& out) {
    const Outcome o = tpusim("run " + args + " -o " + (dir_ / "o").string());
    EXPECT_EQ(o.exit_code, 0) << o.err;
    out = o.out;
    return nlohmann::json::parse(slurp(dir_ / "o" / "summary.json"))["notes"].get<std::vector<std::string>>();
  }
  static std::string starting(const std::vector<std::string>& notes, const std::string& head) {
    const auto it =
        std::find_if(notes.begin(), notes.end(), [&](const std::string& n) { return n.rfind(head, 0) == 0; });
    return it == notes.end() ? std::string() : *it;
  }
};

}  // namespace

// A checkpoint after every step of the quickstart (2.1 s of host writes against a 14 ms step) was called
// "input-bound: ... (PCIe / input pipeline)": the host stall is the checkpoint's, and the note says so.
TEST_F(FindingsCli, AHostStallOfCheckpointWritesIsHostBoundNotInputBound) {
  std::string out;
  const auto n = notes("quickstart -q --set workload.checkpoint.every_steps=1", out);
  const std::string host = starting(n, "host-bound: ");
  EXPECT_NE(host.find("the TPU waited for the host 99% of the step, mostly checkpoint writes (checkpoint writes 99%"),
            std::string::npos)
      << host;
  EXPECT_TRUE(starting(n, "input-bound").empty()) << nlohmann::json(n).dump();
  EXPECT_EQ(out.find("input-bound"), std::string::npos) << out;
}

// A host whose input pipeline is too slow (scenarios/host-bound-v4.yaml) stays input-bound, naming its parts.
TEST_F(FindingsCli, AHostStallOfInputIsInputBound) {
  std::string out;
  const auto n = notes("host-bound-v4 -q", out);
  const std::string input = starting(n, "input-bound: the TPU waited for the host (PCIe / input pipeline) ");
  EXPECT_NE(input.find("the input pipeline (infeed)"), std::string::npos) << nlohmann::json(n).dump();
  EXPECT_TRUE(starting(n, "host-bound").empty()) << nlohmann::json(n).dump();
}

// The host stall's parts come from each host instruction's kind (host_op), not from words in its label: a
// program file whose infeed is labelled "fetch.batch" and whose checkpoint is "save.state" (3/4 and 1/4 of the
// host's PCIe time, one after the other) is input-bound with both parts named. Sorted by label, both were
// "other host transfers" and the step was called "host-bound ..., mostly other host transfers (... 100%)".
TEST_F(FindingsCli, HostStallPartsFollowTheHostOpKindNotTheLabel) {
  write("p.json", R"({"format":"tpusim-program","version":2,"role_of_chip":[],"programs":[{"name":"p",
"instructions":[
{"op":"host","label":"go","host_op":"launch","bytes":0,"deps":[]},
{"op":"host","label":"fetch.batch","host_op":"infeed","bytes":805306368,"deps":[0]},
{"op":"matmul","label":"mm","m":128,"k":128,"n":128,"dtype":"bf16","deps":[1]},
{"op":"host","label":"save.state","host_op":"checkpoint","bytes":268435456,"deps":[2]},
{"op":"host","label":"wait","host_op":"sync","bytes":0,"deps":[3]}]}]})");
  write("s.yaml", "name: renamed-host-ops\npod: v4-1x1x1\nworkload:\n  program: p.json\n");
  std::string out;
  const auto n = notes((dir_ / "s.yaml").string() + " -q", out);
  const std::string input = starting(n, "input-bound: the TPU waited for the host (PCIe / input pipeline) ");
  EXPECT_NE(input.find("% of the step (the input pipeline (infeed) 75%, checkpoint writes 25%)"), std::string::npos)
      << nlohmann::json(n).dump();
  EXPECT_EQ(nlohmann::json(n).dump().find("other host transfers"), std::string::npos) << nlohmann::json(n).dump();
}
