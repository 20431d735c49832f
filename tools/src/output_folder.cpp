#include "tools/src/output_folder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
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

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_marker(const fs::path& dir, const std::string& kind) {
  write_file(dir / kOutputMarker, [&](std::ostream& out) {
    out << "This folder was written by tpusim. `tpusim run -o` / `tpusim sweep -o` may replace or update it;\n"
           "tpusim refuses to write into a folder without this file, or holding a file that "
        << kOutputManifest << " does not list.\nkind: " << kind << "\n";
  });
}

// The kind a marker names ("" for a marker of an older tpusim, which named none).
std::string marker_kind(const fs::path& dir) {
  std::istringstream in(read_text(dir / kOutputMarker));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("kind: ", 0) == 0) return line.substr(6);
  }
  return "";
}

std::string describe_kind(const std::string& kind) {
  if (kind == "run") return "a run's output (tpusim run)";
  if (kind == "sweep") return "a sweep (tpusim sweep)";
  if (kind == "layouts") return "a layout search (tpusim layouts)";
  if (kind == "calibrate") return "a calibration (tpusim calibrate)";
  if (kind == "compare") return "a comparison (tpusim compare)";
  return kind;
}

// The size each file of a manifest was last listed at ("*": any): a file tpusim wrote again is its own only at
// its latest size, so an edit back to an earlier size is the user's. A line without its newline (cut short by
// a crash) lists nothing.
std::map<std::string, std::string> read_manifest(const fs::path& dir) {
  std::map<std::string, std::string> sizes;
  const std::string text = read_text(dir / kOutputManifest);
  std::size_t at = 0;
  for (std::size_t eol = text.find('\n'); eol != std::string::npos; at = eol + 1, eol = text.find('\n', at)) {
    const std::string line = text.substr(at, eol - at);
    const auto tab = line.find('\t');
    if (tab != std::string::npos) sizes[line.substr(tab + 1)] = line.substr(0, tab);
  }
  return sizes;
}

// A name tpusim gives its staged files and folders (`.NAME.partial-PID`, `.NAME.old-PID`).
bool is_staging_name(const std::string& name) {
  if (name.size() < 2 || name[0] != '.') return false;
  for (const char* kind : {".partial-", ".old-"}) {
    const auto at = name.rfind(kind);
    if (at == std::string::npos || at == 0) continue;
    const std::string pid = name.substr(at + std::char_traits<char>::length(kind));
    if (!pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
  }
  return false;
}

// Adds to `found` the files under `dir` (named `prefix`+relative path) that `listed` (the manifest of the
// marked folder `dir` is in, relative to it with `rel`) does not list at their size.
void collect_foreign(const fs::path& dir, const std::string& prefix, const std::string& rel,
                     const std::map<std::string, std::string>& listed, std::vector<std::string>& found) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    const std::string name = p.filename().string();
    const std::string shown = prefix + name;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (rel.empty() && (name == kOutputMarker || name == kOutputManifest)) continue;
    if (is_staging_name(name)) continue;
    if (fs::is_directory(st)) {
      if (has_marker(p)) {
        collect_foreign(p, shown + "/", "", read_manifest(p), found);
      } else {
        collect_foreign(p, shown + "/", rel + name + "/", listed, found);
      }
      continue;
    }
    const auto it = listed.find(rel + name);
    bool ours = false;
    if (fs::is_regular_file(st) && it != listed.end()) {
      // Empty but listed: tpusim's file, cut short by a crash (the listing reached the disk, the data did not).
      const std::string size = std::to_string(fs::file_size(p, ec));
      ours = it->second == "*" || it->second == size || size == "0";
    }
    if (!ours) found.push_back(shown);
  }
}

// Replaces the manifest of `dir` with `lines` ("SIZE<TAB>PATH\n" each, in the order given), atomically.
void replace_manifest(const fs::path& dir, const std::vector<std::string>& lines) {
  const fs::path staged = dir / fmt::format(".{}.partial-{}", kOutputManifest, getpid());
  write_file(staged, [&](std::ostream& out) {
    for (const auto& l : lines) out << l;
  });
  fs::rename(staged, dir / kOutputManifest);
}

// The whole manifest of a folder tpusim just wrote (every regular file below it), written atomically.
void write_full_manifest(const fs::path& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(dir);
    if (rel == kOutputMarker || rel == kOutputManifest) continue;
    if (it->is_directory() && has_marker(it->path())) {
      it.disable_recursion_pending();  // judged by its own manifest
      continue;
    }
    if (it->is_regular_file()) lines.push_back(fmt::format("{}\t{}\n", fs::file_size(it->path()), rel.string()));
  }
  std::sort(lines.begin(), lines.end());
  replace_manifest(dir, lines);
}

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

constexpr const char* kChecksumTag = "checksum fnv1a64 ";

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

std::vector<std::string> foreign_files(const fs::path& dir) {
  std::vector<std::string> found;
  collect_foreign(dir, "", "", read_manifest(dir), found);
  return found;
}

fs::path check_output_folder(const fs::path& target, const std::string& kind) {
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
  const std::string found_kind = marker_kind(real);
  if (!found_kind.empty() && found_kind != kind) {
    throw OutputRefused(fmt::format("the output folder {} holds {}, not {}; choose another -o",
                                    target.string(), describe_kind(found_kind), describe_kind(kind)));
  }
  const std::vector<std::string> foreign = foreign_files(real);
  if (!foreign.empty()) {
    std::string list;
    for (std::size_t i = 0; i < std::min<std::size_t>(foreign.size(), 5); ++i) list += "\n  " + foreign[i];
    if (foreign.size() > 5) list += fmt::format("\n  ... and {} more", foreign.size() - 5);
    const bool old = !fs::exists(real / kOutputManifest, ec);
    throw OutputRefused(fmt::format(
        "the output folder {} holds {} file{} tpusim did not write{}:{}\ntpusim never replaces a file it did not "
        "write: choose another -o, or move {} out of the folder",
        target.string(), foreign.size(), foreign.size() == 1 ? "" : "s",
        old ? fmt::format(" (it has no {}: an older tpusim wrote the folder and kept no list of its files, so "
                          "none is provably tpusim's)",
                          kOutputManifest)
            : " (or changed since)",
        list, foreign.size() == 1 ? "it" : "them"));
  }
  return real;
}

fs::path check_output_file(const fs::path& target, const std::function<bool(const std::string&)>& is_ours) {
  const fs::path real = resolve_target(target, "the output file");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(real, ec);
  if (!fs::exists(st)) return real;
  if (!fs::is_regular_file(st)) {
    throw OutputRefused(fmt::format("the output file {} exists and is not a regular file; choose another path",
                                    target.string()));
  }
  if (!is_ours(read_text(real))) {
    throw OutputRefused(fmt::format("the output file {} exists and was not written by tpusim (or was changed "
                                    "since); tpusim replaces only its own files. Choose another path, or remove "
                                    "it yourself",
                                    target.string()));
  }
  return real;
}

std::string sign_drawing(const std::string& text, bool svg) {
  const std::string body = text.find('\n') == std::string::npos ? text + "\n" : text;
  const std::string note = fmt::format("{}, {}{:016x}", kWrittenByTpusim, kChecksumTag, fnv1a64(body));
  const std::string comment = svg ? "<!-- " + note + " -->\n" : "// " + note + "\n";
  const auto eol = body.find('\n');
  return body.substr(0, eol + 1) + comment + body.substr(eol + 1);
}

bool is_signed_drawing(const std::string& text) {
  // The comment is the second line; without it the rest must hash to the checksum it names.
  const auto first = text.find('\n');
  if (first == std::string::npos) return false;
  const auto second = text.find('\n', first + 1);
  if (second == std::string::npos) return false;
  const std::string comment = text.substr(first + 1, second - first - 1);
  const std::string tag = std::string(kWrittenByTpusim) + ", " + kChecksumTag;
  const auto at = comment.find(tag);
  if (at == std::string::npos) return false;
  const std::string sum = comment.substr(at + tag.size(), 16);
  const std::string body = text.substr(0, first + 1) + text.substr(second + 1);
  return sum == fmt::format("{:016x}", fnv1a64(body));
}

fs::path claim_output_folder(const fs::path& target, const std::string& kind) {
  const fs::path real = check_output_folder(target, kind);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(real, ec))) return real;
  create_parents(real);
  if (!fs::create_directory(real, ec) && ec) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", real.string(), ec.message()));
  }
  write_marker(real, kind);
  return real;
}

void record_written(const fs::path& file, bool in_progress) {
  const fs::path abs = fs::absolute(file).lexically_normal();
  for (fs::path dir = abs.parent_path(); dir.has_relative_path(); dir = dir.parent_path()) {
    if (!has_marker(dir)) continue;
    std::error_code ec;
    const std::string size = in_progress ? "*" : std::to_string(fs::file_size(abs, ec));
    if (ec) return;
    const std::string line = fmt::format("{}\t{}\n", size, abs.lexically_relative(dir).string());
    // One append of one short line: writers sharing the folder (sweep shares) do not lose each other's lines.
    const int fd = ::open((dir / kOutputManifest).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) throw std::runtime_error(fmt::format("cannot write {}", (dir / kOutputManifest).string()));
    const ssize_t n = ::write(fd, line.data(), line.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(line.size())) {
      throw std::runtime_error(fmt::format("cannot write {}", (dir / kOutputManifest).string()));
    }
    return;
  }
}

void compact_manifest(const fs::path& dir) {
  if (!fs::exists(dir / kOutputManifest)) return;
  std::vector<std::string> lines;
  for (const auto& [name, size] : read_manifest(dir)) lines.push_back(fmt::format("{}\t{}\n", size, name));
  replace_manifest(dir, lines);
}

OutputFolder::OutputFolder(const fs::path& target, const std::string& kind)
    : final_(check_output_folder(target, kind)), kind_(kind) {
  staging_ = sibling(final_, "partial");
  created_parents_ = create_parents(final_);
  std::error_code ec;
  fs::remove_all(staging_, ec);  // ours: a sibling named after our own process id
  if (!fs::create_directory(staging_, ec)) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", staging_.string(), ec.message()));
  }
  write_marker(staging_, kind);
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
  (void)check_output_folder(final_, kind_);
  write_full_manifest(staging_);  // last: a folder without it was not finished
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

PointsLock::PointsLock(const fs::path& folder, const std::vector<std::size_t>& points) {
  if (points.empty()) throw std::invalid_argument("PointsLock: no points (PointsLock::every locks them all)");
  lock(folder, points);
}

PointsLock::PointsLock(const fs::path& folder, Every /*every*/) { lock(folder, {}); }

void PointsLock::lock(const fs::path& folder, const std::vector<std::size_t>& points) {
  const fs::path marker = folder / kOutputMarker;
  // Opened for writing, which an exclusive lock needs; nothing is written. Not inherited by the point runs.
  fd_ = ::open(marker.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot open {}", marker.string()));
  // Runs of consecutive indices, one lock each (a share's points are every N-th: one byte each).
  std::vector<std::pair<std::size_t, std::size_t>> ranges;  // [first, last]
  for (const std::size_t i : points) {
    if (!ranges.empty() && ranges.back().second + 1 == i) {
      ranges.back().second = i;
    } else {
      ranges.emplace_back(i, i);
    }
  }
  if (points.empty()) ranges.emplace_back(0, 0);
  for (const auto& [first, last] : ranges) {
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(first);
    l.l_len = points.empty() ? 0 : static_cast<off_t>(last - first + 1);  // 0: to the end and beyond
    if (::fcntl(fd_, F_OFD_SETLK, &l) == 0) continue;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EAGAIN || err == EACCES) {
      throw OutputRefused(fmt::format(
          "another tpusim is running or collecting {} of {} (a job array still running, or a second shell); "
          "wait for it to finish, or choose another -o",
          points.empty() ? std::string("points")
          : first == last ? fmt::format("point {}", first)
                          : fmt::format("points {}-{}", first, last),
          folder.string()));
    }
    if (err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP || err == EINVAL) {
      // A file system without byte-range locks (Lustre mounted without flock): run unguarded, and say so.
      std::cerr << fmt::format("tpusim: warning: {} cannot be locked ({}); two studies writing the same points of "
                               "this folder at once would not be noticed\n",
                               marker.string(), std::strerror(err));
      return;
    }
    throw std::runtime_error(fmt::format("cannot lock {}: {}", marker.string(), std::strerror(err)));
  }
}

PointsLock::~PointsLock() {
  if (fd_ >= 0) ::close(fd_);
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
    record_written(target);
  } catch (...) {
    std::error_code ec;
    fs::remove(staged, ec);
    throw;
  }
}

}  // namespace tpusim::tools
