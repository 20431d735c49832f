#pragma once
// Turns the models' SimResult into the report form the writers take, and states the findings a user should
// not have to dig for (input-bound, memory-bound).
#include "tools/src/report.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// `topology` (may be null) labels the per-link rows with their ends, axis and kind.
[[nodiscard]] RunReport make_report(const Scenario& scenario, const ir::ProgramSet& programs,
                                    const models::SimResult& result, const Topology* topology);

}  // namespace tpusim::tools
