#include "tpusim/core/units.h"

#include <array>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace tpusim {
namespace {

struct UnitDef {
  std::string_view symbol;
  double factor;  // multiply the number by this to get SI base units
  Dimension dimension;
};

constexpr double kK = 1e3, kM = 1e6, kG = 1e9, kT = 1e12, kP = 1e15;
constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;

constexpr std::array<UnitDef, 43> kUnits{{
    {"B", 1, Dimension::bytes},
    {"KiB", kKi, Dimension::bytes},
    {"MiB", kMi, Dimension::bytes},
    {"GiB", kGi, Dimension::bytes},
    {"TiB", kTi, Dimension::bytes},
    {"KB", kK, Dimension::bytes},
    {"kB", kK, Dimension::bytes},
    {"MB", kM, Dimension::bytes},
    {"GB", kG, Dimension::bytes},
    {"TB", kT, Dimension::bytes},
    {"B/s", 1, Dimension::bytes_per_second},
    {"KB/s", kK, Dimension::bytes_per_second},
    {"MB/s", kM, Dimension::bytes_per_second},
    {"GB/s", kG, Dimension::bytes_per_second},
    {"TB/s", kT, Dimension::bytes_per_second},
    {"KiB/s", kKi, Dimension::bytes_per_second},
    {"MiB/s", kMi, Dimension::bytes_per_second},
    {"GiB/s", kGi, Dimension::bytes_per_second},
    {"b/s", 1.0 / 8, Dimension::bytes_per_second},
    {"Kb/s", kK / 8, Dimension::bytes_per_second},
    {"Mb/s", kM / 8, Dimension::bytes_per_second},
    {"Gb/s", kG / 8, Dimension::bytes_per_second},
    {"Tb/s", kT / 8, Dimension::bytes_per_second},
    {"ps", 1e-12, Dimension::seconds},
    {"ns", 1e-9, Dimension::seconds},
    {"us", 1e-6, Dimension::seconds},
    {"ms", 1e-3, Dimension::seconds},
    {"s", 1, Dimension::seconds},
    {"min", 60, Dimension::seconds},
    {"h", 3600, Dimension::seconds},
    {"d", 86400, Dimension::seconds},
    {"Hz", 1, Dimension::hertz},
    {"kHz", kK, Dimension::hertz},
    {"MHz", kM, Dimension::hertz},
    {"GHz", kG, Dimension::hertz},
    {"FLOP/s", 1, Dimension::flops_per_second},
    {"GFLOP/s", kG, Dimension::flops_per_second},
    {"TFLOP/s", kT, Dimension::flops_per_second},
    {"PFLOP/s", kP, Dimension::flops_per_second},
    {"TOP/s", kT, Dimension::flops_per_second},
    {"W", 1, Dimension::watts},
    {"kW", kK, Dimension::watts},
    {"mW", 1e-3, Dimension::watts},
}};

// Renders v / scale with up to 6 significant digits and no trailing zeros: deterministic and round-trippable
// for the values configs use.
std::string compact(double v) {
  std::string s = fmt::format("{:.6g}", v);
  return s;
}

std::string format_in(Dimension d, double v) {
  const DisplayUnit& u = display_unit(d, v);
  return compact(v / u.scale) + " " + std::string(u.symbol);
}

}  // namespace

UnitDim unit_dim(Dimension d) {
  switch (d) {
    case Dimension::bytes: return dim::bytes;
    case Dimension::bytes_per_second: return dim::bytes_per_second;
    case Dimension::seconds: return dim::seconds;
    case Dimension::hertz: return dim::per_second;
    case Dimension::flops_per_second: return dim::flops_per_second;
    case Dimension::watts: return dim::watts;
  }
  return {};
}

std::string unit_dim_label(const UnitDim& d) {
  static constexpr std::array<std::string_view, 4> kNames{"B", "s", "FLOP", "W"};
  if (d == unit_dim(Dimension::bytes_per_second)) return "B/s";
  if (d == unit_dim(Dimension::flops_per_second)) return "FLOP/s";
  std::string num, den;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    const int e = d.e[i];
    if (e == 0) continue;
    std::string& side = e > 0 ? num : den;
    side += (side.empty() ? "" : "*") + std::string(kNames[i]) +
            (std::abs(e) > 1 ? fmt::format("^{}", std::abs(e)) : "");
  }
  if (num.empty() && den.empty()) return "1";
  if (den.empty()) return num;
  return (num.empty() ? "1" : num) + "/" + (den.find('*') != std::string::npos ? "(" + den + ")" : den);
}

const std::vector<DisplayUnit>& display_units(Dimension d) {
  static const std::array<std::vector<DisplayUnit>, 6> kUnits{{  // in Dimension's order
      {{1, "B"}},
      {{1, "B/s"}, {kK, "KB/s"}, {kM, "MB/s"}, {kG, "GB/s"}, {kT, "TB/s"}},
      {{1e-12, "ps"}, {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}},
      {{1, "Hz"}, {kK, "kHz"}, {kM, "MHz"}, {kG, "GHz"}},
      {{1, "FLOP/s"}, {kG, "GFLOP/s"}, {kT, "TFLOP/s"}, {kP, "PFLOP/s"}},
      {{1e-3, "mW"}, {1, "W"}, {kK, "kW"}},
  }};
  return kUnits[static_cast<std::size_t>(d)];
}

const DisplayUnit& display_unit(Dimension d, double si) {
  const std::vector<DisplayUnit>& units = display_units(d);
  const DisplayUnit* chosen = &units.front();
  for (const DisplayUnit& u : units) {
    if (std::fabs(si) >= u.scale) chosen = &u;
  }
  return *chosen;
}

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "size";
    case Dimension::bytes_per_second: return "bandwidth";
    case Dimension::seconds: return "duration";
    case Dimension::hertz: return "frequency";
    case Dimension::flops_per_second: return "compute rate";
    case Dimension::watts: return "power";
  }
  return "quantity";
}

std::string_view dimension_example(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "16 MiB";
    case Dimension::bytes_per_second: return "1200 GB/s";
    case Dimension::seconds: return "1.5 us";
    case Dimension::hertz: return "1.05 GHz";
    case Dimension::flops_per_second: return "275 TFLOP/s";
    case Dimension::watts: return "192 W";
  }
  return "";
}

std::size_t decimal_number_length(std::string_view text) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
    return i - from;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    const std::size_t e = i++;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) i = e;  // "5e" or "5 eV": the number is the 5
  }
  return i;
}

std::optional<double> parse_decimal(std::string_view text) {
  if (text.empty() || decimal_number_length(text) != text.size()) return std::nullopt;
  return std::strtod(std::string(text).c_str(), nullptr);  // a decimal number: strtod reads all of it
}

bool looks_hexadecimal(std::string_view text) {
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) text.remove_prefix(1);
  return text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
}

namespace {

// Splits "<decimal number> <unit>" into the number and its unit; false when the text is not of that form.
bool split_quantity(std::string_view text, double& number, const UnitDef*& unit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  const std::size_t length = decimal_number_length(text);
  if (length == 0) return false;
  number = std::strtod(std::string(text.substr(0, length)).c_str(), nullptr);
  std::string_view rest = text.substr(length);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  for (const auto& u : kUnits) {
    if (rest == u.symbol) {
      unit = &u;
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<ParsedQuantity> parse_quantity(std::string_view text) {
  double number = 0;
  const UnitDef* unit = nullptr;
  if (!split_quantity(text, number, unit)) return std::nullopt;
  // A finite number times its unit can still overflow a double ("1e308 GHz"): that is no quantity either.
  const double si = number * unit->factor;
  if (!std::isfinite(number) || !std::isfinite(si)) return std::nullopt;
  return ParsedQuantity{si, unit->dimension};
}

bool quantity_out_of_range(std::string_view text) {
  double number = 0;
  const UnitDef* unit = nullptr;
  return split_quantity(text, number, unit) && !std::isfinite(number * unit->factor);
}

std::string units_for(Dimension d) {
  std::string out;
  for (const auto& u : kUnits) {
    if (u.dimension != d) continue;
    if (!out.empty()) out += ", ";
    out += u.symbol;
  }
  return out;
}

std::string format_bytes(Bytes b) {
  // The exact form with the smallest number: 32 GiB stays binary, 16 GB (v5e HBM) stays decimal.
  const std::uint64_t n = b.count();
  static constexpr std::array<std::pair<std::uint64_t, std::string_view>, 8> kForms{
      {{1ULL << 40, "TiB"}, {1'000'000'000'000ULL, "TB"}, {1ULL << 30, "GiB"}, {1'000'000'000ULL, "GB"},
       {1ULL << 20, "MiB"}, {1'000'000ULL, "MB"}, {1ULL << 10, "KiB"}, {1'000ULL, "KB"}}};
  std::uint64_t best = n;
  std::string_view unit = "B";
  for (const auto& [scale, sym] : kForms) {
    if (n >= scale && n % scale == 0 && n / scale < best) {
      best = n / scale;
      unit = sym;
    }
  }
  return fmt::format("{} {}", best, unit);
}

std::string format_bytes_approx(Bytes b) {
  static constexpr std::array<std::pair<double, std::string_view>, 4> kUnits{
      {{1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}}};
  const double n = b.as_double();
  for (const auto& [scale, sym] : kUnits) {
    if (n >= scale) return fmt::format("{:.3g} {}", n / scale, sym);
  }
  return fmt::format("{} B", b.count());
}

std::string format_bandwidth(BytesPerSecond r) { return format_in(Dimension::bytes_per_second, r.value()); }

std::string format_time(Seconds t) {
  if (t.value() == 0) return "0 s";
  return format_in(Dimension::seconds, t.value());
}

std::string format_frequency(Hertz f) { return format_in(Dimension::hertz, f.value()); }

std::string format_flops(FlopsPerSecond f) { return format_in(Dimension::flops_per_second, f.value()); }

std::string format_watts(Watts w) {
  if (w.value() == 0) return "0 W";
  return format_in(Dimension::watts, w.value());
}

}  // namespace tpusim
