#pragma once
// What tpusim may write over. tpusim never deletes or replaces a file or folder it did not write:
//
// - Output folders (`run -o`, `sweep -o`, `calibrate -o`, `layouts -o`, `compare -o`): the target is new, or a
//   folder of the same kind holding the marker file `.tpusim-output` (which names the kind: run, sweep, ...)
//   and nothing but the files listed in its manifest `.tpusim-manifest` (name, size and checksum of every
//   file tpusim wrote there). A sub-folder with its own marker (a sweep's point) is judged by its own
//   manifest in a study's folder (sweep, layouts, calibrate); in a run's or a comparison's folder, which is
//   replaced whole, it is not tpusim's to delete, and an output folder inside one is refused (it would be
//   deleted with it). Refused (OutputRefused, exit 2): an existing file, a folder without the marker, a folder of
//   another kind, a folder holding any file its manifest does not list at that size and content checksum (the
//   user's, or edited by the user; an older tpusim kept no manifest, so all of its files count as the user's),
//   a symbolic link, the current folder, any ancestor of it (so `.`, `..`, `some/dir/.` and `/`), and anything
//   that resolves to them. tpusim's own leftovers of a killed run beside the folder (`.NAME.partial-PID`,
//   `.NAME.old-PID`) are not the user's: they are ignored, and removed by the next run into the folder once
//   they are provably tpusim's and their process is gone (OutputFolder).
// - Single files (`lower -o`, `topo --dot`, `topo --svg`, `describe chip --svg`): the target is new, or a
//   regular file tpusim wrote and nobody changed since: its second line is tpusim's signature (a comment in a
//   drawing, the "signature" field of a program file) carrying the checksum of the rest of the file. Refused:
//   anything else, including hand-written or edited files, folders, links and device files.
//
// Writes are staged beside the target (`.NAME.partial-PID`) and renamed into place only when everything was
// written, so a failed or interrupted run leaves the previous output, or nothing, never a half-written one.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::tools {

inline constexpr const char* kOutputMarker = ".tpusim-output";
// Every file tpusim wrote into a marked folder, one "SIZE fnv1a64:CHECKSUM<TAB>RELATIVE/PATH" line each (the
// 64-bit FNV-1a of its bytes, 16 hex digits), appended as each file is complete ("*" for both: a log still
// being written). A file is tpusim's when the last line listing it gives its present size and checksum (or
// "*"), or it is listed and empty (cut short by a crash). A run's folder gets its whole manifest last, before
// the folder is renamed into place. A marker with "manifest: 2" says every line carries a checksum; an older
// tpusim's folder (no such line) lists sizes only ("SIZE<TAB>PATH"), which are all it can be judged by.
inline constexpr const char* kOutputManifest = ".tpusim-manifest";
// The signature tpusim puts into the single files it writes, so it can recognise them as its own later.
inline constexpr const char* kWrittenByTpusim = "written by tpusim";

// tpusim will not write there; what() says why and what to do instead. Bad input: exit 2.
class OutputRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The default output folder of a run or sweep named `name`: out/<name>. Throws OutputRefused when the name
// cannot be a folder name (empty, ".", "..", or containing '/').
[[nodiscard]] std::filesystem::path default_output_dir(const std::string& name);

// Checks that tpusim may (re)place the output folder `target` of kind `kind` ("run", "sweep", "layouts",
// "calibrate", "compare"); returns its absolute, normalised path.
[[nodiscard]] std::filesystem::path check_output_folder(const std::filesystem::path& target, const std::string& kind);

// The files under `dir` (relative paths, sorted) that its manifests do not list as they are now.
[[nodiscard]] std::vector<std::string> foreign_files(const std::filesystem::path& dir);

// Checks that tpusim may (re)place the single output file `target`: new, or signed by tpusim and unchanged
// (Signature::valid). Returns its absolute, normalised path.
[[nodiscard]] std::filesystem::path check_output_file(const std::filesystem::path& target);
// A single file's signature: its second line holds "written by tpusim, checksum fnv1a64 HEX", and HEX is the
// checksum of the file without that line (valid), or is not (changed: edited since tpusim wrote it); or the
// file has no such line (none: a user's file, or one written by a tpusim that did not sign its files).
enum class Signature { valid, changed, none };
[[nodiscard]] Signature signature_of(const std::string& text);
// `text` signed with a comment after its first line (an SVG's XML declaration must stay first).
[[nodiscard]] std::string sign_drawing(const std::string& text, bool svg);
// A program file (ir::write_program_json's text) signed with a "signature" field after its opening brace.
[[nodiscard]] std::string sign_program(const std::string& text);

// Opens (creating when new, with the marker) an output folder of kind `kind` that is written in place over
// several runs (a sweep's folder). Same rules as check_output_folder. Returns its path.
std::filesystem::path claim_output_folder(const std::filesystem::path& target, const std::string& kind);

// Lists `file` in the manifest of the nearest marked folder above it as it is now (or, with
// in_progress, as a file tpusim is still writing). Nothing when no folder above it is marked.
void record_written(const std::filesystem::path& file, bool in_progress = false);
// Rewrites the manifest of the folder `dir` written in place (claim_output_folder) with one line per file, as
// last listed, sorted by name, atomically: the appends of points finishing in parallel come in any order,
// and the same inputs must leave the same folder. Call when nothing else writes into it any more.
void compact_manifest(const std::filesystem::path& dir);

// A run's output folder: files are written into a fresh sibling, which commit() swaps into place. Until
// commit(), the previous content (if any) is untouched; a destroyed, uncommitted folder leaves nothing. The
// constructor first removes what killed runs into the same target left beside it, when provably tpusim's and
// no process with the PID in its name exists (output_folder.h, top).
class OutputFolder {
 public:
  OutputFolder(const std::filesystem::path& target, const std::string& kind);
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  [[nodiscard]] std::filesystem::path file(const std::string& name) const { return staging_ / name; }
  [[nodiscard]] const std::filesystem::path& path() const { return final_; }
  // Replaces the target with what was written. Throws (and leaves the target as it was) on failure, or when
  // an interrupt (Ctrl-C, SIGTERM) arrived before the swap.
  void commit();
  // The staging folder's note (in it until the swap): which process writes it, on which machine. A killed
  // run's `.NAME.partial-PID` is tpusim's to remove only when its note names that PID and this machine.
  static constexpr const char* kStagingNote = ".tpusim-staging";

 private:
  std::filesystem::path final_;
  std::filesystem::path staging_;
  std::string kind_;
  std::vector<std::filesystem::path> created_parents_;  // removed again when nothing was committed
  bool committed_ = false;
};

// Held while a study (a sweep, a share of one, a layout search, a calibration) writes or reads the points of
// its folder in place: an open-file-description lock on bytes of the folder's marker file, one byte per point
// index (or the whole file, for a study that writes or collects every point), released when the process ends
// however it ends. A second study that would touch the same points of the folder at once (a job array
// submitted again while the first still runs, `--collect` before the array is done, two shells) refuses
// (OutputRefused) instead of running points twice and racing on their folders, failure records and table.
class PointsLock {
 public:
  struct Every {};
  static constexpr Every every{};
  // `points`: the point indices the study writes, sorted and not empty (std::invalid_argument otherwise).
  // `folder` is marked.
  PointsLock(const std::filesystem::path& folder, const std::vector<std::size_t>& points);
  // Every point of the folder: a study that writes or collects them all.
  PointsLock(const std::filesystem::path& folder, Every);
  ~PointsLock();
  PointsLock(const PointsLock&) = delete;
  PointsLock& operator=(const PointsLock&) = delete;

 private:
  // `points` empty: every point.
  void lock(const std::filesystem::path& folder, const std::vector<std::size_t>& points);
  int fd_ = -1;
};

// Writes one file through `fill`; any stream failure (a full disk) throws std::runtime_error.
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);
// Writes `target` through a staged sibling renamed into place: readers never see a partial file, and lists it
// in the manifest of the marked folder it is in (record_written). Does not check ownership (callers do, or
// write inside a folder they own).
void write_file_atomically(const std::filesystem::path& target, const std::function<void(std::ostream&)>& fill);

}  // namespace tpusim::tools
