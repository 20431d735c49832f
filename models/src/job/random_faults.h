#pragma once
// Random faults from fault_rates, drawn from the scenario's seed: each kind is a Poisson process over the
// pod's components of that kind (rate = components / mtbf), so the pod sees exponential gaps with the summed
// rate; the kind is drawn by its share of the rate and the component uniformly. The generator is
// mt19937_64 with our own uniform and exponential transforms (the standard library's distributions differ
// between implementations), so a seed gives the same faults everywhere.
#include <cstdint>
#include <optional>
#include <random>

#include "tpusim/models/job.h"

namespace tpusim::models::job {

// The linear index (axis 0 fastest) of the OCS cube holding `chip` in its pod; -1 when the pod has no cube.
[[nodiscard]] int cube_of(const Topology& topo, ChipId chip);
// The pod of a multislice holding `chip` (ConcreteFault::pod); -1 when the scenario has one pod.
[[nodiscard]] int pod_of(const Topology& topo, ChipId chip);

class RandomFaults {
 public:
  RandomFaults(const Scenario& s, const Topology& topo);
  // The next random fault after the previous one (the first after time 0); nullopt when no rate is set.
  [[nodiscard]] std::optional<ConcreteFault> next();
  [[nodiscard]] double rate() const { return total_; }  // faults per second over the pod

 private:
  double uniform();  // in (0, 1]

  const Topology& topo_;
  std::mt19937_64 rng_;
  double kinds_[4] = {};  // rate per kind: chip_down, link_down, ocs_port_down, host_down
  double total_ = 0;
  double now_ = 0;
  std::vector<LinkId> optical_;  // one direction of each optical cable (its OCS ports fail with it)
};

}  // namespace tpusim::models::job
