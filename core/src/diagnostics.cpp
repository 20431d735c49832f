#include "tpusim/core/diagnostics.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace tpusim {

std::string SourceLoc::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

namespace {

// What was found, as an error shows it: a long text (a 20 KB expression) cut to its start, at a character's
// first byte, with its length.
constexpr std::size_t kFoundShown = 200;
std::string found_excerpt(const std::string& found) {
  if (found.size() <= kFoundShown + 40) return found;
  std::size_t cut = kFoundShown;
  while (cut > 0 && (static_cast<unsigned char>(found[cut]) & 0xC0) == 0x80) --cut;  // inside a UTF-8 character
  return fmt::format("{}... ({} characters in all)", found.substr(0, cut), found.size());
}

// At most this many errors are printed in full; the count says how many there were.
constexpr std::size_t kDiagnosticsShown = 100;

}  // namespace

std::string Diagnostic::str() const {
  std::string out = fmt::format("{}: error: ", loc.str());
  if (!key_path.empty()) out += fmt::format("{}: ", key_path);
  out += message;
  if (!expected.empty()) out += fmt::format("\n    expected: {}", expected);
  if (!found.empty()) out += fmt::format("\n    found:    {}", found_excerpt(found));
  if (!hint.empty()) out += fmt::format("\n    hint:     {}", hint);
  return out;
}

void Diagnostics::error(SourceLoc loc, std::string key_path, std::string message, std::string expected,
                        std::string found, std::string hint) {
  items_.push_back(Diagnostic{std::move(loc), std::move(key_path), std::move(message), std::move(expected),
                              std::move(found), std::move(hint)});
}

std::string Diagnostics::str() const {
  std::string out;
  for (const auto& d : items_) {
    out += d.str();
    out += '\n';
  }
  return out;
}

void Diagnostics::throw_if_any() const {
  if (!items_.empty()) throw ConfigError(items_);
}

namespace {
std::string join_diags(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (std::size_t i = 0; i < std::min(diags.size(), kDiagnosticsShown); ++i) {
    if (!out.empty()) out += '\n';
    out += diags[i].str();
  }
  if (diags.size() > kDiagnosticsShown) {
    out += fmt::format("\n... and {} more errors (the first {} are shown)", diags.size() - kDiagnosticsShown,
                       kDiagnosticsShown);
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diags)
    : std::runtime_error(join_diags(diags)), diags_(std::move(diags)) {}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Accept up to a third of the word's length in edits (at least 2): catches typos, rejects unrelated words.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string{};
}

std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  if (auto m = closest_match(word, candidates); !m.empty()) return fmt::format("did you mean '{}'?", m);
  if (candidates.empty()) return {};
  std::string list;
  for (const auto& c : candidates) {
    if (!list.empty()) list += ", ";
    list += c;
  }
  return fmt::format("expected one of: {}", list);
}

}  // namespace tpusim
