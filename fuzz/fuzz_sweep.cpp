// Fuzzes the sweep reader: the sweep YAML, its grid, and the resolution of its first points against a small
// valid scenario beside it (s.yaml), as `tpusim sweep` checks them before running anything.
#include <cstdint>
#include <stdexcept>

#include "fuzz/fuzz_support.h"
#include "tools/src/sweep/sweep_check.h"
#include "tpusim/core/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  static const bool scenario_written = [] {
    fuzz::write_input("s.yaml", "name: s\npod: v4-1x1x1\nworkload: {model: mlp-small, batch: 8, step: forward}\n");
    return true;
  }();
  (void)scenario_written;
  const auto path = fuzz::write_input("sweep.yaml", {reinterpret_cast<const char*>(data), size});
  try {
    // No fault-plan check: it needs the models, which the fuzzers do not link, and the scenario has no faults
    // (for which it does nothing). It is tested through the binary (test/tools/sweep_cli_test.cpp, test/badinput).
    (void)tools::check_sweep(path.string(), 16, [](const Scenario&) {});
  } catch (const ConfigError&) {
  }
  return 0;
}
