#include "tools/src/output_folder.h"

#include <unistd.h>

#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "tpusim/core/interrupt.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

// The absolute, lexically normal form of a target, without a trailing separator ("a/b/." -> /cwd/a/b).
fs::path lexical_target(const fs::path& target) {
  if (target.empty()) throw OutputRefused("the output path is empty");
  fs::path p = fs::absolute(target).lexically_normal();
  while (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  return p;
}

// True when `a` is `b` or one of its ancestors (both canonical).
bool is_ancestor_or_self(const fs::path& a, const fs::path& b) {
  auto ai = a.begin(), bi = b.begin();
  for (; ai != a.end(); ++ai, ++bi) {
    if (bi == b.end() || *ai != *bi) return false;
  }
  return true;
}

// Refuses targets whose replacement would remove the folder we stand in (or one above it), and links.
fs::path resolve_target(const fs::path& target, const std::string& what) {
  const fs::path lexical = lexical_target(target);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(lexical, ec))) {
    throw OutputRefused(fmt::format("{} {} is a symbolic link; tpusim replaces only what it wrote, so name the "
                                    "real location instead", what, target.string()));
  }
  const fs::path resolved = fs::weakly_canonical(lexical, ec);
  const fs::path real = ec ? lexical : resolved;
  const fs::path cwd = fs::weakly_canonical(fs::current_path(), ec);
  if (!real.has_relative_path() || (!ec && is_ancestor_or_self(real, cwd))) {
    throw OutputRefused(fmt::format("{} {} is {}; replacing it would delete the folder you are working in. "
                                    "Choose a new folder, e.g. -o out/NAME",
                                    what, target.string(),
                                    !real.has_relative_path() ? "the root folder"
                                    : real == cwd            ? "the current folder"
                                                             : "an ancestor of the current folder"));
  }
  // The nearest ancestor that exists must be a folder: below a file nothing can be written, and finding that
  // out only when the results are written would throw the run away.
  for (fs::path p = target.parent_path(); !p.empty() && p.has_relative_path(); p = p.parent_path()) {
    const fs::file_status st = fs::status(p, ec);
    if (!fs::exists(st)) continue;
    if (!fs::is_directory(st)) {
      throw OutputRefused(fmt::format("{} {} is below {}, which is a file, not a folder; choose another path",
                                      what, target.string(), p.string()));
    }
    break;
  }
  return real;
}

bool has_marker(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(dir / kOutputMarker, ec));
}

void write_marker(const fs::path& dir) {
  write_file(dir / kOutputMarker, [](std::ostream& out) {
    out << "This folder was written by tpusim. `tpusim run -o` / `tpusim sweep -o` may replace or update it;\n"
           "tpusim refuses to write into a folder without this file.\n";
  });
}

// Creates the missing ancestors of `dir` (not `dir` itself); returns the ones it created, deepest last.
std::vector<fs::path> create_parents(const fs::path& dir) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir.parent_path(); p.has_relative_path() && !fs::exists(fs::symlink_status(p, ec));
       p = p.parent_path()) {
    missing.insert(missing.begin(), p);
  }
  for (const fs::path& p : missing) {
    if (!fs::create_directory(p, ec) && ec) {
      throw std::runtime_error(fmt::format("cannot create {}: {}", p.string(), ec.message()));
    }
  }
  return missing;
}

fs::path sibling(const fs::path& target, const char* kind) {
  return target.parent_path() / fmt::format(".{}.{}-{}", target.filename().string(), kind, getpid());
}

}  // namespace

fs::path default_output_dir(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw OutputRefused(fmt::format("the name '{}' cannot be used as the default output folder out/<name>; give "
                                    "an output folder with -o",
                                    name));
  }
  return fs::path("out") / name;
}

fs::path check_output_folder(const fs::path& target) {
  const fs::path real = resolve_target(target, "the output folder");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(real, ec);
  if (!fs::exists(st)) return real;
  if (!fs::is_directory(st)) {
    throw OutputRefused(fmt::format("the output folder {} is an existing file, not a folder tpusim wrote; "
                                    "choose another -o",
                                    target.string()));
  }
  if (!has_marker(real)) {
    throw OutputRefused(fmt::format("the output folder {} exists and was not written by tpusim (it has no {} "
                                    "file); tpusim replaces only folders it wrote. Choose a new folder, or "
                                    "remove this one yourself",
                                    target.string(), kOutputMarker));
  }
  return real;
}

fs::path check_output_file(const fs::path& target, const std::string& signature) {
  const fs::path real = resolve_target(target, "the output file");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(real, ec);
  if (!fs::exists(st)) return real;
  if (!fs::is_regular_file(st)) {
    throw OutputRefused(fmt::format("the output file {} exists and is not a regular file; choose another path",
                                    target.string()));
  }
  std::ifstream in(real, std::ios::binary);
  std::string head(512, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.find(signature) == std::string::npos) {
    throw OutputRefused(fmt::format("the output file {} exists and was not written by tpusim; tpusim replaces "
                                    "only files it wrote. Choose another path, or remove it yourself",
                                    target.string()));
  }
  return real;
}

fs::path claim_output_folder(const fs::path& target) {
  const fs::path real = check_output_folder(target);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(real, ec))) return real;
  create_parents(real);
  if (!fs::create_directory(real, ec) && ec) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", real.string(), ec.message()));
  }
  write_marker(real);
  return real;
}

OutputFolder::OutputFolder(const fs::path& target) : final_(check_output_folder(target)) {
  staging_ = sibling(final_, "partial");
  created_parents_ = create_parents(final_);
  std::error_code ec;
  fs::remove_all(staging_, ec);  // ours: a sibling named after our own process id
  if (!fs::create_directory(staging_, ec)) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", staging_.string(), ec.message()));
  }
  write_marker(staging_);
}

OutputFolder::~OutputFolder() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  for (auto it = created_parents_.rbegin(); it != created_parents_.rend(); ++it) fs::remove(*it, ec);  // if empty
}

void OutputFolder::commit() {
  throw_if_interrupted();
  // Checked again: another process may have put something there while we ran.
  (void)check_output_folder(final_);
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(final_, ec));
  const fs::path old = sibling(final_, "old");
  if (replacing) fs::rename(final_, old);
  try {
    fs::rename(staging_, final_);
  } catch (...) {
    if (replacing) fs::rename(old, final_, ec);
    throw;
  }
  committed_ = true;
  if (replacing) fs::remove_all(old, ec);
}

void write_file(const fs::path& path, const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(fmt::format("cannot create {}", path.string()));
  fill(out);
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

void write_file_atomically(const fs::path& target, const std::function<void(std::ostream&)>& fill) {
  const fs::path staged = sibling(fs::absolute(target).lexically_normal(), "partial");
  try {
    write_file(staged, fill);
    throw_if_interrupted();
    fs::rename(staged, target);
  } catch (...) {
    std::error_code ec;
    fs::remove(staged, ec);
    throw;
  }
}

}  // namespace tpusim::tools
