#include "step_jitter.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tpusim::models {
namespace {

// A uniform in (0, 1] from the generator's top 53 bits (never 0: the logarithm below needs it).
double unit_open(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace

double expected_max_normal(std::uint64_t hosts, int trials, std::uint64_t seed) {
  if (hosts <= 1 || trials <= 0) return 0;
  std::mt19937_64 rng(seed);
  constexpr double kTwoPi = 6.283185307179586;
  double sum = 0;
  for (int t = 0; t < trials; ++t) {
    double most = -INFINITY;
    double total = 0;
    for (std::uint64_t h = 0; h < hosts; h += 2) {
      // Box-Muller: two independent standard normals per pair of uniforms.
      const double r = std::sqrt(-2.0 * std::log(unit_open(rng)));
      const double a = kTwoPi * unit_open(rng);
      const double z0 = r * std::cos(a);
      most = std::max(most, z0);
      total += z0;
      if (h + 1 < hosts) {
        const double z1 = r * std::sin(a);
        most = std::max(most, z1);
        total += z1;
      }
    }
    sum += most - total / static_cast<double>(hosts);
  }
  return sum / trials;
}

Seconds host_sync_wait(std::uint64_t hosts, double cv, Seconds step, std::uint64_t seed) {
  if (hosts <= 1 || cv <= 0) return Seconds(0);
  return step * (cv * expected_max_normal(hosts, kJitterTrials, seed));
}

}  // namespace tpusim::models
