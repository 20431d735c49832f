#pragma once
// A step that does not fit in HBM, as the memory plan refuses it (kernels' does_not_fit: "... the step does not
// fit in HBM: 33.1 GiB per chip, chip v6e has 29.8 GiB"). `run` refuses it as bad input; a study reports such a
// point as not fitting, a result: a sweep over the batch or the HBM size finds where a step stops fitting, and
// a calibration point says its published configuration does not fit.
#include <string_view>

namespace tpusim::tools {

inline constexpr std::string_view kDoesNotFitInHbm = "does not fit in HBM: ";
// A study's status for such a point (a sweep's table, a calibration's).
inline constexpr std::string_view kDoesNotFitStatus = "does not fit";

// Whether an error message (a diagnostic's, or a point's recorded error) is that refusal.
[[nodiscard]] inline bool does_not_fit(std::string_view message) {
  return message.find(kDoesNotFitInHbm) != std::string_view::npos;
}

}  // namespace tpusim::tools
