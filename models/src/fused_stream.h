#pragma once
// The HBM streams of fused instructions (ir::Instruction::streams_hbm; the contract is in kernels/program.h).
//
// A fused instruction stands for a whole compiler fusion: while its MXU or VPU computes, its operands and
// results stream through HBM. Each (TensorCore, unit) pair has a stream queue of its own, a TransferEngine
// whose transfers join the chip's HBM BandwidthServer as a class of their own, so a fused op's stream shares
// HBM bandwidth with the DMA queues and the other TensorCore's streams. A stream is two transfers, its reads
// then its writes, both after hbm.latency; the instruction's stream is done when both have retired.
//
// The chip asks for the exposed parts (head_ticks, tail_ticks) when it starts the compute, starts the stream,
// and completes the instruction only once the stream is done (pending() false) and its compute has ended.
#include <cstdint>
#include <utility>
#include <vector>

#include "bandwidth_server.h"
#include "ticks.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"
#include "transfer_engine.h"

namespace tpusim::models {

class FusedStreams {
 public:
  // Engine ids (top byte of path tags) kFirstEngineId + 2 x core + unit, unit 0 for the MXU, 1 for the VPU;
  // DMA descriptor queues use 0..127 and the host interface 255.
  static constexpr std::uint8_t kFirstEngineId = 128;

  explicit FusedStreams(int cores);

  // The exposed first load: hbm.latency + (hbm_read / grid_steps) / (bandwidth x efficiency).
  [[nodiscard]] static Tick head_ticks(const HbmSpec& hbm, const ir::Instruction& ins);
  // The exposed last store: (hbm_written / grid_steps) / (bandwidth x efficiency).
  [[nodiscard]] static Tick tail_ticks(const HbmSpec& hbm, const ir::Instruction& ins);

  // Starts the stream of `instr` (issued to the MXU or VPU of ins.core) over `hbm`.
  void start(Tick now, std::uint32_t instr, const ir::Instruction& ins, BandwidthServer& hbm, const HbmSpec& spec);
  // The stream of `instr` has not finished yet.
  [[nodiscard]] bool pending(std::uint32_t instr) const;
  [[nodiscard]] bool busy() const { return !pending_.empty(); }

  [[nodiscard]] static bool owns(std::uint32_t tag) { return TransferEngine::owner_of(tag) >= kFirstEngineId; }
  void on_done(std::uint32_t tag);
  void start_ready(Tick now);
  // Retires finished transfers; returns whether any stream finished.
  bool retire();
  [[nodiscard]] Tick next_event() const;

 private:
  std::vector<TransferEngine> engines_;                       // 2 per TensorCore
  std::vector<std::pair<std::uint32_t, int>> pending_;        // instruction, transfers not yet retired
};

}  // namespace tpusim::models
