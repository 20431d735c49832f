#pragma once
// simulate() with the collective planner injected: for tests and benchmarks that run hand-built plans (the
// public simulate() uses default_collective_planner()). Same contract as simulate(): once per process.
#include "interconnect.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models::net {

[[nodiscard]] SimResult simulate_with_planner(const Scenario& scenario, const ir::ProgramSet& programs,
                                              const SimOptions& options, const CollectivePlanner& planner);

}  // namespace tpusim::models::net
