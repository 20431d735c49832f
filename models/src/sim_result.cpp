#include "tpusim/models/sim_result.h"

namespace tpusim::models {

std::string_view hw_unit_name(HwUnit u) {
  switch (u) {
    case HwUnit::mxu: return "mxu";
    case HwUnit::vpu: return "vpu";
    case HwUnit::dma: return "dma";
    case HwUnit::hbm: return "hbm";
    case HwUnit::host: return "host";
  }
  return "?";
}

double SimResult::mfu() const {
  const double den = step_time.value() * peak_flops.value();
  return den > 0 ? model_flops / den : 0.0;
}

double SimResult::hfu() const {
  const double den = step_time.value() * peak_flops.value();
  return den > 0 ? hardware_flops / den : 0.0;
}

}  // namespace tpusim::models
