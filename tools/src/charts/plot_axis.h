#pragma once
// The axes every chart shares (tools/src/charts/svg.cpp, the unit timeline): round tick values in 1-2-5 steps, labelled
// in the quantity's unit by the stdout formatter (readable.h), so that an axis reads "0, 500 GFLOP, 1 TFLOP,
// 1.5 TFLOP" and never "1.38e+12" or "17.5" chips; and the legend order of a chart's series.
#include <string>
#include <string_view>
#include <vector>

#include "tools/src/readable.h"
#include "tools/src/sweep/sweep_expr.h"

namespace tpusim::tools {

struct PlotAxis {
  std::string label;  // the axis title
  Quantity quantity = Quantity::count;
  bool log = false;
  bool integer = false;  // whole numbers only (chips, batch sizes): no tick between two integers
  bool binary = false;   // a logarithmic axis ticked at powers of two (a sweep over 256, 1024, 4096 rows)
};

// Whether a sweep axis's values (any order) are best shown on a logarithmic axis: all positive, and spanning a
// factor of 100, or a geometric series (three or more values, each the one before times the same factor of at
// least 1.5) spanning a factor of 8; on a linear axis such a series crowds its first values into a corner.
[[nodiscard]] bool wants_log_axis(std::vector<double> values);
// Whether every value is a whole power of two (a log axis over them is then ticked at powers of two).
[[nodiscard]] bool all_powers_of_two(const std::vector<double>& values);

// Round ticks covering [lo, hi] (lo <= hi): the step is 1, 2 or 5 times a power of ten (for bytes, of a power
// of 1024 times such a step, so that they read "256 MiB", not "244.1 MiB"), the smallest one giving at most
// `target` + 1 intervals; at least 1 on an integer axis. The first tick is at or below lo, the last at or above
// hi, so the ticks are the axis's range. lo == hi gives the ticks around the value.
[[nodiscard]] std::vector<double> nice_ticks(double lo, double hi, Quantity q, bool integer, int target = 5);
// Ticks of a logarithmic axis over [lo, hi] (0 < lo <= hi): every power of ten from the one at or below lo to
// the one at or above hi (every second, third ... past seven decades: at most about eight ticks); spanning a
// single decade, also 2 and 5 times its power of ten. Bytes take powers of two instead (4 KiB, 32 KiB, 256 KiB
// ...: every 2^k, k a multiple of the smallest step giving at most about eight ticks), as does `binary`.
[[nodiscard]] std::vector<double> log_ticks(double lo, double hi, Quantity q = Quantity::count, bool binary = false);
// A tick's text: the value in the axis's unit (readable()); a count below 100,000 that is a whole number but not
// a round thousand reads in full ("4096", not "4.096 k"), as a sweep's values were written.
[[nodiscard]] std::string tick_label(double v, Quantity q);

// The quantity of a value with dimension `d` (sweep_expr.h); a dimensionless one by its name (readable.h's
// quantity_of_key: "mfu" a fraction, "chips" a count).
[[nodiscard]] Quantity quantity_of(const UnitDim& d, std::string_view name);

}  // namespace tpusim::tools
