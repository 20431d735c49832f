#include "tools/src/sweep/sweep_axes.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tpusim/core/units.h"


namespace tpusim::tools {
namespace fs = std::filesystem;

std::string Axis::label(std::size_t i) const {
  std::string s;
  for (std::size_t j = 0; j < values[i].size(); ++j) s += (j ? ", " : "") + values[i][j];
  return s;
}

std::string trim_spaces(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

SourceLoc at_column(SourceLoc loc, std::size_t column) {
  if (loc.line > 0) loc.column += static_cast<int>(column);
  return loc;
}

namespace {

constexpr std::size_t kMaxRangeValues = 10000;

// A range bound: its value, and how to render values in its unit.
struct Bound {
  Value value;
  std::string unit;  // the unit symbol as written, empty for a plain number
  double scale = 1;  // SI value of one `unit`
};

Bound parse_bound(const std::string& text, std::size_t column) {
  const Value v = value_from_text(text);
  if (v.kind != Value::Kind::number) {
    throw ExprError(fmt::format("'{}' is not a number or a quantity with a unit", text), column);
  }
  Bound b{v, {}, 1};
  if (!v.dim.none()) {
    const std::size_t length = decimal_number_length(text);  // value_from_text read a decimal quantity
    const double number = std::strtod(text.substr(0, length).c_str(), nullptr);
    b.unit = trim_spaces(text.substr(length));
    b.scale = number != 0 ? v.si / number : parse_quantity("1 " + b.unit)->si;
  }
  return b;
}

std::string render(double si, const Bound& like) {
  const double n = si / like.scale;
  const double rounded = std::round(n);
  // Values that land within rounding error of a whole number are that number (0.1 steps summed, 2^k).
  const double v = std::fabs(n - rounded) <= 1e-9 * std::max(1.0, std::fabs(n)) ? rounded : n;
  const std::string num = std::fabs(v) < 9e15 && v == std::floor(v) ? fmt::format("{:.0f}", v) : fmt::format("{:.12g}", v);
  return like.unit.empty() ? num : num + " " + like.unit;
}

}  // namespace

std::optional<std::vector<std::string>> expand_range(const std::string& text) {
  const std::size_t dots = text.find("..");
  if (dots == std::string::npos) return std::nullopt;
  const std::string first = trim_spaces(text.substr(0, dots));
  // A range starts with a number: "../programs/a.json" is a value.
  if (value_from_text(first).kind != Value::Kind::number) return std::nullopt;
  const std::string rest = trim_spaces(text.substr(dots + 2));
  enum class Mode { step, factor, points, log_points };
  struct Form {
    const char* word;
    Mode mode;
  };
  static constexpr Form kForms[] = {
      {" log points ", Mode::log_points}, {" points ", Mode::points}, {" step ", Mode::step}, {" x ", Mode::factor}};
  const std::string padded = " " + rest + " ";
  for (const auto& f : kForms) {
    const std::size_t at = padded.rfind(f.word);
    if (at == std::string::npos) continue;
    const std::string last_text = trim_spaces(padded.substr(0, at));
    const std::string arg_text = trim_spaces(padded.substr(at + std::string(f.word).size()));
    const Bound lo = parse_bound(first, 0);
    const Bound hi = parse_bound(last_text, dots + 2);
    if (lo.value.dim != hi.value.dim) {
      throw ExprError(fmt::format("the bounds have different units ({} and {})", unit_dim_label(lo.value.dim),
                                  unit_dim_label(hi.value.dim)), dots);
    }
    const double a = lo.value.si, b = hi.value.si;
    const double tolerance = 1e-9 * std::max(std::fabs(a), std::fabs(b));
    std::vector<double> si;
    if (f.mode == Mode::points || f.mode == Mode::log_points) {
      char* end = nullptr;
      const long n = std::strtol(arg_text.c_str(), &end, 10);
      if (*end != '\0' || n < 2 || static_cast<std::size_t>(n) > kMaxRangeValues) {
        throw ExprError(fmt::format("'points' needs a whole number of points from 2 to {}, found '{}'",
                                    kMaxRangeValues, arg_text), dots);
      }
      if (f.mode == Mode::log_points && (a <= 0 || b <= 0)) throw ExprError("a log range needs bounds > 0", 0);
      for (long i = 0; i < n; ++i) {
        const double t = static_cast<double>(i) / static_cast<double>(n - 1);
        si.push_back(f.mode == Mode::points ? a + (b - a) * t : a * std::pow(b / a, t));
      }
      si.back() = b;
    } else if (f.mode == Mode::step) {
      const Bound step = parse_bound(arg_text, dots);
      if (step.value.dim != lo.value.dim) {
        throw ExprError(fmt::format("the step's unit ({}) differs from the bounds' ({})",
                                    unit_dim_label(step.value.dim), unit_dim_label(lo.value.dim)),
                        dots);
      }
      const double s = step.value.si;
      if (s == 0 || (b - a) / s < -1e-9) throw ExprError("the step must go from the first bound towards the last", dots);
      for (std::size_t i = 0;; ++i) {
        const double v = a + static_cast<double>(i) * s;
        if (s > 0 ? v > b + tolerance : v < b - tolerance) break;
        if (si.size() == kMaxRangeValues) throw ExprError(fmt::format("more than {} values", kMaxRangeValues), dots);
        si.push_back(v);
      }
    } else {
      const Bound factor = parse_bound(arg_text, dots);
      if (!factor.value.dim.none()) throw ExprError("the factor after 'x' must be a plain number", dots);
      const double k = factor.value.si;
      if (a <= 0 || b < a || k <= 1) {
        throw ExprError("a geometric range needs 0 < first <= last and a factor > 1", dots);
      }
      for (std::size_t i = 0;; ++i) {
        const double v = a * std::pow(k, static_cast<double>(i));
        if (v > b + tolerance) break;
        if (si.size() == kMaxRangeValues) throw ExprError(fmt::format("more than {} values", kMaxRangeValues), dots);
        si.push_back(v);
      }
    }
    std::vector<std::string> out;
    for (double v : si) out.push_back(render(v, lo));
    return out;
  }
  throw ExprError("a range ends with 'step S', 'x F', 'points N' or 'log points N'", dots + 2);
}

std::vector<Diagnostic> at_sweep_lines(const ConfigError& e, const std::vector<std::string>& overrides,
                                       const std::vector<SourceLoc>& origins) {
  std::vector<Diagnostic> out;
  for (Diagnostic d : e.diagnostics()) {
    for (std::size_t i = 0; i < overrides.size() && i < origins.size(); ++i) {
      if (d.loc.file == "--set " + overrides[i]) {
        d.loc = origins[i];
        break;
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

Expansion expand_plan(const SweepPlan& plan, const FieldLookup& lookup) {
  Expansion ex;
  std::size_t total = 1;
  for (const auto& a : plan.axes) total *= a.values.size();
  ex.combinations = total;
  std::vector<std::size_t> choice(plan.axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    // Mixed radix, the last axis varying fastest.
    std::size_t rest = n;
    for (std::size_t i = plan.axes.size(); i-- > 0;) {
      choice[i] = rest % plan.axes[i].values.size();
      rest /= plan.axes[i].values.size();
    }
    Config c;
    c.choice = choice;
    std::map<std::string, Value> env;
    std::string where;  // the combination, for errors
    for (std::size_t i = 0; i < plan.axes.size(); ++i) {
      const Axis& a = plan.axes[i];
      for (std::size_t j = 0; j < a.paths.size(); ++j) {
        const std::string& v = a.values[choice[i]][j];
        c.overrides.push_back(a.paths[j] + "=" + v);
        c.origins.push_back(a.locs[choice[i]][j]);
        env[a.paths[j]] = value_from_text(v);
      }
      if (a.paths.size() > 1) env[a.name] = Value::of_text(a.label(choice[i]));
      where += fmt::format("{}{} = {}", where.empty() ? "" : ", ", a.name, a.label(choice[i]));
    }
    const Expression::Lookup find = [&](const std::string& name) -> std::optional<Value> {
      if (const auto it = env.find(name); it != env.end()) return it->second;
      try {
        if (auto text = lookup(c.overrides, name)) return value_from_text(*text);
      } catch (const ConfigError& e) {
        throw ConfigError(at_sweep_lines(e, c.overrides, c.origins));
      }
      return std::nullopt;
    };
    auto fail = [&](const SourceLoc& loc, const std::string& key, const std::string& what, const std::string& text) {
      Diagnostics d;
      d.error(loc, key, what, "an expression that holds for every combination",
              fmt::format("'{}' at {}", text, where));
      d.throw_if_any();
    };
    for (const auto& d : plan.derived) {
      std::optional<std::string> text;
      try {
        const Value v = d.expr.eval(find);
        text = value_to_text(v);
        if (!text) {
          fail(d.loc, "derive." + d.path,
               fmt::format("the value's unit ({}) is not one a field takes", unit_dim_label(v.dim)), d.expr.text());
        }
        env[d.path] = v;
      } catch (const ExprError& e) {
        fail(at_column(d.loc, e.column()), "derive." + d.path, e.what(), d.expr.text());
      }
      c.overrides.push_back(d.path + "=" + *text);
      c.origins.push_back(d.loc);
      c.derived_values.push_back(*text);
    }
    bool keep = true;
    for (const auto& f : plan.filters) {
      try {
        const Value v = f.expr.eval(find);
        if (v.kind != Value::Kind::boolean) {
          fail(f.loc, "filter", "a filter must be true or false", f.expr.text());
        }
        keep = keep && v.si != 0;
      } catch (const ExprError& e) {
        fail(at_column(f.loc, e.column()), "filter", e.what(), f.expr.text());
      }
      if (!keep) break;
    }
    if (!keep) continue;
    c.index = ex.configs.size();
    ex.configs.push_back(std::move(c));
  }
  for (const auto& c : ex.configs) {
    if (plan.seeds.empty()) {
      ex.runs.push_back(Run{ex.runs.size(), c.index, std::nullopt, c.overrides});
      continue;
    }
    for (const auto s : plan.seeds) {
      Run r{ex.runs.size(), c.index, s, c.overrides};
      r.overrides.push_back(fmt::format("seed={}", s));
      ex.runs.push_back(std::move(r));
    }
  }
  return ex;
}

}  // namespace tpusim::tools
