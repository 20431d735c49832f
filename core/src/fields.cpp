#include "tpusim/core/fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace tpusim {
namespace {

bool parse_int_text(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

// Numbers are decimal everywhere (units.cpp, decimal_number_length); a value written in hexadecimal says so.
void note_hexadecimal(const ConfigNode& n, std::string& expected) {
  if (n.is_scalar() && looks_hexadecimal(n.scalar())) expected += " (decimal: hexadecimal is not read)";
}

bool parse_quantity_node(const ConfigNode& n, Dimension want, double& out, std::string& expected) {
  expected = fmt::format("a {} with a unit, e.g. '{}' (units: {})", dimension_name(want), dimension_example(want),
                         units_for(want));
  if (!n.is_scalar()) return false;
  const auto q = parse_quantity(n.scalar());
  if (!q) {
    if (parse_decimal(n.scalar())) expected += "; a bare number has no unit";
    note_hexadecimal(n, expected);
    if (quantity_out_of_range(n.scalar())) {
      expected = fmt::format("a finite {}, e.g. '{}' (this value is out of range)", dimension_name(want),
                             dimension_example(want));
    }
    return false;
  }
  if (q->dimension != want) {
    expected += fmt::format("; '{}' is a {}", n.scalar(), dimension_name(q->dimension));
    return false;
  }
  out = q->si;
  return true;
}

template <class Q>
bool parse_quantity_as(const ConfigNode& n, Dimension want, Q& out, std::string& expected) {
  double v = 0;
  if (!parse_quantity_node(n, want, v, expected)) return false;
  out = Q(v);
  return true;
}

}  // namespace

bool parse_scalar(const ConfigNode& n, std::int64_t& out, std::string& expected) {
  expected = "an integer";
  note_hexadecimal(n, expected);
  return n.is_scalar() && parse_int_text(n.scalar(), out);
}

bool parse_scalar(const ConfigNode& n, int& out, std::string& expected) {
  std::int64_t v = 0;
  if (!parse_scalar(n, v, expected)) return false;
  if (v < INT32_MIN || v > INT32_MAX) {
    expected = "an integer that fits in 32 bits";
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

bool parse_scalar(const ConfigNode& n, double& out, std::string& expected) {
  expected = "a number";
  if (!n.is_scalar()) return false;
  note_hexadecimal(n, expected);
  const std::optional<double> v = parse_decimal(n.scalar());
  if (!v || !std::isfinite(*v)) return false;
  out = *v;
  return true;
}

bool parse_scalar(const ConfigNode& n, bool& out, std::string& expected) {
  expected = "true or false";
  if (!n.is_scalar()) return false;
  if (n.scalar() == "true") out = true;
  else if (n.scalar() == "false") out = false;
  else return false;
  return true;
}

bool parse_scalar(const ConfigNode& n, std::string& out, std::string& expected) {
  expected = "a text value";
  if (!n.is_scalar()) return false;
  out = n.scalar();
  return true;
}

bool parse_scalar(const ConfigNode& n, Bytes& out, std::string& expected) {
  double v = 0;
  if (!parse_quantity_node(n, Dimension::bytes, v, expected)) return false;
  if (v < 0 || v != std::floor(v) || v >= 18446744073709551616.0) {
    expected = "a whole, non-negative number of bytes";
    return false;
  }
  out = Bytes(static_cast<std::uint64_t>(v));
  return true;
}

bool parse_scalar(const ConfigNode& n, BytesPerSecond& out, std::string& expected) {
  return parse_quantity_as(n, Dimension::bytes_per_second, out, expected);
}
bool parse_scalar(const ConfigNode& n, Seconds& out, std::string& expected) {
  return parse_quantity_as(n, Dimension::seconds, out, expected);
}
bool parse_scalar(const ConfigNode& n, Hertz& out, std::string& expected) {
  return parse_quantity_as(n, Dimension::hertz, out, expected);
}
bool parse_scalar(const ConfigNode& n, FlopsPerSecond& out, std::string& expected) {
  return parse_quantity_as(n, Dimension::flops_per_second, out, expected);
}
bool parse_scalar(const ConfigNode& n, Watts& out, std::string& expected) {
  return parse_quantity_as(n, Dimension::watts, out, expected);
}

bool parse_scalar(const ConfigNode& n, std::vector<int>& out, std::string& expected) {
  expected = "a list of integers, e.g. [4, 4, 4]";
  if (!n.is_seq()) return false;
  out.clear();
  for (const auto& item : n.items()) {
    int v = 0;
    std::string ignored;
    if (!parse_scalar(item, v, ignored)) {
      expected = fmt::format("a list of integers, each from {} to {}; entry {} is {}", std::numeric_limits<int>::min(),
                             std::numeric_limits<int>::max(), out.size(), item.describe());
      return false;
    }
    out.push_back(v);
  }
  return true;
}

std::string format_value(std::int64_t v) { return fmt::format("{}", v); }
std::string format_value(int v) { return fmt::format("{}", v); }
std::string format_value(double v) { return fmt::format("{:.6g}", v); }
std::string format_value(bool v) { return v ? "true" : "false"; }
std::string format_value(const std::string& v) { return v; }
std::string format_value(Bytes v) { return format_bytes(v); }
std::string format_value(BytesPerSecond v) { return format_bandwidth(v); }
std::string format_value(Seconds v) { return format_time(v); }
std::string format_value(Hertz v) { return format_frequency(v); }
std::string format_value(FlopsPerSecond v) { return format_flops(v); }
std::string format_value(Watts v) { return format_watts(v); }
std::string format_value(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

template <> std::string kind_name<std::int64_t>() { return "integer"; }
template <> std::string kind_name<int>() { return "integer"; }
template <> std::string kind_name<double>() { return "number"; }
template <> std::string kind_name<bool>() { return "boolean"; }
template <> std::string kind_name<std::string>() { return "text"; }
template <> std::string kind_name<Bytes>() { return "size"; }
template <> std::string kind_name<BytesPerSecond>() { return "bandwidth"; }
template <> std::string kind_name<Seconds>() { return "duration"; }
template <> std::string kind_name<Hertz>() { return "frequency"; }
template <> std::string kind_name<FlopsPerSecond>() { return "compute rate"; }
template <> std::string kind_name<Watts>() { return "power"; }
template <> std::string kind_name<std::vector<int>>() { return "list of integers"; }

namespace {
double as_number(double v) { return v; }
double as_number(int v) { return v; }
double as_number(std::int64_t v) { return static_cast<double>(v); }
double as_number(Bytes v) { return v.as_double(); }
template <class Tag> double as_number(Quantity<Tag> v) { return v.value(); }
}  // namespace

template <class T>
Constraint<T> positive() {
  return [](const T& v) { return as_number(v) > 0 ? std::string{} : std::string("a value greater than zero"); };
}
template <class T>
Constraint<T> non_negative() {
  return [](const T& v) { return as_number(v) >= 0 ? std::string{} : std::string("a value of zero or more"); };
}

template Constraint<int> positive<int>();
template Constraint<std::int64_t> positive<std::int64_t>();
template Constraint<double> positive<double>();
template Constraint<Bytes> positive<Bytes>();
template Constraint<BytesPerSecond> positive<BytesPerSecond>();
template Constraint<Seconds> positive<Seconds>();
template Constraint<Hertz> positive<Hertz>();
template Constraint<FlopsPerSecond> positive<FlopsPerSecond>();
template Constraint<Watts> positive<Watts>();
template Constraint<int> non_negative<int>();
template Constraint<std::int64_t> non_negative<std::int64_t>();
template Constraint<double> non_negative<double>();
template Constraint<Seconds> non_negative<Seconds>();
template Constraint<Bytes> non_negative<Bytes>();
template Constraint<BytesPerSecond> non_negative<BytesPerSecond>();

Constraint<double> fraction() {
  return [](const double& v) { return v > 0 && v <= 1 ? std::string{} : std::string("a fraction in (0, 1]"); };
}

Constraint<int> at_least(int lo) {
  return [lo](const int& v) { return v >= lo ? std::string{} : fmt::format("an integer >= {}", lo); };
}

Constraint<int> in_range(int lo, int hi) {
  return [lo, hi](const int& v) {
    return v >= lo && v <= hi ? std::string{} : fmt::format("an integer in [{}, {}]", lo, hi);
  };
}

Constraint<std::int64_t> in_range(std::int64_t lo, std::int64_t hi) {
  return [lo, hi](const std::int64_t& v) {
    return v >= lo && v <= hi ? std::string{} : fmt::format("an integer in [{}, {}]", lo, hi);
  };
}

Constraint<Bytes> in_range(Bytes lo, Bytes hi) {
  return [lo, hi](const Bytes& v) {
    return v >= lo && v <= hi ? std::string{}
                              : fmt::format("a size from {} to {}", format_bytes(lo), format_bytes(hi));
  };
}

Constraint<std::string> one_of(std::vector<std::string> choices) {
  return [choices](const std::string& v) {
    if (std::find(choices.begin(), choices.end(), v) != choices.end()) return std::string{};
    return suggestion(v, choices);
  };
}

Constraint<std::vector<int>> positive_list(std::size_t min_len, std::size_t max_len) {
  return [min_len, max_len](const std::vector<int>& v) {
    const std::string want = fmt::format("a list of {} to {} integers, each >= 1", min_len, max_len);
    if (v.size() < min_len || v.size() > max_len) return fmt::format("{}; it has {}", want, v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 1) return fmt::format("{}; entry {} is {}", want, i, v[i]);
    }
    return std::string{};
  };
}

}  // namespace tpusim
