#pragma once
// simulate() with the network's inputs injected: for tests and benchmarks that run hand-built plans or fail
// links and chips before the scenario's `faults` input exists (the public simulate() uses the default
// InterconnectOptions). Same contract as simulate(): once per process.
#include "interconnect.h"
#include "tpusim/models/sim_options.h"

namespace tpusim::models::net {

[[nodiscard]] SimResult simulate_with_network(const Scenario& scenario, const ir::ProgramSet& programs,
                                              const SimOptions& options, const InterconnectOptions& network);

[[nodiscard]] inline SimResult simulate_with_planner(const Scenario& scenario, const ir::ProgramSet& programs,
                                                     const SimOptions& options, const CollectivePlanner& planner) {
  InterconnectOptions network;
  network.planner = planner;
  return simulate_with_network(scenario, programs, options, network);
}

}  // namespace tpusim::models::net
