// The README as a user reads it: its table of bundled scenarios and sweeps names exactly the files under
// scenarios/ and sweeps/, and the example scenario it shows is one tpusim accepts.
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace fs = std::filesystem;

namespace {

using tpusim::test::Outcome;
using tpusim::test::slurp;
using Docs = tpusim::test::CliTest;

const fs::path kSource = TPUSIM_SOURCE_DIR;

// The lines of `text` after the line `heading`, up to the next heading (a line starting with "#" outside a
// fenced code block, where "#" starts a YAML comment).
std::string section(const std::string& text, const std::string& heading) {
  std::istringstream in(text);
  std::string line, out;
  bool inside = false, code = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line == heading;
      continue;
    }
    if (line.rfind("```", 0) == 0) code = !code;
    if (!code && line.rfind("#", 0) == 0) break;
    out += line + "\n";
  }
  return out;
}

// The names in the first column of the table's rows: `a`, `b` -> scenario a, b; "sweep `c`" -> sweep c.
std::set<std::string> table_names(const std::string& table) {
  std::set<std::string> names;
  std::istringstream in(table);
  const std::regex name("`([a-z0-9.\\-]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const std::string first = line.substr(2, line.find(" |", 2) - 2);
    const bool sweep = first.rfind("sweep ", 0) == 0;
    for (std::sregex_iterator it(first.begin(), first.end(), name), end; it != end; ++it) {
      names.insert((sweep ? "sweeps/" : "scenarios/") + (*it)[1].str());
    }
  }
  return names;
}

std::set<std::string> bundled(const std::string& folder) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(kSource / folder)) {
    if (e.path().extension() == ".yaml") names.insert(folder + "/" + e.path().stem().string());
  }
  return names;
}

}  // namespace

TEST_F(Docs, ReadmeTableListsEveryBundledScenarioAndSweepAndNothingElse) {
  const std::set<std::string> listed = table_names(section(slurp(kSource / "README.md"), "### Bundled scenarios and sweeps"));
  ASSERT_FALSE(listed.empty()) << "README.md has no table under '### Bundled scenarios and sweeps'";
  std::set<std::string> files = bundled("scenarios");
  files.merge(bundled("sweeps"));
  for (const std::string& f : files) EXPECT_TRUE(listed.count(f)) << f << ".yaml is not in README.md's table";
  for (const std::string& l : listed) EXPECT_TRUE(files.count(l)) << "README.md's table names " << l << ", which is not bundled";
}

TEST_F(Docs, ReadmeExampleScenarioValidates) {
  const std::string text = section(slurp(kSource / "README.md"), "### A scenario");
  const std::size_t open = text.find("```yaml\n");
  ASSERT_NE(open, std::string::npos) << "README.md's '### A scenario' has no yaml block";
  const std::size_t body = open + 8;
  const std::size_t close = text.find("```", body);
  ASSERT_NE(close, std::string::npos);
  const Outcome o = tpusim("validate " + write("example.yaml", text.substr(body, close - body)).string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
}
