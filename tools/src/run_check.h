#pragma once
// What `run` checks before it simulates, in one place for every command that must know a run will not be
// refused: `validate` says "ok" only then, and a study (a sweep's combinations, a calibration's points) checks
// every point before it runs any, so a point `run` would refuse is bad input of the study (exit 2, nothing
// written), not a failed point found after others ran.
#include "tools/src/does_not_fit.h"
#include "tools/src/preflight.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// The scenario's programs: a program file it names (checked like any input: its roles against the pod's
// chips), or the lowered model (with its memory plan and step work).
[[nodiscard]] kernels::LoweredWorkload programs_for(const Scenario& s);

// A scenario that passed every check before a run: its topology, the step it simulates (a job's healthy step,
// models/job_steps.h) and that step's programs.
struct CheckedRun {
  Topology topology;
  Scenario step;
  kernels::LoweredWorkload lowered;
};

// The checks of preflight.h in `run`'s order: sharding, the pod against the limits and the chip, the fault
// plan's cuts, the lowering against the limits, the lowering itself (a tile that cannot fit in VMEM, a step
// that does not fit in HBM), the programs on this pod, the simulation's size, the fault rates over
// job.duration. Throws ConfigError (bad input, at its file:line or --set) or ResourceRefused.
[[nodiscard]] CheckedRun check_run(const Scenario& s, const Limits& limits);


}  // namespace tpusim::tools
