#pragma once
// Timing formulas of one chip's units, as plain functions of the ChipSpec so they can be tested (and used by
// analytical tools) without SystemC. The SystemC modules call these; they never invent timing themselves.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// A matmul C[m,n] (+)= A[m,k] x B[k,n] issued to one TensorCore.
struct MatmulShape {
  std::int64_t m = 0, k = 0, n = 0;
};

// What one systolic array of a TensorCore still owes the instructions before the next one, in MXU cycles
// since the TensorCore's arrays last went idle. An idle array is {0, 0}.
struct MxuArrayState {
  std::int64_t load_free = 0;    // first cycle the next tile may start loading into the array (its buffer is free)
  std::int64_t stream_free = 0;  // first cycle the next tile may start streaming operands through the array
};

// How a matmul maps onto a TensorCore's systolic arrays: the variation point for MXU dataflows. One variant
// per file (mxu/dataflow_weight_stationary.cpp, mxu/dataflow_output_stationary.cpp), chosen by make_mxu_dataflow().
//
// Contract: bf16_cycles() is the number of MXU clock cycles from the instruction's start on an idle TensorCore
// until its last output has left the arrays, at the bf16 rate, with the instruction's array tiles spread
// round-robin over the core's mxu.per_core arrays (so the busiest array sets the time). A shape with a zero
// dimension takes zero cycles. Partial tiles cost as much as full ones (that is the padding waste).
// Implementations are stateless and thread-safe.
//
// Contract of schedule(): places the instruction's tiles on arrays that may still be working on earlier
// instructions of the same TensorCore (back-to-back matmuls pipeline: the next instruction's first weights
// load while the previous one streams its last tile, so fill and drain are paid once per back-to-back run,
// not once per instruction). `arrays` has mxu.per_core entries; tiles are dealt round-robin from array 0, as
// for bf16_cycles(). Returns the cycle the instruction's last output leaves and updates `arrays`. Issued at
// cycle 0 on idle arrays it returns exactly bf16_cycles().
class MxuDataflowModel {
 public:
  virtual ~MxuDataflowModel() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Array-sized tiles the instruction is cut into (weight tiles or output tiles, per the dataflow).
  [[nodiscard]] virtual std::int64_t tiles(const MxuSpec& mxu, MatmulShape s) const = 0;
  // The one thing a dataflow defines: places `count` (>= 1) of the instruction's tiles on one array after the
  // array's earlier work `st`, issued at cycle `issue`; returns the cycle the last output leaves the array and
  // updates `st`.
  [[nodiscard]] virtual std::int64_t schedule_array(const MxuSpec& mxu, MatmulShape s, std::int64_t count,
                                                    std::int64_t issue, MxuArrayState& st) const = 0;

  // Defined once for every dataflow (timing.cpp) from tiles() and schedule_array(), per the contracts above.
  [[nodiscard]] std::int64_t bf16_cycles(const MxuSpec& mxu, MatmulShape s) const;
  [[nodiscard]] std::int64_t schedule(const MxuSpec& mxu, MatmulShape s, std::int64_t issue,
                                      std::vector<MxuArrayState>& arrays) const;
};

// Tiles of an instruction that land on array `array` when `total` tiles are dealt round-robin from array 0.
[[nodiscard]] std::int64_t tiles_on_array(const MxuSpec& mxu, std::int64_t total, int array);

// The composition root for dataflows (explicit, no static registration).
[[nodiscard]] std::unique_ptr<const MxuDataflowModel> make_mxu_dataflow(MxuDataflow dataflow);

// MAC throughput of `dtype` relative to bf16 on this MXU: int8/fp8 use mxu.int8_rate / fp8_rate; a dtype the
// chip has no fast path for (rate 0) runs at the bf16 rate (assumption: converted to bf16 on the way in);
// f32 runs at the bf16 rate (assumption: one bf16 pass, JAX's default matmul precision on TPU).
[[nodiscard]] double mxu_dtype_rate(const MxuSpec& mxu, DType dtype);

// MXU cycles of one matmul at its dtype: ceil(bf16_cycles / rate).
[[nodiscard]] std::int64_t matmul_cycles(const MxuDataflowModel& dataflow, const MxuSpec& mxu, MatmulShape s,
                                         DType dtype);

// A matmul instruction as the MXU times it. With ir::Instruction::shape.batch > 1 the `batch` products are dealt as
// one m x k x (batch x round_up(n, cols)) product: each product's columns padded to the array on its own, so
// the tile counts of both dataflows are exact (weight-stationary batch x ceil(k/R) x ceil(n/C) tiles of m
// rows; output-stationary ceil(m/R) x batch x ceil(n/C) tiles of k). batch 1 is the instruction's own shape.
[[nodiscard]] MatmulShape matmul_timing_shape(const MxuSpec& mxu, const ir::Instruction& ins);
// Useful MACs of a matmul instruction: batch x m x k x n.
[[nodiscard]] double matmul_useful_macs(const ir::Instruction& ins);
// VPU cycles a matmul instruction reserves on its TensorCore's VPU: popping its outputs (result_pop_cycles of
// m x n, times batch unless sum_batch adds the products up in the result buffer) plus its fused epilogue
// (vpu_cycles of `vector.elements` of `vector.op`; 0 without one).
[[nodiscard]] std::int64_t matmul_vpu_cycles(const VpuSpec& vpu, const ir::Instruction& ins);

// MACs the arrays could have done in `cycles` on one TensorCore (R x C x MXUs x cycles x dtype rate).
[[nodiscard]] double mxu_mac_capacity(const MxuSpec& mxu, DType dtype, std::int64_t cycles);

// Assumption: the final cross-lane step of a reduction is a log2 tree over one vector register
// (lanes x sublanes values) in the cross-lane unit, one level per cycle, once per instruction.
// Assumption: a transpose moves one lane row (`lanes` values) per cycle through the cross-lane unit, so a
// lanes x sublanes register takes `sublanes` cycles (an 8x slowdown against elementwise on a 128x8 VPU).
//
// VPU cycles of one vector instruction over `elements` values:
//   elementwise:    ceil(elements / (lanes * sublanes * alus))
//   transcendental: ceil(elements / (lanes * sublanes * alus * transcendental_rate))
//   reduction:      elementwise pass + ceil(log2(lanes * sublanes))
//   transpose:      ceil(elements / lanes)
// The dtype does not change the rate (VPU registers hold 32-bit values; bf16 is unpacked). VMEM bandwidth
// is applied on top (vmem_bound_cycles of the instruction's declared bytes, below).
[[nodiscard]] std::int64_t vpu_cycles(const VpuSpec& vpu, ir::VectorOp op, std::int64_t elements);

// Draining MXU results through the VPU. A matmul's f32 (int32 for int8) results leave the MXU result buffer
// through the vector unit: the VPU pops them into vector registers, one register of lanes x sublanes values
// per pop, and stores them to VMEM, so the pops take VPU issue slots. A matmul of m x n outputs costs
//   result_pop_cycles = ceil(m * n / (lanes * sublanes * result_pops_per_cycle))
// VPU cycles on its TensorCore's VPU (0 for an empty shape). Assumption: one pop per VPU cycle
// (vpu.result_pops_per_cycle = 1; not published), and every output is popped once per instruction (partial
// sums over k tiles accumulate in the result buffer).
[[nodiscard]] std::int64_t result_pop_cycles(const VpuSpec& vpu, MatmulShape s);
// MXU cycles from a matmul's issue on idle arrays until its first results reach the result buffer, the
// earliest the VPU can pop them: weight-stationary, the first weight load (R), then the first LHS row
// through R rows and C columns: 2R + C - 1 (the end of a one-row matmul); output-stationary, the first
// tile's k slices through the array and the first accumulator row out: k + R + C - 1.
[[nodiscard]] std::int64_t mxu_first_result_cycles(const MxuSpec& mxu, MatmulShape s);

// VMEM traffic of the compute units (chip.vmem.bandwidth, per TensorCore).
//
// An MXU or VPU instruction takes max(its compute cycles, vmem_bound_cycles(its VMEM bytes)); back-to-back
// matmuls chain their VMEM time (MxuPipeline), so a run of VMEM-bound matmuls lasts the sum of their VMEM
// times. Assumption: the MXU group and the VPU of a TensorCore each see the whole vmem.bandwidth (their
// contention, and the VMEM port cycles that DMAs take, are not modelled).
//
// Assumption: the MXU accumulates in f32 (int32 for int8), 4 bytes per partial sum.
inline constexpr std::int64_t kMxuAccumulatorBytes = 4;
// VMEM bytes one matmul reads and writes, in = dtype_bytes(dtype):
//   weight-stationary: weights k*n*in (each loaded once) + LHS m*k*ceil(n/C)*in (A streams once per column
//                      of weight tiles) + partial sums m*n*ceil(k/R)*4 (one result row per streamed row and
//                      weight tile, accumulated outside the array);
//   output-stationary: A m*k*ceil(n/C)*in + B k*n*ceil(m/R)*in (streamed once per output tile) + m*n*4.
// Per array and cycle, weight-stationary streams one LHS row and writes one result row: R*in + C*4 bytes
// (768 B for a 128x128 bf16 array), plus the next tile's weights, R*C*in per max(m, R) cycles.
[[nodiscard]] std::uint64_t matmul_vmem_bytes(const MxuSpec& mxu, MatmulShape s, DType dtype);
// A vector instruction's VMEM bytes are the operand bytes it declares in Instruction::bytes (the lowering
// sets them: every input read and every output written once); 0 (hand-written programs that leave it out)
// puts no VMEM bound on it, since `elements` counts element-operations, not operands.
// Cycles to move `bytes` through VMEM: ceil(bytes / (vmem.bandwidth / clock)); 0 for no bytes.
[[nodiscard]] std::int64_t vmem_bound_cycles(double bytes, BytesPerSecond vmem_bandwidth, Hertz clock);

// Useful MACs of one matmul that land on MXU array `array` of its TensorCore: the dataflow's tiles are dealt
// round-robin from array 0 in row-major order over the tile grid (weight-stationary: k tiles outer, n tiles
// inner, a tile doing m x rows x cols MACs; output-stationary: m tiles outer, n inner, rows x cols x k), so
// partial tiles count what they really compute.
[[nodiscard]] double matmul_array_macs(const MxuSpec& mxu, MatmulShape s, int array);

// Time of one transfer alone on its path: latency + bytes / (bandwidth * efficiency). Concurrent transfers
// share the bandwidth equally (the HBM model), which this closed form does not capture.
[[nodiscard]] Seconds transfer_time(Bytes bytes, Seconds latency, BytesPerSecond bandwidth, double efficiency);

// HBM channels (chip.hbm.channels, the peak bandwidth split evenly). A transfer is striped over the channels
// in kHbmStripe units, so it occupies min(channels, ceil(bytes / kHbmStripe)) of them and moves at most at
// that fraction of bandwidth x efficiency: a transfer of at least channels x kHbmStripe bytes gets the full
// rate, a smaller one less (a 1 KiB transfer on 32 channels gets 1/32). Concurrent transfers share what the
// channels give (the BandwidthServer's per-transfer cap).
// Assumption: 256 B stripes (the address-interleaving granule; HBM2's 32 B bursts x 8, not published for TPU).
inline constexpr std::uint64_t kHbmStripe = 256;

// Embedding lookups on the SparseCore (sparsecore/sparsecore.cpp). Its tiles fetch each table row on its own,
// in accesses of kHbmAccessBytes: JEDEC HBM2 (JESD235) moves 32 bytes per access (a 64-bit pseudo-channel
// burst of 4, or a 128-bit channel burst of 2), so a row of b bytes takes ceil(b / 32) x 32 bytes of memory
// time.
inline constexpr std::uint64_t kHbmAccessBytes = 32;
// The memory time of a gather's or scatter's rows: m rows x ceil(n x dtype bytes / 32) x 32.
[[nodiscard]] double embedding_row_volume(const ir::Instruction& ins);
// SparseCore cycles to add a gather's or scatter's rows: ceil(m x n / (count x tiles x lanes)). Assumption:
// every tile adds `lanes` values per cycle and the rows spread evenly over every tile of every SparseCore.
[[nodiscard]] std::int64_t sparsecore_pool_cycles(const SparseCoreSpec& sc, const ir::Instruction& ins);
[[nodiscard]] int hbm_channels_used(const HbmSpec& hbm, double bytes);
// The fraction of the HBM rate one transfer of `bytes` can use: hbm_channels_used / channels.
[[nodiscard]] double hbm_channel_share(const HbmSpec& hbm, double bytes);
// transfer_time for one HBM transfer alone: latency + bytes / (bandwidth * efficiency * hbm_channel_share).
[[nodiscard]] Seconds hbm_transfer_time(const HbmSpec& hbm, Bytes bytes, Seconds latency);

// Fraction of a path's bandwidth a DMA of this access pattern achieves: 1 for contiguous, dma.strided_efficiency
// or dma.gather_efficiency otherwise (a transfer of B bytes occupies the path like B / efficiency bytes).
[[nodiscard]] double dma_pattern_efficiency(const DmaSpec& dma, ir::DmaPattern pattern);

// Assumption: a host<->chip DMA over PCIe sees about 1 us of setup latency (typical Gen3 host DMA round
// trip; not published for TPU hosts).
inline constexpr Seconds kPcieLatency{1e-6};
// Time before a host instruction's bytes start moving over PCIe: its host-side work (Instruction::
// host.seconds: input pipeline, launch, sync, storage write), plus kPcieLatency when it has bytes to move. A
// host instruction without bytes (a launch, a sync) takes exactly its host.seconds.
[[nodiscard]] Seconds host_op_latency_seconds(Seconds host_seconds, std::uint64_t bytes);

// Assumption: on-chip copies (VMEM<->VMEM, VMEM<->CMEM) start without extra latency beyond their bandwidth
// term; their latency is tens of cycles, below the resolution that matters next to HBM latency.
inline constexpr Seconds kOnChipCopyLatency{0.0};

[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace tpusim::models
