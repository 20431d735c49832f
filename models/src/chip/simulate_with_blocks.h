#pragma once
// simulate() with the registry of block kinds injected: for tests that build a chip with another
// implementation of a block behind the same interface (a different memory model, say). Same contract as
// simulate(): once per process.
#include "block/registry.h"
#include "tpusim/models/sim_options.h"

namespace tpusim::models {

[[nodiscard]] SimResult simulate_with_blocks(const Scenario& scenario, const ir::ProgramSet& programs,
                                             const SimOptions& options, const BlockRegistry& registry);

}  // namespace tpusim::models
