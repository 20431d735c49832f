#include "tools/src/study_plan.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "tpusim/core/config_tree.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

void ResolvedFingerprint::add_text(const std::string& text) {
  for (const unsigned char c : text) {
    hash_ ^= c;
    hash_ *= 1099511628211ULL;
  }
  hash_ ^= 0xffU;  // a separator no text holds, so that "ab" + "c" and "a" + "bc" differ
  hash_ *= 1099511628211ULL;
}

void ResolvedFingerprint::add(const Scenario& s) {
  ConfigNode tree = s.tree;
  tree.erase("description");
  add_text(flow_text(tree));
  if (!s.workload.program.empty()) {
    std::ifstream in(s.workload.program, std::ios::binary);
    add_text(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
}

std::string ResolvedFingerprint::str() const { return fmt::format("fnv1a64:{:016x}", hash_); }

std::optional<PlanDifference> plan_difference(const json& found, const json& now) {
  if (found == now) return std::nullopt;
  if (!found.is_object()) return PlanDifference{"its plan.json is not one tpusim wrote", false};
  for (const auto& [key, value] : now.items()) {
    if (key == "points" || key == "base") continue;
    const json was = found.value(key, json());
    if (was == value) continue;
    if (key == "sweep") return PlanDifference{fmt::format("it is sweep {}, not {}", was.dump(), value.dump()), false};
    // The layout search's keys are its command line's options.
    const std::string name = key == "scenario" ? "base scenario is"
                             : key == "set"    ? "--set values are"
                                               : fmt::format("--{} values are", key);
    return PlanDifference{fmt::format("its {} {}, not {}", name, was.dump(), value.dump()), false};
  }
  const json& points = now.value("points", json::array());
  const json was = found.value("points", json::array());
  if (was != points) {
    std::size_t i = 0;
    while (i < was.size() && i < points.size() && was[i] == points[i]) ++i;
    // A sweep's points are its axes' values; a layout search's are the meshes of its model on its pod.
    const std::string noun = now.contains("sweep") ? "axes" : "points";
    return PlanDifference{i < was.size() && i < points.size()
                              ? fmt::format("its {} differ: point {} was {}, now {}", noun, i, was[i].dump(),
                                            points[i].dump())
                              : fmt::format("its {} differ: {} points, now {}", noun, was.size(), points.size()),
                          false};
  }
  if (!found.contains("base")) {
    return PlanDifference{"its plan.json does not record what its points resolved to (an older tpusim wrote it), so "
                          "a change to the base scenario since cannot be ruled out",
                          true};
  }
  if (found["base"] != now.value("base", json())) {
    return PlanDifference{"its base scenario changed since the folder was made: the scenario, or a pod, chip, "
                          "model or program file it reads, now resolves to other points than the ones run there",
                          true};
  }
  // Only keys `now` does not have (written by another tpusim): not this study's plan.
  return PlanDifference{"its plan.json holds keys this tpusim does not write", false};
}

std::string plan_refusal(const std::string& command, const fs::path& folder, const PlanDifference& d) {
  const std::string study = command == "sweep" ? "sweep" : "layout search";
  if (d.base_changed) {
    return fmt::format("tpusim {}: {} holds the points of this {} run before its base changed ({}); they are not "
                       "reused: choose another -o, or remove {} to run the {} again",
                       command, folder.string(), study, d.what, folder.string(), study);
  }
  return fmt::format("tpusim {}: {} holds the results of a different {} ({}); choose another -o", command,
                     folder.string(), study, d.what);
}

}  // namespace tpusim::tools
