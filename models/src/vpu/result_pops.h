#pragma once
// The VPU time a TensorCore's matmuls reserve to pop their results out of the MXU result buffer
// (result_pop_cycles in timing.h). The VPU is in order: a reservation starts no earlier than the matmul's
// first results and after whatever the VPU already has (the running vector instruction, earlier
// reservations), and a vector instruction starts only once every reservation made before it has ended, even
// one still waiting for its matmul's first results (the gap is idle VPU time). The chip wakes at every
// reservation's start and end so the VPU's state changes only at activations. A collective's reductions
// reserve time here too, from the network's process (ici/chip_port.h), without waking the chip: the
// sequencer counts them with reserved_within().
#include <cstddef>
#include <vector>

#include "ticks.h"

namespace tpusim::models {

class ResultPops {
 public:
  // Reserves `duration` ticks starting at max(earliest, end of the last reservation); returns its end.
  Tick reserve(Tick earliest, Tick duration);
  // Drops the reservations ended by `now`.
  void retire(Tick now);
  // A reservation is popping at `now` (call after retire(now)).
  [[nodiscard]] bool active(Tick now) const { return pending() && pending_[head_].start <= now; }
  // Reservations not yet ended (call after retire(now)): a vector instruction must wait.
  [[nodiscard]] bool pending() const { return head_ < pending_.size(); }
  // The next start or end of a reservation after `now`; kNever if none.
  [[nodiscard]] Tick next_boundary(Tick now) const;
  // Ticks of the reservations not yet retired that fall within [from, to).
  [[nodiscard]] Tick reserved_within(Tick from, Tick to) const;
  // Ticks reserved over the run (the reservations never overlap each other or a vector instruction).
  [[nodiscard]] Tick busy_ticks() const { return total_; }

 private:
  struct Interval {
    Tick start;
    Tick end;
  };
  std::vector<Interval> pending_;  // [head_, end): in order, disjoint; back-to-back reservations merged
  std::size_t head_ = 0;
  Tick total_ = 0;
};

}  // namespace tpusim::models
