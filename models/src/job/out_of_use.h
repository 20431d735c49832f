#pragma once
// Hardware the job does not use for a while (docs/faults.md "Over the job"): a failed chip, host or cable until
// its repair ends; a cube switched out for a spare, from its fault to the swap (then its place in the slice is
// the spare's); a component whose fault is to be found at the relaunch, until it is met. A fault on it costs
// nothing, except a chip fault on a chip whose host failed: the host's repair mends the host, not its chips, so a
// straggler or hbm_degraded that lands on one of them while the host is down slows the job from when it runs
// again (as it would had it landed before the host failed), and a chip_down on one is found at the relaunch after
// the host's repair (a link_degraded is on a cable, which a host's failure never takes out of use).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/models/job.h"

namespace tpusim::models::job {

struct OutOfUse {
  std::vector<ChipId> chips;            // sorted; a chip fault, or a host's whose chips are all here, is on it
  bool links = false;                   // and a link fault whose source is here (a cube's cables and ports)
  std::optional<std::uint32_t> cable;   // a failed cable (the lower LinkId of its two directions)
  double until = std::numeric_limits<double>::infinity();
  std::string why;
  bool host = false;  // `chips` are a failed host's: a host fault is on them, no chip fault
};

// The component `fault` takes out of use (the cube, when its recovery switched the cube out).
[[nodiscard]] OutOfUse out_of_use(const Topology& topo, const ConcreteFault& fault, bool swapped, double until,
                                  std::string why);
// `f` is a fault on hardware `o` holds.
[[nodiscard]] bool on(const Topology& topo, const OutOfUse& o, const ConcreteFault& f);

}  // namespace tpusim::models::job
