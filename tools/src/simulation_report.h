#pragma once
// Turns the models' SimResult into the report form the writers take, and states the findings a user should
// not have to dig for (input-bound, memory-bound).
#include "tools/src/op_classes.h"
#include "tools/src/report.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/topology/topology.h"

namespace tpusim::tools {

// `topology` (may be null) labels the per-link rows with their ends, axis and kind; `lowered` (null for a
// program file) gives the step's examples, tokens and memory plan; `classes` (may be null) the per-op-class
// breakdown.
[[nodiscard]] RunReport make_report(const Scenario& scenario, const ir::ProgramSet& programs,
                                    const models::SimResult& result, const Topology* topology,
                                    const kernels::LoweredWorkload* lowered = nullptr,
                                    const OpClassRecorder* classes = nullptr);

}  // namespace tpusim::tools
