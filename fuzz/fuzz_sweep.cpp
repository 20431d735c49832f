// Fuzzes the sweep reader: the sweep YAML, its grid, and the resolution of its first points against a small
// valid scenario beside it (s.yaml), as `tpusim sweep` checks them before running anything.
#include <cstdint>
#include <stdexcept>

#include "fuzz/fuzz_support.h"
#include "tools/src/preflight.h"
#include "tools/src/sweep.h"
#include "tpusim/core/diagnostics.h"

namespace tpusim::tools {
// The fuzzers link no SystemC, so not the models that the fault-plan check of each point needs (preflight.cpp:
// concrete faults on the topology). The scenario here has no faults, for which the real check does nothing too;
// the check itself is tested through the binary (test/tools/sweep_cli_test.cpp, test/badinput).
void check_fault_plan(const Scenario& /*scenario*/) {}
}  // namespace tpusim::tools

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  static const bool scenario_written = [] {
    fuzz::write_input("s.yaml", "name: s\npod: v4-1x1x1\nworkload: {model: mlp-small, batch: 8, step: forward}\n");
    return true;
  }();
  (void)scenario_written;
  const auto path = fuzz::write_input("sweep.yaml", {reinterpret_cast<const char*>(data), size});
  try {
    (void)tools::check_sweep(path.string(), 16);
  } catch (const ConfigError&) {
  }
  return 0;
}
