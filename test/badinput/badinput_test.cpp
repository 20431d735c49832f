// The bad-input catalogue (README.md): each entry of cases.yaml runs one tpusim command in a fresh working
// folder and must exit with the expected code, name the expected place, and leave the folder as it was.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace fs = std::filesystem;

namespace {

const fs::path kCatalogue = fs::path(TPUSIM_SOURCE_DIR) / "test" / "badinput";

struct Case {
  std::string name;
  std::string dir;
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> dirs;
  std::vector<std::pair<std::string, std::string>> links;
  std::string args;
  std::string shell;  // instead of args: a shell script run with $TPUSIM set (signals, pipelines)
  int exit = 2;
  std::string at;
  std::vector<std::string> stderr_has;
  std::vector<std::string> stderr_lacks;
};

// Test listings show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (!n.IsDefined()) return out;
  if (n.IsScalar()) out.push_back(n.as<std::string>());
  if (n.IsSequence()) {
    for (const auto& item : n) out.push_back(item.as<std::string>());
  }
  return out;
}

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  const YAML::Node root = YAML::LoadFile((kCatalogue / "cases.yaml").string());
  for (const auto& n : root) {
    Case c;
    c.name = n["name"].as<std::string>();
    if (n["dir"]) c.dir = n["dir"].as<std::string>();
    if (n["files"]) {
      for (const auto& f : n["files"]) c.files.emplace_back(f.first.as<std::string>(), f.second.as<std::string>());
    }
    c.dirs = strings(n["dirs"]);
    if (n["links"]) {
      for (const auto& l : n["links"]) c.links.emplace_back(l.first.as<std::string>(), l.second.as<std::string>());
    }
    if (n["args"]) c.args = n["args"].as<std::string>();
    if (n["shell"]) c.shell = n["shell"].as<std::string>();
    c.exit = n["exit"].as<int>();
    if (n["at"]) c.at = n["at"].as<std::string>();
    c.stderr_has = strings(n["stderr"]);
    c.stderr_lacks = strings(n["not_stderr"]);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Everything under `root`: relative path -> type and content (links: their target), to compare before/after.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    if (it->is_symlink()) {
      out[rel.string()] = "link:" + fs::read_symlink(it->path()).string();
    } else if (it->is_directory()) {
      out[rel.string()] = "dir";
    } else {
      out[rel.string()] = "file:" + slurp(it->path());
    }
  }
  return out;
}

std::string test_name(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, IsRefusedAtTheRightPlaceAndLeavesNothingBehind) {
  const Case& c = GetParam();
  const fs::path base = fs::temp_directory_path() / ("tpusim-bad-" + test_name(c.name) + "-" + std::to_string(getpid()));
  const fs::path work = base / "work";
  fs::remove_all(base);
  fs::create_directories(work);
  if (!c.dir.empty()) fs::copy(kCatalogue / "cases" / c.dir, work, fs::copy_options::recursive);
  for (const auto& [name, text] : c.files) {
    fs::create_directories((work / name).parent_path());
    std::ofstream(work / name, std::ios::binary) << text;
  }
  for (const auto& d : c.dirs) fs::create_directories(work / d);
  for (const auto& [name, target] : c.links) fs::create_symlink(target, work / name);
  const auto before = snapshot(work);

  std::string run = "'" + std::string(TPUSIM_BIN) + "' " + c.args;
  if (!c.shell.empty()) {
    std::ofstream(base / "case.sh") << c.shell << "\n";
    run = "TPUSIM='" + std::string(TPUSIM_BIN) + "' sh '" + (base / "case.sh").string() + "'";
  }
  const std::string cmd = "cd '" + work.string() + "' && " + run + " >'" + (base / "stdout").string() + "' 2>'" +
                          (base / "stderr").string() + "'";
  const int status = std::system(cmd.c_str());
  const std::string err = slurp(base / "stderr");
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

  EXPECT_EQ(code, c.exit) << "tpusim " << c.args << c.shell << "\n" << err;
  if (!c.at.empty()) {
    EXPECT_NE(err.find(c.at), std::string::npos) << "expected the error at " << c.at << "\n" << err;
  }
  for (const auto& s : c.stderr_has) EXPECT_NE(err.find(s), std::string::npos) << "missing '" << s << "'\n" << err;
  for (const auto& s : c.stderr_lacks) EXPECT_EQ(err.find(s), std::string::npos) << "unexpected '" << s << "'\n" << err;
  const auto after = snapshot(work);
  std::string changed;
  for (const auto& [path, what] : before) {
    const auto it = after.find(path);
    if (it == after.end()) changed += "\n  removed: " + path;
    else if (it->second != what) changed += "\n  changed: " + path;
  }
  for (const auto& [path, what] : after) {
    if (before.count(path) == 0) changed += "\n  left behind: " + path;
  }
  EXPECT_TRUE(changed.empty()) << "the working folder changed:" << changed;
  fs::remove_all(base);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return test_name(info.param.name); });

}  // namespace
