#pragma once
#include <vector>

#include "tpusim/core/assumptions.h"

namespace tpusim::models {

// The hardware models' assumption constants (see core/assumptions.h).
[[nodiscard]] std::vector<Assumption> model_assumptions();

}  // namespace tpusim::models
