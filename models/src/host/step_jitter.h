#pragma once
// Many-host synchronisation (models/README.md "Many hosts wait for the slowest"): a synchronous step ends when
// its slowest host does. Each host's step is late by a normal draw of standard deviation pod.host_jitter x the
// step time (an assumption, docs/calibration.md), drawn afresh every step; the step pays the expected wait for
// the slowest of H hosts beyond the mean host, estimated from seeded draws so that it is deterministic.
#include <cstdint>

#include "tpusim/core/units.h"

namespace tpusim::models {

// Simulated steps the expected maximum is averaged over.
inline constexpr int kJitterTrials = 256;

// E[max_h z_h - mean_h z_h] over `trials` simulated steps of `hosts` standard normal draws z_h each (Box-Muller
// on std::mt19937_64 seeded with `seed`, so the same on every platform). Exactly 0 for one host; about
// sqrt(2 ln H) for many (docs/calibration.md gives the exact values this tracks).
[[nodiscard]] double expected_max_normal(std::uint64_t hosts, int trials, std::uint64_t seed);

// The step's wait for its slowest host: cv x step x expected_max_normal(hosts); 0 for one host or cv = 0.
[[nodiscard]] Seconds host_sync_wait(std::uint64_t hosts, double cv, Seconds step, std::uint64_t seed);

}  // namespace tpusim::models
