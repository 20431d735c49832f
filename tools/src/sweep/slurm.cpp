#include "tools/src/sweep/slurm.h"

#include <cstdlib>

#include <fmt/format.h>

namespace tpusim::tools {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool parse_share(const std::string& text, int& k, int& n) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return false;
  char* end = nullptr;
  const long kk = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + slash) return false;
  const long nn = std::strtol(text.c_str() + slash + 1, &end, 10);
  if (*end != '\0' || nn < 1 || kk < 0 || kk >= nn || nn > 1000000) return false;
  k = static_cast<int>(kk);
  n = static_cast<int>(nn);
  return true;
}

void write_slurm_script(const SlurmJob& job, std::ostream& out) {
  const auto log_dir = job.out_dir / "slurm";
  out << "#!/bin/bash\n";
  out << "#SBATCH --job-name=" << shell_quote("tpusim-" + job.name) << "\n";
  out << "#SBATCH --array=0-" << job.tasks - 1 << "\n";
  out << "#SBATCH --ntasks=1\n";
  out << "#SBATCH --cpus-per-task=" << job.cpus_per_task << "\n";
  out << "#SBATCH --output=" << (log_dir / "task-%a.out").string() << "\n";
  for (const auto& o : job.options) out << "#SBATCH " << o << "\n";
  out << "# Written by `tpusim sweep " << job.sweep_file.string() << " --slurm`. Submit with: sbatch " << "<this file>\n"
      << "# Task K of " << job.tasks << " runs the points numbered K modulo " << job.tasks
      << " that are not done yet; a resubmission\n"
      << "# runs only what is missing. When every task has finished, build the table with:\n"
      << "#   " << shell_quote(job.tpusim.string()) << " sweep " << shell_quote(job.sweep_file.string()) << " -o "
      << shell_quote(job.out_dir.string()) << " --collect\n";
  out << "set -euo pipefail\n";
  out << "exec " << shell_quote(job.tpusim.string());
  for (const std::string& f : job.tpusim_flags) out << " " << shell_quote(f);
  out << " sweep " << shell_quote(job.sweep_file.string()) << " -o "
      << shell_quote(job.out_dir.string()) << " --share \"${SLURM_ARRAY_TASK_ID}/" << job.tasks
      << "\" -j \"${SLURM_CPUS_PER_TASK:-1}\"\n";
}

}  // namespace tpusim::tools
