// Output-stationary dataflow (each processing element keeps one output element and accumulates over k).
//
// The m x n output is cut into ceil(m/R) x ceil(n/C) output tiles of R x C, dealt round-robin to the
// TensorCore's MXUs. For a tile, row i of the array receives A[i, :] from the left and column j receives
// B[:, j] from the top, one k-slice per cycle, skewed by one cycle per row and column; after k slices every
// PE holds its dot product. The finished accumulators are shifted out through the bottom (R cycles) from a
// second accumulator bank while the next tile accumulates, so a tile costs max(k, R) cycles.
//
// On an array holding T tiles:
//   cycles = (T - 1) * max(k, R) + k + (R - 1) + (C - 1) + R
// i.e. max(k, R) per tile plus, once per instruction, the skew through the array and the final drain of
// the last tile's accumulators. This is the weight-stationary formula with the roles of m (streamed rows)
// and k (accumulation depth) exchanged, and no weight preload.
//
// Back to back (schedule_array(), which MxuDataflowModel::schedule() calls per array): an array's next output tile may start accumulating once the previous tile has
// accumulated and its accumulator bank is free again, P = s_last + max(k, R), so with the new instruction
// issued at t: s_0 = max(t, P), s_{q+1} = s_q + max(k, R), end = s_{T-1} + k + (R - 1) + (C - 1) + R. The skew
// and final drain are paid once per back-to-back run. (No weights are preloaded: load_free is unused.)
#include "tpusim/models/timing.h"

#include <algorithm>

namespace tpusim::models {
namespace {

class OutputStationary final : public MxuDataflowModel {
 public:
  [[nodiscard]] std::string_view name() const override { return "output_stationary"; }

  [[nodiscard]] std::int64_t tiles(const MxuSpec& mxu, MatmulShape s) const override {
    if (s.m <= 0 || s.k <= 0 || s.n <= 0) return 0;
    return ceil_div(s.m, mxu.rows) * ceil_div(s.n, mxu.cols);
  }

  [[nodiscard]] std::int64_t schedule_array(const MxuSpec& mxu, MatmulShape s, std::int64_t count,
                                            std::int64_t issue, MxuArrayState& st) const override {
    const std::int64_t r = mxu.rows;
    const std::int64_t c = mxu.cols;
    const std::int64_t first = std::max(issue, st.stream_free);
    const std::int64_t last = first + (count - 1) * std::max(s.k, r);
    st.load_free = last;
    st.stream_free = last + std::max(s.k, r);
    return last + s.k + (r - 1) + (c - 1) + r;
  }
};

}  // namespace

std::unique_ptr<const MxuDataflowModel> make_output_stationary_dataflow() {
  return std::make_unique<OutputStationary>();
}

}  // namespace tpusim::models
