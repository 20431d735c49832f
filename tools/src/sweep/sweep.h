#pragma once
// `tpusim sweep`: a plan of `--set` overrides over a base scenario (sweep_axes.h: grids, zipped axes, ranges,
// derived values, filters, seed repeats). Each point runs as its own `tpusim run` process (a SystemC kernel
// cannot be restarted), points run in parallel on every core with a progress line and an ETA, a finished point
// is never run again (resumable after any crash), a failed point records its error and the others go on.
// `--emit-commands` prints one command per pending point for GNU parallel; `--slurm` writes a Slurm job-array
// script whose tasks (`--share K/N`) run shares of the points into the same folder; `--collect` builds the
// table and charts from whatever points are there. docs/sweeps.md has the format and the outputs.
#include <cstddef>
#include <string>
#include <vector>

#include "tools/src/preflight.h"

namespace tpusim::tools {

struct SweepArgs {
  std::string sweep;       // bundled name (sweeps/NAME.yaml) or path
  std::string out_dir;     // default: out/<sweep name>
  int jobs = 0;            // 0 = number of cores
  bool emit_commands = false;
  bool collect_only = false;  // only build the table from points already run
  bool retry_failed = false;  // run points that failed before again
  bool slurm = false;         // write a Slurm job-array script instead of running
  int slurm_tasks = 0;        // array tasks (0: one per pending point, at most 32)
  std::vector<std::string> slurm_options;  // extra #SBATCH lines
  std::string share;          // "K/N": run only the pending points numbered K modulo N; no table
  StudyLimits limits;         // the points' check and runs (--max-memory, --max-pe-cycles)
};

int sweep_command(const SweepArgs& args);

}  // namespace tpusim::tools
