#pragma once
// A sweep's results as a table: one row per combination (mean over seeds when the sweep repeats them, with
// the sample standard deviation as the spread), the metrics of sweep_metrics.h and the sweep's computed
// columns. Written as table.csv and its JSON twin table.json (and runs.csv, one row per run, when seeds
// repeat). Everything is read back from points/, so the table is the same whoever ran the points.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/src/sweep/sweep_axes.h"
#include "tools/src/sweep/sweep_metrics.h"

namespace tpusim::tools {

struct RunRecord {
  const Run* run = nullptr;
  bool ok = false;
  std::string status;  // "ok", "failed (exit N)" or "not run"
  std::string error;   // the run's own message when it failed
  nlohmann::ordered_json summary;
};

// Each run's outcome as found in points_dir.
[[nodiscard]] std::vector<RunRecord> read_runs(const Expansion& ex, const std::filesystem::path& points_dir);

struct TableColumn {
  std::string name;
  UnitDim dim;
  Better better = Better::neither;
  std::string format;  // of a CSV cell
  std::string description;
};

struct TableRow {
  const Config* config = nullptr;
  std::string status;  // "ok", "failed (exit 1)", "not run", or with seeds "failed (1 of 3 runs)"
  std::string error;
  std::size_t runs = 0, runs_ok = 0;
  std::vector<std::optional<double>> mean;    // per column, over the ok runs
  std::vector<std::optional<double>> spread;  // per column: sample standard deviation over the ok runs
  const RunRecord* first_ok = nullptr;        // its summary, for analyses that read more than the table
};

struct SweepTable {
  std::vector<TableColumn> columns;  // metrics, then the sweep's computed columns
  std::vector<TableRow> rows;
  [[nodiscard]] std::optional<std::size_t> column(const std::string& name) const;
};

[[nodiscard]] SweepTable build_table(const SweepPlan& plan, const Expansion& ex, const std::vector<RunRecord>& runs);

// Evaluates the computed columns once with stand-in metrics so that a bad name or unit is bad input before
// anything runs. Throws ConfigError.
void check_columns(const SweepPlan& plan, const Expansion& ex);

void write_table_csv(const SweepPlan& plan, const SweepTable& table, std::ostream& out);
void write_runs_csv(const SweepPlan& plan, const Expansion& ex, const std::vector<RunRecord>& runs, std::ostream& out);
[[nodiscard]] nlohmann::ordered_json table_json(const SweepPlan& plan, const SweepTable& table);

}  // namespace tpusim::tools
