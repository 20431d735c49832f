#pragma once
// A fixture for tests that drive the tpusim binary (TPUSIM_BIN) as a user would: a fresh scratch folder per
// test, files written into it, and the binary run through the shell with its exit code, stdout and stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tpusim::test {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A minimal valid scenario: one forward pass of a tiny MLP on one v4 chip (milliseconds). Tests break or vary
// one thing at a time.
inline constexpr const char* kMinimalScenario = R"(name: t
pod: v4-1x1x1
workload:
  model: mlp-small
  batch: 8
  step: forward
)";

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("tpusim-cli-") + info->name() + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  Outcome tpusim(const std::string& args) {
    const std::filesystem::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = std::string(TPUSIM_BIN) + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = slurp(out);
    o.err = slurp(err);
    return o;
  }

  // `tpusim run ARGS -q -o DIR/NAME`, expected to succeed; its summary.json.
  nlohmann::json summary(const std::string& args, const std::string& name) {
    const Outcome o = tpusim("run " + args + " -q -o " + (dir_ / name).string());
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return nlohmann::json::parse(slurp(dir_ / name / "summary.json"));
  }

  std::filesystem::path dir_;
};

}  // namespace tpusim::test
