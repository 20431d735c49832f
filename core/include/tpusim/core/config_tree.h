#pragma once
// A YAML document as a tree whose every node remembers where it came from (file:line:column) and the comment
// that trails it on its line (configs put a value's source there). We convert yaml-cpp's nodes into this form
// once, so that merges and `--set` overrides keep the origin of each value and errors can always name it.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/diagnostics.h"

namespace tpusim {

class ConfigNode {
 public:
  enum class Kind { null, scalar, map, seq };

  struct Entry;  // a map entry: key, where the key is, value

  ConfigNode() = default;
  static ConfigNode make_scalar(std::string text, SourceLoc loc);
  static ConfigNode make_map(SourceLoc loc);

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_null() const { return kind_ == Kind::null; }
  [[nodiscard]] bool is_scalar() const { return kind_ == Kind::scalar; }
  [[nodiscard]] bool is_map() const { return kind_ == Kind::map; }
  [[nodiscard]] bool is_seq() const { return kind_ == Kind::seq; }
  [[nodiscard]] const SourceLoc& loc() const { return loc_; }
  [[nodiscard]] const std::string& scalar() const { return scalar_; }
  // The text of a trailing "# ..." comment on the value's line, trimmed; empty if none.
  [[nodiscard]] const std::string& comment() const { return comment_; }
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  [[nodiscard]] std::vector<Entry>& entries() { return entries_; }
  [[nodiscard]] const std::vector<ConfigNode>& items() const { return items_; }
  [[nodiscard]] std::vector<ConfigNode>& items() { return items_; }

  [[nodiscard]] const ConfigNode* find(std::string_view key) const;
  [[nodiscard]] ConfigNode* find(std::string_view key);
  [[nodiscard]] std::vector<std::string> keys() const;
  // Inserts or replaces a map entry (the node must be a map).
  ConfigNode& set(const std::string& key, SourceLoc key_loc, ConfigNode value);
  void erase(std::string_view key);
  // Describes the node for "found:" in errors: "a map", "a list" ("an empty map", "an empty list"),
  // "'100 GB'", "nothing".
  [[nodiscard]] std::string describe() const;
  // Gives this node and everything below it the location `loc` (a value that came from elsewhere).
  void relocate(const SourceLoc& loc);

 private:
  friend class ConfigLoader;
  Kind kind_ = Kind::null;
  SourceLoc loc_;
  std::string scalar_;
  std::string comment_;
  std::vector<Entry> entries_;
  std::vector<ConfigNode> items_;
};

struct ConfigNode::Entry {
  std::string key;
  SourceLoc key_loc;
  ConfigNode value;
};

// Bounds on what a configuration may expand to. Our configs are a few hundred values, a few levels deep;
// the bounds stop a file of nested aliases or a huge input before it eats the machine's memory.
inline constexpr std::size_t kMaxYamlBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxYamlNodes = 50'000;
inline constexpr int kMaxYamlDepth = 64;

// Reads a YAML file. Malformed YAML, a missing file, duplicate keys and a document beyond the bounds above
// are reported into diags; the returned node is null when the file could not be parsed.
[[nodiscard]] ConfigNode load_yaml_file(const std::filesystem::path& path, Diagnostics& diags);
// Parses YAML text; `origin` names it in locations (a file name or "--set ...").
[[nodiscard]] ConfigNode load_yaml_string(std::string_view text, const std::string& origin, Diagnostics& diags);

// Overlays `overlay` onto `base`: maps merge key by key, anything else replaces. A key of the overlay with no
// value over a section of the base (a map or a list: a chip block) is a section written with no value, refused as
// everywhere (wrong type, found nothing, at the overlay's line; `path` prefixes key paths) and the base's section
// kept; over a scalar it replaces it, for the reader to refuse as an empty value.
void merge_into(ConfigNode& base, const ConfigNode& overlay, const std::string& path, Diagnostics& diags);

// An override "dotted.path=value" and where it was written: `key` and `value` locate it in a file (a sweep's
// grid); left empty, it was given on the command line and errors name it as "--set dotted.path=value".
// `node`, when given, is the value as read from that file (a calibration point's `set:` entry), applied as it is
// so that every value inside a map or list keeps its own line and column; `assignment` is then its flow_text.
struct Override {
  std::string assignment;
  SourceLoc key;
  SourceLoc value;
  std::optional<ConfigNode> node;
};

// Applies an override. The value is parsed as YAML (so lists like [4,4,4] work) and replaces or creates the
// node at the path; intermediate maps are created as needed. Whether the key is allowed is decided later by
// the schema, which names the override's origin in any error.
void apply_override(ConfigNode& root, const Override& override, Diagnostics& diags);
// The same for a command-line `--set` argument.
void apply_override(ConfigNode& root, std::string_view assignment, Diagnostics& diags);

// The node as one line of YAML, the value text `--set path=value` takes and reads back to the same node: a
// scalar as written (double-quoted when YAML would read it otherwise: "a: b", a leading '[' or '&', and inside
// a list or map also ',', '[', ']', '{' and '}'), a list or map in flow style ("[4, 4, 4]", "{data: 2, fsdp:
// 4}", nested likewise); null renders empty.
[[nodiscard]] std::string flow_text(const ConfigNode& n);

// Splits "a.b.c=value" at the first '='; false when there is none.
bool split_assignment(std::string_view assignment, std::string& path, std::string& value);

}  // namespace tpusim
