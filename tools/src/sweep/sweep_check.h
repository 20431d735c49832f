#pragma once
// Before a sweep runs anything: its file read, its grid expanded, and every combination resolved to a scenario
// whose sharding holds and (through the caller's check) that `run` would not refuse (run_check.h: the fault
// plan, the lowering, the programs on the pod). The runner (sweep.cpp) and the fuzz target (fuzz/fuzz_sweep.cpp)
// share it; the point check is a parameter because it needs the models (a job's step, concrete faults on a
// built topology), which the fuzzers do not link.
#include <cstddef>
#include <functional>
#include <string>

#include "tools/src/sweep/sweep_axes.h"
#include "tpusim/core/scenario.h"

namespace tpusim::tools {

// Checks one resolved point beyond its scenario and sharding; throws ConfigError located in the scenario (or at
// the `--set path=value` of a sweep value, which validate puts at the value's line in the sweep file).
using PointCheck = std::function<void(const Scenario&)>;

// Reads and expands a plan, resolving derived values and filters against the base scenario.
[[nodiscard]] Expansion expand(const SweepPlan& plan);

// Every combination must resolve, shard and pass `check_point` before anything runs; the errors, each once, are
// thrown together at the sweep file's lines (an error the sweep's values cause is at the value's line; one at
// the scenario's line names the point). Then the table's columns are checked. Returns the fingerprint of what
// the combinations resolve to (study_plan.h), for plan.json.
[[nodiscard]] std::string validate(const SweepPlan& plan, const Expansion& ex, const PointCheck& check_point);

// Reads a sweep file, expands it and validates its first `max_configs` combinations as `tpusim sweep` does
// before running anything; throws ConfigError for bad input. Returns the combinations checked.
std::size_t check_sweep(const std::string& name_or_path, std::size_t max_configs, const PointCheck& check_point);

}  // namespace tpusim::tools
