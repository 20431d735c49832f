#pragma once
// The metrics a sweep tabulates, each declared once: its column name, unit, which direction is better, how it
// is printed and where it comes from in a point's summary.json. The same table drives table.csv, table.json,
// the chart labels, the Pareto directions and the names a sweep's expressions and analyses may use.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/src/sweep/sweep_expr.h"

namespace tpusim::tools {

enum class Better { lower, higher, neither };

struct MetricDef {
  std::string name;         // column name, e.g. "step_time_s"
  UnitDim dim;                  // unit, for labels and for expressions
  Better better;            // for Pareto fronts
  const char* format;       // fmt format of the CSV cell, e.g. "{:.9g}"
  std::string description;  // one line, for docs/sweeps.md and chart titles
  // The value from a summary.json; nullopt when the run does not report it (the cell stays empty).
  std::optional<double> (*extract)(const nlohmann::ordered_json& summary);
};

[[nodiscard]] const std::vector<MetricDef>& sweep_metrics();
[[nodiscard]] const MetricDef* find_metric(const std::string& name);
[[nodiscard]] std::vector<std::string> metric_names();

// "step time (s)", "mfu", "achieved HBM bandwidth (B/s)": a label with the unit, for charts.
[[nodiscard]] std::string unit_suffix(const UnitDim& d);

}  // namespace tpusim::tools
