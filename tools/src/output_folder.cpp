#include "tools/src/output_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "tools/src/output_folder_parts.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using namespace output_parts;

namespace output_parts {

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

std::string marker_line(const fs::path& dir, const std::string& key) {
  std::istringstream in(read_text(dir / kOutputMarker));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
  }
  return "";
}

bool holds_point_outputs(const fs::path& dir) {
  const std::string kind = marker_line(dir, "kind");
  return kind != "run" && kind != "compare";
}

}  // namespace output_parts

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

void write_marker(const fs::path& dir, const std::string& kind) {
  write_file(dir / kOutputMarker, [&](std::ostream& out) {
    out << "This folder was written by tpusim. `tpusim run -o` / `tpusim sweep -o` may replace or update it;\n"
           "tpusim refuses to write into a folder without this file, or holding a file that "
        << kOutputManifest << " does not list.\nkind: " << kind << "\nmanifest: 2\n";
  });
}

// The kind a marker names ("" for a marker of an older tpusim, which named none).
std::string marker_kind(const fs::path& dir) { return marker_line(dir, "kind"); }

std::string describe_kind(const std::string& kind) {
  if (kind == "run") return "a run's output (tpusim run)";
  if (kind == "sweep") return "a sweep (tpusim sweep)";
  if (kind == "layouts") return "a layout search (tpusim layouts)";
  if (kind == "calibrate") return "a calibration (tpusim calibrate)";
  if (kind == "compare") return "a comparison (tpusim compare)";
  return kind;
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

// What a staging folder's note says: the process writing it, and the machine it runs on (a folder shared over
// the network may be written from another, where the PID means another process).
std::string staging_note(pid_t pid) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("tpusim staging: pid {} host {}\n", pid, host);
}

// The process id in the name of a leftover of a run into the target named `name` (`.NAME.KIND-PID`).
std::optional<pid_t> leftover_pid(const std::string& entry, const std::string& name, const std::string& kind) {
  const std::string prefix = "." + name + "." + kind + "-";
  if (entry.size() <= prefix.size() || entry.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = entry.substr(prefix.size());
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return static_cast<pid_t>(std::stol(digits));
}

// True while a process with this id runs (EPERM: another user's). A zombie has ended: killed, it waits for its
// parent (or init, for an orphan) to collect its status, which may take a while.
bool process_exists(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));  // "PID (NAME) STATE ..."
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// Removes the leftovers of killed runs into `target` beside it that are provably tpusim's and whose process no
// longer exists: a staging folder (`.NAME.partial-PID`) whose note names that process on this machine, a
// replaced folder (`.NAME.old-PID`) holding only files its manifest lists as they are. Anything else that
// merely looks like one (no marker, another note, a file someone put there) is left alone.
void remove_stale_leftovers(const fs::path& target) {
  std::error_code ec;
  const std::string name = target.filename().string();
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(target.parent_path(), ec)) {
    const std::string entry = e.path().filename().string();
    for (const std::string_view kind : {"partial", "old"}) {
      const std::optional<pid_t> pid = leftover_pid(entry, name, std::string(kind));
      if (!pid || *pid == getpid() || process_exists(*pid)) continue;
      if (!fs::is_directory(fs::symlink_status(e.path(), ec)) || !has_marker(e.path())) continue;
      const fs::path& p = e.path();
      const bool ours = kind == "partial" ? read_text(p / OutputFolder::kStagingNote) == staging_note(*pid)
                                          : fs::exists(p / kOutputManifest, ec) && foreign_files(p).empty();
      if (!ours) continue;
      // A run killed between its two renames left the folder it was replacing as .NAME.old-PID and no NAME: it
      // is the output the user last had, so it goes back in place (the run about to start replaces it only if
      // it completes).
      if (kind == "old" && !fs::exists(fs::symlink_status(target, ec))) {
        fs::rename(p, target, ec);
        if (!ec) continue;
      }
      stale.push_back(e.path());
    }
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

// Removes the staging copies of a single file that killed runs left beside `target` (`.NAME.partial-PID`, a
// regular file whose second line is tpusim's signature: written before the rest) once their process is gone.
void remove_stale_partial_files(const fs::path& target) {
  std::error_code ec;
  const std::string name = target.filename().string();
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(target.parent_path(), ec)) {
    const std::optional<pid_t> pid = leftover_pid(e.path().filename().string(), name, "partial");
    if (!pid || *pid == getpid() || process_exists(*pid)) continue;
    if (!fs::is_regular_file(fs::symlink_status(e.path(), ec))) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (signature_sums(head)) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove(p, ec);
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

// Whether tpusim can write beside `real` (its staging folder or file goes there): a folder it creates and removes
// at once in the nearest folder above `real` that exists (where the missing ones would be created). Found before
// anything runs, not once the output is ready: /proc, a read-only mount, a folder of another user.
void check_writable(const fs::path& real, const fs::path& target, const std::string& what) {
  std::error_code ec;
  fs::path parent = real.parent_path();
  while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.parent_path()) parent = parent.parent_path();
  const fs::path probe = parent / fmt::format(".{}.probe-{}", real.filename().string(), getpid());
  if (!fs::create_directory(probe, ec) || ec) {
    throw OutputRefused(fmt::format("{} {} cannot be written: tpusim cannot create anything in {} ({}); choose "
                                    "another path",
                                    what, target.string(), parent.string(),
                                    ec ? ec.message() : "it exists as something else"));
  }
  fs::remove(probe, ec);
}

namespace {

// Refuses an output folder inside a run's or a comparison's output: the next write of that folder replaces it
// whole, which would delete the output inside (`compare ... -o out/r1/cmp`, then `run -o out/r1`).
void check_not_inside_a_replaced_folder(const fs::path& real, const fs::path& target) {
  std::error_code ec;
  for (fs::path p = real.parent_path(); p.has_relative_path(); p = p.parent_path()) {
    if (!fs::is_directory(fs::symlink_status(p, ec)) || !has_marker(p)) continue;
    if (holds_point_outputs(p)) return;  // a study's folder: its points are outputs of their own
    throw OutputRefused(fmt::format("the output folder {} is inside {}, which holds {}: tpusim replaces that "
                                    "folder whole when it writes it again, which would delete this one. Choose "
                                    "a folder outside it",
                                    target.string(), p.string(), describe_kind(marker_kind(p))));
  }
}

}  // namespace

fs::path check_output_folder(const fs::path& target, const std::string& kind) {
  const fs::path real = resolve_target(target, "the output folder");
  check_not_inside_a_replaced_folder(real, target);
  check_writable(real, target, "the output folder");
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
  for (const std::string& f : foreign) {
    if (f.empty() || f.back() != '/') continue;
    // A sub-folder with its own marker: another tpusim output, written there when nothing refused it.
    throw OutputRefused(fmt::format("the output folder {} holds {}, {} written inside it separately; replacing "
                                    "{} would delete it. Move {} out of the folder, or choose another -o",
                                    target.string(), (target / f).string(),
                                    describe_kind(marker_kind(real / f)), target.string(), f));
  }
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

fs::path check_output_file(const fs::path& target) {
  const fs::path real = resolve_target(target, "the output file");
  check_writable(real, target, "the output file");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(real, ec);
  if (!fs::exists(st)) {
    remove_stale_partial_files(real);
    return real;
  }
  if (!fs::is_regular_file(st)) {
    throw OutputRefused(fmt::format("the output file {} exists and is not a regular file; choose another path",
                                    target.string()));
  }
  const std::string text = read_text(real);
  const std::optional<SignatureSums> sums = signature_sums(text);
  if (!sums) {
    throw OutputRefused(fmt::format("the output file {} exists and was not written by tpusim (its second line is "
                                    "not tpusim's signature, \"{}, {}...\"); tpusim replaces only its own "
                                    "files. Choose another path, or remove it yourself",
                                    target.string(), kWrittenByTpusim, kChecksumTag));
  }
  if (sums->signed_as != sums->content) {
    throw OutputRefused(fmt::format("the output file {} was changed since tpusim wrote it: expected the checksum "
                                    "its signature gives, fnv1a64 {}, found fnv1a64 {}; tpusim never replaces "
                                    "a file someone changed. Choose another path, or remove it yourself",
                                    target.string(), sums->signed_as, sums->content));
  }
  remove_stale_partial_files(real);
  return real;
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

OutputFolder::OutputFolder(const fs::path& target, const std::string& kind)
    : final_(check_output_folder(target, kind)), kind_(kind) {
  staging_ = sibling(final_, "partial");
  created_parents_ = create_parents(final_);
  remove_stale_leftovers(final_);
  std::error_code ec;
  fs::remove_all(staging_, ec);  // ours: a sibling named after our own process id
  if (!fs::create_directory(staging_, ec)) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", staging_.string(), ec.message()));
  }
  write_marker(staging_, kind);
  write_file(staging_ / kStagingNote, [](std::ostream& out) { out << staging_note(getpid()); });
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
  fs::remove(final_ / kStagingNote, ec);  // not listed, and ignored if a kill leaves it
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
