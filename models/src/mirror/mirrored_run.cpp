#include "mirror/mirrored_run.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "program_index.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models {
namespace {

// The classes `representative` gives (each chip's class's lowest chip, in the same role).
TranslationClasses partition_classes(const std::vector<std::uint32_t>& representative, const ir::ProgramSet& programs,
                                     std::uint32_t chips) {
  if (representative.size() != chips) {
    throw std::invalid_argument(fmt::format("SimOptions::mirror_partition names {} chips, the pod has {}",
                                            representative.size(), chips));
  }
  TranslationClasses tc;
  tc.representative = representative;
  const auto role = [&](std::uint32_t c) { return programs.role_of_chip.empty() ? 0 : programs.role_of_chip[c]; };
  for (std::uint32_t c = 0; c < chips; ++c) {
    const std::uint32_t r = representative[c];
    if (r > c || representative[r] != r || role(r) != role(c)) {
      throw std::invalid_argument(
          fmt::format("SimOptions::mirror_partition: chip {}'s representative {} is not the lowest chip of a class "
                      "of one role",
                      c, r));
    }
    if (r == c) ++tc.classes;
  }
  return tc;
}

// `chip` in a class of its own; its mirrors, if it represented any, under the lowest of them.
void split_off(TranslationClasses& tc, std::uint32_t chip) {
  const std::uint32_t r = tc.representative[chip];
  if (r != chip) {
    tc.representative[chip] = chip;
    ++tc.classes;
    return;
  }
  std::uint32_t lowest = chip;
  for (std::uint32_t c = chip + 1; c < tc.representative.size(); ++c) {
    if (tc.representative[c] != chip) continue;
    if (lowest == chip) {
      lowest = c;
      ++tc.classes;
    }
    tc.representative[c] = lowest;
  }
}

}  // namespace

std::optional<TranslationClasses> mirror_classes(const Scenario& scenario, const ir::ProgramSet& programs,
                                                 const SimOptions& options, const net::InterconnectOptions& network,
                                                 std::string& why_not) {
  why_not.clear();
  if (!options.mirror) {
    why_not = "mirrored chips off";
  } else if (!uses_ici(programs)) {
    why_not = "no ICI instruction";
  } else if (scenario.fidelity.links != LinkFidelity::flow) {
    why_not = "chunked links (chunks of one tick are served in process order)";
  }
  if (!why_not.empty()) return std::nullopt;
  const Topology topo = build_topology(scenario.pod, scenario.chip);
  const auto chips = static_cast<std::uint32_t>(topo.chip_count());
  TranslationClasses classes;
  if (!options.mirror_partition.empty()) {
    classes = partition_classes(options.mirror_partition, programs, chips);
  } else {
    classes = translation_classes(topo, programs);
    // A chip a fault stops, or a degraded one, runs a history of its own (its spec or its stop differs); what a
    // fault does to the others shows in what reaches them, which the run checks.
    for (const ChipId c : network.faults.chips) split_off(classes, c.value());
    for (const TimedChipFault& f : network.timed_chips) split_off(classes, f.chip.value());
    for (const ChipDegradation& d : options.degraded_chips) split_off(classes, d.chip.value());
  }
  if (classes.classes == chips) {
    why_not = "no two chips in one class";
    return std::nullopt;
  }
  return classes;
}

}  // namespace tpusim::models
