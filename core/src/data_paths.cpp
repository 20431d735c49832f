#include "tpusim/core/data_paths.h"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

namespace tpusim {
namespace fs = std::filesystem;

namespace {
fs::path& data_dir() {
  static fs::path dir;
  return dir;
}
}  // namespace

void set_data_dir(fs::path dir) { data_dir() = std::move(dir); }

std::vector<fs::path> data_roots() {
  std::vector<fs::path> roots;
  if (!data_dir().empty()) roots.push_back(data_dir());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(exe.parent_path().parent_path() / "share" / "tpusim");
  roots.emplace_back(TPUSIM_SOURCE_DATA_DIR);
  return roots;
}

std::vector<std::string> bundled_names(const std::string& folder) {
  for (const auto& root : data_roots()) {
    std::error_code ec;
    const fs::path dir = root / folder;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  return {};
}

bool is_bundled_file(const std::string& file) {
  std::error_code ec;
  if (file.empty() || !fs::is_regular_file(file, ec)) return false;  // "--set ...", "(model)"
  const fs::path path = fs::weakly_canonical(file, ec);
  if (ec) return false;
  for (const auto& root : data_roots()) {
    for (const char* folder : {"configs", "scenarios"}) {
      const fs::path dir = fs::weakly_canonical(root / folder, ec);
      if (ec || dir.empty()) continue;
      const fs::path rel = path.lexically_relative(dir);
      if (!rel.empty() && *rel.begin() != "..") return true;
    }
  }
  return false;
}

std::optional<fs::path> resolve_data_file(const std::string& folder, const std::string& name_or_path,
                                          const fs::path& relative_to, const SourceLoc& loc, const std::string& key,
                                          Diagnostics& diags) {
  std::error_code ec;
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".yaml");
  if (is_path) {
    fs::path p(name_or_path);
    if (p.is_relative() && !relative_to.empty() && !fs::exists(p, ec)) p = relative_to / p;
    if (fs::is_regular_file(p, ec)) return p;
    diags.error(loc, key, "file not found", fmt::format("a readable file ({})", folder), name_or_path);
    return std::nullopt;
  }
  for (const auto& root : data_roots()) {
    const fs::path p = root / folder / (name_or_path + ".yaml");
    if (fs::is_regular_file(p, ec)) return p;
  }
  const auto names = bundled_names(folder);
  diags.error(loc, key, fmt::format("unknown name '{}'", name_or_path),
              fmt::format("a bundled name from {} or a path to a .yaml file", folder), name_or_path,
              suggestion(name_or_path, names));
  return std::nullopt;
}

}  // namespace tpusim
