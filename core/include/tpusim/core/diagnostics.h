#pragma once
// Errors a user can act on: each names where (file:line:column), which key (dotted path), what was expected
// and what was found, with a hint such as a did-you-mean. Readers collect every error before giving up so a
// user sees them all at once. The library never exits; tools map a ConfigError to exit code 2.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

// Where a value came from. `file` is a path, or a pseudo-origin such as "--set chip.hbm.bandwidth=2TB/s".
// line and column are 1-based; 0 means unknown (e.g. a value created by an override).
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
  [[nodiscard]] std::string str() const;  // "file:line:column", or "file" when the line is unknown
};

struct Diagnostic {
  SourceLoc loc;
  std::string key_path;  // e.g. "chip.hbm.bandwidth"; empty for whole-file problems
  std::string message;   // what is wrong, in a few words
  std::string expected;  // may be empty
  std::string found;     // may be empty
  std::string hint;      // e.g. "did you mean 'bandwidth'?"; may be empty
  [[nodiscard]] std::string str() const;
};

class Diagnostics {
 public:
  void error(SourceLoc loc, std::string key_path, std::string message, std::string expected = {},
             std::string found = {}, std::string hint = {});
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  [[nodiscard]] bool empty() const { return items_.empty(); }
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] const std::vector<Diagnostic>& items() const { return items_; }
  [[nodiscard]] std::string str() const;  // all errors, one block each
  // Throws ConfigError carrying every collected error when there is at least one.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
};

// Bad input. Carries every diagnostic; what() is the formatted list.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diags);
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// Edit distance used for did-you-mean suggestions.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate when it is close enough to be a plausible typo, else empty.
[[nodiscard]] std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// "did you mean 'x'?" or, when nothing is close, "expected one of: a, b, c".
[[nodiscard]] std::string suggestion(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tpusim
