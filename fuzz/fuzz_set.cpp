// Fuzzes `--set path=value`: each input line is one override applied to the bundled quickstart scenario, which
// is then resolved (so an override can reach every field table, the references to pods, chips and models,
// and the cross-field rules).
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpusim/core/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  std::vector<std::string> overrides;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line) && overrides.size() < 8;) overrides.push_back(line);
  try {
    (void)load_scenario("quickstart", overrides);
  } catch (const ConfigError&) {
  }
  return 0;
}
