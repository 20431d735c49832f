#pragma once
#include <vector>

#include "tpusim/core/assumptions.h"

namespace tpusim::kernels {

// The lowering library's choices that stand in for what a compiler would decide (see core/assumptions.h).
[[nodiscard]] std::vector<Assumption> lowering_assumptions();

}  // namespace tpusim::kernels
