// Where in a program file's text a problem is (json_locate.h).
#include "program_file/json_locate.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

namespace tpusim::ir {
namespace {

using nlohmann::json;

// Finds the value a JSON pointer names in `text` (valid JSON) without building a tree: the byte offset of the
// value, or, for a pointer to a member that does not exist (a missing field), of the object lacking it.
class PointerScanner {
 public:
  explicit PointerScanner(std::string_view text) : text_(text) {}

  std::size_t find(std::string_view pointer) {
    std::size_t pos = skip_ws(0);
    std::size_t start = 0;
    while (start < pointer.size()) {
      // Tokens are separated by '/', with ~1 for '/' and ~0 for '~' (RFC 6901).
      const std::size_t end = std::min(pointer.find('/', start + 1), pointer.size());
      std::string token;
      for (std::size_t i = start + 1; i < end; ++i) {
        if (pointer[i] == '~' && i + 1 < end) {
          token += pointer[i + 1] == '1' ? '/' : '~';
          ++i;
        } else {
          token += pointer[i];
        }
      }
      start = end;
      const std::size_t inner = step(pos, token);
      if (inner == std::string_view::npos) return pos;  // not there: the enclosing value
      pos = inner;
    }
    return pos;
  }

 private:
  std::size_t skip_ws(std::size_t p) const {
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\n' || text_[p] == '\t' || text_[p] == '\r')) ++p;
    return p;
  }
  // The end of the string starting at p (on its opening quote), and its text with simple escapes decoded.
  std::size_t skip_string(std::size_t p, std::string* decoded = nullptr) const {
    for (++p; p < text_.size() && text_[p] != '"'; ++p) {
      if (text_[p] == '\\' && p + 1 < text_.size()) ++p;
      if (decoded) decoded->push_back(text_[p]);
    }
    return std::min(p + 1, text_.size());
  }
  std::size_t skip_value(std::size_t p) const {
    if (p >= text_.size()) return p;
    if (text_[p] == '"') return skip_string(p);
    if (text_[p] != '{' && text_[p] != '[') {
      while (p < text_.size() && text_[p] != ',' && text_[p] != '}' && text_[p] != ']') ++p;
      return p;
    }
    int depth = 0;
    for (; p < text_.size(); ++p) {
      const char c = text_[p];
      if (c == '"') {
        p = skip_string(p) - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return p + 1;
      }
    }
    return p;
  }
  // From the value at p (an object or array), the offset of its member or element `token`; npos if none.
  std::size_t step(std::size_t p, const std::string& token) const {
    if (p >= text_.size()) return std::string_view::npos;
    if (text_[p] == '{') {
      for (p = skip_ws(p + 1); p < text_.size() && text_[p] == '"';) {
        std::string key;
        p = skip_ws(skip_string(p, &key));
        if (p >= text_.size() || text_[p] != ':') return std::string_view::npos;
        p = skip_ws(p + 1);
        if (key == token) return p;
        p = skip_ws(skip_value(p));
        if (p < text_.size() && text_[p] == ',') p = skip_ws(p + 1);
      }
      return std::string_view::npos;
    }
    if (text_[p] == '[') {
      std::size_t index = 0;
      if (token.empty() || token.size() > 18 || token.find_first_not_of("0123456789") != std::string::npos) {
        return std::string_view::npos;
      }
      const std::size_t want = std::stoull(token);
      for (p = skip_ws(p + 1); p < text_.size() && text_[p] != ']'; ++index) {
        if (index == want) return p;
        p = skip_ws(skip_value(p));
        if (p < text_.size() && text_[p] == ',') p = skip_ws(p + 1);
      }
    }
    return std::string_view::npos;
  }

  std::string_view text_;
};

// A reading pass that builds nothing and keeps the first error with the byte it happened at, and the JSON
// pointer of the first key an object gives twice (the tree parser would keep the last and say nothing). The
// tree parser reports a syntax error's byte, but not that of a number too large for a double (out_of_range
// 406, e.g. 1E520): this pass gives both the same place.
class FirstJsonError final : public nlohmann::json_sax<json> {
 public:
  std::optional<std::pair<std::size_t, std::string>> error;  // (byte after the offending token, what)
  std::optional<std::string> duplicate;                       // the pointer of the key given again

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    if (!f.keys.insert(k).second && !duplicate) duplicate = pointer();
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    error = {byte, e.what()};
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;  // an object's keys so far
    std::string key;             // an object's current key
    std::size_t index = 0;       // an array's current element
  };
  bool value() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }
  bool open(bool object) {
    frames_.push_back(Frame{object, {}, {}, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  // The pointer of the current position ("/programs/0/name"), '~' and '/' escaped as RFC 6901 says.
  [[nodiscard]] std::string pointer() const {
    std::string out;
    for (const Frame& f : frames_) {
      out += '/';
      if (!f.object) {
        out += std::to_string(f.index);
        continue;
      }
      for (const char c : f.key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    }
    return out;
  }
  std::vector<Frame> frames_;
};

}  // namespace

std::pair<int, int> line_column(std::string_view text, std::size_t byte) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::size_t pointer_offset(std::string_view text, std::string_view pointer) { return PointerScanner(text).find(pointer); }

// Gives each diagnostic (located by its JSON pointer) the line and column of that value in `text`.
std::vector<Diagnostic> with_lines(std::string_view text, const std::string& source, std::vector<Diagnostic> diags) {
  PointerScanner scanner(text);
  for (Diagnostic& d : diags) {
    const auto [line, column] = line_column(text, scanner.find(d.key_path));
    d.loc = SourceLoc{source, line, column};
  }
  return diags;
}

// The tree of a program file, read twice: first by FirstJsonError, which locates a syntax error (or a number
// too large for a double) by its byte and finds a key given twice, then by the tree parser.
json parse_tree(std::string_view text, const std::string& source) {
  FirstJsonError first;
  json::sax_parse(text, &first);
  if (first.error) {
    const auto [byte, what] = *first.error;
    const auto [line, column] = line_column(text, byte > 0 ? byte - 1 : 0);
    throw ConfigError({Diagnostic{SourceLoc{source, line, column}, "", "malformed JSON", "valid JSON", what, ""}});
  }
  if (first.duplicate) {
    const std::string& ptr = *first.duplicate;
    const std::string key = ptr.substr(ptr.rfind('/') + 1);
    const auto [line, column] = line_column(text, PointerScanner(text).find(ptr));
    throw ConfigError({Diagnostic{SourceLoc{source, line, column}, ptr, "duplicate key", "each key once in an object",
                                  fmt::format("'{}' given twice (first here)", key), ""}});
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError({Diagnostic{SourceLoc{source}, "", "malformed JSON", "valid JSON", e.what(), ""}});
  }
}

}  // namespace tpusim::ir
