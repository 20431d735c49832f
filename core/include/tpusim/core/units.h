#pragma once
// Physical quantities as types. Every modelling number that has a unit travels in one of these; the YAML
// carries the unit in its text ("1200 GB/s", "16 MiB", "1.05 GHz") and parse_quantity() turns it into one.
//
// Conventions: decimal prefixes (KB, MB, GB, TB; Kb/s ...; GFLOP/s ...) are powers of 1000, binary prefixes
// (KiB, MiB, GiB, TiB) powers of 1024. Rates in bits per second are stored as bytes per second (/8).
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

// A double-valued quantity in SI base units, tagged by dimension so that different dimensions never mix.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double si) : value_(si) {}
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity operator+(Quantity o) const { return Quantity(value_ + o.value_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(value_ - o.value_); }
  constexpr Quantity operator*(double f) const { return Quantity(value_ * f); }
  constexpr Quantity operator/(double f) const { return Quantity(value_ / f); }
  constexpr double operator/(Quantity o) const { return value_ / o.value_; }
  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  constexpr bool operator==(Quantity o) const { return value_ == o.value_; }
  constexpr bool operator!=(Quantity o) const { return value_ != o.value_; }
  constexpr bool operator<(Quantity o) const { return value_ < o.value_; }
  constexpr bool operator<=(Quantity o) const { return value_ <= o.value_; }
  constexpr bool operator>(Quantity o) const { return value_ > o.value_; }
  constexpr bool operator>=(Quantity o) const { return value_ >= o.value_; }

 private:
  double value_ = 0.0;
};

struct SecondsTag {};
struct HertzTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};
struct WattsTag {};

using Seconds = Quantity<SecondsTag>;
using Hertz = Quantity<HertzTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;  // also used for integer ops/s (TOP/s)
using Watts = Quantity<WattsTag>;

// A byte count; integral because buffers and transfers are whole bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::uint64_t n) : n_(n) {}
  [[nodiscard]] constexpr std::uint64_t count() const { return n_; }
  [[nodiscard]] constexpr double as_double() const { return static_cast<double>(n_); }
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes operator*(std::uint64_t f) const { return Bytes(n_ * f); }
  constexpr Bytes& operator+=(Bytes o) { n_ += o.n_; return *this; }
  constexpr bool operator==(Bytes o) const { return n_ == o.n_; }
  constexpr bool operator!=(Bytes o) const { return n_ != o.n_; }
  constexpr bool operator<(Bytes o) const { return n_ < o.n_; }
  constexpr bool operator<=(Bytes o) const { return n_ <= o.n_; }
  constexpr bool operator>(Bytes o) const { return n_ > o.n_; }
  constexpr bool operator>=(Bytes o) const { return n_ >= o.n_; }

 private:
  std::uint64_t n_ = 0;
};

constexpr Bytes KiB(std::uint64_t n) { return Bytes(n << 10); }
constexpr Bytes MiB(std::uint64_t n) { return Bytes(n << 20); }
constexpr Bytes GiB(std::uint64_t n) { return Bytes(n << 30); }

// Cross-dimension arithmetic that has a physical meaning.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.as_double() / r.value()); }
constexpr Seconds cycles_to_time(double cycles, Hertz clock) { return Seconds(cycles / clock.value()); }
constexpr double time_to_cycles(Seconds t, Hertz clock) { return t.value() * clock.value(); }

// The dimension a YAML value is expected to have; used in errors ("expected a bandwidth, found a size").
enum class Dimension { bytes, bytes_per_second, seconds, hertz, flops_per_second, watts };

[[nodiscard]] std::string_view dimension_name(Dimension d);     // "size", "bandwidth", ...
[[nodiscard]] std::string_view dimension_example(Dimension d);  // "16 MiB", "1200 GB/s", ...

// A dimension at run time, as powers of bytes, seconds, FLOPs and watts: what the typed quantities above are
// at compile time, for values whose dimension is known only once they are computed (the sweeps' expressions:
// `1 TB/s * 2 s` is bytes, `FLOP / B` an intensity).
struct UnitDim {
  std::array<int, 4> e{0, 0, 0, 0};  // B, s, FLOP, W
  bool operator==(const UnitDim& o) const { return e == o.e; }
  bool operator!=(const UnitDim& o) const { return e != o.e; }
  [[nodiscard]] bool none() const { return e == std::array<int, 4>{0, 0, 0, 0}; }
};
// The dimensions the code names, in one place (unit_dim maps a Dimension to its own).
namespace dim {
inline constexpr UnitDim none{};
inline constexpr UnitDim bytes{{1, 0, 0, 0}};
inline constexpr UnitDim seconds{{0, 1, 0, 0}};
inline constexpr UnitDim flops{{0, 0, 1, 0}};
inline constexpr UnitDim watts{{0, 0, 0, 1}};
inline constexpr UnitDim per_second{{0, -1, 0, 0}};
inline constexpr UnitDim bytes_per_second{{1, -1, 0, 0}};
inline constexpr UnitDim flops_per_second{{0, -1, 1, 0}};
inline constexpr UnitDim flops_per_byte{{-1, 0, 1, 0}};
}  // namespace dim
[[nodiscard]] UnitDim unit_dim(Dimension d);
// "B/s", "FLOP/s", "s", "B*s", "FLOP/B", "1/s", "1" (dimensionless).
[[nodiscard]] std::string unit_dim_label(const UnitDim& d);

// The units a value of a dimension is written in, smallest first (sizes: format_bytes instead, exact), and
// the one for a value: the largest that keeps the mantissa >= 1, else the smallest.
struct DisplayUnit {
  double scale;
  std::string_view symbol;
};
[[nodiscard]] const std::vector<DisplayUnit>& display_units(Dimension d);
[[nodiscard]] const DisplayUnit& display_unit(Dimension d, double si);

struct ParsedQuantity {
  double si;  // in bytes, bytes/s, s, Hz, FLOP/s or W
  Dimension dimension;
};

// The length of the decimal number `text` starts with: an optional sign, digits with an optional decimal point
// (at least one digit), and an optional exponent (e or E, an optional sign, digits); 0 when it starts with none.
// The one syntax of numbers in config values: no hexadecimal ("0x10", "0x1p-1"), no "inf" or "nan", which
// strtod would read.
[[nodiscard]] std::size_t decimal_number_length(std::string_view text);
// `text` as a whole read as a decimal number (decimal_number_length), or nullopt.
[[nodiscard]] std::optional<double> parse_decimal(std::string_view text);
// True when `text` starts with a hexadecimal number ("0x10", "-0X1p-1"), for errors that say why it is refused.
[[nodiscard]] bool looks_hexadecimal(std::string_view text);

// Parses "<decimal number> <unit>" (the space is optional). Returns nullopt for text that is not a number followed
// by a known unit, and for values that are not finite in SI units ("inf GB/s", "1e308 GHz"); the caller
// reports the error with its location.
[[nodiscard]] std::optional<ParsedQuantity> parse_quantity(std::string_view text);
// True when `text` is a number with a known unit whose value is not finite ("1e308 GHz", "inf s").
[[nodiscard]] bool quantity_out_of_range(std::string_view text);

// The units accepted for a dimension, for error messages ("B, KiB, MiB, ...").
[[nodiscard]] std::string units_for(Dimension d);

// Human-readable rendering with a sensible prefix ("1.2 TB/s", "16 MiB", "1.05 GHz", "499.6 us"). Output is
// deterministic (fixed precision) so it can appear in summary.json.
[[nodiscard]] std::string format_bytes(Bytes b);
// Rounded, for reports of large sizes: three significant digits in the largest binary unit ("25.1 GiB").
[[nodiscard]] std::string format_bytes_approx(Bytes b);
[[nodiscard]] std::string format_bandwidth(BytesPerSecond r);
[[nodiscard]] std::string format_time(Seconds t);
[[nodiscard]] std::string format_frequency(Hertz f);
[[nodiscard]] std::string format_flops(FlopsPerSecond f);
[[nodiscard]] std::string format_watts(Watts w);

}  // namespace tpusim
