#pragma once
// The Slurm job-array script of `tpusim sweep FILE --slurm`: task K of N runs `tpusim sweep FILE -o OUT
// --share K/N`, i.e. the points whose number is K modulo N that are not done yet, into the same output folder
// (each point has its own folder, so tasks never write the same file). `tpusim sweep FILE -o OUT --collect`
// then builds the table. Nothing here talks to Slurm: the script is submitted with sbatch as it is.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace tpusim::tools {

struct SlurmJob {
  std::string name;                    // the sweep's name, for the job name
  std::filesystem::path tpusim;        // absolute path of the binary the tasks run
  std::filesystem::path sweep_file;    // absolute
  std::filesystem::path out_dir;       // absolute
  int tasks = 1;                       // array tasks
  int cpus_per_task = 1;               // points each task runs at once
  std::vector<std::string> options;    // extra #SBATCH options, e.g. --partition=cpu or --time=1:00:00
  std::vector<std::string> tpusim_flags;  // tpusim's own before `sweep` (the limits, --max-memory 8GiB)
};

void write_slurm_script(const SlurmJob& job, std::ostream& out);

// Parses "K/N" (0 <= K < N); false when malformed.
[[nodiscard]] bool parse_share(const std::string& text, int& k, int& n);

// A word quoted for a POSIX shell.
[[nodiscard]] std::string shell_quote(const std::string& s);

}  // namespace tpusim::tools
