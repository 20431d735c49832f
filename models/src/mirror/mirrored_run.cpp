#include "mirror/mirrored_run.h"

#include "pod.h"

namespace tpusim::models {

std::optional<TranslationClasses> mirror_classes(const Scenario& scenario, const ir::ProgramSet& programs,
                                                 const SimOptions& options, const net::InterconnectOptions& network,
                                                 std::string& why_not) {
  why_not.clear();
  if (!options.mirror) {
    why_not = "mirrored chips off";
  } else if (!uses_ici(programs)) {
    why_not = "no ICI instruction";
  } else if (!options.failed.links.empty() || !options.failed.chips.empty() || !options.degraded_links.empty() ||
             !options.timed_links.empty() || !options.timed_chips.empty() || !network.faults.links.empty() ||
             !network.faults.chips.empty() || !network.degraded.empty() || !network.timed.empty() ||
             !network.timed_chips.empty()) {
    why_not = "a fault, degraded link or stopping chip in the step";
  } else if (!options.degraded_chips.empty()) {
    why_not = "a straggler or degraded chip";
  } else if (scenario.fidelity.links != LinkFidelity::flow) {
    why_not = "chunked links (chunks of one tick are served in process order)";
  } else if (scenario.fidelity.routing != RoutingPolicy::dor) {
    why_not = "routing other than dimension order";
  }
  if (!why_not.empty()) return std::nullopt;
  const Topology topo = build_topology(scenario.pod, scenario.chip);
  TranslationClasses classes = translation_classes(topo, programs);
  if (classes.classes == topo.chip_count()) {
    why_not = "no two chips in one translation class";
    return std::nullopt;
  }
  return classes;
}

}  // namespace tpusim::models
