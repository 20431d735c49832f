#pragma once
// The HBM stream of the fused instructions a compute unit runs (the MXU group or the VPU of a TensorCore;
// ir::Instruction::streams_hbm, the contract is in kernels/program.h).
//
// A fused instruction stands for a whole compiler fusion: while its MXU or VPU computes, its operands and
// results stream through HBM. The unit reaches HBM through the path "mxu -> hbm" (or "vpu -> hbm"); its stream
// is a TransferEngine of its own (engine id kFirstStreamEngine + 2 x TensorCore + unit), so the HBM's
// scheduler shares its bandwidth between the stream and the DMA queues (memory/transfer.h). A stream is two
// transfers sent when the instruction starts, its reads (after hbm.latency, as every HBM read) and its
// writes; the instruction's stream is done when both are answered. A unit runs one fused instruction at a
// time (the sequencer starts one only on an idle unit), so the stream holds at most one instruction.
//
// The unit asks for the exposed parts (head_ticks, tail_ticks) when it starts the compute, and completes the
// instruction only once busy() is false and its compute has ended.
#include <cstdint>

#include <tlm>

#include "memory/transfer_engine.h"
#include "ticks.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// Engine ids of the streams: the DMA descriptor queues take 0, 1, ... (one per TensorCore), the SparseCores
// 254 and the host 255.
inline constexpr std::uint8_t kFirstStreamEngine = 128;
static_assert(kFirstStreamEngine + 2 * kMaxTensorCores - 1 < kSparseCoreEngine && kMaxTensorCores <= kFirstIciEngine,
              "every TensorCore's DMA queue and streams need engine ids of their own (core/chip_blocks.h)");

class FusedStream {
 public:
  // `unit` 0 for the MXU group, 1 for the VPU of TensorCore `core`.
  FusedStream(int core, int unit);

  // The exposed first load: hbm.latency + (hbm_read / grid_steps) / (bandwidth x efficiency).
  [[nodiscard]] static Tick head_ticks(const HbmSpec& hbm, const ir::Instruction& ins);
  // The exposed last store: (hbm_written / grid_steps) / (bandwidth x efficiency).
  [[nodiscard]] static Tick tail_ticks(const HbmSpec& hbm, const ir::Instruction& ins);
  // The least time in cycles a fused matmul of `compute_cycles` (its arrays' time with the grid steps'
  // overheads) takes when its tiling pipelines `ins.stream.buffers` operand buffers per core (0: no bound).
  // Each step's loads are issued when the matmul `buffers` steps before has drained, so every `buffers` steps
  // last at least the MXU's drain (2 rows + columns cycles) + hbm.latency + one step's loads of every
  // TensorCore + one step's matmul: the bound kernels' tile_gemm ranks tilings by.
  [[nodiscard]] static std::int64_t pipeline_floor_cycles(const ChipSpec& chip, const ir::Instruction& ins,
                                                          std::int64_t compute_cycles);

  // Sends the reads and the writes of `instr` to `hbm` (the unit's forward path to it).
  void start(Tick now, std::uint32_t instr, const ir::Instruction& ins, tlm::tlm_fw_transport_if<>* hbm);
  // The HBM's answer for one of the stream's payloads.
  void on_response(const tlm::tlm_generic_payload& gp) { engine_.on_response(gp); }
  // A stream is in flight (retires what has been answered first).
  [[nodiscard]] bool busy();
  // The instruction of the stream in flight.
  [[nodiscard]] std::uint32_t instr() const { return instr_; }
  // Without retiring: whether a stream was in flight after the last busy() (for the activity of an interval).
  [[nodiscard]] bool was_busy() const { return engine_.busy(); }

 private:
  TransferEngine engine_;
  std::uint32_t instr_ = 0;
};

}  // namespace tpusim::models
