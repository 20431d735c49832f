#pragma once
// Internal: the workload's defaults that depend on the model or the step, and its rules across the workload,
// the model and the chip (called by load_scenario once every part resolved without error).
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/scenario.h"

namespace tpusim {

// Applies the derived defaults (weight_dtype auto, seq_len 0, context 0, decoder_seq_len 0) and reports every
// rule the combination breaks, each at the origin of the field to change.
void resolve_workload_defaults(Scenario& s, Diagnostics& diags);

}  // namespace tpusim
