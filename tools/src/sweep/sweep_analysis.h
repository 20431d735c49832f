#pragma once
// Charts and derived tables of a finished sweep, all from its table (sweep_table.h): step time against the
// innermost numeric axis (step_time.svg), and the analyses a sweep asks for: the roofline (roofline.csv/svg),
// a heatmap of a metric over two axes (one panel per combination of the other axes), and the Pareto front of
// two metrics (pareto_X_Y.csv/svg). Every chart names its units.
#include <filesystem>
#include <functional>
#include <ostream>

#include "tools/src/sweep/sweep_axes.h"
#include "tools/src/sweep/sweep_table.h"

namespace tpusim::tools {

// Writes the charts and analyses into `out_dir`; prints a line per analysis (and the roofline table) to `report`.
void write_analyses(const SweepPlan& plan, const SweepTable& table, const std::filesystem::path& out_dir,
                    std::ostream& report);

// The rows on the Pareto front of columns x and y (each minimised, or maximised when `x_higher`/`y_higher`):
// no other ok row is at least as good on both and better on one. In table order.
[[nodiscard]] std::vector<const TableRow*> pareto_front(const SweepTable& table, std::size_t x, bool x_higher,
                                                        std::size_t y, bool y_higher);

}  // namespace tpusim::tools
