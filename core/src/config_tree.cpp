#include "tpusim/core/config_tree.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

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
    case Kind::map: return "a map";
    case Kind::seq: return "a list";
  }
  return "?";
}

// Converts yaml-cpp nodes, attaching locations and trailing comments.
class ConfigLoader {
 public:
  ConfigLoader(std::string origin, std::vector<std::string> lines, Diagnostics& diags)
      : origin_(std::move(origin)), lines_(std::move(lines)), diags_(diags) {}

  ConfigNode convert(const YAML::Node& y, const std::string& path) {
    ConfigNode n;
    n.loc_ = loc_of(y.Mark());
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
        for (const auto& item : y) n.items_.push_back(convert(item, fmt::format("{}[{}]", path, i++)));
        break;
      }
      case YAML::NodeType::Map:
        n.kind_ = ConfigNode::Kind::map;
        for (const auto& kv : y) {
          const SourceLoc key_loc = loc_of(kv.first.Mark());
          if (!kv.first.IsScalar()) {
            diags_.error(key_loc, path, "map keys must be plain names", "a name", "a complex key");
            continue;
          }
          const std::string key = kv.first.Scalar();
          const std::string child_path = path.empty() ? key : path + "." + key;
          if (n.find(key) != nullptr) {
            diags_.error(key_loc, child_path, "duplicate key", "each key once", fmt::format("'{}' again", key));
            continue;
          }
          n.entries_.push_back(ConfigNode::Entry{key, key_loc, convert(kv.second, child_path)});
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
  std::string trailing_comment(const YAML::Mark& m) const {
    if (m.line < 0 || static_cast<std::size_t>(m.line) >= lines_.size()) return {};
    const std::string& line = lines_[static_cast<std::size_t>(m.line)];
    const std::size_t from = static_cast<std::size_t>(std::max(0, m.column));
    std::size_t hash = line.find('#', from);
    while (hash != std::string::npos && hash > 0 && line[hash - 1] != ' ' && line[hash - 1] != '\t') {
      hash = line.find('#', hash + 1);
    }
    if (hash == std::string::npos) return {};
    std::string c = line.substr(hash + 1);
    const auto first = c.find_first_not_of(" \t");
    const auto last = c.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string{} : c.substr(first, last - first + 1);
  }

  std::string origin_;
  std::vector<std::string> lines_;
  Diagnostics& diags_;
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
}  // namespace

ConfigNode load_yaml_string(std::string_view text, const std::string& origin, Diagnostics& diags) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
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
  std::stringstream ss;
  ss << in.rdbuf();
  return load_yaml_string(ss.str(), path.string(), diags);
}

void merge_into(ConfigNode& base, const ConfigNode& overlay) {
  if (base.is_map() && overlay.is_map()) {
    for (const auto& e : overlay.entries()) {
      if (ConfigNode* existing = base.find(e.key); existing != nullptr) {
        merge_into(*existing, e.value);
      } else {
        base.set(e.key, e.key_loc, e.value);
      }
    }
    return;
  }
  base = overlay;
}

std::string flow_text(const ConfigNode& n) {
  if (n.is_scalar()) return n.scalar();
  if (n.is_seq()) {
    std::string s = "[";
    for (std::size_t i = 0; i < n.items().size(); ++i) s += (i ? ", " : "") + flow_text(n.items()[i]);
    return s + "]";
  }
  return "";
}

bool split_assignment(std::string_view assignment, std::string& path, std::string& value) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) return false;
  path = std::string(assignment.substr(0, eq));
  value = std::string(assignment.substr(eq + 1));
  while (!path.empty() && path.back() == ' ') path.pop_back();
  while (!path.empty() && path.front() == ' ') path.erase(path.begin());
  return true;
}

void apply_override(ConfigNode& root, std::string_view assignment, Diagnostics& diags) {
  const std::string origin = fmt::format("--set {}", assignment);
  std::string path, value;
  if (!split_assignment(assignment, path, value) || path.empty()) {
    diags.error(SourceLoc{origin, 0, 0}, "", "malformed override", "key.path=value",
                fmt::format("'{}'", assignment));
    return;
  }
  ConfigNode parsed = load_yaml_string(value, origin, diags);
  // Scalars parsed from the command line have no useful line; keep just the origin.
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
  const SourceLoc loc{origin, 0, 0};
  if (!root.is_map()) root = ConfigNode::make_map(loc);
  ConfigNode* node = &root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    ConfigNode* child = node->find(parts[i]);
    if (last) {
      if (parsed.is_null() && !value.empty()) parsed = ConfigNode::make_scalar(value, loc);
      node->set(parts[i], loc, std::move(parsed));
      return;
    }
    if (child == nullptr || !child->is_map()) child = &node->set(parts[i], loc, ConfigNode::make_map(loc));
    node = child;
  }
}

}  // namespace tpusim
