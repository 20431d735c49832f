#pragma once
// A small, safe expression language with units for sweeps: derived values (`2 FLOP * chip.clock * ...`),
// filters (`chip.hbm.bandwidth >= 1 TB/s and pod != "v4-2x2x1"`) and computed table columns
// (`chips * step_time_s`). No side effects, no loops, no calls out: numbers with units, text, names, the
// arithmetic and comparison operators, `and`/`or`/`not`, and a few pure functions. docs/sweeps.md has the
// grammar.
//
// Units: a number may be followed by a unit ("2 TB/s", "1.05 GHz", "16 MiB", "3 FLOP"); values carry their
// dimension (core's UnitDim: powers of bytes, seconds, FLOPs and watts), so `1 TB/s * 2 s` is 2e12 bytes and
// adding a size to a time is an error naming both dimensions.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/units.h"

namespace tpusim::tools {

// A value: a number in SI base units with its dimension, a truth value, or text (e.g. a pod name).
struct Value {
  enum class Kind { number, boolean, text };
  Kind kind = Kind::number;
  double si = 0;
  UnitDim dim;
  std::string text;

  static Value number(double si, UnitDim dim = {}) { return Value{Kind::number, si, dim, {}}; }
  static Value boolean(bool b) { return Value{Kind::boolean, b ? 1.0 : 0.0, {}, {}}; }
  static Value of_text(std::string t) { return Value{Kind::text, 0, {}, std::move(t)}; }
};

// The value of a sweep value's text: "4096" and "1.5" are numbers, "2 TB/s" a quantity, "true"/"false"
// truth values, anything else text.
[[nodiscard]] Value value_from_text(const std::string& text);

// Renders a value as YAML text a `--set` accepts: dimensionless integers as integers, quantities in the
// largest unit that keeps the mantissa >= 1 with 12 significant digits ("275.251 TFLOP/s"), text as it is.
// nullopt when the dimension has no unit a field takes (e.g. B*s).
[[nodiscard]] std::optional<std::string> value_to_text(const Value& v);

// An error in an expression: what is wrong and the 0-based column in the expression text where it was found.
class ExprError : public std::runtime_error {
 public:
  ExprError(std::string what, std::size_t column) : std::runtime_error(std::move(what)), column_(column) {}
  [[nodiscard]] std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

struct ExprNode;

// Bounds on an expression, as the YAML reader bounds a file: the sweeps' expressions are a line or two with a
// few parentheses. Nesting (parentheses, calls, signs, 'not', '^') is what the parser and the evaluation recurse
// on, so it is bounded; a long run of one operator ("a + b + ..."), bounded only by the length, is a loop.
inline constexpr std::size_t kMaxExprChars = 4096;
inline constexpr int kMaxExprDepth = 64;

class Expression {
 public:
  // Parses the text; throws ExprError on a syntax error or an expression beyond the bounds above.
  static Expression parse(std::string_view text);

  // Names the expression refers to, in order of first use.
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  [[nodiscard]] const std::string& text() const { return text_; }

  // Looks a name up; nullopt if unknown (an error naming the name).
  using Lookup = std::function<std::optional<Value>(const std::string& name)>;
  // Evaluates; throws ExprError on a unit mismatch, an unknown name or function, or a bad argument.
  [[nodiscard]] Value eval(const Lookup& lookup) const;

 private:
  std::string text_;
  std::shared_ptr<const ExprNode> root_;
  std::vector<std::string> names_;
};

}  // namespace tpusim::tools
