#pragma once
// What the lowering made of a workload (`tpusim lower`'s summary) and what a model is (`tpusim describe model`).
#include <ostream>
#include <string>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::tools {

// Programs and instructions, model and hardware FLOPs (and the closed form), tokens per step, and the memory
// plan by category.
void print_lowering_summary(const Scenario& scenario, const kernels::LoweredWorkload& lowered, std::ostream& out);

// A model's parameters by component, its total and the parameters a token multiplies by; exit code.
int describe_model(const std::string& name_or_path, std::ostream& out);

}  // namespace tpusim::tools
