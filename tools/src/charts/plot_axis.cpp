#include "tools/src/charts/plot_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace tpusim::tools {
namespace {

// The smallest of 1, 2, 5 times a power of ten at or above `raw` (> 0).
double round_step(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw * (1 - 1e-9)) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, Quantity q, bool integer, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  // Bytes are ticked in the binary unit of the largest value: 0, 256 MiB, 512 MiB ...
  double unit = 1;
  if (q == Quantity::bytes) {
    while (unit * 1024 <= std::max(std::fabs(lo), std::fabs(hi))) unit *= 1024;
  }
  double a = lo / unit, b = hi / unit;
  if (b == a) {  // one value: the round interval around it
    const double spread = a == 0 ? 1 : std::fabs(a) * 0.1;
    a -= spread, b += spread;
    if (lo >= 0) a = std::max(a, 0.0);
  }
  double step = round_step((b - a) / std::max(1, target));
  if (integer && unit == 1) step = std::max(step, 1.0);
  const double first = std::floor(a / step * (1 + 1e-12) + 1e-9), last = std::ceil(b / step * (1 - 1e-12) - 1e-9);
  std::vector<double> ticks;
  for (double i = first; i <= last; ++i) ticks.push_back(i * step * unit);
  if (ticks.size() < 2) ticks.push_back((last + 1) * step * unit);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, Quantity q, bool binary) {
  if (!(lo > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return {1, 10};
  if (hi < lo) std::swap(lo, hi);
  const double base = q == Quantity::bytes || binary ? 2.0 : 10.0;
  const auto log_base = [&](double v) { return std::log(v) / std::log(base); };
  const int e0 = static_cast<int>(std::floor(log_base(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(log_base(hi) - 1e-9));
  if (e1 == e0) ++e1;
  std::vector<double> ticks;
  if (base == 10.0 && e1 - e0 == 1) {
    for (double m : {1.0, 2.0, 5.0, 10.0}) ticks.push_back(m * std::pow(10.0, e0));
    return ticks;
  }
  const int every = (e1 - e0 + 6) / 7;  // at most about eight ticks, so that their labels do not touch
  const int first = static_cast<int>(std::floor(static_cast<double>(e0) / every)) * every;
  for (int e = first; e < e1 + every; e += every) ticks.push_back(std::pow(base, e));
  return ticks;
}

std::string tick_label(double v, Quantity q) {
  if (q == Quantity::count && v == std::floor(v) && std::fabs(v) < 1e5 && std::fmod(v, 1000.0) != 0) {
    return fmt::format("{:.0f}", v);
  }
  return readable(std::fabs(v) < 1e-300 ? 0.0 : v, q);
}

bool wants_log_axis(std::vector<double> values) {
  if (values.empty() || std::any_of(values.begin(), values.end(), [](double v) { return !(v > 0); })) return false;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const double span = values.back() / values.front();
  if (span >= 100) return true;
  if (values.size() < 3 || span < 8) return false;
  const double factor = values[1] / values[0];
  if (factor < 1.5) return false;
  for (std::size_t i = 2; i < values.size(); ++i) {
    if (std::fabs(values[i] / values[i - 1] / factor - 1) > 1e-6) return false;
  }
  return true;
}

bool all_powers_of_two(const std::vector<double>& values) {
  return !values.empty() && std::all_of(values.begin(), values.end(), [](double v) {
    if (!(v >= 1) || v != std::floor(v) || v > 9.007199254740992e15) return false;
    const auto n = static_cast<std::uint64_t>(v);
    return (n & (n - 1)) == 0;
  });
}

Quantity quantity_of(const UnitDim& d, std::string_view name) {
  const auto is = [&](std::array<int, 4> e) { return d.e == e; };
  if (is({0, 1, 0, 0})) return Quantity::seconds;
  if (is({1, 0, 0, 0})) return Quantity::bytes;
  if (is({0, 0, 1, 0})) return Quantity::flops;
  if (is({0, -1, 1, 0})) return Quantity::flops_per_s;
  if (is({1, -1, 0, 0})) return Quantity::bytes_per_s;
  if (is({0, -1, 0, 0})) return Quantity::per_s;
  if (d.none()) {
    const Quantity q = quantity_of_key(name);
    return q == Quantity::fraction ? q : Quantity::count;
  }
  return Quantity::count;  // other units (FLOP/B): plain numbers, the unit in the axis title
}

}  // namespace tpusim::tools
