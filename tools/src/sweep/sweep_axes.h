#pragma once
// A sweep file read into a plan, and the plan expanded into the runs it asks for. docs/sweeps.md has the format.
//
//   grid:      axes of the cartesian product, outermost first. Each is a field path with a list of values
//              and/or ranges ("1 TB/s .. 4 TB/s x 2"), or a zipped group: a label mapping several paths to
//              lists of equal length that vary together (one axis).
//   derive:    field paths set from an expression of axes, earlier derived values and resolved fields.
//   filter:    expressions that must all be true for a combination to run.
//   seeds:     repeat every combination over these seeds (one run each); the table shows mean and spread.
//   columns:   table columns computed after the runs from axes and metrics.
//   analysis:  roofline, heatmap {x, y, metric}, pareto {x, y}, line {metric}.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/diagnostics.h"
#include "tools/src/sweep/sweep_expr.h"
#include "tools/src/sweep/sweep_metrics.h"

namespace tpusim::tools {

struct Axis {
  std::string name;                              // the field path, or a zipped group's label
  std::vector<std::string> paths;                // the fields it sets: one, or several for a zipped group
  std::vector<std::vector<std::string>> values;  // values[i][j]: the i-th value of paths[j], as YAML text
  std::vector<std::vector<SourceLoc>> locs;      // where each value is written in the sweep file
  [[nodiscard]] std::string label(std::size_t i) const;  // "8", or "128, 128" for a zipped group
};

struct Derived {
  std::string path;
  Expression expr;
  SourceLoc loc;
};

struct Filter {
  Expression expr;
  SourceLoc loc;
};

struct ColumnDef {
  std::string name;
  Expression expr;
  SourceLoc loc;
  Better better = Better::neither;  // declared in the sweep file ({expr: ..., better: higher}); for Pareto fronts
};

enum class AnalysisKind { roofline, heatmap, pareto, line };

struct AnalysisSpec {
  AnalysisKind kind = AnalysisKind::roofline;
  std::string x, y;    // heatmap: axis names; pareto: metric or column names
  std::string metric;  // heatmap: the metric or column coloured; line: the one drawn against the inner axis
  std::string file;    // output name without extension
};

struct SweepPlan {
  std::string name;
  std::string description;
  std::filesystem::path file;      // the sweep file
  std::filesystem::path scenario;  // resolved path of the base scenario
  std::vector<Axis> axes;
  std::vector<Derived> derived;
  std::vector<Filter> filters;
  std::vector<std::int64_t> seeds;  // empty: one run per combination with the scenario's own seed
  std::vector<ColumnDef> columns;
  std::vector<AnalysisSpec> analyses;
};

// A combination of axis values that passed the filters: one row of table.csv.
struct Config {
  std::size_t index = 0;
  std::vector<std::size_t> choice;          // the value index on each axis
  std::vector<std::string> overrides;       // "path=value": axes' paths in order, then derived values
  std::vector<SourceLoc> origins;           // where each override is written in the sweep file
  std::vector<std::string> derived_values;  // one per plan.derived
};

// One simulation: a combination and a seed. Runs are numbered in order and each writes points/NNNNN/.
struct Run {
  std::size_t index = 0;
  std::size_t config = 0;
  std::optional<std::int64_t> seed;
  std::vector<std::string> overrides;  // the config's, plus seed=S when the sweep repeats over seeds
};

struct Expansion {
  std::vector<Config> configs;
  std::vector<Run> runs;
  std::size_t combinations = 0;  // before filtering
};

// A sweep runs at most this many points (combinations before filtering, times seeds); more is bad input,
// reported at its grid before anything is expanded.
inline constexpr std::size_t kMaxSweepPoints = 100'000;

// Reads a sweep by bundled name (sweeps/NAME.yaml) or path (sweep_plan_reader.cpp). Throws ConfigError with
// every problem found.
[[nodiscard]] SweepPlan load_sweep_plan(const std::string& name_or_path);

// The resolved value of a scenario field (as `tpusim describe scenario` prints it) under the given overrides,
// or nullopt when there is no such field. Derived values and filters use it for names that are not axes.
using FieldLookup =
    std::function<std::optional<std::string>(const std::vector<std::string>& overrides, const std::string& path)>;

// Expands the plan: the cartesian product of the axes (outermost first), derived values evaluated, filters
// applied, each surviving combination repeated over the seeds. Throws ConfigError (naming the expression's
// file:line) when an expression cannot be evaluated or a derived value has no unit a field takes.
[[nodiscard]] Expansion expand_plan(const SweepPlan& plan, const FieldLookup& lookup);

// The diagnostics of a scenario error, those caused by a sweep value pointed at the sweep file's line instead
// of at "--set path=value". `origins` gives the location of each override.
[[nodiscard]] std::vector<Diagnostic> at_sweep_lines(const ConfigError& e, const std::vector<std::string>& overrides,
                                                     const std::vector<SourceLoc>& origins);

// The values of a range such as "1 TB/s .. 4 TB/s x 2" (geometric), "128 .. 512 step 128" (arithmetic),
// "1 .. 2 points 5" or "1 GB/s .. 1 TB/s log points 4", each rendered in the unit of the first bound.
// nullopt when the text is no range (has no ".."); throws ExprError when it is a malformed one.
[[nodiscard]] std::optional<std::vector<std::string>> expand_range(const std::string& text);

// `s` without its leading and trailing white space.
[[nodiscard]] std::string trim_spaces(std::string s);
// An expression error at a YAML scalar: the scalar's location moved to the column of the problem.
[[nodiscard]] SourceLoc at_column(SourceLoc loc, std::size_t column);

}  // namespace tpusim::tools
