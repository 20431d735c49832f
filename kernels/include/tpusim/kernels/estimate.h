#pragma once
// What lowering a workload will produce, counted in closed form without lowering it, so that a workload too
// big for the machine is refused before anything is allocated. The counts follow lower_workload exactly (a
// test compares them with real lowerings); all arithmetic is in double, so no shape can overflow it.
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

// Memory one instruction of a lowered program takes, with its dependencies, labels and vector growth, and
// the simulator's per-program index of it: an estimate measured on the bundled quickstart (50k instructions
// in about 10 MiB), rounded up.
inline constexpr double kBytesPerInstruction = 256;

struct LoweringEstimate {
  double instructions = 0;  // in all programs
  [[nodiscard]] double bytes() const { return instructions * kBytesPerInstruction; }
};

// The instructions lower_workload(workload, chip) emits. Throws what tiling throws (ConfigError for a VMEM
// too small for any tile), never more.
[[nodiscard]] LoweringEstimate estimate_lowering(const WorkloadSpec& workload, const ChipSpec& chip);

// Instructions lower_gemm and lower_vector_pass emit for one stage (see lowering.h).
[[nodiscard]] double gemm_instruction_count(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                                            DType dtype);
struct VectorPass;
[[nodiscard]] double vector_pass_instruction_count(const ChipSpec& chip, const VectorPass& pass);

}  // namespace tpusim::kernels
