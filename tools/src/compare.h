#pragma once
// `tpusim compare RUN RUN...`: two or more runs side by side (run folders or their summary.json files): the
// scenario fields in which they differ, then the metrics, breakdown, memory plan, op classes, exposed
// communication, collectives (per kind: count, summed time, summed bytes per chip), links and job, each with
// its difference from the first run (absolute and %). A table on stdout; with -o DIR also compare.csv and
// compare.json (full precision; format in docs/compare.md), under the output-folder rules (output_folder.h).
// A folder without summary.json, a file that is not a tpusim summary or one of another schema version is bad
// input (exit 2), reported with its path before anything is written.
#include <string>
#include <vector>

namespace tpusim::tools {

struct CompareArgs {
  std::vector<std::string> runs;
  std::string out_dir;  // empty: the table only
};

int compare_command(const CompareArgs& args);

}  // namespace tpusim::tools
