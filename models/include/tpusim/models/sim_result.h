#pragma once
// What one simulated step produced: raw statistics gathered by the modules plus values derived at the end.
// No formatting here; tools/ writes summary.json, tables and CSV from this struct.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tpusim/core/units.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// Hardware unit kinds that report busy time and utilization.
enum class HwUnit : std::uint8_t { mxu, vpu, dma, hbm, host };
inline constexpr int kHwUnits = 5;
[[nodiscard]] std::string_view hw_unit_name(HwUnit u);

struct Spread {
  double mean = 0, min = 0, max = 0;
};

// How one unit kind was used, over all chips.
//   busy: seconds the unit was busy, averaged over its instances on a chip (the TensorCores for MXU and VPU)
//         and then over chips. HBM counts time with at least one transfer moving data; DMA counts time with at
//         least one transfer issued and not yet retired (latency included); host counts PCIe transfers.
//   utilization, per chip over the step time, then spread over chips:
//     mxu:  useful MACs / (rows x cols x MXUs x TensorCores x clock cycles of the step), at the bf16 rate;
//     vpu, dma, host: busy / step_time;
//     hbm:  bytes moved / (peak bandwidth x step_time), so efficiency < 1 caps it below 1.
struct UnitUsage {
  Seconds busy;
  Spread utilization;
};

// Where a chip's step went; the four parts add up to the step time (the slowest chip's finish).
struct TimeBreakdown {
  Seconds compute;       // an MXU or VPU of the chip is busy
  Seconds memory_stall;  // no compute; DMA transfers in flight (HBM latency and bandwidth)
  Seconds host_stall;    // no compute and no DMA; host transfers over PCIe in flight
  Seconds idle;          // nothing in flight (incl. after the chip finished, until the slowest chip)
};

struct ChipResult {
  Seconds finish;  // when the chip completed its last instruction
  TimeBreakdown breakdown;
  std::array<Seconds, kHwUnits> busy{};
  std::array<double, kHwUnits> utilization{};
  Bytes vmem_peak;  // highest VMEM occupancy over the chip's TensorCores
};

struct SimResult {
  Seconds step_time;            // when the last chip finished
  double model_flops = 0;       // per step, summed over chips (from the program)
  double hardware_flops = 0;    // same, including recomputation
  FlopsPerSecond peak_flops;    // published bf16 peak x chips (the MFU/HFU denominator)
  std::uint64_t chips_simulated = 0;

  std::uint64_t instructions_executed = 0;                     // over all chips
  std::array<std::uint64_t, ir::kUnitKinds> instructions_per_unit{};  // indexed by ir::UnitKind

  std::array<UnitUsage, kHwUnits> units{};  // indexed by HwUnit
  Bytes hbm_read;       // over all chips
  Bytes hbm_written;
  Bytes dma_bytes;      // every DMA instruction's payload
  Bytes host_bytes;     // PCIe traffic of host instructions (infeed, outfeed, checkpoint)

  TimeBreakdown breakdown;        // mean over chips
  std::vector<ChipResult> chips;  // indexed by chip id

  std::uint64_t kernel_events = 0;  // timed SystemC events that fired (each wakes one chip process)
  std::uint64_t delta_cycles = 0;   // sc_delta_count() at the end
  double wall_seconds = 0;          // elaboration + simulation

  [[nodiscard]] const UnitUsage& unit(HwUnit u) const { return units[static_cast<std::size_t>(u)]; }
  [[nodiscard]] double mfu() const;
  [[nodiscard]] double hfu() const;
};

}  // namespace tpusim::models
