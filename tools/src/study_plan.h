#pragma once
// A study folder's plan.json: what a sweep or a layout search runs there, so that a rerun into the folder goes
// on only with the same study. It holds the study's identity (a sweep's name and base scenario; a layout
// search's scenario, overrides and searched axes and fields), every point's overrides, and `base`: the
// fingerprint of what the points resolve to, the composed scenario of each (its file and every pod, chip, model
// and program file it reads, with the study's values), so that points run before the base scenario or a file
// it reads was edited are never labelled with the new values.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tpusim/core/scenario.h"

namespace tpusim::tools {

// The fingerprint of the scenarios a study's points resolve to, added in point order: each one's composed tree
// (all but its description, which changes no result) and the bytes of the program file it names.
class ResolvedFingerprint {
 public:
  void add(const Scenario& s);
  [[nodiscard]] std::string str() const;  // "fnv1a64:0123456789abcdef"

 private:
  void add_text(const std::string& text);
  std::uint64_t hash_ = 14695981039346656037ULL;
};

// Why the plan found in a folder is not `now` (nullopt when they are equal): another study ("it is sweep a, not
// b"; "its axes are ..."), other points ("its points differ: point 1 was [...], now [...]"), or the same study
// over a base that changed since. Keys compare in `now`'s order, `points` and `base` last.
struct PlanDifference {
  std::string what;
  bool base_changed = false;  // only `base` differs (or is missing: an older tpusim wrote the plan)
};
[[nodiscard]] std::optional<PlanDifference> plan_difference(const nlohmann::ordered_json& found,
                                                            const nlohmann::ordered_json& now);

// The refusal of `command` ("sweep", "layouts") to go on in `folder`, whose plan differs: what differs and what
// to do (another -o; after a base change, also removing the folder to run the study again).
[[nodiscard]] std::string plan_refusal(const std::string& command, const std::filesystem::path& folder,
                                       const PlanDifference& d);

}  // namespace tpusim::tools
