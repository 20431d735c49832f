#include "tools/src/sweep/sweep_check.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tools/src/does_not_fit.h"
#include "tools/src/study_plan.h"
#include "tools/src/sweep/sweep_table.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/sharding.h"

namespace tpusim::tools {
namespace {

// The cache key of a set of overrides.
std::string override_key(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// Resolved scenario fields for derived values and filters, one resolution per distinct set of overrides.
// A combination may not resolve before its derived values are set (an MXU shape disagrees with the chip's
// peak until the derived peak is in): then the fields come from the scenario with only the overrides that
// change what is composed (pod, chip, workload.model). The other overrides' values are the sweep's own and
// are looked up before any resolved field, so the fields read this way are the ones they do not touch.
class ScenarioFields {
 public:
  explicit ScenarioFields(const SweepPlan& plan) : plan_(plan) {}
  std::optional<std::string> operator()(const std::vector<std::string>& overrides, const std::string& path) {
    const std::string key = override_key(overrides);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      std::map<std::string, std::string> fields;
      for (auto& [k, v] : resolve(overrides)) fields[k] = v;
      it = cache_.emplace(key, std::move(fields)).first;
    }
    const auto f = it->second.find(path);
    if (f == it->second.end()) return std::nullopt;
    return f->second;
  }

 private:
  std::vector<std::pair<std::string, std::string>> resolve(const std::vector<std::string>& overrides) const {
    try {
      return render_scenario(load_scenario(plan_.scenario.string(), overrides));
    } catch (const ConfigError&) {
      std::vector<std::string> references;
      for (const auto& o : overrides) {
        const std::string path = o.substr(0, o.find('='));
        if (path == "pod" || path == "chip" || path == "workload.model") references.push_back(o);
      }
      if (references.size() == overrides.size()) throw;
      try {
        return render_scenario(load_scenario(plan_.scenario.string(), references));
      } catch (const ConfigError&) {
      }
      throw;
    }
  }

  const SweepPlan& plan_;
  std::map<std::string, std::map<std::string, std::string>> cache_;
};

}  // namespace

std::string validate(const SweepPlan& plan, const Expansion& ex, const PointCheck& check_point) {
  std::vector<Diagnostic> all;
  std::set<std::string> seen;
  ResolvedFingerprint base;
  for (const auto& c : ex.configs) {
    // At the sweep's line of the value that makes the point wrong, or at the scenario's line, which every point
    // shares: then the message names the point (the first such point, when several share the error). A step
    // that does not fit in HBM is a result: the point runs, is refused, and its row says so.
    const auto report = [&](const ConfigError& e, bool fit_is_a_result) {
      for (Diagnostic d : at_sweep_lines(e, c.overrides, c.origins)) {
        // Once per error, wherever it is: an unknown key is the same error at every value of its axis.
        const std::string what = fmt::format("{}\n{}\n{}\n{}\n{}", d.key_path, d.message, d.expected, d.found, d.hint);
        if ((fit_is_a_result && does_not_fit(d.message)) || !seen.insert(what).second) continue;
        const bool at_sweep_line =
            std::any_of(c.origins.begin(), c.origins.end(), [&](const SourceLoc& o) { return o.file == d.loc.file; });
        if (!at_sweep_line) {
          d.hint += fmt::format("{}in the sweep's point {}", d.hint.empty() ? "" : "; ", fmt::join(c.overrides, ", "));
        }
        all.push_back(std::move(d));
      }
    };
    std::vector<std::string> overrides = c.overrides;
    if (!plan.seeds.empty()) overrides.push_back(fmt::format("seed={}", plan.seeds.front()));
    try {
      const Scenario s = load_scenario(plan.scenario.string(), overrides);
      base.add(s);
      kernels::check_sharding(s.workload, s.pod);
      try {
        check_point(s);
      } catch (const ConfigError& e) {
        report(e, true);
      }
    } catch (const ConfigError& e) {
      report(e, false);
    }
  }
  if (!all.empty()) throw ConfigError(std::move(all));
  check_columns(plan, ex);
  return base.str();
}

Expansion expand(const SweepPlan& plan) {
  ScenarioFields fields(plan);
  return expand_plan(plan, [&](const std::vector<std::string>& overrides, const std::string& path) {
    return fields(overrides, path);
  });
}

std::size_t check_sweep(const std::string& name_or_path, std::size_t max_configs, const PointCheck& check_point) {
  const SweepPlan plan = load_sweep_plan(name_or_path);
  Expansion ex = expand(plan);
  if (ex.configs.size() > max_configs) ex.configs.resize(max_configs);
  (void)validate(plan, ex, check_point);
  return ex.configs.size();
}

}  // namespace tpusim::tools
