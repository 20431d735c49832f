#pragma once
// The environment variables tpusim reads (README, models/README.md): the libraries read none, the tool (and
// the benchmarks) read them here and pass them in. TPUSIM_DATA_DIR: a folder searched first for bundled data;
// TPUSIM_MIRROR=off simulates every chip, =mismatch fails a mirrored run's first check (tests of the
// fallback); TPUSIM_RUN_AHEAD=off runs every chip activation from the kernel.
#include <cstdlib>
#include <string>

#include "tpusim/core/data_paths.h"
#include "tpusim/models/simulate.h"

namespace tpusim::tools {

inline std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// Once, at start-up.
inline void use_data_dir_from_environment() {
  if (const std::string dir = environment("TPUSIM_DATA_DIR"); !dir.empty()) set_data_dir(dir);
}

// Every simulation the tool runs: the run's own, and the job's steps in their children.
inline void apply_environment(models::SimOptions& options) {
  const std::string mirror = environment("TPUSIM_MIRROR");
  if (mirror == "off") options.mirror = false;
  if (mirror == "mismatch") options.mirror_mismatch = true;
  if (environment("TPUSIM_RUN_AHEAD") == "off") options.run_ahead = false;
}

}  // namespace tpusim::tools
