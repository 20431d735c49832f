#pragma once
// A step simulated as the tool simulates it (tools/src/mirrored_step.h), for tests that call the library: when
// simulate() would mirror chips, the mirrored run is tried first in a child process; if it verifies, the step is
// simulated mirrored here, otherwise (MirrorFallback, or any error, which a run of every chip then reports) with
// every chip. So a test gets the tool's result, and a same-tick mismatch in a small test pod is no failure.
#include "support/in_child.h"
#include "tpusim/models/simulate.h"

namespace tpusim::testing {

inline models::SimResult simulate_step(const Scenario& s, const ir::ProgramSet& programs, models::SimOptions o) {
  if (models::runs_mirrored(s, programs, o)) {
    o.mirror = in_child<bool>(
        [&] {
          try {
            (void)models::simulate(s, programs, o);
            return true;
          } catch (...) {
            return false;
          }
        },
        false);
  }
  return models::simulate(s, programs, o);
}

}  // namespace tpusim::testing
