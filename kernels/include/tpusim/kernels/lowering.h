#pragma once
// The lowering library's entry points: a model + batch + step on a chip becomes per-role programs, tiled to
// the chip's MXU shape and VMEM size.
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

// How a GEMM was tiled (for tests and `tpusim lower`).
struct GemmTiling {
  std::int64_t tm = 0, tk = 0, tn = 0;  // tile of C (tm x tn) and of the contraction (tk)
  std::uint64_t vmem_peak = 0;          // bytes live in one TensorCore's VMEM at the worst point
};

// Lowers C[m,n] = A[m,k] x B[k,n] (all in HBM) into DMA-in / matmul / DMA-out tiles, double-buffered,
// split across the chip's TensorCores. Appends to `prog`; returns the indices of the final instructions
// (those that later work must depend on). `after` are dependencies for the first instructions.
struct GemmLowering {
  std::vector<std::uint32_t> done;
  GemmTiling tiling;
};
GemmLowering lower_gemm(ir::Program& prog, const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                        DType dtype, const std::vector<std::uint32_t>& after, const std::string& label);

// The whole workload of a scenario for a single chip (issue 2): a GEMM, or an MLP forward / training step.
[[nodiscard]] ir::ProgramSet lower_workload(const WorkloadSpec& workload, const ChipSpec& chip);

}  // namespace tpusim::kernels
