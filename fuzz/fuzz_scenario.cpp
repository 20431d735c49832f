// Fuzzes the scenario reader end to end: the YAML, composition with the bundled pod/chip/model files, every
// field table, and then whatever the resolved scenario feeds (the lowering estimate; small lowerings and
// topologies are built for real, as `tpusim validate` would). Bad input must be a ConfigError (or an
// invalid_argument the tools also map to exit 2), never a crash, a hang or another exception.
#include <cstdint>
#include <stdexcept>

#include "fuzz/fuzz_support.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/estimate.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const auto path = fuzz::write_input("scenario.yaml", {reinterpret_cast<const char*>(data), size});
  try {
    const Scenario s = load_scenario(path.string(), {});
    if (s.pod.chip_count() <= 64) (void)build_topology(s.pod, s.chip);
    if (s.workload.program.empty() && kernels::estimate_lowering(s.workload, s.chip).instructions <= 20'000) {
      (void)kernels::lower_workload(s.workload, s.chip);
    }
  } catch (const ConfigError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
