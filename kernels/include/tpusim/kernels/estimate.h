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

// Whole models (transformer, resnet): upper bounds on the unfused ops of one block and microbatch, for a
// training step (a GPT-3 block with fusion off, full remat and unfused attention has about 51) and for an
// inference step (forward, prefill, decode: a LLaMA block has about 8 fused, more unfused).
inline constexpr double kFusedOpsPerBlock = 96;
inline constexpr double kFusedOpsPerBlockInference = 32;

// Memory one op of a whole model's fused graph takes while the step is built and its memory planned (its
// tensors, accesses, liveness and the plans of the does-not-fit hint): measured on a 65536-layer transformer
// (about 5 GB for 3.3 million ops), rounded up.
inline constexpr double kBytesPerGraphOp = 2048;

struct LoweringEstimate {
  double instructions = 0;  // in all programs
  double graph_ops = 0;     // whole models: ops of the fused graph built before the instructions
  [[nodiscard]] double bytes() const { return instructions * kBytesPerInstruction + graph_ops * kBytesPerGraphOp; }
};

// The instructions lower_workload(workload, chip) emits: exact for gemm, mlp and collective models, an upper
// bound for whole models and DLRM. Throws what tiling throws (ConfigError for a VMEM
// too small for any tile), never more.
[[nodiscard]] LoweringEstimate estimate_lowering(const WorkloadSpec& workload, const ChipSpec& chip);

// The instructions of one stage: gemm_instruction_count (gemm.h), vector_pass_instruction_count (vector_pass.h).

}  // namespace tpusim::kernels
