#pragma once
// A cycle-level reference for the weight-stationary MXU: it steps every processing element of every array of
// one TensorCore, cycle by cycle, with real data, under the schedule that mxu/dataflow_weight_stationary.cpp
// describes. It exists to pin the fast closed form down (the two must agree exactly, and the product must be
// right) and as an executable specification of the schedule. Cost is O(cycles x rows x cols x MXUs): use it
// for shapes up to a few hundred.
#include <cstdint>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {

struct SystolicRun {
  std::int64_t cycles = 0;     // first cycle after the last output left the last array
  std::vector<std::int64_t> c;  // the m x n product, row-major
};

// a: m x k row-major, b: k x n row-major. Throws std::logic_error if a processing element ever meets an
// operand without the weights of its tile, or partial sums of different rows meet (a schedule bug).
[[nodiscard]] SystolicRun run_weight_stationary_reference(const MxuSpec& mxu, MatmulShape s,
                                                          const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b);

// The same instruction issued at cycle `issue` of a back-to-back run, on arrays (mxu.per_core states) that
// earlier instructions still hold as `arrays` says; `cycles` is then the end cycle of the run, and `arrays`
// is updated, as MxuDataflowModel::schedule() does. The arrays start empty of data: an earlier instruction's
// partial sums are ahead of this one's operands by construction (its rows entered every row of the array
// first), so only the controller's rules carry over. An idle start ({0, 0} states, issue 0) is the overload
// above.
[[nodiscard]] SystolicRun run_weight_stationary_reference(const MxuSpec& mxu, MatmulShape s,
                                                          const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b, std::int64_t issue,
                                                          std::vector<MxuArrayState>& arrays);

}  // namespace tpusim::models
