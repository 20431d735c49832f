#pragma once
// A step simulated as the tool simulates it (tools/src/mirrored_step.h), for tests that call the library: when
// simulate() would mirror chips, the mirrored run is tried first in a child process, with the finer classes a
// failed try refines (MirrorFallback::refined) tried next; if one verifies, the step is simulated mirrored
// with its classes here, otherwise (no refinement left, or any error, which a run of every chip then reports)
// with every chip. So a test gets the tool's result, and a same-tick mismatch in a small test pod is no failure.
#include <algorithm>
#include <array>
#include <cstdint>

#include "support/in_child.h"
#include "tpusim/models/simulate.h"

namespace tpusim::testing {

// `run(options)` simulates the step (models::simulate, or a variant with options of its own): tried in a child
// with the classes each failed try refines until one verifies (then run here with them), else run here with
// every chip. Every try but the last runs in a child, so `run` may be called once more in this process.
template <class Run>
models::SimResult simulate_refined(Run&& run, models::SimOptions o) {
  // A try's answer crosses a pipe in one write (at most PIPE_BUF bytes): pods of up to 1000 chips refine.
  struct Try {
    bool verified = false;
    std::uint32_t chips = 0;  // of `refined`: 0 when there is none
    std::array<std::uint32_t, 1000> refined{};
  };
  constexpr int kMaxRefinements = 32;
  bool verified = false;
  for (int i = 0; i <= kMaxRefinements; ++i) {
    const Try t = in_child<Try>(
        [&] {
          Try t;
          try {
            (void)run(o);
            t.verified = true;
          } catch (const models::MirrorFallback& e) {
            if (e.refined().size() <= t.refined.size()) {
              t.chips = static_cast<std::uint32_t>(e.refined().size());
              std::copy(e.refined().begin(), e.refined().end(), t.refined.begin());
            }
          } catch (...) {
          }
          return t;
        },
        Try{});
    verified = t.verified;
    if (verified || t.chips == 0) break;
    o.mirror_partition.assign(t.refined.begin(), t.refined.begin() + t.chips);
  }
  if (!verified) {
    o.mirror = false;
    o.mirror_partition.clear();
  }
  return run(o);
}

inline models::SimResult simulate_step(const Scenario& s, const ir::ProgramSet& programs, models::SimOptions o) {
  const auto run = [&](const models::SimOptions& options) { return models::simulate(s, programs, options); };
  if (!models::runs_mirrored(s, programs, o)) return run(o);
  return simulate_refined(run, std::move(o));
}

}  // namespace tpusim::testing
