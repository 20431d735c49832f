// How tpusim recognises what it wrote (output_folder.h): the manifests of its folders, with each file's size and
// checksum, and the signatures of its single files.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "tools/src/output_folder.h"
#include "tools/src/output_folder_parts.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using namespace output_parts;

namespace {

constexpr std::uint64_t kFnvBasis = 14695981039346656037ULL;

// 64-bit FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/), continued from `h`: a checksum that finds an
// edit, not a defence against someone forging one.
std::uint64_t fnv1a64(std::string_view text, std::uint64_t h = kFnvBasis) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// The 64-bit FNV-1a of a file's bytes as a manifest writes it ("fnv1a64:" and 16 hex digits); nullopt when
// the file cannot be read.
std::optional<std::string> file_checksum(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::uint64_t h = kFnvBasis;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    h = fnv1a64(std::string_view(buf, static_cast<std::size_t>(in.gcount())), h);
    if (in.eof()) break;
  }
  if (in.bad()) return std::nullopt;
  return fmt::format("fnv1a64:{:016x}", h);
}

// A manifest entry for `file` as it is now: "SIZE fnv1a64:CHECKSUM".
std::string manifest_entry(const fs::path& file) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  const std::optional<std::string> sum = file_checksum(file);
  if (ec || !sum) throw std::runtime_error(fmt::format("cannot read back {}", file.string()));
  return fmt::format("{} {}", size, *sum);
}

// What a folder's manifest lists: the entry each file was last listed with ("*": any). A file tpusim wrote
// again is its own only as it last wrote it, so an edit back to an earlier content is the user's. A line
// without its newline (cut short by a crash) lists nothing.
struct Manifest {
  std::map<std::string, std::string> entries;
  // The marker says every line carries a checksum ("manifest: 2"): a line without one is not tpusim's.
  bool checksums = false;
};

Manifest read_manifest(const fs::path& dir) {
  Manifest m;
  m.checksums = marker_line(dir, "manifest") == "2";
  const std::string text = read_text(dir / kOutputManifest);
  std::size_t at = 0;
  for (std::size_t eol = text.find('\n'); eol != std::string::npos; at = eol + 1, eol = text.find('\n', at)) {
    const std::string line = text.substr(at, eol - at);
    const auto tab = line.find('\t');
    if (tab != std::string::npos) m.entries[line.substr(tab + 1)] = line.substr(0, tab);
  }
  return m;
}

// True when the regular file `file` is as its manifest entry lists it. Empty but listed: tpusim's file, cut
// short by a crash (the listing reached the disk, the data did not).
bool as_listed(const fs::path& file, const std::string& entry, bool need_checksum) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) return false;
  if (entry == "*" || size == 0) return true;
  const auto space = entry.find(' ');
  if (entry.substr(0, space) != std::to_string(size)) return false;
  if (space == std::string::npos) return !need_checksum;  // an older tpusim's line: its size is all it says
  return file_checksum(file) == entry.substr(space + 1);
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
// marked folder `dir` is in, relative to it with `rel`) does not list as they are. A marked sub-folder is judged
// by its own manifest where the folder holds outputs of its own (holds_point_outputs); elsewhere it is foreign
// as a whole ("NAME/"): a run's or comparison's folder is replaced whole, and tpusim wrote no such sub-folder.
void collect_foreign(const fs::path& dir, const std::string& prefix, const std::string& rel, const Manifest& listed,
                     bool nested_outputs, std::vector<std::string>& found) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    const std::string name = p.filename().string();
    const std::string shown = prefix + name;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (rel.empty() && (name == kOutputMarker || name == kOutputManifest || name == OutputFolder::kStagingNote)) {
      continue;
    }
    if (is_staging_name(name)) continue;
    if (fs::is_directory(st)) {
      if (has_marker(p) && !nested_outputs) {
        found.push_back(shown + "/");
      } else if (has_marker(p)) {
        collect_foreign(p, shown + "/", "", read_manifest(p), holds_point_outputs(p), found);
      } else {
        collect_foreign(p, shown + "/", rel + name + "/", listed, nested_outputs, found);
      }
      continue;
    }
    const auto it = listed.entries.find(rel + name);
    const bool ours = fs::is_regular_file(st) && it != listed.entries.end() &&
                      as_listed(p, it->second, listed.checksums);
    if (!ours) found.push_back(shown);
  }
}

// Replaces the manifest of `dir` with `lines` ("ENTRY<TAB>PATH\n" each, in the order given), atomically.
void replace_manifest(const fs::path& dir, const std::vector<std::string>& lines) {
  const fs::path staged = dir / fmt::format(".{}.partial-{}", kOutputManifest, getpid());
  write_file(staged, [&](std::ostream& out) {
    for (const auto& l : lines) out << l;
  });
  fs::rename(staged, dir / kOutputManifest);
}

// `text` with a signature line after its first: `before`, "written by tpusim, checksum fnv1a64 HEX" (the
// checksum of `text`, with a final newline added when it has no line break), `after`.
std::string sign_text(const std::string& text, const std::string& before, const std::string& after) {
  const std::string body = text.find('\n') == std::string::npos ? text + "\n" : text;
  const std::string note = fmt::format("{}, {}{:016x}", kWrittenByTpusim, kChecksumTag, fnv1a64(body));
  const auto eol = body.find('\n');
  return body.substr(0, eol + 1) + before + note + after + "\n" + body.substr(eol + 1);
}

}  // namespace

namespace output_parts {

void write_full_manifest(const fs::path& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(dir);
    if (rel == kOutputMarker || rel == kOutputManifest || rel == OutputFolder::kStagingNote) continue;
    if (it->is_directory() && has_marker(it->path())) {
      it.disable_recursion_pending();  // judged by its own manifest
      continue;
    }
    if (it->is_regular_file()) lines.push_back(fmt::format("{}\t{}\n", manifest_entry(it->path()), rel.string()));
  }
  std::sort(lines.begin(), lines.end());
  replace_manifest(dir, lines);
}

std::optional<SignatureSums> signature_sums(const std::string& text) {
  // The signature is the second line; without it the rest must hash to the checksum it names.
  const auto first = text.find('\n');
  if (first == std::string::npos) return std::nullopt;
  const auto second = text.find('\n', first + 1);
  if (second == std::string::npos) return std::nullopt;
  const std::string line = text.substr(first + 1, second - first - 1);
  const std::string tag = std::string(kWrittenByTpusim) + ", " + kChecksumTag;
  const auto at = line.find(tag);
  if (at == std::string::npos) return std::nullopt;
  const std::string body = text.substr(0, first + 1) + text.substr(second + 1);
  return SignatureSums{line.substr(at + tag.size(), 16), fmt::format("{:016x}", fnv1a64(body))};
}

}  // namespace output_parts

std::vector<std::string> foreign_files(const fs::path& dir) {
  std::vector<std::string> found;
  collect_foreign(dir, "", "", read_manifest(dir), holds_point_outputs(dir), found);
  return found;
}

Signature signature_of(const std::string& text) {
  const std::optional<SignatureSums> sums = signature_sums(text);
  if (!sums) return Signature::none;
  return sums->signed_as == sums->content ? Signature::valid : Signature::changed;
}

std::string sign_drawing(const std::string& text, bool svg) {
  return svg ? sign_text(text, "<!-- ", " -->") : sign_text(text, "// ", "");
}

std::string sign_program(const std::string& text) { return sign_text(text, "  \"signature\": \"", "\","); }

void record_written(const fs::path& file, bool in_progress) {
  const fs::path abs = fs::absolute(file).lexically_normal();
  for (fs::path dir = abs.parent_path(); dir.has_relative_path(); dir = dir.parent_path()) {
    if (!has_marker(dir)) continue;
    std::error_code ec;
    if (!in_progress && !fs::is_regular_file(abs, ec)) return;
    const std::string entry = in_progress ? "*" : manifest_entry(abs);
    const std::string line = fmt::format("{}\t{}\n", entry, abs.lexically_relative(dir).string());
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
  for (const auto& [name, entry] : read_manifest(dir).entries) lines.push_back(fmt::format("{}\t{}\n", entry, name));
  replace_manifest(dir, lines);
}

}  // namespace tpusim::tools
