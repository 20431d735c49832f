#pragma once
// The raw statistics of one chip, filled by its sequencer and its blocks (Block::collect) and turned into
// ChipResult and SimResult by the pod. Each block adds what it counts; the meaning of each number is in
// UnitUsage / SimResult (sim_result.h).
#include <array>
#include <cstdint>
#include <vector>

#include "ticks.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"

namespace tpusim::models {

// Time one unit instance (a TensorCore's MXU group or VPU, the DMA engine, the host interface) spent in each
// state, up to the chip's finish (see UnitUsage in sim_result.h for the definitions).
struct UnitTimes {
  Tick busy = 0;
  Tick queue_slots = 0;
  std::array<Tick, kStallReasons> stalled{};  // indexed by StallReason
};

struct ChipCounters {
  Tick finish = 0;
  Tick compute = 0, memory_stall = 0, host_stall = 0, idle = 0;  // up to `finish`
  Tick communication = 0;  // no compute; a collective in flight (counted before memory_stall)
  Tick mxu_busy = 0, vpu_busy = 0;  // summed over TensorCores
  Tick dma_busy = 0, hbm_busy = 0, host_busy = 0, sparsecore_busy = 0;
  // Useful MACs, each weighted by 1 / its dtype's MXU rate (mxu_dtype_rate): the bf16 MAC slots they fill, so
  // that MXU utilization is against the dtype's own peak (an int8 MAC at mxu.int8_rate 2 fills half a slot).
  double rated_macs = 0;
  std::uint64_t hbm_read = 0, hbm_written = 0, dma_bytes = 0, host_bytes = 0, sparsecore_bytes = 0;
  std::uint64_t vmem_peak = 0;
  std::uint64_t mxu_vmem_bytes = 0, vpu_vmem_bytes = 0;  // operand bytes through VMEM, summed over TensorCores
  std::vector<double> array_macs;  // rated MACs per MXU array, TensorCore-major (core x mxu.per_core + array)
  std::array<std::uint64_t, ir::kUnitKinds> executed{};
  std::array<std::vector<UnitTimes>, kHwUnits> unit_times;  // by HwUnit, per instance; none for HBM
};

}  // namespace tpusim::models
