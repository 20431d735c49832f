// Fuzzes the sweep expression language (filter, derive, columns): parses the text and, when it parses,
// evaluates it with every name bound to a value whose kind follows the name (a quantity, a plain number, text
// or a truth value), so unit checks, comparisons and calls run as well as the parser.
#include <cstdint>
#include <optional>
#include <string>

#include "tools/src/sweep/sweep_expr.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim::tools;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Expression e = Expression::parse(text);
    (void)e.eval([](const std::string& name) -> std::optional<Value> {
      switch (name.size() % 5) {
        case 0: return Value::number(2e12, unit_dim(tpusim::Dimension::bytes_per_second));
        case 1: return Value::number(3);
        case 2: return Value::of_text(name);
        case 3: return Value::boolean(name.size() % 2 == 0);
        default: return std::nullopt;  // an unknown name
      }
    });
  } catch (const ExprError&) {
  }
  return 0;
}
