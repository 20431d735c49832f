#include "tpusim/core/config_tree.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "tpusim/core/utf8.h"

namespace tpusim {

ConfigNode ConfigNode::make_scalar(std::string text, SourceLoc loc) {
  ConfigNode n;
  n.kind_ = Kind::scalar;
  n.scalar_ = std::move(text);
  n.loc_ = std::move(loc);
  return n;
}

ConfigNode ConfigNode::make_map(SourceLoc loc) {
  ConfigNode n;
  n.kind_ = Kind::map;
  n.loc_ = std::move(loc);
  return n;
}

const ConfigNode* ConfigNode::find(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

ConfigNode* ConfigNode::find(std::string_view key) {
  for (auto& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.key);
  return out;
}

ConfigNode& ConfigNode::set(const std::string& key, SourceLoc key_loc, ConfigNode value) {
  for (auto& e : entries_) {
    if (e.key == key) {
      e.value = std::move(value);
      return e.value;
    }
  }
  entries_.push_back(Entry{key, std::move(key_loc), std::move(value)});
  return entries_.back().value;
}

void ConfigNode::erase(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.erase(it);
      return;
    }
  }
}

std::string ConfigNode::describe() const {
  switch (kind_) {
    case Kind::null: return "nothing (an empty value)";
    case Kind::scalar: return fmt::format("'{}'", scalar_);
    case Kind::map: return entries_.empty() ? "an empty map" : "a map";
    case Kind::seq: return items_.empty() ? "an empty list" : "a list";
  }
  return "?";
}

void ConfigNode::relocate(const SourceLoc& loc) {
  loc_ = loc;
  for (auto& e : entries_) {
    e.key_loc = loc;
    e.value.relocate(loc);
  }
  for (auto& item : items_) item.relocate(loc);
}

// Converts yaml-cpp nodes, attaching locations and trailing comments.
class ConfigLoader {
 public:
  ConfigLoader(std::string origin, std::vector<std::string> lines, Diagnostics& diags)
      : origin_(std::move(origin)), lines_(std::move(lines)), diags_(diags) {}

  ConfigNode convert(const YAML::Node& y, const std::string& path, int depth = 0) {
    ConfigNode n;
    n.loc_ = loc_of(y.Mark());
    // Aliases are expanded here (yaml-cpp shares the aliased node): bound what that can produce, so a file
    // of nested aliases ("billion laughs") or an alias to its own ancestor is an error, not a crash.
    if (exhausted_) return n;
    if (++nodes_ > kMaxYamlNodes || depth > kMaxYamlDepth) {
      exhausted_ = true;
      diags_.error(n.loc_, path.size() > 60 ? path.substr(0, 57) + "..." : path,
                   depth > kMaxYamlDepth ? fmt::format("nested more than {} levels deep", kMaxYamlDepth)
                                         : fmt::format("more than {} values", kMaxYamlNodes),
                   "a configuration of reasonable size",
                   "a document that keeps growing here (nested or self-referencing aliases?)");
      return n;
    }
    switch (y.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        n.kind_ = ConfigNode::Kind::null;
        break;
      case YAML::NodeType::Scalar:
        n.kind_ = ConfigNode::Kind::scalar;
        n.scalar_ = y.Scalar();
        n.comment_ = trailing_comment(y.Mark());
        break;
      case YAML::NodeType::Sequence: {
        n.kind_ = ConfigNode::Kind::seq;
        n.comment_ = trailing_comment(y.Mark());
        std::size_t i = 0;
        for (const auto& item : y) n.items_.push_back(convert(item, fmt::format("{}[{}]", path, i++), depth + 1));
        break;
      }
      case YAML::NodeType::Map:
        n.kind_ = ConfigNode::Kind::map;
        std::unordered_set<std::string> seen;
        for (const auto& kv : y) {
          const SourceLoc key_loc = loc_of(kv.first.Mark());
          if (!kv.first.IsScalar()) {
            diags_.error(key_loc, path, "map keys must be plain names", "a name", "a complex key");
            continue;
          }
          const std::string key = kv.first.Scalar();
          const std::string child_path = path.empty() ? key : path + "." + key;
          if (!seen.insert(key).second) {
            diags_.error(key_loc, child_path, "duplicate key", "each key once", fmt::format("'{}' again", key));
            continue;
          }
          // In a flow map YAML reads `{fsdp:8}` as the key 'fsdp:8' with no value, as a ':' ends a key only before
          // a space: the errors were about a field named 'fsdp:8' (unknown key, a value of nothing, or a chip block
          // hint to set 'chip.hbm.bandwidth:2TB/s=').
          if (const auto colon = key.find(':'); y.Style() == YAML::EmitterStyle::Flow && kv.second.IsNull() &&
                                                colon != std::string::npos && colon > 0 && colon + 1 < key.size()) {
            const std::string name = key.substr(0, colon), spaced = name + ": " + key.substr(colon + 1);
            diags_.error(key_loc, path.empty() ? name : path + "." + name, "no space after ':' in a flow map",
                         fmt::format("'{}' (without the space, one key '{}' with no value)", spaced, key),
                         fmt::format("'{}'", key),
                         fmt::format("YAML needs a space after ':' in a flow map: write '{}', not '{}'", spaced, key));
            continue;
          }
          ConfigNode value = convert(kv.second, child_path, depth + 1);
          // yaml-cpp marks an empty value (`key:` at the end of its line) where the next token starts, often
          // on a later line: an error about it belongs on the key's line.
          if (value.is_null() && value.loc_.line != key_loc.line) value.loc_ = key_loc;
          n.entries_.push_back(ConfigNode::Entry{key, key_loc, std::move(value)});
        }
        break;
    }
    return n;
  }

 private:
  SourceLoc loc_of(const YAML::Mark& m) const {
    if (m.line < 0) return SourceLoc{origin_, 0, 0};
    return SourceLoc{origin_, m.line + 1, m.column + 1};
  }

  // The comment after the value on its line. Values in our configs never contain " #", so the first " #"
  // after the value's column starts the comment (yaml-cpp does not keep comments).
  std::string trailing_comment(const YAML::Mark& m) {
    if (m.line < 0 || static_cast<std::size_t>(m.line) >= lines_.size()) return {};
    const std::string& line = lines_[static_cast<std::size_t>(m.line)];
    const std::size_t from = static_cast<std::size_t>(std::max(0, m.column));
    // Where comments may start on this line, found once per line (a long flow list has many values on one).
    auto [it, fresh] = comment_starts_.try_emplace(m.line);
    if (fresh) {
      for (std::size_t h = line.find('#'); h != std::string::npos; h = line.find('#', h + 1)) {
        if (h == 0 || line[h - 1] == ' ' || line[h - 1] == '\t') it->second.push_back(h);
      }
    }
    const auto start = std::lower_bound(it->second.begin(), it->second.end(), from);
    if (start == it->second.end()) return {};
    const std::size_t hash = *start;
    std::string c = line.substr(hash + 1);
    const auto first = c.find_first_not_of(" \t");
    const auto last = c.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string{} : c.substr(first, last - first + 1);
  }

  std::string origin_;
  std::vector<std::string> lines_;
  Diagnostics& diags_;
  std::unordered_map<int, std::vector<std::size_t>> comment_starts_;
  std::size_t nodes_ = 0;
  bool exhausted_ = false;
};

namespace {
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  lines.push_back(std::move(cur));
  return lines;
}

// Where each document of a YAML stream starts, read with yaml-cpp's event parser. yaml-cpp 0.7 does not
// consume a ',' met outside a flow collection: it reports an empty document and then the same one again,
// for ever (YAML::LoadAll never returns and YAML::Load gives an empty node, a silent wrong answer). A
// document that starts where the one before it started is that stall, and is reported as malformed YAML.
class DocumentStarts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;  // each document's start (its '---' when it has one)
  std::vector<YAML::Mark> roots;   // each document's first node, where a reader sees it begin
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    roots.push_back(mark);
    root_seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (root_seen_ || roots.empty()) return;
    roots.back() = m;
    root_seen_ = true;
  }
  bool root_seen_ = false;
};

struct StreamShape {
  std::size_t documents = 0;         // how many documents, counting at most three
  std::optional<YAML::Mark> second;  // where the second one starts
  std::optional<YAML::Mark> stalled; // where the parser stopped making progress
};

StreamShape stream_shape(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts handler;
  StreamShape shape;
  // Three are enough: one is the configuration, a second is refused, and a stall shows by the third.
  while (handler.starts.size() < 3 && parser.HandleNextDocument(handler)) {
    const std::size_t n = handler.starts.size();
    if (n >= 2 && handler.starts[n - 1].pos == handler.starts[n - 2].pos) {
      shape.stalled = handler.starts[n - 1];
      break;
    }
  }
  shape.documents = handler.starts.size();
  if (handler.roots.size() >= 2) shape.second = handler.roots[1];
  return shape;
}

// The 1-based line and column of a byte offset.
SourceLoc loc_of_offset(std::string_view text, std::size_t offset, const std::string& origin) {
  const std::string_view before = text.substr(0, offset);
  const auto line = static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1;
  const std::size_t line_start = before.rfind('\n');
  const auto column = static_cast<int>(offset - (line_start == std::string_view::npos ? 0 : line_start + 1)) + 1;
  return SourceLoc{origin, line, column};
}

}  // namespace

ConfigNode load_yaml_string(std::string_view text, const std::string& origin, Diagnostics& diags) {
  if (text.size() > kMaxYamlBytes) {
    diags.error(SourceLoc{origin, 0, 0}, "", "file too large for a configuration",
                fmt::format("at most {} MiB", kMaxYamlBytes >> 20), fmt::format("more than {} MiB", kMaxYamlBytes >> 20));
    return ConfigNode{};
  }
  // Names and values end up in summary.json and the tables, which are UTF-8: a byte that is not is refused
  // here, where its line is known, not when the report is written after the simulation.
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    diags.error(loc_of_offset(text, bad, origin), "", "not valid UTF-8", "UTF-8 text",
                fmt::format("the byte 0x{:02X}", static_cast<unsigned char>(text[bad])),
                "save the file as UTF-8");
    return ConfigNode{};
  }
  YAML::Node root;
  try {
    // Every document of the stream is read, so that a second one (after `---`) is refused, not dropped.
    const std::string owned(text);
    const StreamShape shape = stream_shape(owned);
    if (shape.stalled) {
      const YAML::Mark& m = *shape.stalled;
      diags.error(SourceLoc{origin, m.line + 1, m.column + 1}, "", "malformed YAML", "valid YAML",
                  "a ',' outside a [...] or {...} collection",
                  "quote a value that starts with ',' or remove the stray comma");
      return ConfigNode{};
    }
    if (shape.documents > 1) {
      const YAML::Mark& m = *shape.second;
      diags.error(m.line >= 0 ? SourceLoc{origin, m.line + 1, m.column + 1} : SourceLoc{origin, 0, 0}, "",
                  "more than one YAML document", "one document per file",
                  shape.documents > 2 ? std::string("3 or more documents separated by '---'")
                                      : std::string("2 documents separated by '---'"),
                  "merge them into one, or put each in a file of its own");
      return ConfigNode{};
    }
    if (shape.documents == 1) root = YAML::Load(owned);
  } catch (const YAML::DeepRecursion& e) {
    diags.error(SourceLoc{origin, e.mark.line + 1, e.mark.column + 1}, "", "malformed YAML",
                "a configuration of reasonable size", fmt::format("nesting deeper than {} levels", e.depth()));
    return ConfigNode{};
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    const int col = e.mark.column >= 0 ? e.mark.column + 1 : 0;
    diags.error(SourceLoc{origin, line, col}, "", "malformed YAML", "valid YAML", e.msg);
    return ConfigNode{};
  }
  ConfigLoader loader(origin, split_lines(text), diags);
  return loader.convert(root, "");
}

ConfigNode load_yaml_file(const std::filesystem::path& path, Diagnostics& diags) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error(SourceLoc{path.string(), 0, 0}, "", "cannot open file", "a readable YAML file",
                "no such file or not readable");
    return ConfigNode{};
  }
  // Read at most one byte past the limit, so that a huge (or endless) file is refused, not read.
  std::string text(kMaxYamlBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return load_yaml_string(text, path.string(), diags);
}

void merge_into(ConfigNode& base, const ConfigNode& overlay, const std::string& path, Diagnostics& diags) {
  if (base.is_map() && overlay.is_map()) {
    for (const auto& e : overlay.entries()) {
      const std::string key_path = path.empty() ? e.key : path + "." + e.key;
      if (ConfigNode* existing = base.find(e.key); existing != nullptr) {
        if (e.value.is_null() && (existing->is_map() || existing->is_seq())) {
          diags.error(e.value.loc(), key_path, "wrong type",
                      existing->is_map() ? "a map of the section's fields (leave the key out to keep them)"
                                         : "a list (leave the key out to keep it)",
                      e.value.describe());
          continue;
        }
        merge_into(*existing, e.value, key_path, diags);
      } else {
        base.set(e.key, e.key_loc, e.value);
      }
    }
    return;
  }
  base = overlay;
}

namespace {

// Whether YAML reads `s`, written plain, back as the scalar `s` (inside a flow list or map, `in_flow`).
bool reads_back_plain(const std::string& s, bool in_flow) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (std::string_view("[]{}#&*!|>'\"%@`,").find(s.front()) != std::string_view::npos) return false;
  if ((s.front() == '-' || s.front() == '?' || s.front() == ':') && (s.size() == 1 || s[1] == ' ')) return false;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return false;
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return !in_flow || s.find_first_of(",[]{}") == std::string::npos;
}

std::string scalar_text(const std::string& s, bool in_flow) {
  if (reads_back_plain(s, in_flow)) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string flow_text(const ConfigNode& n, bool in_flow) {
  if (n.is_scalar()) return scalar_text(n.scalar(), in_flow);
  if (n.is_seq()) {
    std::string s = "[";
    for (std::size_t i = 0; i < n.items().size(); ++i) s += (i ? ", " : "") + flow_text(n.items()[i], true);
    return s + "]";
  }
  if (n.is_map()) {
    std::string s = "{";
    for (std::size_t i = 0; i < n.entries().size(); ++i) {
      const ConfigNode::Entry& e = n.entries()[i];
      s += (i ? ", " : "") + scalar_text(e.key, true) + ": " + flow_text(e.value, true);
    }
    return s + "}";
  }
  return in_flow ? "null" : "";
}

// A map set over a chip block (`block`, at key path `path`) with no `kind`: it would replace the block and drop
// the keys it does not name. Refused naming those keys, with the one-field overrides that keep them.
void refuse_block_without_kind(const SourceLoc& at, const std::string& path, const ConfigNode& block,
                               const ConfigNode& map, Diagnostics& diags) {
  std::vector<std::string> dropped;
  for (const ConfigNode::Entry& e : block.entries()) {
    if (map.find(e.key) == nullptr) dropped.push_back(e.key);
  }
  std::vector<std::string> fields;
  for (const ConfigNode::Entry& e : map.entries()) {
    fields.push_back(fmt::format("--set '{}.{}={}'", path, e.key, flow_text(e.value, false)));
  }
  const ConfigNode* kind = block.find("kind");
  diags.error(at, path, "a map replaces the whole block, and this one drops the block's kind",
              fmt::format("one field at a time ({}.FIELD=VALUE), or the whole block: {{kind: {}, ...}}", path,
                          kind->is_scalar() ? kind->scalar() : std::string("?")),
              fmt::format("{}, which would leave the block without {}", flow_text(map, false),
                          fmt::join(dropped, ", ")),
              fields.empty() ? std::string("set each field on its own to keep the others")
                             : fmt::format("did you mean {}? a map given to --set replaces the field it names",
                                           fmt::join(fields, " ")));
}

}  // namespace

std::string flow_text(const ConfigNode& n) { return flow_text(n, false); }

bool split_assignment(std::string_view assignment, std::string& path, std::string& value) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) return false;
  path = std::string(assignment.substr(0, eq));
  value = std::string(assignment.substr(eq + 1));
  while (!path.empty() && path.back() == ' ') path.pop_back();
  while (!path.empty() && path.front() == ' ') path.erase(path.begin());
  return true;
}

void apply_override(ConfigNode& root, const Override& override, Diagnostics& diags) {
  const std::string origin = fmt::format("--set {}", override.assignment);
  // Given on the command line, a value has no useful line: errors name the argument itself.
  const bool from_file = !override.value.file.empty();
  const SourceLoc key_loc = from_file ? override.key : SourceLoc{origin, 0, 0};
  const SourceLoc value_loc = from_file ? override.value : SourceLoc{origin, 0, 0};
  std::string path, value;
  if (!split_assignment(override.assignment, path, value) || path.empty()) {
    diags.error(key_loc, "", "malformed override", "key.path=value", fmt::format("'{}'", override.assignment));
    return;
  }
  ConfigNode parsed;
  if (override.node) {
    parsed = *override.node;  // read from the file: each value keeps its own place
  } else {
    Diagnostics parse_diags;
    parsed = load_yaml_string(value, origin, parse_diags);
    for (Diagnostic d : parse_diags.items()) {
      d.loc = value_loc;
      if (!d.key_path.empty()) d.key_path = path + "." + d.key_path;  // a key inside the value: its full path
      diags.add(std::move(d));
    }
    // A flow map's key without its value was refused above: the map it leaves would only add errors about it.
    if (!parse_diags.empty() && parsed.is_map()) return;
    parsed.relocate(value_loc);
  }
  std::vector<std::string> parts;
  std::string part;
  for (char c : path) {
    if (c == '.') {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  parts.push_back(part);
  if (parsed.is_null() && !value.empty()) parsed = ConfigNode::make_scalar(value, value_loc);
  if (!root.is_map()) root = ConfigNode::make_map(key_loc);
  ConfigNode* node = &root;
  std::string walked;  // the key path so far, for errors
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    // "key[i]": entry i of the list at key (faults[0].at), which must exist: an override changes an entry, it
    // does not add one.
    std::string key = parts[i];
    std::optional<std::size_t> index;
    if (const auto open = key.find('['); open != std::string::npos) {
      const std::string digits = key.substr(open + 1, key.size() - open - 2);
      const bool well_formed = key.back() == ']' && open > 0 && !digits.empty() && digits.size() < 10 &&
                               std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!well_formed) {
        diags.error(key_loc, walked.empty() ? parts[i] : walked + "." + parts[i], "malformed override",
                    "key.path=value, an entry of a list as key[index]", fmt::format("'{}'", parts[i]));
        return;
      }
      index = static_cast<std::size_t>(std::stoul(digits));
      key = key.substr(0, open);
    }
    walked += (walked.empty() ? "" : ".") + key;
    if (index) {
      ConfigNode* list = node->find(key);
      if (list == nullptr || !list->is_seq()) {
        diags.error(key_loc, walked, "not a list", fmt::format("a list at {} to take entry {} of", walked, *index),
                    list == nullptr ? "nothing" : list->describe());
        return;
      }
      if (*index >= list->items().size()) {
        diags.error(key_loc, walked, "no such entry in the list",
                    fmt::format("an index below {} (the list's length)", list->items().size()), std::to_string(*index),
                    "an override changes an entry; add one in the file");
        return;
      }
      walked += fmt::format("[{}]", *index);
      ConfigNode& entry = list->items()[*index];
      if (last) {
        entry = std::move(parsed);
        return;
      }
      if (!entry.is_map()) entry = ConfigNode::make_map(key_loc);
      node = &entry;
      continue;
    }
    ConfigNode* child = node->find(key);
    if (last) {
      // A chip's block (a map with a `kind`) set to one value would drop the block: the error was an unknown key
      // at the block's line in the chip file, and every path through the block dangling.
      if (child != nullptr && child->is_map() && child->find("kind") != nullptr && !parsed.is_map()) {
        const ConfigNode* kind = child->find("kind");
        diags.error(key_loc, walked, "a block of the chip, not a value",
                    fmt::format("a map of the block's fields (kind: {}), or one field: {}.FIELD=VALUE",
                                kind->is_scalar() ? kind->scalar() : std::string("?"), walked),
                    parsed.describe(),
                    "tpusim describe params lists each block's fields");
        return;
      }
      // A map replaces the block whole: one without `kind` dropped the block's kind and every field it left
      // out, and the chip then failed in several places at once.
      if (child != nullptr && child->is_map() && child->find("kind") != nullptr && parsed.is_map() &&
          parsed.find("kind") == nullptr) {
        refuse_block_without_kind(key_loc, walked, *child, parsed, diags);
        return;
      }
      node->set(key, key_loc, std::move(parsed));
      return;
    }
    if (child == nullptr || !child->is_map()) child = &node->set(key, key_loc, ConfigNode::make_map(key_loc));
    node = child;
  }
}

void apply_override(ConfigNode& root, std::string_view assignment, Diagnostics& diags) {
  apply_override(root, Override{std::string(assignment), {}, {}, std::nullopt}, diags);
}

}  // namespace tpusim
