// Weight-stationary dataflow (the TPU default; Jouppi et al., ISCA 2017 and CACM 2020).
//
// The k x n weights are cut into ceil(k/R) x ceil(n/C) weight tiles of R x C, dealt round-robin to the
// TensorCore's MXUs. On one array, a tile's weights are shifted in from the top, one row of C values per
// cycle (R cycles), into a second (shadow) weight buffer, so the next tile loads while the current one
// streams. A tile streams its m LHS rows from the left, one row per cycle, skewed by one cycle per array row;
// partial sums flow down the columns and leave at the bottom.
//
// With s_q the cycle tile q starts streaming on an array that holds T tiles:
//   s_0     = R                                (the first weight load is not hidden)
//   s_{q+1} = s_q + max(m, R)                  (the next load needs R cycles, the stream m)
//   end     = s_{T-1} + m + (R - 1) + (C - 1)  (last row skews through R rows and C columns)
// so cycles = R + (T - 1) * max(m, R) + m + R + C - 2
//           = T * max(m, R) + (R + C) + (min(m, R) - 2),
// i.e. max(m, R) per tile plus one fill and drain per instruction. systolic_reference.cpp steps every
// processing element of this schedule and must agree exactly (test/models/timing_test.cpp).
//
// Back to back (schedule_array(), which MxuDataflowModel::schedule() calls per array): the same rules continue across instructions. With the array's state
// {L = load_free, P = stream_free} left by the previous instruction and the new one issued at cycle t:
//   l_0 = max(t, L)                  (the shadow buffer is free once the previous last tile streams)
//   s_0 = max(l_0 + R, P)            (P = previous last stream start + its m)
//   s_{q+1} = s_q + max(m, R),  end = s_{T-1} + m + R + C - 2,  then L' = s_{T-1}, P' = s_{T-1} + m.
// Issued no later than the previous instruction's last stream start, s_0 = s_prev + max(m_prev, R): the
// first weight load is hidden and the previous instruction's drain overlaps this one's streaming.
#include "tpusim/models/timing.h"

#include <algorithm>

namespace tpusim::models {
namespace {

class WeightStationary final : public MxuDataflowModel {
 public:
  [[nodiscard]] std::string_view name() const override { return "weight_stationary"; }

  [[nodiscard]] std::int64_t tiles(const MxuSpec& mxu, MatmulShape s) const override {
    if (s.m <= 0 || s.k <= 0 || s.n <= 0) return 0;
    return ceil_div(s.k, mxu.rows) * ceil_div(s.n, mxu.cols);
  }

  [[nodiscard]] std::int64_t schedule_array(const MxuSpec& mxu, MatmulShape s, std::int64_t count,
                                            std::int64_t issue, MxuArrayState& st) const override {
    const std::int64_t r = mxu.rows;
    const std::int64_t c = mxu.cols;
    const std::int64_t first_load = std::max(issue, st.load_free);
    const std::int64_t first_stream = std::max(first_load + r, st.stream_free);
    const std::int64_t last_stream = first_stream + (count - 1) * std::max(s.m, r);
    st.load_free = last_stream;
    st.stream_free = last_stream + s.m;
    return last_stream + s.m + r + c - 2;
  }
};

}  // namespace

std::unique_ptr<const MxuDataflowModel> make_weight_stationary_dataflow() {
  return std::make_unique<WeightStationary>();
}

}  // namespace tpusim::models
