#pragma once
// `tpusim sweep`: a grid of `--set` overrides over a base scenario. Each point runs as its own `tpusim run`
// process (a SystemC kernel cannot be restarted), points run in parallel on every core, a finished point is
// never run again (resumable), and `--emit-commands` prints one command per point for GNU parallel or a Slurm
// job array instead of running them here. The results become one table row per point (table.csv).
#include <string>

namespace tpusim::tools {

struct SweepArgs {
  std::string sweep;       // bundled name (sweeps/NAME.yaml) or path
  std::string out_dir;     // default: out/<sweep name>
  int jobs = 0;            // 0 = number of cores
  bool emit_commands = false;
  bool collect_only = false;  // only build the table from points already run
};

int sweep_command(const SweepArgs& args, const std::string& self_exe);

}  // namespace tpusim::tools
