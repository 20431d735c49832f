#pragma once
// Every step the tool simulates (the run's own, a job's step in its child) goes through simulate_step(). When
// simulate() would mirror chips it may find a mismatch only once its kernel has run, and a SystemC kernel runs
// once per process: so the mirrored run runs in a forked child. A child that verified goes on as the program
// (it writes the outputs; its parent exits with its status, having written nothing); a child that did not
// tells its parent why and exits without writing anything, and the parent simulates every chip, saying so on
// stderr and in SimulationCost::mirroring (models/README.md "Mirrored chips").
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::tools {

[[nodiscard]] models::SimResult simulate_step(const Scenario& scenario, const ir::ProgramSet& programs,
                                              const models::SimOptions& options);

}  // namespace tpusim::tools
