#pragma once
// What tpusim may write over. tpusim never deletes or replaces a file or folder it did not write:
//
// - Output folders (`run -o`, `sweep -o`, `calibrate -o`, `layouts -o`, `compare -o`): the target is new, or a
//   folder holding the marker file `.tpusim-output` that tpusim writes into every folder it creates. Refused
//   (OutputRefused, exit 2): an existing file, a folder without the marker, a symbolic link, the current folder,
//   any ancestor of it (so `.`, `..`, `some/dir/.` and `/`), and anything that resolves to them.
// - Single files (`lower -o`, `topo --dot`, `topo --svg`, `describe chip --svg`): the target is new, or a
//   regular file tpusim wrote, recognised by the signature tpusim puts in its first bytes (a program file's
//   "format": "tpusim-program", the "written by tpusim" comment of a DOT or SVG drawing). Refused: anything
//   else, including folders, links and device files.
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
// The comment tpusim puts into the drawings it writes, so it can recognise them as its own later.
inline constexpr const char* kWrittenByTpusim = "written by tpusim";

// tpusim will not write there; what() says why and what to do instead. Bad input: exit 2.
class OutputRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The default output folder of a run or sweep named `name`: out/<name>. Throws OutputRefused when the name
// cannot be a folder name (empty, ".", "..", or containing '/').
[[nodiscard]] std::filesystem::path default_output_dir(const std::string& name);

// Checks that tpusim may (re)place the output folder `target`; returns its absolute, normalised path.
[[nodiscard]] std::filesystem::path check_output_folder(const std::filesystem::path& target);

// Checks that tpusim may (re)place the single output file `target`, recognised as its own by `signature`
// within its first bytes; returns its absolute, normalised path.
[[nodiscard]] std::filesystem::path check_output_file(const std::filesystem::path& target,
                                                      const std::string& signature);

// Opens (creating when new, with the marker) an output folder that is written in place over several runs
// (a sweep's folder). Same rules as check_output_folder. Returns its path.
std::filesystem::path claim_output_folder(const std::filesystem::path& target);

// A run's output folder: files are written into a fresh sibling, which commit() swaps into place. Until
// commit(), the previous content (if any) is untouched; a destroyed, uncommitted folder leaves nothing.
class OutputFolder {
 public:
  explicit OutputFolder(const std::filesystem::path& target);
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  [[nodiscard]] std::filesystem::path file(const std::string& name) const { return staging_ / name; }
  [[nodiscard]] const std::filesystem::path& path() const { return final_; }
  // Replaces the target with what was written. Throws (and leaves the target as it was) on failure, or when
  // an interrupt (Ctrl-C, SIGTERM) arrived before the swap.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path staging_;
  std::vector<std::filesystem::path> created_parents_;  // removed again when nothing was committed
  bool committed_ = false;
};

// Writes one file through `fill`; any stream failure (a full disk) throws std::runtime_error.
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);
// Writes `target` through a staged sibling renamed into place: readers never see a partial file. Does not
// check ownership (callers do, or write inside a folder they own).
void write_file_atomically(const std::filesystem::path& target, const std::function<void(std::ostream&)>& fill);

}  // namespace tpusim::tools
