#pragma once
// The raw statistics of one chip, filled by its sequencer and its blocks (Block::collect) and turned into
// ChipResult and SimResult by the pod. Each block adds what it counts; the meaning of each number is in
// UnitUsage / SimResult (sim_result.h).
#include <array>
#include <cstdint>
#include <string>
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
  std::array<Tick, kStallReasons> stalled{};  // indexed by stall reason (sim_result.h: stall_on, kStallOnVmem)
};

// Where the chip's time went up to its finish (TimeBreakdown's parts, in ticks).
struct ChipTimes {
  Tick compute = 0, memory_stall = 0, host_stall = 0, idle = 0;
  Tick communication = 0;  // no compute; a collective in flight (counted before memory_stall)
};

// Bytes the chip's HBM read and wrote (MemoryTraffic's parts for one chip); its HBM row counts their sum.
struct ChipTraffic {
  std::uint64_t hbm_read = 0, hbm_written = 0;
};

// What one hardware unit kind (HwUnit) of the chip counted: the blocks of the kind add their busy time and
// bytes (UnitUsage in sim_result.h says what each kind counts); the sequencer classifies each instance's time.
struct UnitCounters {
  Tick busy = 0;                     // summed over the instances (TensorCores for MXU and VPU)
  std::uint64_t bytes = 0;           // summed over the instances
  std::vector<UnitTimes> instances;  // for a kind whose queue the sequencer classifies; none for HBM
};

// A statistic one block declared of its own (Block::collect): the report lists it under the block's name.
struct DeclaredStat {
  std::string block;  // the block's name in the chip file
  std::string name;
  StatUnit unit = StatUnit::count;
  double value = 0;
};

struct ChipCounters {
  Tick finish = 0;
  ChipTimes time;  // up to `finish`
  std::array<UnitCounters, kMaxHwUnits> units;  // by HwUnit
  // Useful MACs, each weighted by 1 / its dtype's MXU rate (mxu_dtype_rate): the bf16 MAC slots they fill, so
  // that MXU utilization is against the dtype's own peak (an int8 MAC at mxu.int8_rate 2 fills half a slot).
  double rated_macs = 0;
  std::vector<double> array_macs;  // rated MACs per MXU array, TensorCore-major (core x mxu.per_core + array)
  ChipTraffic traffic;
  std::uint64_t vmem_peak = 0;  // the highest VMEM occupancy over the TensorCores
  std::array<std::uint64_t, ir::kMaxUnitKinds> executed{};
  std::vector<DeclaredStat> declared;  // in the order first declared

  [[nodiscard]] UnitCounters& unit(HwUnit u) { return units[static_cast<std::size_t>(u)]; }
  [[nodiscard]] const UnitCounters& unit(HwUnit u) const { return units[static_cast<std::size_t>(u)]; }

  // Adds `value` to the block's statistic `name` (the instances of a block in each TensorCore add up).
  void declare(const std::string& block, const std::string& name, StatUnit unit, double value) {
    for (DeclaredStat& d : declared) {
      if (d.block == block && d.name == name) {
        d.value += value;
        return;
      }
    }
    declared.push_back(DeclaredStat{block, name, unit, value});
  }
};

}  // namespace tpusim::models
