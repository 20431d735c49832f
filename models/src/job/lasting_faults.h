#pragma once
// The faults that slow the job's step while they last (docs/faults.md "Over the job"): a degraded link or HBM, a
// straggler, a cable routed around, each with the step simulated with it alone. The step runs at the slowest of
// them, or at the healthy step when none lasts. A recovery that replaces a part (a chip or a cable repaired, a
// cube swapped for a spare) ends the faults on that part; the others go on.
#include <algorithm>
#include <vector>

#include "tpusim/models/job.h"

namespace tpusim::models::job {

class LastingFaults {
 public:
  explicit LastingFaults(double healthy) : healthy_(healthy), step_(healthy) {}

  // `fault` lasts from now on; the step simulated with it is `step` long.
  void add(const ConcreteFault& fault, double step) {
    lasting_.push_back({fault, step});
    step_ = std::max(step_, step);
  }
  // Ends the faults `replaced(fault)` says are on a part a recovery replaced.
  template <typename Replaced>
  void end_if(Replaced replaced) {
    const auto gone = std::remove_if(lasting_.begin(), lasting_.end(),
                                     [&replaced](const Lasting& l) { return replaced(l.fault); });
    if (gone == lasting_.end()) return;
    lasting_.erase(gone, lasting_.end());
    step_ = healthy_;
    for (const Lasting& l : lasting_) step_ = std::max(step_, l.step);
  }
  // The step time now.
  [[nodiscard]] double step() const { return step_; }
  // The faults lasting now, in the order they began.
  [[nodiscard]] std::vector<ConcreteFault> faults() const {
    std::vector<ConcreteFault> out;
    out.reserve(lasting_.size());
    for (const Lasting& l : lasting_) out.push_back(l.fault);
    return out;
  }

 private:
  struct Lasting {
    ConcreteFault fault;
    double step = 0;
  };
  double healthy_;
  double step_;
  std::vector<Lasting> lasting_;
};

}  // namespace tpusim::models::job
