#pragma once
// `tpusim layouts SCENARIO`: the layout search of a whole model on its pod. Enumerates every mesh of the axes
// data x fsdp x tensor (x expert for a mixture of experts) whose product is the pod's chips, drops before
// running those that cannot be lowered (a size that does not split, an axis that cannot be placed) or do not
// fit in HBM (the memory plan after sharding), runs the rest (one `tpusim run` per mesh, in parallel) and
// ranks them by step time, then by HBM per chip: OUT/layouts.csv and a table on stdout. `axes` restricts the
// mesh axes searched; `microbatches`, `remat` and `overlap` list values of those workload fields searched
// jointly with the mesh (every combination of the values given, each checked by the scenario parser).
// OUT/plan.json (study_plan.h) records the search: a folder is reused only by the same search (scenario, --set,
// --axes and searched values, the same meshes) over the same base; another's is refused (exit 2).
#include <string>
#include <vector>

#include "tools/src/preflight.h"

namespace tpusim::tools {

struct LayoutsArgs {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string out_dir;  // default out/<scenario name>-layouts
  int jobs = 0;         // 0: every core
  std::vector<std::string> axes;          // empty: every axis the model has
  std::vector<std::string> microbatches;  // values of workload.microbatches (empty: the scenario's)
  std::vector<std::string> remat;         // values of workload.remat
  std::vector<std::string> overlap;       // values of workload.overlap
  StudyLimits limits;                     // the searched runs' (--max-memory, --max-pe-cycles)
};

int layouts_command(const LayoutsArgs& args, const std::string& self_exe);
// The mesh axes the layout search can take (--axes), comma-separated in their search order.
[[nodiscard]] std::string layout_axis_names();

}  // namespace tpusim::tools
