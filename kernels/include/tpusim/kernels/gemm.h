#pragma once
// A GEMM lowered onto one chip: its tiling to the MXU shape and VMEM size (tile_gemm) and its instructions
// (lower_gemm), with the VMEM budgets every stage of the lowering keeps (tiling/gemm.cpp).
//
// VMEM contract (per TensorCore). An instruction's vmem.alloc is taken when it starts and its vmem.free given
// back when it ends; instructions that touch a TensorCore's VMEM (matmul, vector, and the DMAs into or out of
// it) carry that core in Instruction::core. Every stage of the lowering bounds its live bytes by dependencies
// alone, so the bound holds for any execution order the DAG allows, however the hardware models time it:
//   - a GEMM stage uses at most kGemmVmemFraction of a core's VMEM, a vector pass at most
//     kVectorVmemFraction, and neither more than the chip's scoped limit (vmem_budget); lower_workload
//     orders GEMMs after GEMMs and vector passes after vector passes, so at most one of each is live per core
//     and the rest of VMEM stays free as headroom.
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

inline constexpr double kGemmVmemFraction = 0.75;
inline constexpr double kVectorVmemFraction = 0.125;

// The VMEM a stage of the lowering may take on one core: `share` of chip.vmem.capacity, and at most the
// compiler's scoped limit (chip.vmem.scoped_limit) when the chip has one.
[[nodiscard]] inline double vmem_budget(const ChipSpec& chip, double share) {
  const double of_capacity = chip.vmem.capacity.as_double() * share;
  const double limit = chip.vmem.scoped_limit.as_double();
  return limit > 0 && limit < of_capacity ? limit : of_capacity;
}

// How a GEMM was tiled (for tests and `tpusim lower`).
struct GemmTiling {
  std::int64_t tm = 0, tk = 0, tn = 0;  // tile of C (tm x tn) and of the contraction (tk)
  std::uint64_t vmem_peak = 0;          // bound on bytes live in one TensorCore's VMEM (see tile_gemm)
  int buffers = 2;                      // operand buffers per core: 2 (double) or 3 (deeper prefetch)
};

// The bytes per element of a GEMM's operands as they sit in HBM, where they differ from its dtype's (f32 master
// weights a bf16 matmul casts as it loads them): they set the HBM traffic and the VMEM tiles tile_gemm ranks
// tilings by. 0: the dtype's.
struct OperandBytes {
  double a = 0, b = 0;
};

// Chooses the tiling lower_gemm uses. tm and tk are multiples of the MXU rows, tn of the MXU columns, each a
// power-of-two multiple or else the whole dimension (so a problem no larger than a tile is one tile). Among
// the tilings whose VMEM bound fits kGemmVmemFraction of a core's VMEM it takes the lowest estimated time
// (roofline max of the busiest core's weight-stationary MXU time, with back-to-back matmuls pipelined, and
// HBM time, a step lasting at least what refilling its double buffer takes; plus the exposed first loads of
// every core, and the last step's matmul, drain and stores; plus a ranking-only 50 ns per step), then the
// fewest HBM bytes, then the fewest steps, then the fewest buffers. It also picks D = 2 or 3 operand buffers
// (3 prefetches one step deeper, hiding HBM latency behind short steps). The VMEM bound is
//   min(D, k-steps on a core) x (tm*tk*a_bytes + tk*tn*b_bytes)  +  min(2, C tiles on a core) x tm*tn*4
// (D-buffered A/B tiles and double-buffered f32 accumulators). Throws std::invalid_argument for a
// non-positive dimension, ConfigError when even the smallest tile does not fit the chip's VMEM.
// A `batch` of products (attention's heads) is ranked as one kernel: the products dealt over the TensorCores,
// each running every step of its tiling, the first loads and the last stores exposed once.
[[nodiscard]] GemmTiling tile_gemm(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                                   DType dtype, OperandBytes operands = {}, std::int64_t batch = 1);

// A stage's final instructions: later work that consumes the stage's output depends on all of them.
struct GemmLowering {
  std::vector<std::uint32_t> done;
  GemmTiling tiling;
  bool weights_in_cmem = false;  // B was staged in CMEM (see lower_gemm)
};

// Share of chip.cmem.capacity one GEMM may fill with staged weights. GEMM stages run one after the other
// (see the VMEM contract above), so one GEMM's weights at a time live in CMEM and may take all of it.
inline constexpr double kGemmCmemFraction = 1.0;
// Whether B[k,n] in `dtype` fits the chip's CMEM for staging (false on a chip without CMEM, or whose DMA engine
// has no path to it).
[[nodiscard]] bool weights_fit_cmem(const ChipSpec& chip, std::int64_t k, std::int64_t n, DType dtype);

// Lowers C[m,n] = A[m,k] x B[k,n] (A, B and C in HBM, C in `dtype`, f32 accumulation) with tile_gemm's
// tiling. C tiles go round-robin to the TensorCores (row-major tile order); per C tile and k step: DMA of the
// A tile and of the B tile into VMEM, then a matmul {tm,tk,tn} depending on both and on the core's previous
// matmul; after the last k step, one DMA of C back to HBM. Buffer reuse is expressed as dependencies: the
// loads of a core's step s+D wait for its matmul of step s (D = tiling.buffers), the first matmul of its C tile
// t+2 waits for the store of tile t. A is read ceil(n/tn) times, B ceil(m/tm) times, C written once.
// Instructions are issued in a software-pipelined order (the loads of step s+1 before the matmul of step s,
// cores interleaved) so in-order unit queues overlap DMA with compute. The first loads depend on `after`.
// Appends to `prog`.
// CMEM staging (chips with CMEM, v4): when B fits (weights_fit_cmem) and is re-read (ceil(m/tm) > 1), each B
// tile is copied HBM -> CMEM once ("stage_b", in the DMA queue of its first user, C tile row 0, depending on
// `after` only) and every load of it goes CMEM -> VMEM, depending on its stage. HBM then reads B once: the
// HBM bytes drop from eb x (m k ceil(n/tn) + k n ceil(m/tm)) + C to eb x (m k ceil(n/tn) + k n) + C. The
// tiling is chosen as without CMEM (tile_gemm does not model it).
GemmLowering lower_gemm(ir::Program& prog, const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                        DType dtype, const std::vector<std::uint32_t>& after, const std::string& label);
// The instructions lower_gemm emits, in closed form (estimate_lowering counts a workload by it).
[[nodiscard]] double gemm_instruction_count(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                                            DType dtype);

}  // namespace tpusim::kernels
