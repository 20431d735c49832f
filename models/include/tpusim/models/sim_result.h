#pragma once
// What one simulated step produced: raw statistics gathered by the modules plus values derived at the end.
// No formatting here; tools/ writes summary.json, tables and CSV from this struct.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/units.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// Hardware unit kinds that report busy time and utilization: the built-in kinds, then one for each block kind of
// your own that runs instructions (block/registry.h, add_block_kind), named after the unit kind it runs.
enum class HwUnit : std::uint8_t { mxu, vpu, dma, hbm, host, sparsecore };
inline constexpr int kBuiltInHwUnits = 6;
inline constexpr int kMaxHwUnits = kBuiltInHwUnits + (ir::kMaxUnitKinds - ir::kBuiltInUnitKinds);

// Each unit kind, in HwUnit order: its name; the unit queue whose instructions it counts (none for HBM, which
// runs no instructions); whether the table lists it when nothing ran on it (the SparseCores, which most chips
// lack, only when they ran something); whether its busy time is the mean over a chip's TensorCores; and what
// its utilization is (UnitUsage below: the MXU's rated MACs, the bytes HBM moved, the others' busy time).
struct HwUnitInfo {
  enum class Utilization : std::uint8_t { rated_macs, busy_time, hbm_bytes };
  HwUnit unit;
  std::string_view name;
  bool runs_instructions;
  ir::UnitKind queue;  // when runs_instructions
  bool listed_when_unused;
  bool per_core;
  Utilization utilization;
};
inline constexpr std::array<HwUnitInfo, kBuiltInHwUnits> kBuiltInHwUnitInfo{{
    {HwUnit::mxu, "mxu", true, ir::UnitKind::mxu, true, true, HwUnitInfo::Utilization::rated_macs},
    {HwUnit::vpu, "vpu", true, ir::UnitKind::vpu, true, true, HwUnitInfo::Utilization::busy_time},
    {HwUnit::dma, "dma", true, ir::UnitKind::dma, true, false, HwUnitInfo::Utilization::busy_time},
    {HwUnit::hbm, "hbm", false, ir::UnitKind::mxu, true, false, HwUnitInfo::Utilization::hbm_bytes},
    {HwUnit::host, "host", true, ir::UnitKind::host, true, false, HwUnitInfo::Utilization::busy_time},
    {HwUnit::sparsecore, "sparsecore", true, ir::UnitKind::sparsecore, false, false,
     HwUnitInfo::Utilization::busy_time},
}};
static_assert(
    [] {
      for (std::size_t i = 0; i < kBuiltInHwUnitInfo.size(); ++i) {
        if (static_cast<std::size_t>(kBuiltInHwUnitInfo[i].unit) != i) return false;
      }
      return true;
    }(),
    "kBuiltInHwUnitInfo in HwUnit order");

namespace detail {
extern std::vector<HwUnitInfo> hw_units;  // sim_result.cpp; block/unit_blocks.cpp adds and removes the added ones
}  // namespace detail
// The catalogue, built-in kinds first, each at its HwUnit's index.
[[nodiscard]] inline const std::vector<HwUnitInfo>& hw_units() { return detail::hw_units; }
[[nodiscard]] inline std::string_view hw_unit_name(HwUnit u) {
  return detail::hw_units[static_cast<std::size_t>(u)].name;
}

struct Spread {
  double mean = 0, min = 0, max = 0;
};

// What a unit with nothing in flight waited on before its next instruction could start, as an index: a
// dependency on an instruction of another unit queue (the index of its ir::UnitKind: stall_on), or VMEM space
// (kStallOnVmem; 0 today: an allocation that does not fit fails the run).
inline constexpr int kStallReasons = ir::kMaxUnitKinds + 1;
inline constexpr int kStallOnVmem = ir::kMaxUnitKinds;
[[nodiscard]] constexpr int stall_on(ir::UnitKind u) { return static_cast<int>(u); }
// The unit kind's stall_name ("dependency_mxu", ..., "dependency_barrier", an added kind's), or "vmem".
[[nodiscard]] inline std::string_view stall_reason_name(int reason) {
  return reason == kStallOnVmem ? "vmem" : ir::unit_info(static_cast<ir::UnitKind>(reason)).stall_name;
}

// How one unit kind was used, over all chips.
//   busy: seconds the unit was busy, averaged over its instances on a chip (the TensorCores for MXU and VPU)
//         and then over chips. HBM counts time with at least one transfer moving data; DMA counts time with at
//         least one transfer issued and not yet retired (latency included); host counts PCIe transfers.
//         VPU counts its vector instructions plus the cycles it spends popping MXU results
//         (result_pop_cycles in timing.h) and collective reductions. SparseCore counts time with a gather or
//         scatter in flight (all of a chip's SparseCores work on one instruction together). A fused instruction
//         (kernels/program.h) keeps its MXU or VPU busy until its compute and exposed last store end, not while
//         it then waits for the rest of its HBM stream (which counts in HBM's busy time, not the DMA's). An
//         added kind counts what its block reports (ChipCounters::unit).
//   utilization, per chip over the step time, then spread over chips:
//     mxu:  useful MACs / (rows x cols x MXUs x TensorCores x clock cycles of the step), each MAC counted at its
//           dtype's rate (mxu.int8_rate, fp8_rate): utilization against the dtype's own peak, never above 1;
//     vpu, dma, host, sparsecore, an added kind: busy / step_time;
//     hbm:  bytes moved / (peak bandwidth x step_time), so efficiency < 1 caps it below 1.
//   stalled, stalled_by, queue_slots, idle: the unit's queue, averaged like busy (per TensorCore for MXU and
//     VPU; the DMA engine and the host interface as one unit each; HBM has no queue and is never stalled):
//     stalled:     nothing in flight while the next instruction of the queue waited; stalled_by splits it by
//                  reason and adds up to it;
//     queue_slots: work in flight and the next instruction waited for a free slot (MXU instruction buffer,
//                  DMA descriptors, the host interface); part of the busy time, not of stalled;
//     idle:        step_time - time with work in flight - stalled (nothing to do, incl. after the chip ended).
//   bytes, summed over chips: mxu, vpu: operand bytes the unit read from and wrote to VMEM, summed over
//     TensorCores (matmul_vmem_bytes, a vector op's declared Instruction::bytes); dma, host, sparsecore: their
//     part of SimResult::traffic (dma_bytes, host_bytes, sparsecore_bytes); hbm: hbm_read + hbm_written; an
//     added kind: what its block reports.
struct UnitUsage {
  Seconds busy;
  Bytes bytes;
  Spread utilization;
  Seconds stalled;
  std::array<Seconds, kStallReasons> stalled_by{};  // indexed by stall reason (stall_on, kStallOnVmem)
  Seconds queue_slots;
  Seconds idle;
};

// Where a chip's step went; the four parts add up to the step time (the slowest chip's finish).
struct TimeBreakdown {
  Seconds compute;       // an MXU or VPU of the chip is busy
  Seconds communication;  // no compute; a collective in flight on the ICI unit (exposed communication)
  Seconds memory_stall;  // no compute, no collective; DMA transfers or a fused op's HBM stream in flight
  Seconds host_stall;    // none of the above; host transfers over PCIe in flight
  Seconds idle;          // nothing in flight (incl. after the chip finished, until the slowest chip)
};

struct ChipResult {
  Seconds finish;  // when the chip completed its last instruction
  TimeBreakdown breakdown;
  std::array<Seconds, kMaxHwUnits> busy{};        // by HwUnit
  std::array<double, kMaxHwUnits> utilization{};  // by HwUnit
  Bytes vmem_peak;  // highest VMEM occupancy over the chip's TensorCores
};

// One directed ICI link (or one direction of a host's DCN NIC) over the step.
struct LinkUsage {
  Bytes bytes;               // payload carried
  Seconds busy;              // moving data: chunked, the sum of chunk service times; flow, time with >= 1 flow
  double utilization = 0;    // bytes / (link bandwidth x step_time)
  Seconds queueing;          // chunked: summed over chunks, time waiting for the link (0 in flow mode)
  std::uint64_t chunks = 0;  // chunked: chunks served (0 in flow mode)
};

// The data-center network of a multislice (pods > 1); empty otherwise.
struct DcnUsage {
  std::vector<LinkUsage> egress;   // each host's NIC, by HostId
  std::vector<LinkUsage> ingress;
  // Each pod's uplink into the fabric, by pod, when it can bind (pod.dcn_oversubscription above 1).
  std::vector<LinkUsage> uplink_egress;
  std::vector<LinkUsage> uplink_ingress;
};

// One collective instruction of one program, over the chips that ran it.
struct CollectiveUsage {
  std::uint32_t program = 0;      // index in the ProgramSet
  std::uint32_t instruction = 0;  // index in that program
  CollectiveKind kind = CollectiveKind::all_reduce;
  // As run: with a cable failing inside the step, the plan its chips ran (re-planned around the cable when the
  // first chip started it after the tick); else as planned.
  kernels::CollectiveAlgorithm algorithm = kernels::CollectiveAlgorithm::automatic;
  std::uint32_t axes_mask = 0;
  bool replanned = false;         // it ran a plan made after a timed cable fault, for the surviving graph
  int participants = 0;           // chips per group
  std::uint64_t steps = 0;
  Bytes bytes_per_chip;
  std::uint64_t executions = 0;   // chips that ran it
  Seconds start;                  // first chip started it
  Seconds end;                    // last chip completed it
  Seconds time;                   // the longest start-to-completion of one chip
  BytesPerSecond bus_bandwidth;   // algorithm_bandwidth() x plan.bus_factor (NCCL convention)
  Seconds ideal_time;             // the plan's bandwidth-optimal closed form

  // bytes_per_chip / time; 0 when no chip ran it.
  [[nodiscard]] BytesPerSecond algorithm_bandwidth() const {
    return time.value() > 0 ? BytesPerSecond(bytes_per_chip.as_double() / time.value()) : BytesPerSecond(0);
  }
};

// A cable that failed inside the step (SimOptions::timed_links) and what it did to the transfers in flight.
struct InStepFault {
  std::uint32_t link = 0;          // the LinkId given (a chip's fault: its first link)
  std::int64_t chip = -1;          // a chip stopping at `at` (TimedChipFault), else -1
  Seconds at, detected;            // since the step's start
  std::uint64_t transfers_cut = 0;  // transfers moving bytes over the cable at `at`
  Bytes in_flight;                 // their bytes
  Bytes delivered;                 // of which had reached their destinations
  Bytes retransmitted;             // in_flight: retransmit: sent again at `at` (in_flight - delivered)
  Bytes lost;                      // in_flight: lose: sent again in full at `detected` (= in_flight)
  Seconds resent_done;             // since the step's start: the last of the cut transfers sent again was
                                   // delivered (0 when none was cut)
  std::uint64_t transfers_dropped = 0;  // a chip's: transfers to or from it cut at `at` or started after it
  Bytes dropped;                        // their bytes, never delivered
};

// How far a step stopped by a chip fault got (SimOptions::timed_chips): the simulation ran to the detection.
struct StepProgress {
  bool stopped = false;                  // a chip fault stopped the step before every chip finished
  std::uint64_t instructions = 0;        // over all chips
  std::uint64_t completed = 0;           // completed by the end of the simulation, over all chips
  Seconds last_completion;               // the last of them
  [[nodiscard]] double fraction() const {
    return instructions > 0 ? static_cast<double>(completed) / static_cast<double>(instructions) : 1.0;
  }
};

// What a simulation cost: for --perf and the benchmarks, not part of the outputs.
struct SimulationCost {
  std::uint64_t chips_simulated = 0;
  // Mirrored chips (models/README.md "Mirrored chips"): how many chips ran as mirrors of another, and what
  // happened ("16 of 4096 chips simulated, 4080 mirrored; inputs verified", why it did not apply, or why it
  // fell back to simulating every chip).
  std::uint64_t chips_mirrored = 0;
  std::string mirroring;
  // Instructions the simulated chips executed, and those a mirrored chip reports as its representative's (not
  // executed). SimResult::instructions_per_unit counts both: the step's work.
  std::uint64_t instructions_executed = 0;
  std::uint64_t instructions_mirrored = 0;
  // Timed SystemC events that fired: each wakes one chip process (which may run several of the chip's
  // activations, models/README.md "Running ahead") or the interconnect's.
  std::uint64_t kernel_events = 0;
  std::uint64_t delta_cycles = 0;   // sc_delta_count() at the end
  double wall_seconds = 0;          // elaboration + simulation
  double elaboration_seconds = 0;   // of wall_seconds: building the pod's modules
};

// The unit of a statistic a block declares of its own (Block::collect, ChipCounters::declare); it gives the
// statistic's key its suffix in summary.json ("energy" in joules: "energy_j").
enum class StatUnit : std::uint8_t { count, seconds, bytes, joules };
[[nodiscard]] std::string_view stat_unit_suffix(StatUnit u);  // "", "_s", "_bytes", "_j"

// A statistic that one block of the chip declared (its kind's own, models/README.md "A block kind of your
// own"): summed over the block's instances on a chip, then over chips.
struct BlockStat {
  std::string block;  // the block's name in the chip file
  std::string name;   // "energy"
  StatUnit unit = StatUnit::count;
  double total = 0;   // over all chips
  Spread per_chip;    // over the chips (0 on a chip whose block did not declare it)
};

// Bytes moved over all chips, by what moved them.
struct MemoryTraffic {
  Bytes hbm_read;
  Bytes hbm_written;
  Bytes dma_bytes;         // every DMA instruction's payload
  Bytes host_bytes;        // PCIe traffic of host instructions (infeed, outfeed, checkpoint)
  Bytes sparsecore_bytes;  // table rows the SparseCores gathered and updated (gather / scatter bytes)
};

// The interconnect over the step (net/statistics.h writes it); empty (links, collectives) or zero when no
// program has an ICI instruction.
struct NetworkUsage {
  std::string link_model;               // "chunked" or "flow" (fidelity.links)
  std::vector<LinkUsage> links;         // by LinkId of the pod topology
  Spread link_utilization;              // LinkUsage::utilization over all directed ICI links
  DcnUsage dcn;
  std::vector<CollectiveUsage> collectives;  // in (program, instruction) order
  std::uint64_t ici_transfers = 0;      // point-to-point sends started (ICI and DCN)
  std::vector<InStepFault> in_step_faults;  // SimOptions::timed_links and timed_chips, in time order
};

struct SimResult {
  Seconds step_time;            // when the last chip finished
  double model_flops = 0;       // per step, summed over chips (from the program)
  double hardware_flops = 0;    // same, including recomputation
  FlopsPerSecond peak_flops;    // published bf16 peak x chips (the MFU/HFU denominator)
  // What running the simulation cost, and how much of the step it simulated (--perf, benchmarks).
  SimulationCost cost;
  // The step's instructions on every chip, mirrored ones included, indexed by ir::UnitKind.
  std::array<std::uint64_t, ir::kMaxUnitKinds> instructions_per_unit{};

  std::array<UnitUsage, kMaxHwUnits> units{};  // indexed by HwUnit; as many as hw_units() has
  // Utilization of each MXU array (useful MACs on that array / (rows x cols x clock cycles of the step)), over
  // every array of every TensorCore of every chip: arrays dealt fewer tiles (a tile count that is not a
  // multiple of mxu.per_core) sit below the chip's MXU utilization. The mean equals units[mxu] utilization mean.
  Spread mxu_array_utilization;
  MemoryTraffic traffic;
  NetworkUsage network;
  StepProgress progress;  // with SimOptions::timed_chips

  TimeBreakdown breakdown;        // mean over chips
  std::vector<ChipResult> chips;  // indexed by chip id
  // The statistics the blocks declared, by block and name in the order first declared (none from the built-in
  // kinds: theirs are the units and the fields above).
  std::vector<BlockStat> block_stats;

  [[nodiscard]] const UnitUsage& unit(HwUnit u) const { return units[static_cast<std::size_t>(u)]; }
  [[nodiscard]] double mfu() const;
  [[nodiscard]] double hfu() const;
};

}  // namespace tpusim::models
