#pragma once
// The entry point of the hardware models: elaborate a pod of chips, run one step of their programs on the
// SystemC kernel, and return the statistics.
//
// A SystemC kernel cannot be restarted: call simulate() at most once per process.
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/errors.h"
#include "tpusim/models/sim_options.h"
#include "tpusim/models/sim_result.h"

namespace tpusim::models {

// Runs every chip of scenario.pod (chips are independent until the interconnect is modelled) on the program
// its role names, until all have finished. Throws SimulationError for a program that does not fit the chip
// (VMEM overflow, a TensorCore the chip lacks, a unit not modelled yet), and MirrorFallback when mirrored
// chips did not verify (only if runs_mirrored()). Also sets SYSTEMC_DISABLE_COPYRIGHT_MESSAGE (without
// overwriting) before the kernel starts.
[[nodiscard]] SimResult simulate(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options);

// Whether simulate() with these arguments mirrors chips, and so may throw MirrorFallback once its kernel has
// run; false (a fault, chunked links, no class of two chips...) when it simulates every chip.
[[nodiscard]] bool runs_mirrored(const Scenario& scenario, const ir::ProgramSet& programs, const SimOptions& options);

}  // namespace tpusim::models
