#include "tools/src/readable.h"

#include <array>
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace tpusim::tools {
namespace {

struct Prefix {
  double scale;
  const char* symbol;
};

constexpr std::array<Prefix, 5> kTime{{{1e-12, "ps"}, {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}}};
constexpr std::array<Prefix, 6> kBinary{
    {{1, "B"}, {1024.0, "KiB"}, {1048576.0, "MiB"}, {1073741824.0, "GiB"}, {1099511627776.0, "TiB"},
     {1125899906842624.0, "PiB"}}};
constexpr std::array<Prefix, 7> kDecimal{
    {{1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}, {1e15, "P"}, {1e18, "E"}}};

// Four significant digits, without e-notation: a mantissa past the largest prefix keeps all its digits, one
// below a thousandth of the smallest prefix reads 0.
std::string mantissa(double m) {
  if (std::fabs(m) >= 1e4) return fmt::format("{:.0f}", m);
  if (std::fabs(m) < 1e-3) return "0";
  return fmt::format("{:.4g}", m);
}

template <std::size_t N>
std::string with_prefix(double v, const std::array<Prefix, N>& prefixes, const std::string& unit, bool joined,
                        bool binary = false) {
  // Rounded to 4 digits first, so 999.96 ms becomes 1 s and not "1000 ms". A binary prefix's mantissa is the
  // value's own (dividing a decimally rounded value by 2^20 would move the last digit: 100,777,984 B is
  // 96.11 MiB, not 96.13).
  const double rounded = std::stod(fmt::format("{:.4g}", v));
  const Prefix* chosen = &prefixes[0];
  for (const auto& p : prefixes) {
    if (rounded == 0 ? p.scale == 1 : std::fabs(rounded) >= p.scale) chosen = &p;
  }
  if (!binary) v = rounded;
  const std::string symbol = joined ? std::string(chosen->symbol) + unit
                                    : std::string(chosen->symbol) + (unit.empty() ? "" : " " + unit);
  const std::string m = mantissa(v / chosen->scale);
  return symbol.empty() ? m : m + " " + symbol;
}

}  // namespace

std::string readable(double value, Quantity q) {
  switch (q) {
    case Quantity::seconds: return with_prefix(value, kTime, "", true);
    case Quantity::bytes: return with_prefix(value, kBinary, "", true, true);
    case Quantity::flops: return with_prefix(value, kDecimal, "FLOP", true);
    case Quantity::flops_per_s: return with_prefix(value, kDecimal, "FLOP/s", true);
    case Quantity::bytes_per_s: return with_prefix(value, kDecimal, "B/s", true);
    case Quantity::per_s: return with_prefix(value, kDecimal, "/s", true);
    case Quantity::count: return with_prefix(value, kDecimal, "", false);
    case Quantity::fraction: return mantissa(std::stod(fmt::format("{:.4g}", 100 * value))) + "%";
  }
  return mantissa(value);
}

std::string readable_delta(double delta, Quantity q) {
  const std::string sign = delta < 0 ? "-" : "+";
  if (q == Quantity::fraction) return sign + mantissa(std::stod(fmt::format("{:.4g}", 100 * std::fabs(delta)))) + " pp";
  return sign + readable(std::fabs(delta), q);
}

Quantity quantity_of_key(std::string_view key) {
  const auto ends = [&](std::string_view tail) {
    return key.size() >= tail.size() && key.substr(key.size() - tail.size()) == tail;
  };
  const auto has = [&](std::string_view part) { return key.find(part) != std::string_view::npos; };
  if (ends("_per_s")) {
    if (has("flops")) return Quantity::flops_per_s;
    if (has("bytes")) return Quantity::bytes_per_s;
    return Quantity::per_s;
  }
  if (ends("_s") || has("_s.")) return Quantity::seconds;  // "job.losses_s.restore" too
  if (ends(".chip") || ends(".stage")) return Quantity::count;  // an index: memory.in_use.chip is no size
  if (has("bytes") || key.substr(0, 7) == "memory.") return Quantity::bytes;
  if (has("flops")) return Quantity::flops;
  for (std::string_view f : {"mfu", "hfu", "goodput", "share", "utilization", "efficiency", "fraction"}) {
    if (has(f)) return Quantity::fraction;
  }
  return Quantity::count;
}

}  // namespace tpusim::tools
