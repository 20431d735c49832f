#pragma once
// `tpusim layouts SCENARIO`: the layout search of a whole model on its pod. Enumerates every mesh of the axes
// data x fsdp x tensor (x expert for a mixture of experts) whose product is the pod's chips, drops before
// running those that cannot be lowered (a size that does not split, an axis that cannot be placed) or do not
// fit in HBM (the memory plan after sharding), runs the rest (one `tpusim run` per mesh, in parallel) and
// ranks them by step time: OUT/layouts.csv and a table on stdout.
#include <string>
#include <vector>

namespace tpusim::tools {

struct LayoutsArgs {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string out_dir;  // default out/<scenario name>-layouts
  int jobs = 0;         // 0: every core
};

int layouts_command(const LayoutsArgs& args, const std::string& self_exe);

}  // namespace tpusim::tools
