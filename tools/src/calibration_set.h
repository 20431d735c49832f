#pragma once
// The calibration set's file (calibration/measurements.yaml and files of its format, docs/calibration.md) read
// into its points: each names a scenario, the overrides of its `set:` (with where they are written), the metric
// it reads, the measured value and its bound. `tpusim calibrate` (calibrate.h) runs them.
#include <array>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/units.h"

namespace tpusim::tools {

// What a point reads from its run's summary.json (docs/summary-format.md), or, for a ratio point, from two
// other points of its entry.
enum class Metric { step_time, collective_time, gathered_bandwidth, mfu, flops_per_chip, ratio };

struct MetricInfo {
  Metric metric;
  const char* name;
  std::optional<Dimension> dimension;  // none: a fraction, written "56.0%" or 0.56
};

inline constexpr MetricInfo kRatio{Metric::ratio, "ratio", std::nullopt};

// "10%": |predicted / measured - 1| <= v; "x1.5": predicted / measured in [1/v, v]; "5 points" (fractions
// only): |predicted - measured| <= v / 100.
enum class BoundKind { relative, factor, points };

struct Tolerance {
  BoundKind kind = BoundKind::relative;
  double value = 0;
  std::string text;
};

struct CalibrationPoint {
  std::string id, label, source;
  std::filesystem::path scenario;
  const MetricInfo* metric = nullptr;
  std::vector<std::string> overrides;  // the point's own, then the command line's
  std::vector<Override> located;       // the point's own with where the calibration file writes them
  SourceLoc loc;                       // where the point is written
  double measured = 0;                 // SI units of the metric; a fraction for mfu and ratio
  std::string measured_text;
  Tolerance bound;
  bool plot = false;
  std::size_t run = 0;                            // the run it reads (points of one scenario and overrides share one)
  std::optional<std::array<std::size_t, 2>> ratio;  // a ratio point: the indices of its numerator and denominator
};

[[nodiscard]] inline bool is_fraction(const CalibrationPoint& p) { return !p.metric->dimension.has_value(); }

// Reads a calibration file (a bundled name, calibration/NAME.yaml, or a path) and names the set in `set_name`;
// every problem is reported at once (ConfigError, exit 2).
[[nodiscard]] std::vector<CalibrationPoint> load_calibration(const std::string& name_or_path, std::string& set_name);

}  // namespace tpusim::tools
