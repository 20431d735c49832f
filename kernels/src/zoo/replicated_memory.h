#pragma once
// Internal: the memory of the kinds lowered without a memory plan of their own (gemm, mlp, dlrm), which every
// chip of a pod runs whole.
#include <cstdint>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"

namespace tpusim::kernels {

// Parameters plus optimizer state, as the checkpoint writes them (any model kind).
[[nodiscard]] std::uint64_t state_bytes(const WorkloadSpec& workload);
// Refuses a GEMM, MLP or DLRM step that cannot fit in the chip's HBM (ConfigError "the step does not fit in
// HBM: ..."), as a whole model's memory plan refuses one.
void check_resident_bytes(const WorkloadSpec& workload, const ChipSpec& chip);

}  // namespace tpusim::kernels
