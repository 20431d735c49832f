#include "tools/src/sweep/sweep_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "tpusim/core/units.h"

namespace tpusim::tools {

namespace {

std::string number_text(double v) {
  if (std::fabs(v) < 9e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.12g}", v);
}

}  // namespace

Value value_from_text(const std::string& text) {
  if (text == "true") return Value::boolean(true);
  if (text == "false") return Value::boolean(false);
  if (const auto d = parse_decimal(text); d && std::isfinite(*d)) return Value::number(*d);
  if (const auto q = parse_quantity(text)) return Value::number(q->si, unit_dim(q->dimension));
  return Value::of_text(text);
}

std::optional<std::string> value_to_text(const Value& v) {
  if (v.kind == Value::Kind::text) return v.text;
  if (v.kind == Value::Kind::boolean) return std::string(v.si != 0 ? "true" : "false");
  if (v.dim.none()) return number_text(v.si);
  if (v.dim == unit_dim(Dimension::bytes)) return number_text(v.si) + " B";
  for (const Dimension d : {Dimension::bytes_per_second, Dimension::seconds, Dimension::hertz,
                            Dimension::flops_per_second, Dimension::watts}) {
    if (unit_dim(d) != v.dim) continue;
    const DisplayUnit& u = display_unit(d, v.si);
    return fmt::format("{:.12g} {}", v.si / u.scale, u.symbol);
  }
  return std::nullopt;
}

// ---- syntax tree ---------------------------------------------------------------------------------------------

// A run of one precedence level ("a + b - c", "x and y and z") is one `chain` node, its operands in `args` and
// the operator before each later operand in `steps`, so a long flat sum is a loop, not a deep tree: the tree is
// only as deep as the expression's nesting, which the parser bounds (kMaxExprDepth).
struct ExprNode {
  enum class Op { literal, name, call, neg, not_, chain, add, sub, mul, div, pow, lt, le, gt, ge, eq, ne, and_, or_ };
  struct Step {
    Op op;
    std::size_t column;
  };
  Op op = Op::literal;
  Value literal;
  std::string name;  // a name, or the function of a call
  std::vector<std::shared_ptr<const ExprNode>> args;
  std::vector<Step> steps;  // a chain: the operator before args[i + 1]
  std::size_t column = 0;
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

class Parser {
 public:
  Parser(std::string_view text, std::vector<std::string>& names) : s_(text), names_(names) {}

  NodePtr parse() {
    if (s_.size() > kMaxExprChars) {
      throw ExprError(fmt::format("longer than {} characters ({} here); split it into derived values", kMaxExprChars,
                                  s_.size()), 0);
    }
    NodePtr n = parse_or();
    skip();
    if (pos_ < s_.size()) throw ExprError(fmt::format("unexpected '{}'", s_.substr(pos_, 12)), pos_);
    return n;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view token) {
    skip();
    if (s_.substr(pos_, token.size()) != token) return false;
    // A word operator must not run into a name ("order" is not "or" + "der").
    if (name_start(token.front()) && pos_ + token.size() < s_.size() && name_char(s_[pos_ + token.size()])) return false;
    pos_ += token.size();
    return true;
  }
  // Opens one level of nesting (a parenthesis, a call's arguments, a sign, 'not', '^') for the guard's lifetime:
  // the parser and the evaluation recurse once per level, so the bound keeps both far from the stack's end.
  class Nesting {
   public:
    explicit Nesting(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxExprDepth) {
        throw ExprError(fmt::format("nested more than {} levels deep (each parenthesis, call, sign, 'not' and '^' "
                                    "opens one)", kMaxExprDepth), p_.pos_);
      }
    }
    ~Nesting() { --p_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& p_;
  };

  NodePtr node(ExprNode::Op op, std::size_t column, std::vector<NodePtr> args) {
    auto n = std::make_shared<ExprNode>();
    n->op = op;
    n->column = column;
    n->args = std::move(args);
    return n;
  }

  using Level = NodePtr (Parser::*)();
  struct BinaryOp {
    const char* token;
    ExprNode::Op op;
  };
  // One left-associative precedence level: operands parsed by `next`, joined by any of `ops`, as one chain node
  // (or the single operand itself).
  NodePtr left_assoc(Level next, std::initializer_list<BinaryOp> ops) {
    NodePtr first = (this->*next)();
    std::shared_ptr<ExprNode> chain;
    for (;;) {
      skip();
      const std::size_t at = pos_;
      const BinaryOp* hit = nullptr;
      for (const auto& o : ops) {
        if (eat(o.token)) {
          hit = &o;
          break;
        }
      }
      if (hit == nullptr) return chain ? chain : first;
      if (!chain) {
        chain = std::make_shared<ExprNode>();
        chain->op = ExprNode::Op::chain;
        chain->column = first->column;
        chain->args.push_back(first);
      }
      chain->steps.push_back(ExprNode::Step{hit->op, at});
      chain->args.push_back((this->*next)());
    }
  }
  NodePtr parse_or() { return left_assoc(&Parser::parse_and, {{"or", ExprNode::Op::or_}, {"||", ExprNode::Op::or_}}); }
  NodePtr parse_and() {
    return left_assoc(&Parser::parse_not, {{"and", ExprNode::Op::and_}, {"&&", ExprNode::Op::and_}});
  }
  NodePtr parse_not() {
    skip();
    const std::size_t at = pos_;
    if (eat("not") || (s_.substr(pos_, 2) != "!=" && eat("!"))) {
      const Nesting level(*this);
      return node(ExprNode::Op::not_, at, {parse_not()});
    }
    return parse_cmp();
  }
  NodePtr parse_cmp() {
    NodePtr l = parse_add();
    skip();
    const std::size_t at = pos_;
    static const std::pair<const char*, ExprNode::Op> kOps[] = {
        {"<=", ExprNode::Op::le}, {">=", ExprNode::Op::ge}, {"==", ExprNode::Op::eq},
        {"!=", ExprNode::Op::ne}, {"<", ExprNode::Op::lt},  {">", ExprNode::Op::gt}};
    for (const auto& [tok, op] : kOps) {
      if (eat(tok)) return node(op, at, {l, parse_add()});
    }
    return l;
  }
  NodePtr parse_add() { return left_assoc(&Parser::parse_mul, {{"+", ExprNode::Op::add}, {"-", ExprNode::Op::sub}}); }
  NodePtr parse_mul() {
    return left_assoc(&Parser::parse_unary, {{"*", ExprNode::Op::mul}, {"/", ExprNode::Op::div}});
  }
  NodePtr parse_unary() {
    skip();
    const std::size_t at = pos_;
    if (eat("-")) {
      const Nesting level(*this);
      return node(ExprNode::Op::neg, at, {parse_unary()});
    }
    if (eat("+")) {
      const Nesting level(*this);
      return parse_unary();
    }
    NodePtr base = parse_primary();
    skip();
    const std::size_t pat = pos_;
    if (eat("^")) {
      const Nesting level(*this);
      return node(ExprNode::Op::pow, pat, {base, parse_unary()});
    }
    return base;
  }

  // A unit right after a number: the longest run of letters and '/' that is a unit tpusim knows (or FLOP).
  std::optional<Value> unit_after_number(double number) {
    std::size_t p = pos_;
    while (p < s_.size() && s_[p] == ' ') ++p;
    if (p >= s_.size() || !std::isalpha(static_cast<unsigned char>(s_[p]))) return std::nullopt;
    std::size_t end = p;
    while (end < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[end])) || s_[end] == '/')) ++end;
    for (std::size_t e = end; e > p; --e) {
      if (e < s_.size() && name_char(s_[e])) continue;  // a unit must end where a name could not go on
      if (auto v = unit(std::string(s_.substr(p, e - p)))) {
        pos_ = e;
        return Value::number(number * v->si, v->dim);
      }
    }
    return std::nullopt;
  }

  // One of tpusim's units ("TB/s", "GHz", "MiB"), FLOP, or a ratio of two of them ("FLOP/B").
  static std::optional<Value> unit(const std::string& sym) {
    if (sym == "FLOP" || sym == "FLOPs") return Value::number(1, dim::flops);
    if (const auto q = parse_quantity("1 " + sym)) return Value::number(q->si, unit_dim(q->dimension));
    const auto slash = sym.find('/');
    if (slash == std::string::npos || sym.find('/', slash + 1) != std::string::npos) return std::nullopt;
    const auto num = unit(sym.substr(0, slash)), den = unit(sym.substr(slash + 1));
    if (!num || !den) return std::nullopt;
    Value v = Value::number(num->si / den->si);
    for (int i = 0; i < 4; ++i) v.dim.e[i] = num->dim.e[i] - den->dim.e[i];
    return v;
  }

  NodePtr parse_primary() {
    skip();
    const std::size_t at = pos_;
    if (pos_ >= s_.size()) throw ExprError("unexpected end of the expression", pos_);
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && pos_ + 1 < s_.size() &&
                                                        std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])))) {
      const std::string_view rest = s_.substr(pos_);
      const std::size_t length = decimal_number_length(rest);  // decimal only, as config values
      const double d = std::strtod(std::string(rest.substr(0, length)).c_str(), nullptr);
      pos_ += length;
      auto n = std::make_shared<ExprNode>();
      n->column = at;
      n->literal = unit_after_number(d).value_or(Value::number(d));
      return n;
    }
    if (c == '"' || c == '\'') {
      const std::size_t close = s_.find(c, pos_ + 1);
      if (close == std::string_view::npos) throw ExprError("unterminated text", at);
      auto n = std::make_shared<ExprNode>();
      n->column = at;
      n->literal = Value::of_text(std::string(s_.substr(pos_ + 1, close - pos_ - 1)));
      pos_ = close + 1;
      return n;
    }
    if (c == '(') {
      ++pos_;
      const Nesting level(*this);
      NodePtr inner = parse_or();
      if (!eat(")")) throw ExprError("expected ')'", pos_);
      return inner;
    }
    if (name_start(c)) {
      std::size_t end = pos_;
      while (end < s_.size() && name_char(s_[end])) ++end;
      std::string word(s_.substr(pos_, end - pos_));
      pos_ = end;
      auto n = std::make_shared<ExprNode>();
      n->column = at;
      if (word == "true" || word == "false") {
        n->literal = Value::boolean(word == "true");
        return n;
      }
      n->name = word;
      if (eat("(")) {
        const Nesting level(*this);
        n->op = ExprNode::Op::call;
        if (!eat(")")) {
          do {
            n->args.push_back(parse_or());
          } while (eat(","));
          if (!eat(")")) throw ExprError("expected ',' or ')' in the arguments", pos_);
        }
        return n;
      }
      n->op = ExprNode::Op::name;
      if (std::find(names_.begin(), names_.end(), word) == names_.end()) names_.push_back(word);
      return n;
    }
    throw ExprError(fmt::format("unexpected '{}'", c), at);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::string>& names_;
};

// ---- evaluation ----------------------------------------------------------------------------------------------

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::text: return fmt::format("text '{}'", v.text);
    case Value::Kind::boolean: return "a truth value";
    case Value::Kind::number:
      return v.dim.none() ? "a plain number" : fmt::format("a quantity in {}", unit_dim_label(v.dim));
  }
  return "";
}

class Evaluator {
 public:
  explicit Evaluator(const Expression::Lookup& lookup) : lookup_(lookup) {}

  Value eval(const ExprNode& n) {
    using Op = ExprNode::Op;
    switch (n.op) {
      case Op::literal: return n.literal;
      case Op::name: {
        if (auto v = lookup_(n.name)) return *v;
        throw ExprError(fmt::format("unknown name '{}' (names are sweep axes, derived values, columns, or "
                                    "resolved scenario fields such as chip.clock)", n.name), n.column);
      }
      case Op::call: return call(n);
      case Op::neg: {
        Value v = number(n.column, eval(*n.args[0]), "'-'");
        v.si = -v.si;
        return v;
      }
      case Op::not_: return Value::boolean(!truth(n.column, eval(*n.args[0]), "'not'"));
      case Op::chain: return chain(n);
      default: break;
    }
    return finite(n.column, binary(n.op, n.column, eval(*n.args[0]), eval(*n.args[1])));
  }

 private:
  // A column of "inf" or "nan" compares and sorts as nonsense; an operation whose result overflows is refused.
  static Value finite(std::size_t at, Value v) {
    if (v.kind == Value::Kind::number && !std::isfinite(v.si)) {
      throw ExprError("the result is too large (or not a number) to be a value", at);
    }
    return v;
  }

  // Left to right; 'and' and 'or' skip an operand whose value cannot change the result, as a binary tree would.
  Value chain(const ExprNode& n) {
    using Op = ExprNode::Op;
    Value acc = eval(*n.args[0]);
    for (std::size_t i = 1; i < n.args.size(); ++i) {
      const ExprNode::Step& step = n.steps[i - 1];
      if (step.op == Op::and_ || step.op == Op::or_) {
        const char* what = step.op == Op::and_ ? "'and'" : "'or'";
        const bool left = truth(step.column, acc, what);
        if (left == (step.op == Op::or_)) {
          acc = Value::boolean(left);
          continue;
        }
        acc = Value::boolean(truth(step.column, eval(*n.args[i]), what));
        continue;
      }
      acc = finite(step.column, binary(step.op, step.column, acc, eval(*n.args[i])));
    }
    return acc;
  }

  // The arithmetic and comparison operators; `at` is the operator's column, for errors.
  static Value binary(ExprNode::Op op, std::size_t at, const Value& a, const Value& b) {
    using Op = ExprNode::Op;
    switch (op) {
      case Op::add:
      case Op::sub: {
        same_dim(at, a, b, op == Op::add ? "'+'" : "'-'");
        return Value::number(op == Op::add ? a.si + b.si : a.si - b.si, a.dim);
      }
      case Op::mul: {
        number(at, a, "'*'");
        number(at, b, "'*'");
        UnitDim d;
        for (int i = 0; i < 4; ++i) d.e[i] = a.dim.e[i] + b.dim.e[i];
        return Value::number(a.si * b.si, d);
      }
      case Op::div: {
        number(at, a, "'/'");
        number(at, b, "'/'");
        if (b.si == 0) throw ExprError("division by zero", at);
        UnitDim d;
        for (int i = 0; i < 4; ++i) d.e[i] = a.dim.e[i] - b.dim.e[i];
        return Value::number(a.si / b.si, d);
      }
      case Op::pow: {
        number(at, a, "'^'");
        number(at, b, "'^'");
        if (!b.dim.none()) throw ExprError("an exponent must be a plain number, found " + describe(b), at);
        if (!a.dim.none() && b.si != std::floor(b.si)) {
          throw ExprError("a quantity with a unit can only be raised to a whole power", at);
        }
        // A unit's power stays small: a time to the 65th power means nothing, and casting a huge exponent to
        // int (or multiplying powers without bound) is undefined behaviour.
        constexpr int kMaxUnitPower = 64;
        UnitDim d;
        if (!a.dim.none()) {
          if (std::fabs(b.si) > kMaxUnitPower) {
            throw ExprError(fmt::format("a quantity with a unit can be raised to at most the power {}, found {}",
                                        kMaxUnitPower, b.si),
                            at);
          }
          for (int i = 0; i < 4; ++i) {
            d.e[i] = a.dim.e[i] * static_cast<int>(b.si);
            if (std::abs(d.e[i]) > kMaxUnitPower) {
              throw ExprError(fmt::format("{} raised to {} has a unit power beyond {}", describe(a), b.si,
                                          kMaxUnitPower),
                              at);
            }
          }
        }
        return Value::number(std::pow(a.si, b.si), d);
      }
      case Op::eq:
      case Op::ne: {
        bool equal = false;
        if (a.kind == Value::Kind::text || b.kind == Value::Kind::text) {
          if (a.kind != b.kind) throw ExprError(fmt::format("cannot compare {} with {}", describe(a), describe(b)), at);
          equal = a.text == b.text;
        } else if (a.kind == Value::Kind::boolean || b.kind == Value::Kind::boolean) {
          if (a.kind != b.kind) throw ExprError(fmt::format("cannot compare {} with {}", describe(a), describe(b)), at);
          equal = a.si == b.si;
        } else {
          same_dim(at, a, b, "a comparison");
          equal = a.si == b.si;
        }
        return Value::boolean(op == Op::eq ? equal : !equal);
      }
      case Op::lt: same_dim(at, a, b, "a comparison"); return Value::boolean(a.si < b.si);
      case Op::le: same_dim(at, a, b, "a comparison"); return Value::boolean(a.si <= b.si);
      case Op::gt: same_dim(at, a, b, "a comparison"); return Value::boolean(a.si > b.si);
      case Op::ge: same_dim(at, a, b, "a comparison"); return Value::boolean(a.si >= b.si);
      default: break;
    }
    throw ExprError("internal: unknown operator", at);
  }

  static const Value& number(std::size_t at, const Value& v, const char* what) {
    if (v.kind != Value::Kind::number) throw ExprError(fmt::format("{} needs numbers, found {}", what, describe(v)), at);
    return v;
  }
  static void same_dim(std::size_t at, const Value& a, const Value& b, const char* what) {
    number(at, a, what);
    number(at, b, what);
    if (a.dim != b.dim) {
      throw ExprError(fmt::format("{} needs the same unit on both sides, found {} and {}", what, unit_dim_label(a.dim),
                                  unit_dim_label(b.dim)), at);
    }
  }
  static bool truth(std::size_t at, const Value& v, const char* what) {
    if (v.kind != Value::Kind::boolean) throw ExprError(fmt::format("{} needs true or false, found {}", what, describe(v)), at);
    return v.si != 0;
  }

  Value call(const ExprNode& n) {
    const std::string& f = n.name;
    auto arity = [&](std::size_t k) {
      if (n.args.size() != k) throw ExprError(fmt::format("{}() takes {} argument{}", f, k, k == 1 ? "" : "s"), n.column);
    };
    if (f == "if") {
      arity(3);
      return truth(n.column, eval(*n.args[0]), "if()") ? eval(*n.args[1]) : eval(*n.args[2]);
    }
    if (f == "min" || f == "max") {
      if (n.args.empty()) throw ExprError(f + "() needs at least one argument", n.column);
      Value best = number(n.column, eval(*n.args[0]), "min()/max()");
      for (std::size_t i = 1; i < n.args.size(); ++i) {
        const Value v = eval(*n.args[i]);
        same_dim(n.column, best, v, "min()/max()");
        if (f == "min" ? v.si < best.si : v.si > best.si) best = v;
      }
      return best;
    }
    if (f == "abs") {
      arity(1);
      Value v = number(n.column, eval(*n.args[0]), "abs()");
      v.si = std::fabs(v.si);
      return v;
    }
    if (f == "sqrt") {
      arity(1);
      Value v = number(n.column, eval(*n.args[0]), "sqrt()");
      for (int& e : v.dim.e) {
        if (e % 2 != 0) throw ExprError("sqrt() of a quantity needs even powers of its units", n.column);
        e /= 2;
      }
      if (v.si < 0) throw ExprError("sqrt() of a negative number", n.column);
      v.si = std::sqrt(v.si);
      return v;
    }
    static const std::pair<const char*, double (*)(double)> kPlain[] = {
        {"log2", [](double x) { return std::log2(x); }},   {"log10", [](double x) { return std::log10(x); }},
        {"ceil", [](double x) { return std::ceil(x); }},   {"floor", [](double x) { return std::floor(x); }},
        {"round", [](double x) { return std::round(x); }}};
    for (const auto& [name, fn] : kPlain) {
      if (f != name) continue;
      arity(1);
      const Value v = number(n.column, eval(*n.args[0]), name);
      if (!v.dim.none()) {
        throw ExprError(fmt::format("{}() takes a plain number, found {} (divide by a unit first, e.g. x / 1 GB/s)",
                                    f, describe(v)), n.column);
      }
      if ((f == "log2" || f == "log10") && v.si <= 0) throw ExprError(f + "() of a number <= 0", n.column);
      return Value::number(fn(v.si));
    }
    throw ExprError(fmt::format("unknown function '{}' (known: min, max, abs, sqrt, log2, log10, ceil, floor, "
                                "round, if)", f), n.column);
  }

  const Expression::Lookup& lookup_;
};

}  // namespace

Expression Expression::parse(std::string_view text) {
  Expression e;
  e.text_ = std::string(text);
  Parser p(e.text_, e.names_);
  e.root_ = p.parse();
  return e;
}

Value Expression::eval(const Lookup& lookup) const {
  Evaluator ev(lookup);
  return ev.eval(*root_);
}

}  // namespace tpusim::tools
