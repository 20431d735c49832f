#pragma once
// The VPU time a TensorCore's matmuls reserve to pop their results out of the MXU result buffer
// (result_pop_cycles in timing.h). The VPU is in order: a reservation starts no earlier than the matmul's
// first results and after whatever the VPU already has (the running vector instruction, earlier
// reservations), and a vector instruction starts only once every reservation made before it has ended, even
// one still waiting for its matmul's first results (the gap is idle VPU time). The chip wakes at every
// reservation's start and end so the VPU's state changes only at activations.
#include <deque>

#include "ticks.h"

namespace tpusim::models {

class ResultPops {
 public:
  // Reserves `duration` ticks starting at max(earliest, end of the last reservation); returns its end.
  Tick reserve(Tick earliest, Tick duration);
  // Drops the reservations ended by `now`.
  void retire(Tick now);
  // A reservation is popping at `now` (call after retire(now)).
  [[nodiscard]] bool active(Tick now) const { return !pending_.empty() && pending_.front().start <= now; }
  // Reservations not yet ended (call after retire(now)): a vector instruction must wait.
  [[nodiscard]] bool pending() const { return !pending_.empty(); }
  // The next start or end of a reservation after `now`; kNever if none.
  [[nodiscard]] Tick next_boundary(Tick now) const;
  // Ticks reserved over the run (the reservations never overlap each other or a vector instruction).
  [[nodiscard]] Tick busy_ticks() const { return total_; }

 private:
  struct Interval {
    Tick start;
    Tick end;
  };
  std::deque<Interval> pending_;  // in order, disjoint; back-to-back reservations merged
  Tick total_ = 0;
};

}  // namespace tpusim::models
