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
// per file (mxu_weight_stationary.cpp, mxu_output_stationary.cpp), chosen by make_mxu_dataflow().
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
  [[nodiscard]] virtual std::int64_t bf16_cycles(const MxuSpec& mxu, MatmulShape s) const = 0;
  [[nodiscard]] virtual std::int64_t schedule(const MxuSpec& mxu, MatmulShape s, std::int64_t issue,
                                              std::vector<MxuArrayState>& arrays) const = 0;
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
// is not a limit here (not modelled).
[[nodiscard]] std::int64_t vpu_cycles(const VpuSpec& vpu, ir::VectorOp op, std::int64_t elements);

// Time of one transfer alone on its path: latency + bytes / (bandwidth * efficiency). Concurrent transfers
// share the bandwidth equally (the HBM model), which this closed form does not capture.
[[nodiscard]] Seconds transfer_time(Bytes bytes, Seconds latency, BytesPerSecond bandwidth, double efficiency);

// Fraction of a path's bandwidth a DMA of this access pattern achieves: 1 for contiguous, dma.strided_efficiency
// or dma.gather_efficiency otherwise (a transfer of B bytes occupies the path like B / efficiency bytes).
[[nodiscard]] double dma_pattern_efficiency(const DmaSpec& dma, ir::DmaPattern pattern);

// Assumption: a host<->chip DMA over PCIe sees about 1 us of setup latency (typical Gen3 host DMA round
// trip; not published for TPU hosts).
inline constexpr Seconds kPcieLatency{1e-6};
// Time before a host instruction's bytes start moving over PCIe: its host-side work (Instruction::
// host_seconds: input pipeline, launch, sync, storage write), plus kPcieLatency when it has bytes to move. A
// host instruction without bytes (a launch, a sync) takes exactly its host_seconds.
[[nodiscard]] Seconds host_op_latency_seconds(Seconds host_seconds, std::uint64_t bytes);

// Assumption: on-chip copies (VMEM<->VMEM, VMEM<->CMEM) start without extra latency beyond their bandwidth
// term; their latency is tens of cycles, below the resolution that matters next to HBM latency.
inline constexpr Seconds kOnChipCopyLatency{0.0};

[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace tpusim::models
