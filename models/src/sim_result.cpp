#include "tpusim/models/sim_result.h"

namespace tpusim::models {

namespace detail {
std::vector<HwUnitInfo> hw_units(kBuiltInHwUnitInfo.begin(), kBuiltInHwUnitInfo.end());
}  // namespace detail

std::string_view stat_unit_suffix(StatUnit u) {
  switch (u) {
    case StatUnit::count: return "";
    case StatUnit::seconds: return "_s";
    case StatUnit::bytes: return "_bytes";
    case StatUnit::joules: return "_j";
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
