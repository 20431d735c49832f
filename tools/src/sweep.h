#pragma once
// `tpusim sweep`: a grid of `--set` overrides over a base scenario. Each point runs as its own `tpusim run`
// process (a SystemC kernel cannot be restarted), points run in parallel on every core, a finished point is
// never run again (resumable), and `--emit-commands` prints one command per point for GNU parallel or a Slurm
// job array instead of running them here. The results become one table row per point (table.csv).
#include <cstddef>
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

// A sweep expands to at most this many points (more is bad input, reported at its grid).
inline constexpr double kMaxSweepPoints = 100'000;

// Reads a sweep file and resolves its first `max_points` points as sweep_command does before running
// anything; throws ConfigError for bad input. Returns the points checked. (For the fuzz target.)
std::size_t check_sweep(const std::string& name_or_path, std::size_t max_points);

}  // namespace tpusim::tools
