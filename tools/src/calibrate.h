#pragma once
// `tpusim calibrate`: runs the calibration set (calibration/measurements.yaml, or another file of the same
// format) on the bundled chips and prints predicted against measured with the error and its bound. Every
// distinct scenario and overrides runs once, as its own `tpusim run` process (a SystemC kernel runs once per
// process); points reading several metrics of one run share it, and a ratio point divides two others. A step
// that does not fit in HBM is reported as such, with the memory plan's numbers. Writes table.csv (one row per
// point, with its status: ok, outside, does not fit, failed) and, for each entry with `plot: true`, <id>.svg
// (measured and predicted against size).
// Exit code: 0 when every point ran and lies within its bound, 1 when one did not run, does not fit or lies
// outside, 2 for a bad calibration file or override.
#include <string>
#include <vector>

#include "tools/src/preflight.h"

namespace tpusim::tools {

struct CalibrateArgs {
  std::string set = "measurements";     // bundled name (calibration/NAME.yaml) or path
  std::string out_dir = "out/calibrate";
  std::vector<std::string> overrides;   // --set applied to every point (after the point's own)
  StudyLimits limits;                   // the points' check and runs (--max-memory, --max-pe-cycles)
};

int calibrate_command(const CalibrateArgs& args, const std::string& self_exe);

}  // namespace tpusim::tools
