#pragma once
// Simulated time inside the models: integer picoseconds, SystemC's default time resolution, so a tick count
// converts to sc_time without rounding. Durations are rounded up to whole ticks once, where they are made.
#include <cmath>
#include <cstdint>
#include <limits>

#include "tpusim/core/units.h"

namespace tpusim::models {

using Tick = std::uint64_t;
inline constexpr Tick kNever = std::numeric_limits<Tick>::max();
inline constexpr double kTicksPerSecond = 1e12;

// Rounds up, ignoring floating-point fuzz far below a tick (a product meant to be exactly 1000 ticks must not
// become 1001).
[[nodiscard]] inline Tick ceil_ticks(double ticks) {
  if (ticks <= 0) return 0;
  return static_cast<Tick>(std::ceil(ticks - 1e-6));
}
[[nodiscard]] inline Tick to_ticks(Seconds s) { return ceil_ticks(s.value() * kTicksPerSecond); }
[[nodiscard]] inline Tick cycles_to_ticks(std::int64_t cycles, Hertz clock) {
  return ceil_ticks(static_cast<double>(cycles) * kTicksPerSecond / clock.value());
}
[[nodiscard]] inline Seconds to_seconds(Tick t) { return Seconds(static_cast<double>(t) / kTicksPerSecond); }

// Integrates how long a unit is busy. Call advance() whenever the unit's state may change, with the state it
// had since the previous call.
class BusyTime {
 public:
  void advance(Tick now, bool was_busy) {
    if (was_busy) busy_ += now - last_;
    last_ = now;
  }
  [[nodiscard]] Tick total() const { return busy_; }

 private:
  Tick last_ = 0;
  Tick busy_ = 0;
};

}  // namespace tpusim::models
