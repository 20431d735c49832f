#pragma once
// A scenario read from YAML written by the test (through a file, as a user's is: load_scenario), for tests of
// the layers above core that need a resolved Scenario without a bundled one.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tpusim/core/scenario.h"

namespace tpusim::testing {

inline Scenario scenario_from_yaml(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tpusim-scenario-yaml-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path file = dir / "scenario.yaml";
  std::ofstream(file) << yaml;
  Scenario s = load_scenario(file.string(), overrides);
  fs::remove_all(dir);
  return s;
}

}  // namespace tpusim::testing
