// Fuzzes the model reader (configs/models/*.yaml): the input is a model file named by a small scenario beside
// it, resolved with every model kind's field table and the workload checks that tie it to the workload, then
// fed to the lowering estimate and, when that is small, to the memory plan and the lowering, as `tpusim
// validate` would. Bad input must be a ConfigError (or an invalid_argument the tools map to exit 2).
#include <cstdint>
#include <stdexcept>

#include "fuzz/fuzz_support.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/estimate.h"
#include "tpusim/kernels/lowering.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  static const auto scenario = [] {
    return fuzz::write_input("s.yaml", "name: s\npod: v4-1x1x1\nworkload: {model: m.yaml, batch: 8, step: train}\n");
  }();
  (void)fuzz::write_input("m.yaml", {reinterpret_cast<const char*>(data), size});
  try {
    const Scenario s = load_scenario(scenario.string(), {});
    if (kernels::estimate_lowering(s.workload, s.chip).instructions <= 20'000) {
      (void)kernels::lower_workload(s.workload, s.chip);
    }
  } catch (const ConfigError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
