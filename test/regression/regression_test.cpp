// Golden scenario regressions: every pinned number of a bundled scenario's summary.json must match the golden
// within a relative 1e-9 (the simulator is deterministic; see test/regression/README.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  std::ifstream in(fs::path(TPUSIM_SOURCE_DIR) / "test" / "regression" / "scenarios.txt");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

// Looks up "a.b.c" in a JSON document; null when absent.
const json* at_path(const json& root, const std::string& path) {
  const json* node = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, SummaryMatchesThePinnedNumbers) {
  const std::string name = GetParam();
  const fs::path golden_file = fs::path(TPUSIM_SOURCE_DIR) / "test" / "regression" / "golden" / (name + ".json");
  ASSERT_TRUE(fs::exists(golden_file)) << "no golden for " << name << ": run scripts/update-golden.sh";
  const json golden = json::parse(std::ifstream(golden_file));
  const fs::path out = fs::temp_directory_path() / ("tpusim-golden-" + name + "-" + std::to_string(getpid()));
  const std::string cmd = std::string(TPUSIM_BIN) + " run " + name + " -q -o " + out.string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  const json summary = json::parse(std::ifstream(out / "summary.json"));
  fs::remove_all(out);

  const double tol = golden["relative_tolerance"].get<double>();
  for (const auto& [key, want] : golden["expect"].items()) {
    const json* got = at_path(summary, key);
    ASSERT_NE(got, nullptr) << key << " is missing from summary.json";
    const double w = want.get<double>(), g = got->get<double>();
    EXPECT_LE(std::fabs(g - w), tol * std::max(std::fabs(w), 1e-30)) << key << ": golden " << w << ", now " << g;
  }
}

// Every bundled scenario of the regression list: no unit, MXU array or link is used above its capacity (the
// goldens are what the scenarios produce, to 1e-9, by the test above).
TEST_P(Golden, NoUnitArrayOrLinkIsUsedAboveItsCapacity) {
  const std::string name = GetParam();
  const fs::path golden_file = fs::path(TPUSIM_SOURCE_DIR) / "test" / "regression" / "golden" / (name + ".json");
  ASSERT_TRUE(fs::exists(golden_file)) << "no golden for " << name;
  const json golden = json::parse(std::ifstream(golden_file));
  int checked = 0;
  for (const auto& [key, value] : golden["expect"].items()) {
    if (key.find("utilization") == std::string::npos) continue;
    ++checked;
    EXPECT_GE(value.get<double>(), 0.0) << key;
    EXPECT_LE(value.get<double>(), 1.0 + 1e-9) << key;
  }
  EXPECT_GT(checked, 0) << name << ": its golden pins no utilization";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
