#pragma once
// Declare each parameter once. A FieldTable<Spec> lists a spec's fields with their dotted key, type (and so
// unit), default, constraint and one-line description. The same table parses YAML into the spec (strict keys,
// every error collected), renders `tpusim describe`, and generates the docs, so the three cannot drift.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/units.h"

namespace tpusim {

// ---- scalar value parsing, shared by tables and hand-written readers --------------------------------------
// Each returns false and fills `expected` (what a valid value looks like) on failure.
bool parse_scalar(const ConfigNode& n, std::int64_t& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, int& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, double& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, bool& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, std::string& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, Bytes& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, BytesPerSecond& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, Seconds& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, Hertz& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, FlopsPerSecond& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, Watts& out, std::string& expected);
bool parse_scalar(const ConfigNode& n, std::vector<int>& out, std::string& expected);

std::string format_value(std::int64_t v);
std::string format_value(int v);
std::string format_value(double v);
std::string format_value(bool v);
std::string format_value(const std::string& v);
std::string format_value(Bytes v);
std::string format_value(BytesPerSecond v);
std::string format_value(Seconds v);
std::string format_value(Hertz v);
std::string format_value(FlopsPerSecond v);
std::string format_value(Watts v);
std::string format_value(const std::vector<int>& v);

// The kind of value a type takes, for docs ("bandwidth", "integer", ...).
template <class T> std::string kind_name();

// ---- constraints --------------------------------------------------------------------------------------------
// A constraint returns an empty string when the value is fine, else what was expected ("> 0").
template <class T>
using Constraint = std::function<std::string(const T&)>;

template <class T> Constraint<T> positive();             // > 0 (sizes, rates, counts)
template <class T> Constraint<T> non_negative();         // >= 0
Constraint<double> fraction();                           // in (0, 1]
Constraint<int> at_least(int lo);
Constraint<int> in_range(int lo, int hi);                              // lo <= v <= hi
Constraint<std::int64_t> in_range(std::int64_t lo, std::int64_t hi);   // lo <= v <= hi
Constraint<Bytes> in_range(Bytes lo, Bytes hi);                        // lo <= v <= hi
// Largest shape dimension (GEMM m, k, n; batch): any product of two stays far inside 64 bits.
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 31;
// Largest count of repeated structure (layers, heads, experts, tables, microbatches): input limits far above
// any published model, so that counts times dimensions stay inside 64 bits.
inline constexpr int kMaxRepeat = 1 << 16;
Constraint<std::string> one_of(std::vector<std::string> choices);
Constraint<std::vector<int>> positive_list(std::size_t min_len, std::size_t max_len);

// Where a resolved field's value came from: its location and trailing comment (a config cites its source
// there), or the table default.
struct FieldOrigin {
  SourceLoc loc;
  std::string comment;
  bool defaulted = false;
};

struct FieldInfo {
  std::string key;
  std::string kind;                       // "bandwidth", "integer", ...
  std::optional<std::string> default_text;  // nullopt: required
  std::string doc;
};

template <class Spec>
class FieldTable {
 public:
  template <class T>
  FieldTable& add(std::string key, std::function<T&(Spec&)> access, std::optional<std::string> default_text,
                  std::string doc, Constraint<T> check = {}) {
    Field f;
    f.info = FieldInfo{key, kind_name<T>(), default_text, std::move(doc)};
    f.parse = [access, check](Spec& spec, const ConfigNode& n, std::string& expected) {
      T v{};
      if (!parse_scalar(n, v, expected)) return false;
      if (check) {
        if (std::string want = check(v); !want.empty()) {
          expected = std::move(want);
          return false;
        }
      }
      access(spec) = std::move(v);
      return true;
    };
    f.show = [access](const Spec& spec) { return format_value(access(const_cast<Spec&>(spec))); };
    fields_.push_back(std::move(f));
    return *this;
  }

  // A field whose value selects one of a closed set, stored as an enum.
  template <class E>
  FieldTable& add_choice(std::string key, std::function<E&(Spec&)> access,
                         std::vector<std::pair<std::string, E>> choices, std::optional<std::string> default_text,
                         std::string doc) {
    Field f;
    std::string kind = "one of:";
    for (const auto& c : choices) kind += " " + c.first;
    f.info = FieldInfo{key, kind, default_text, std::move(doc)};
    f.parse = [access, choices](Spec& spec, const ConfigNode& n, std::string& expected) {
      std::vector<std::string> names;
      for (const auto& c : choices) names.push_back(c.first);
      if (n.is_scalar()) {
        for (const auto& c : choices) {
          if (c.first == n.scalar()) {
            access(spec) = c.second;
            return true;
          }
        }
      }
      expected = suggestion(n.is_scalar() ? n.scalar() : std::string{}, names);
      if (expected.rfind("did you mean", 0) == 0) expected = "one of the choices; " + expected;
      return false;
    };
    f.show = [access, choices](const Spec& spec) {
      const E v = access(const_cast<Spec&>(spec));
      for (const auto& c : choices) {
        if (c.second == v) return c.first;
      }
      return std::string("?");
    };
    fields_.push_back(std::move(f));
    return *this;
  }

  // A field whose value is a list of distinct members of a closed set (`[a, b]`, `[]` for none), stored in the
  // order of `choices` whatever order it was written in.
  template <class E>
  FieldTable& add_choice_list(std::string key, std::function<std::vector<E>&(Spec&)> access,
                              std::vector<std::pair<std::string, E>> choices, std::optional<std::string> default_text,
                              std::string doc) {
    Field f;
    std::string kind = "list of:";
    for (const auto& c : choices) kind += " " + c.first;
    f.info = FieldInfo{key, kind, default_text, std::move(doc)};
    f.parse = [access, choices](Spec& spec, const ConfigNode& n, std::string& expected) {
      std::vector<std::string> names;
      for (const auto& c : choices) names.push_back(c.first);
      if (!n.is_seq()) {
        expected = "a list, e.g. [" + names.front() + "]";
        return false;
      }
      std::vector<bool> seen(choices.size(), false);
      for (const ConfigNode& item : n.items()) {
        const std::string word = item.is_scalar() ? item.scalar() : std::string{};
        const auto at = std::find(names.begin(), names.end(), word);
        if (at == names.end()) {
          expected = suggestion(word, names);
          const std::string item = "each one of the choices, not '" + word + "'";
          expected = expected.rfind("did you mean", 0) == 0 ? item + "; " + expected : item + " (" + expected + ")";
          return false;
        }
        const auto i = static_cast<std::size_t>(at - names.begin());
        if (seen[i]) {
          expected = "each choice at most once ('" + word + "' is listed twice)";
          return false;
        }
        seen[i] = true;
      }
      std::vector<E>& out = access(spec);
      out.clear();
      for (std::size_t i = 0; i < choices.size(); ++i) {
        if (seen[i]) out.push_back(choices[i].second);
      }
      return true;
    };
    f.show = [access, choices](const Spec& spec) {
      const std::vector<E>& v = access(const_cast<Spec&>(spec));
      std::string s = "[";
      for (const auto& c : choices) {
        if (std::find(v.begin(), v.end(), c.second) == v.end()) continue;
        s += (s.size() > 1 ? ", " : "") + c.first;
      }
      return s + "]";
    };
    fields_.push_back(std::move(f));
    return *this;
  }

  [[nodiscard]] std::vector<FieldInfo> infos() const {
    std::vector<FieldInfo> out;
    for (const auto& f : fields_) out.push_back(f.info);
    return out;
  }

  // Fills `spec` from `root` (a map). `path` prefixes key paths in errors ("chip"). Unknown keys, missing
  // required keys, wrong types, wrong units and failed constraints all go to `diags`. `origins` receives where
  // each field's value came from. Keys listed in `ignored` (sections read by someone else) are skipped.
  void resolve(const ConfigNode& root, const std::string& path, Spec& spec, Diagnostics& diags,
               std::map<std::string, FieldOrigin>* origins = nullptr,
               const std::vector<std::string>& ignored = {}) const {
    if (!root.is_map()) {
      diags.error(root.loc(), path, "wrong type", "a map of fields", root.describe());
      return;
    }
    check_unknown(root, "", path, diags, ignored);
    for (const auto& f : fields_) {
      const ConfigNode* n = lookup(root, f.info.key);
      const std::string full = path.empty() ? f.info.key : path + "." + f.info.key;
      std::string expected;
      // A key written with no value (`batch:`, `batch: ~`, `--set workload.batch=`) is a mistake, not a
      // request for the default: the default is what leaving the key out gives.
      if (n != nullptr && n->is_null()) {
        diags.error(n->loc(), full, f.info.default_text ? "empty value" : "missing required key",
                    fmt_expected(f.info), "nothing (an empty value)",
                    f.info.default_text ? "leave the key out for its default (" +
                                              (f.info.default_text->empty() ? "\"\"" : *f.info.default_text) + ")"
                                        : std::string{});
        continue;
      }
      if (n == nullptr) {
        if (!f.info.default_text) {
          diags.error(parent_loc(root, f.info.key), full, "missing required key", fmt_expected(f.info), "nothing");
          continue;
        }
        // Defaults are YAML text too ("[]", "1 us"), parsed like a value from a file; "" is an empty text.
        Diagnostics ignored_diags;
        const SourceLoc default_loc{"(default)", 0, 0};
        const ConfigNode def = f.info.default_text->empty()
                                   ? ConfigNode::make_scalar("", default_loc)
                                   : load_yaml_string(*f.info.default_text, default_loc.file, ignored_diags);
        if (!f.parse(spec, def, expected)) {
          diags.error(def.loc(), full, "bad built-in default (a bug)", expected, def.describe());
        }
        // A defaulted field is placed at the map it would be written in, so that an error about its value
        // points where the user can set it.
        if (origins) (*origins)[f.info.key] = FieldOrigin{parent_loc(root, f.info.key), "", true};
        continue;
      }
      if (!f.parse(spec, *n, expected)) {
        // A list where a list is expected holds a bad item (an invalid value), anything else is the wrong type.
        const bool right_shape = n->is_scalar() || (n->is_seq() && f.info.kind.rfind("list", 0) == 0);
        diags.error(n->loc(), full, right_shape ? "invalid value" : "wrong type", expected, n->describe());
        continue;
      }
      if (origins) (*origins)[f.info.key] = FieldOrigin{n->loc(), n->comment(), false};
    }
  }

  // The resolved values, in declaration order: key -> rendered value with unit.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> render(const Spec& spec) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : fields_) out.emplace_back(f.info.key, f.show(spec));
    return out;
  }

 private:
  struct Field {
    FieldInfo info;
    std::function<bool(Spec&, const ConfigNode&, std::string&)> parse;
    std::function<std::string(const Spec&)> show;
  };

  static std::string fmt_expected(const FieldInfo& i) { return i.kind + " (" + i.doc + ")"; }

  static const ConfigNode* lookup(const ConfigNode& root, const std::string& key) {
    const ConfigNode* n = &root;
    std::size_t start = 0;
    while (true) {
      const auto dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!n->is_map()) return nullptr;
      n = n->find(part);
      if (n == nullptr) return nullptr;
      if (dot == std::string::npos) return n;
      start = dot + 1;
    }
  }

  // The location of the deepest existing map on the way to `key`, for "missing" errors.
  static SourceLoc parent_loc(const ConfigNode& root, const std::string& key) {
    const ConfigNode* n = &root;
    std::size_t start = 0;
    while (true) {
      const auto dot = key.find('.', start);
      if (dot == std::string::npos) return n->loc();
      const ConfigNode* next = n->find(key.substr(start, dot - start));
      if (next == nullptr || !next->is_map()) return n->loc();
      n = next;
      start = dot + 1;
    }
  }

  // Reports keys under `node` (at relative prefix `rel`) that no field declares.
  void check_unknown(const ConfigNode& node, const std::string& rel, const std::string& path, Diagnostics& diags,
                     const std::vector<std::string>& ignored) const {
    for (const auto& e : node.entries()) {
      const std::string k = rel.empty() ? e.key : rel + "." + e.key;
      if (rel.empty() && std::find(ignored.begin(), ignored.end(), e.key) != ignored.end()) continue;
      bool leaf = false, section = false;
      for (const auto& f : fields_) {
        if (f.info.key == k) leaf = true;
        if (f.info.key.size() > k.size() && f.info.key.compare(0, k.size() + 1, k + ".") == 0) section = true;
      }
      const std::string full = path.empty() ? k : path + "." + k;
      if (leaf) continue;
      if (section) {
        // A section written with no value (`checkpoint:`) is a mistake too, as `batch:` is: leaving it out gives
        // its defaults. Every section's reader refuses one so: this one, FieldTable::resolve for a section it is
        // given, and the readers of sections that are no table (scenario.cpp's chip, fault_plan.cpp's faults).
        if (e.value.is_map()) {
          check_unknown(e.value, k, path, diags, ignored);
        } else {
          diags.error(e.value.loc(), full, "wrong type", "a map (a section of fields)", e.value.describe());
        }
        continue;
      }
      diags.error(e.key_loc, full, fmt_unknown(e.key), "a known key", e.key,
                  suggestion(e.key, siblings(rel, ignored)));
    }
  }

  static std::string fmt_unknown(const std::string& key) { return "unknown key '" + key + "'"; }

  std::vector<std::string> siblings(const std::string& rel, const std::vector<std::string>& ignored) const {
    std::vector<std::string> out;
    const std::string prefix = rel.empty() ? "" : rel + ".";
    auto push = [&out](std::string s) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    };
    for (const auto& f : fields_) {
      if (f.info.key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = f.info.key.substr(prefix.size());
      push(rest.substr(0, rest.find('.')));
    }
    if (rel.empty()) {
      for (const auto& i : ignored) push(i);
    }
    return out;
  }

  std::vector<Field> fields_;
};

}  // namespace tpusim
