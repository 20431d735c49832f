// The data-member counter of class_members.h: a lexer that keeps identifiers, numbers, literals and
// punctuation (one character each but `::`), then a reader of class bodies over the tokens. Brackets are
// paired once after lexing; `<` opens a template argument list when it follows a name and a matching `>`
// comes before anything a template argument cannot hold (`;`, an unpaired closer, `&&`, `||`), which is how
// `std::map<int, int> a, b;` keeps its inner comma and `bool c = a < b;` does not lose its `<`.
#include "class_members.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::testing {
namespace {

enum class TokenKind { name, number, literal, punct };

struct Token {
  std::string_view text;
  TokenKind kind = TokenKind::punct;
  int line = 0;
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Token> run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        line_start_ = true;
      } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
        ++i_;
      } else if (c == '#' && line_start_) {
        skip_directive();
      } else if (s_.compare(i_, 2, "//") == 0) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (s_.compare(i_, 2, "/*") == 0) {
        skip_until("*/", i_ + 2);
      } else {
        line_start_ = false;
        token();
      }
    }
    return std::move(out_);
  }

 private:
  void token() {
    const std::size_t start = i_;
    const char c = s_[i_];
    if (name_char(c) && std::isdigit(static_cast<unsigned char>(c)) == 0) {
      while (i_ < s_.size() && name_char(s_[i_])) ++i_;
      const std::string_view word = s_.substr(start, i_ - start);
      if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'') && literal_prefix(word)) {
        literal(start, !word.empty() && word.back() == 'R' && s_[i_] == '"');
      } else {
        push(start, TokenKind::name);
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])) != 0)) {
      number();
    } else if (c == '"' || c == '\'') {
      literal(start, false);
    } else {
      i_ += s_.compare(i_, 2, "::") == 0 ? 2 : 1;
      push(start, TokenKind::punct);
    }
  }

  static bool literal_prefix(std::string_view w) {
    for (const std::string_view p : {"R", "u8", "u", "U", "L", "u8R", "uR", "UR", "LR"}) {
      if (w == p) return true;
    }
    return false;
  }

  // A preprocessing number: digits, letters, `.`, digit separators, and a sign after an exponent.
  void number() {
    const std::size_t start = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      const char prev = s_[i_ - (i_ > start ? 1 : 0)];
      if (name_char(c) || c == '.') {
        ++i_;
      } else if (c == '\'' && i_ + 1 < s_.size() && name_char(s_[i_ + 1])) {
        ++i_;
      } else if ((c == '+' || c == '-') && i_ > start && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) {
        ++i_;
      } else {
        break;
      }
    }
    push(start, TokenKind::number);
  }

  // A string or character literal from its quote at i_ (its prefix starting at `start`); raw strings end at
  // )delimiter".
  void literal(std::size_t start, bool raw) {
    const char quote = s_[i_++];
    if (raw) {
      const std::size_t open = s_.find('(', i_);
      const std::string close = ")" + std::string(s_.substr(i_, open - i_)) + "\"";
      skip_until(close, open);
    } else {
      while (i_ < s_.size() && s_[i_] != quote && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
      ++i_;
    }
    push(start, TokenKind::literal);
  }

  void skip_until(const std::string& end, std::size_t from) {
    const std::size_t at = s_.find(end, from);
    const std::size_t stop = at == std::string_view::npos ? s_.size() : at + end.size();
    for (; i_ < stop; ++i_) line_ += s_[i_] == '\n' ? 1 : 0;
  }

  // A preprocessor line, with its continuations.
  void skip_directive() {
    while (i_ < s_.size() && s_[i_] != '\n') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        ++line_;
        ++i_;
      }
      ++i_;
    }
  }

  void push(std::size_t start, TokenKind kind) { out_.push_back(Token{s_.substr(start, i_ - start), kind, line_}); }

  std::string_view s_;
  std::size_t i_ = 0;
  int line_ = 1;
  bool line_start_ = true;
  std::vector<Token> out_;
};

// Where a class or enum head leads: the body's opening brace (none for a declaration) and its name.
struct Head {
  std::string name;
  std::size_t body = 0;
  bool has_body = false;
  std::size_t end = 0;  // the first token after the head (after the body's `}` when it has one)
};

class Reader {
 public:
  explicit Reader(std::vector<Token> tokens) : t_(std::move(tokens)), partner_(t_.size(), t_.size()) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (is(i, "(") || is(i, "[") || is(i, "{")) {
        open.push_back(i);
      } else if ((is(i, ")") || is(i, "]") || is(i, "}")) && !open.empty()) {
        partner_[open.back()] = i;
        open.pop_back();
      }
    }
  }

  std::vector<ClassMembers> classes() {
    struct Found {
      ClassMembers info;
      std::size_t open, close;
    };
    std::vector<Found> found;
    for (std::size_t k = 0; k < t_.size(); ++k) {
      if (!class_key(k) || (k > 0 && (is(k - 1, "enum") || is(k - 1, "friend")))) continue;
      const Head h = head(k);
      if (!h.has_body) continue;
      std::string name = h.name.empty() ? "<anonymous>" : h.name;
      for (auto o = found.rbegin(); o != found.rend(); ++o) {  // the innermost class around it names it
        if (o->open < h.body && h.body < o->close) {
          name = o->info.name + "::" + name;
          break;
        }
      }
      const std::size_t close = partner_[h.body];
      found.push_back(Found{ClassMembers{name, t_[h.body].line, count(h.body + 1, close)}, h.body, close});
    }
    std::vector<ClassMembers> out;
    out.reserve(found.size());
    for (Found& f : found) out.push_back(std::move(f.info));
    return out;
  }

 private:
  [[nodiscard]] bool is(std::size_t i, std::string_view s) const { return i < t_.size() && t_[i].text == s; }
  [[nodiscard]] bool class_key(std::size_t i) const { return is(i, "class") || is(i, "struct") || is(i, "union"); }
  [[nodiscard]] bool name_at(std::size_t i) const { return i < t_.size() && t_[i].kind == TokenKind::name; }
  [[nodiscard]] std::size_t after_group(std::size_t i) const { return std::min(partner_[i], t_.size()) + 1; }

  // The `>` closing the template argument list that `<` at i opens, or 0 when it is no such list.
  [[nodiscard]] std::size_t angle_close(std::size_t i) const {
    if (!is(i, "<") || i == 0 || !name_at(i - 1) || is(i - 1, "operator")) return 0;
    int depth = 0;
    for (std::size_t j = i; j < t_.size();) {
      if (is(j, "(") || is(j, "[")) {
        j = after_group(j);
        continue;
      }
      if (is(j, ";") || is(j, "{") || is(j, "}") || is(j, ")") || is(j, "]")) return 0;
      if ((is(j, "&") && is(j + 1, "&")) || (is(j, "|") && is(j + 1, "|"))) return 0;
      if (is(j, "<")) ++depth;
      if (is(j, ">") && --depth == 0) return j;
      ++j;
    }
    return 0;
  }

  // Skips attributes and alignment specifiers from i.
  [[nodiscard]] std::size_t skip_attributes(std::size_t i) const {
    for (;;) {
      if (is(i, "[") && is(i + 1, "[")) {
        i = after_group(i);
      } else if ((is(i, "alignas") || is(i, "__attribute__") || is(i, "__declspec")) && is(i + 1, "(")) {
        i = after_group(i + 1);
      } else {
        return i;
      }
    }
  }

  // The head of a class (class, struct, union) or an enum at k: attributes, a name (qualified, with template
  // arguments), `final`, a base clause or an enum's underlying type, and the body if one follows.
  [[nodiscard]] Head head(std::size_t k) const {
    Head h;
    std::size_t j = k + 1;
    if (is(k, "enum") && (is(j, "class") || is(j, "struct"))) ++j;
    j = skip_attributes(j);
    while (name_at(j) && !is(j, "final")) {
      h.name = std::string(t_[j].text);
      ++j;
      if (const std::size_t close = angle_close(j); close != 0) j = close + 1;
      if (!is(j, "::")) break;
      ++j;
    }
    if (is(j, "final")) ++j;
    if (is(j, ":")) {  // a base clause, an enum's underlying type
      while (j < t_.size() && !is(j, "{") && !is(j, ";")) {
        if (is(j, "(") || is(j, "[")) {
          j = after_group(j);
        } else if (const std::size_t close = angle_close(j); close != 0) {
          j = close + 1;
        } else {
          ++j;
        }
      }
    }
    if (is(j, "{")) {
      h.has_body = true;
      h.body = j;
      j = after_group(j);
    }
    h.end = j;
    return h;
  }

  // The data members declared in the body tokens [b, e).
  [[nodiscard]] int count(std::size_t b, std::size_t e) const {
    int n = 0;
    for (std::size_t i = b; i < e;) {
      const Member m = member(i, e);
      n += m.data_members;
      i = m.end;
    }
    return n;
  }

  struct Member {
    std::size_t end = 0;
    int data_members = 0;
  };

  // The member declaration starting at i: where it ends and how many data members it declares.
  [[nodiscard]] Member member(std::size_t i, std::size_t e) const {
    if (is(i, ";")) return {i + 1, 0};
    if ((is(i, "public") || is(i, "private") || is(i, "protected")) && is(i + 1, ":")) return {i + 2, 0};
    if (is(i, "template")) {  // a member template is a function or a static variable
      std::size_t j = i + 1;
      if (const std::size_t close = angle_close(j); close != 0) j = close + 1;
      return {member(j, e).end, 0};
    }
    const std::size_t first = skip_attributes(i);
    if (class_key(first) || is(first, "enum")) return type_member(first, e);
    const bool counted = !(is(first, "using") || is(first, "typedef") || is(first, "friend") ||
                           is(first, "static_assert"));
    bool initializer = false;  // past a `=`, a `{` or a bit-field's `:`: no parameter list follows
    bool is_static = false;
    int commas = 0;
    for (std::size_t j = first; j < e;) {
      if (is(j, ";")) return {j + 1, counted && !is_static ? commas + 1 : 0};
      if (is(j, "operator") && !initializer) return {function_end(operator_parameters(j), e), 0};
      if ((is(j, "decltype") || is(j, "alignas") || is(j, "sizeof") || is(j, "alignof") || is(j, "noexcept")) &&
          is(j + 1, "(")) {
        j = after_group(j + 1);
        continue;
      }
      if (is(j, "(")) {
        const bool pointer = is(j + 1, "*") || is(j + 1, "&") || (is(j + 2, "::") && is(j + 3, "*"));
        if (!initializer && j > first && name_at(j - 1) && !pointer) return {function_end(j, e), 0};
        j = after_group(j);
        continue;
      }
      if (is(j, "[")) {
        j = after_group(j);
        continue;
      }
      if (is(j, "{")) {
        initializer = true;
        j = after_group(j);
        continue;
      }
      if (const std::size_t close = angle_close(j); close != 0) {
        j = close + 1;
        continue;
      }
      if (is(j, "=") || is(j, ":")) initializer = true;
      if (is(j, "static") && !initializer) is_static = true;
      if (is(j, ",")) {
        ++commas;
        initializer = false;  // the next declarator (a bit-field's width or an initializer ended)
      }
      ++j;
    }
    return {e, 0};
  }

  // A member starting with a class key or `enum`: a nested type (no members of its own unless declarators
  // follow its body, or it is an anonymous struct or union, whose members are the enclosing class's), a
  // forward declaration, or a data member of an elaborated type (`struct tm* when;`).
  [[nodiscard]] Member type_member(std::size_t k, std::size_t e) const {
    const Head h = head(k);
    if (!h.has_body && is(h.end, ";")) return {h.end + 1, 0};
    std::size_t j = h.end;
    int declarators = 0;
    int commas = 0;
    while (j < e && !is(j, ";")) {
      if (is(j, "(") || is(j, "[") || is(j, "{")) {
        j = after_group(j);
        continue;
      }
      if (const std::size_t close = angle_close(j); close != 0) {
        j = close + 1;
        continue;
      }
      if (name_at(j) && declarators == 0) declarators = 1;
      if (is(j, ",")) ++commas;
      ++j;
    }
    const std::size_t end = std::min(j + 1, e);
    if (declarators > 0) return {end, declarators + commas};
    if (h.has_body && h.name.empty() && !is(k, "enum")) return {end, count(h.body + 1, partner_[h.body])};
    return {end, 0};
  }

  // The parameter list of an operator declared at k: after `operator()`, `operator<`, `operator bool`, ...
  [[nodiscard]] std::size_t operator_parameters(std::size_t k) const {
    std::size_t j = k + 1;
    if (is(j, "(") && is(j + 1, ")")) return j + 2;
    if (name_at(j)) {  // a conversion, new, delete
      while (j < t_.size() && !is(j, "(")) {
        const std::size_t close = angle_close(j);
        j = close != 0 ? close + 1 : j + 1;
      }
      return j;
    }
    while (j < t_.size() && !is(j, "(")) ++j;
    return j;
  }

  // The end of a member function whose parameter list opens at p: its `;` (after `= default`, `= 0`, ...) or
  // its body's `}`, past a constructor's member initializers.
  [[nodiscard]] std::size_t function_end(std::size_t p, std::size_t e) const {
    std::size_t j = after_group(p);
    while (j < e) {
      if (is(j, ";")) return j + 1;
      if (is(j, "{")) return after_group(j);
      if (is(j, ":")) {  // member initializers: name(...) or name{...}, separated by commas
        ++j;
        for (;;) {
          while (j < e && !is(j, "(") && !is(j, "{")) {
            const std::size_t close = angle_close(j);
            j = close != 0 ? close + 1 : j + 1;
          }
          j = after_group(j);
          if (is(j, ".") && is(j + 1, ".") && is(j + 2, ".")) j += 3;
          if (!is(j, ",")) break;
          ++j;
        }
        continue;
      }
      if (is(j, "(") || is(j, "[")) {
        j = after_group(j);
        continue;
      }
      const std::size_t close = angle_close(j);
      j = close != 0 ? close + 1 : j + 1;
    }
    return e;
  }

  std::vector<Token> t_;
  std::vector<std::size_t> partner_;
};

}  // namespace

std::vector<ClassMembers> class_members(std::string_view source) {
  return Reader(Lexer(source).run()).classes();
}

}  // namespace tpusim::testing
