// Cycle-level weight-stationary reference; see systolic_reference.h and dataflow_weight_stationary.cpp.
//
// Each array has R x C processing elements (PEs). A PE holds two weight registers (the active and the
// shadow buffer, selected by the tile's parity) and three pipeline registers, all advanced once per cycle:
//   a     the LHS value, moving right one PE per cycle;
//   psum  the partial sum, moving down one PE per cycle (row 0 starts it at zero);
//   w     a weight on its way down the column to the PE of its target row, which latches it.
// Tokens carry the tile and row they belong to, so a PE can check that it multiplies the right operands:
// that check is what makes this a test of the schedule and not a restatement of the formula.
//
// The array's controller follows local rules only, one decision each per cycle:
//   stream tile q once its weights are loaded (R cycles after its load began) and the previous tile has
//     injected all m rows;
//   then load tile q+1 once the top port is free (R cycles after the previous load began) and tile q has
//     started streaming (so the buffer tile q+1 overwrites is the one tile q-1 used).
// Weights enter column j with a skew of j cycles, like the data, so a column switches tiles in step with
// its operands.
#include "tpusim/models/systolic_reference.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tpusim::models {
namespace {

struct DataToken {
  bool valid = false;
  std::int64_t value = 0;
  std::int64_t row = 0;   // LHS row t
  std::int64_t tile = -1;  // tile index on this array
};

struct WeightToken {
  bool valid = false;
  std::int64_t value = 0;
  std::int64_t target_row = 0;
  std::int64_t tile = -1;
};

struct Pe {
  std::int64_t weight[2] = {0, 0};
  std::int64_t weight_tile[2] = {-1, -1};
  DataToken a;
  DataToken psum;
  WeightToken w;
};

struct TileRef {
  std::int64_t kb = 0;  // block of k rows of B
  std::int64_t nb = 0;  // block of n columns of B (and C)
};

class Array {
 public:
  // `issue` and `state` say when the instruction is issued and what the earlier instructions of a
  // back-to-back run still hold the array for (see MxuArrayState).
  Array(const MxuSpec& mxu, MatmulShape s, const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
        std::vector<TileRef> tiles, std::int64_t issue, MxuArrayState state)
      : r_(mxu.rows), c_(mxu.cols), s_(s), a_(a), b_(b), tiles_(std::move(tiles)),
        pes_(static_cast<std::size_t>(r_ * c_)), issue_(issue), initial_(state) {}

  // Runs until every tile has streamed and the array is empty; accumulates outputs into `out`. Returns the
  // end cycle (0 for an array without tiles) and leaves the array's state for the next instruction in `state`.
  std::int64_t run(std::vector<std::int64_t>& out, MxuArrayState& state) {
    const auto total = static_cast<std::int64_t>(tiles_.size());
    if (total == 0) return 0;
    const std::int64_t first = std::max(issue_, initial_.load_free);
    const std::int64_t stall_limit = first + 4 * (total * (s_.m + r_) + r_ + c_ + 16);
    std::int64_t end = 0;
    for (std::int64_t cycle = first;; ++cycle) {
      if (cycle > stall_limit) throw std::logic_error("systolic reference: schedule stalled");
      control(cycle);
      const bool busy = step(cycle, out, end);
      if (!busy && streams() == total && cycle > stream_start_.back() + r_ + s_.m) break;
    }
    state.load_free = std::max(load_start_.back() + r_, stream_start_.back());
    state.stream_free = stream_start_.back() + s_.m;
    return end;
  }

 private:
  [[nodiscard]] std::int64_t loads() const { return static_cast<std::int64_t>(load_start_.size()); }
  [[nodiscard]] std::int64_t streams() const { return static_cast<std::int64_t>(stream_start_.size()); }

  void control(std::int64_t cycle) {
    const auto total = static_cast<std::int64_t>(tiles_.size());
    const std::int64_t q = streams();
    if (q < loads()) {
      const bool weights_ready = cycle >= load_start_[q] + r_;
      const bool port_free = q == 0 ? cycle >= initial_.stream_free : cycle >= stream_start_[q - 1] + s_.m;
      if (weights_ready && port_free) stream_start_.push_back(cycle);
    }
    const std::int64_t next = loads();
    if (next < total) {
      const bool port_free =
          next == 0 ? cycle >= std::max(issue_, initial_.load_free) : cycle >= load_start_[next - 1] + r_;
      const bool buffer_free = next == 0 || streams() >= next;
      if (port_free && buffer_free) load_start_.push_back(cycle);
    }
  }

  // The LHS value entering row i at `cycle`, if a tile is streaming into that row.
  [[nodiscard]] DataToken left_input(std::int64_t i, std::int64_t cycle) const {
    for (std::int64_t q = streams() - 1; q >= 0; --q) {
      const std::int64_t t = cycle - i - stream_start_[q];
      if (t < 0) continue;
      if (t >= s_.m) break;
      const std::int64_t col = tiles_[q].kb * r_ + i;
      const std::int64_t v = col < s_.k ? a_[t * s_.k + col] : 0;  // padding rows stream zeros
      return DataToken{true, v, t, q};
    }
    return {};
  }

  // The weight entering the top of column j at `cycle`, if a tile is loading into that column. Rows go in
  // bottom-first so that every row's weight reaches it on the same cycle.
  [[nodiscard]] WeightToken top_input(std::int64_t j, std::int64_t cycle) const {
    for (std::int64_t q = loads() - 1; q >= 0; --q) {
      const std::int64_t idx = cycle - j - load_start_[q];
      if (idx < 0) continue;
      if (idx >= r_) break;
      const std::int64_t row = r_ - 1 - idx;
      const std::int64_t kr = tiles_[q].kb * r_ + row;
      const std::int64_t nc = tiles_[q].nb * c_ + j;
      const std::int64_t v = kr < s_.k && nc < s_.n ? b_[kr * s_.n + nc] : 0;
      return WeightToken{true, v, row, q};
    }
    return {};
  }

  [[noreturn]] void fail(std::int64_t i, std::int64_t j, std::int64_t cycle, const std::string& what) const {
    throw std::logic_error("systolic reference: PE(" + std::to_string(i) + "," + std::to_string(j) + ") at cycle " +
                           std::to_string(cycle) + ": " + what);
  }

  // Advances every PE by one cycle. Visiting rows and columns from the far corner lets each PE read its
  // upper and left neighbours' registers before they are overwritten. Returns whether any token is in flight.
  bool step(std::int64_t cycle, std::vector<std::int64_t>& out, std::int64_t& end) {
    bool busy = false;
    for (std::int64_t i = r_ - 1; i >= 0; --i) {
      for (std::int64_t j = c_ - 1; j >= 0; --j) {
        Pe& pe = pes_[static_cast<std::size_t>(i * c_ + j)];

        WeightToken w_in = i == 0 ? top_input(j, cycle) : pes_[static_cast<std::size_t>((i - 1) * c_ + j)].w;
        if (w_in.valid && w_in.target_row == i) {
          const auto slot = static_cast<std::size_t>(w_in.tile % 2);
          pe.weight[slot] = w_in.value;
          pe.weight_tile[slot] = w_in.tile;
          w_in.valid = false;
        }

        const DataToken a_in = j == 0 ? left_input(i, cycle) : pes_[static_cast<std::size_t>(i * c_ + j - 1)].a;
        DataToken p_in;
        if (i == 0) {
          if (a_in.valid) p_in = DataToken{true, 0, a_in.row, a_in.tile};
        } else {
          p_in = pes_[static_cast<std::size_t>((i - 1) * c_ + j)].psum;
        }
        DataToken p_out;
        if (a_in.valid) {
          const auto slot = static_cast<std::size_t>(a_in.tile % 2);
          if (pe.weight_tile[slot] != a_in.tile) {
            fail(i, j, cycle, "row " + std::to_string(a_in.row) + " of tile " + std::to_string(a_in.tile) +
                                  " found the weights of tile " + std::to_string(pe.weight_tile[slot]));
          }
          if (!p_in.valid || p_in.row != a_in.row || p_in.tile != a_in.tile) {
            fail(i, j, cycle, "operand and partial sum belong to different rows");
          }
          p_out = DataToken{true, p_in.value + a_in.value * pe.weight[slot], a_in.row, a_in.tile};
        } else if (p_in.valid) {
          fail(i, j, cycle, "partial sum arrived without its operand");
        }
        pe.w = w_in;
        pe.a = a_in;
        pe.psum = p_out;
        busy = busy || w_in.valid || a_in.valid || p_out.valid;
      }
    }
    for (std::int64_t j = 0; j < c_; ++j) {
      const DataToken& p = pes_[static_cast<std::size_t>((r_ - 1) * c_ + j)].psum;
      if (!p.valid) continue;
      end = cycle + 1;
      const std::int64_t col = tiles_[p.tile].nb * c_ + j;
      if (col < s_.n) out[p.row * s_.n + col] += p.value;  // padding columns are dropped
    }
    return busy;
  }

  std::int64_t r_, c_;
  MatmulShape s_;
  const std::vector<std::int64_t>& a_;
  const std::vector<std::int64_t>& b_;
  std::vector<TileRef> tiles_;
  std::vector<Pe> pes_;
  std::vector<std::int64_t> load_start_;
  std::vector<std::int64_t> stream_start_;
  std::int64_t issue_;
  MxuArrayState initial_;
};

}  // namespace

SystolicRun run_weight_stationary_reference(const MxuSpec& mxu, MatmulShape s, const std::vector<std::int64_t>& a,
                                            const std::vector<std::int64_t>& b) {
  std::vector<MxuArrayState> idle(static_cast<std::size_t>(std::max(mxu.per_core, 0)));
  return run_weight_stationary_reference(mxu, s, a, b, 0, idle);
}

SystolicRun run_weight_stationary_reference(const MxuSpec& mxu, MatmulShape s, const std::vector<std::int64_t>& a,
                                            const std::vector<std::int64_t>& b, std::int64_t issue,
                                            std::vector<MxuArrayState>& arrays) {
  if (static_cast<int>(arrays.size()) != mxu.per_core) {
    throw std::invalid_argument("systolic reference: one array state per MXU expected");
  }
  if (static_cast<std::int64_t>(a.size()) != s.m * s.k || static_cast<std::int64_t>(b.size()) != s.k * s.n) {
    throw std::invalid_argument("systolic reference: operand sizes do not match the shape");
  }
  SystolicRun run;
  run.c.assign(static_cast<std::size_t>(s.m * s.n), 0);
  if (s.m <= 0 || s.k <= 0 || s.n <= 0) {
    run.cycles = issue;
    return run;
  }

  // Deal the weight tiles round-robin over the arrays, as the fast model assumes.
  std::vector<std::vector<TileRef>> per_array(static_cast<std::size_t>(mxu.per_core));
  std::int64_t index = 0;
  for (std::int64_t nb = 0; nb < ceil_div(s.n, mxu.cols); ++nb) {
    for (std::int64_t kb = 0; kb < ceil_div(s.k, mxu.rows); ++kb) {
      per_array[static_cast<std::size_t>(index++ % mxu.per_core)].push_back(TileRef{kb, nb});
    }
  }
  run.cycles = issue;
  for (std::size_t i = 0; i < per_array.size(); ++i) {
    Array array(mxu, s, a, b, std::move(per_array[i]), issue, arrays[i]);
    run.cycles = std::max(run.cycles, array.run(run.c, arrays[i]));
  }
  return run;
}

}  // namespace tpusim::models
