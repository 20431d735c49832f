#pragma once
// One TPU chip: its TensorCores (MXU group, VPU, VMEM each), the DMA engine and HBM they share, and the
// host interface (PCIe), running one program.
//
// Timing: one SC_METHOD and one sc_event per chip. The units keep their own next-event times (an MXU's
// finish, a DMA latency expiry, the HBM's next completion); the process advances them all to the current
// time, completes what has finished, starts what may start, and re-arms the event at the earliest next time.
// This is the "local queue behind one kernel event" of DESIGN.md: the kernel holds one pending event per
// chip, whatever the number of units and transfers. Other modules (the interconnect, later) can wake the
// chip by notifying wake().
//
// MXU results drain through the VPU: a matmul reserves result_pop_cycles (timing.h) of its TensorCore's VPU
// from its first results on (ResultPops in tensor_core.h); the pops delay that VPU's vector instructions,
// count in its busy time, and the matmul completes no earlier than its last pop.
//
// Memory hierarchy: a matmul or vector instruction lasts at least its VMEM bytes / vmem.bandwidth (timing.h);
// a DMA through HBM is striped over hbm.channels; CMEM is a path of its own; a DMA to a remote chip is a
// one-sided put that the interconnect runs on the chip's ICI queue (queue_unit in program_index.h).
//
// Sequencing: each unit queue starts its instructions in program order, each once its dependencies have
// completed (see ProgramIndex for the counter scheme). Barriers complete as soon as their dependencies have
// (chip-local; cross-chip barriers need the interconnect).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "bandwidth_server.h"
#include "net/vpu_port.h"
#include "program_index.h"
#include "run_control.h"
#include "tensor_core.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/models/timing.h"
#include "transfer_engine.h"

namespace tpusim::models {

namespace net {
class Interconnect;
}

// Assumption: the host serves one host instruction (launch, infeed, checkpoint, sync) of a chip at a time, in
// program order; prefetching is expressed by the lowering (the next step's infeed runs beside the step).
inline constexpr int kHostTransfersInFlight = 1;

// Time one unit instance (a TensorCore's MXU group or VPU, the DMA engine, the host interface) spent in each
// state, up to the chip's finish (see UnitUsage in sim_result.h for the definitions).
struct UnitTimes {
  Tick busy = 0;
  Tick queue_slots = 0;
  std::array<Tick, kStallReasons> stalled{};  // indexed by StallReason
};

// Raw per-chip counters; turned into ChipResult and SimResult by the pod.
struct ChipCounters {
  Tick finish = 0;
  Tick compute = 0, memory_stall = 0, host_stall = 0, idle = 0;  // up to `finish`
  Tick communication = 0;  // no compute; a collective in flight (counted before memory_stall)
  Tick mxu_busy = 0, vpu_busy = 0;  // summed over TensorCores
  Tick dma_busy = 0, hbm_busy = 0, host_busy = 0;
  double useful_macs = 0;
  std::uint64_t hbm_read = 0, hbm_written = 0, dma_bytes = 0, host_bytes = 0;
  std::uint64_t vmem_peak = 0;
  std::uint64_t mxu_vmem_bytes = 0, vpu_vmem_bytes = 0;  // operand bytes through VMEM, summed over TensorCores
  std::vector<double> array_macs;  // useful MACs per MXU array, TensorCore-major (core x mxu.per_core + array)
  std::array<std::uint64_t, ir::kUnitKinds> executed{};
  std::array<std::vector<UnitTimes>, kHwUnits> unit_times;  // by HwUnit, per instance; none for HBM
};

class Chip : public sc_core::sc_module, public net::VpuPort {
 public:
  SC_HAS_PROCESS(Chip);
  Chip(const sc_core::sc_module_name& name, std::uint32_t id, const ChipSpec& spec, const ProgramIndex& program,
       const MxuDataflowModel& dataflow, MxuFidelity mxu_fidelity, RunControl& control);

  [[nodiscard]] bool finished() const { return remaining_ == 0; }
  // The chip's statistics, gathered from its modules (call after the run).
  [[nodiscard]] ChipCounters collect() const;
  [[nodiscard]] sc_core::sc_event& wake() { return wake_; }
  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] const ChipSpec& spec() const { return spec_; }
  // The pod's interconnect, which runs this chip's ICI queue (collectives); without one, an ICI instruction
  // fails the run. The interconnect wakes the chip (wake()) when an ICI instruction completes.
  void attach_ici(net::Interconnect& ici) { ici_ = &ici; }
  // A collective's reduction on TensorCore `core`'s VPU (net/vpu_port.h): reserved like the MXU result pops
  // (ResultPops), after what the VPU holds. It does not wake the chip: a vector instruction behind it is
  // issued at the next activation that finds it ended (an activation while it runs re-arms at its end), and
  // account() counts reserved time between activations as VPU busy.
  Tick reserve_vpu(int core, Tick now, Tick duration) override;

 private:
  void run();
  void activate(Tick now);
  void account(Tick now);
  void advance_paths(Tick now);
  bool complete_finished(Tick now);
  bool try_issue(int queue, Tick now);
  [[nodiscard]] bool dependencies_done(const ir::Instruction& ins, int queue) const;
  void start(std::uint32_t instr, Tick now);
  void start_transfer(std::uint32_t instr, const ir::Instruction& ins, Tick now);
  void complete(std::uint32_t instr, Tick started, Tick now);
  [[nodiscard]] Tick next_wake(Tick now) const;
  // The first dependency of `ins` (in queue `queue`) not yet completed, as its queue; -1 if none.
  [[nodiscard]] int blocking_queue(const ir::Instruction& ins, int queue) const;
  // Sets each unit instance's state for the interval starting now (after the activation's issues).
  void classify_units(Tick now);
  [[noreturn]] void fail(std::uint32_t instr, const std::string& what) const;

  std::uint32_t id_;
  const ChipSpec& spec_;
  const ProgramIndex& index_;
  const ir::Program& program_;
  const MxuDataflowModel& dataflow_;
  MxuTimer mxu_timer_;
  RunControl& control_;

  // Completion is a prefix count plus a window of later positions already completed: the ICI unit completes
  // its in-flight instructions in any order (net/ici_unit.h); every other queue completes in order.
  struct QueueState {
    std::uint32_t cursor = 0;     // next instruction of the queue to start
    std::uint32_t completed = 0;  // every position below has completed
    std::uint64_t ahead = 0;      // bit i: position completed + 1 + i has completed
    [[nodiscard]] bool done(std::uint32_t pos) const {
      return pos < completed || (pos > completed && pos - completed <= 64 && ((ahead >> (pos - completed - 1)) & 1));
    }
    void complete(std::uint32_t pos) {
      if (pos != completed) {
        ahead |= std::uint64_t{1} << (pos - completed - 1);
        return;
      }
      ++completed;
      while (ahead & 1) {
        ahead >>= 1;
        ++completed;
      }
      ahead >>= 1;
    }
  };
  std::vector<QueueState> queues_;
  std::vector<TensorCore> cores_;
  BandwidthServer hbm_;
  BandwidthServer pcie_in_;   // host -> chip
  BandwidthServer pcie_out_;  // chip -> host
  BandwidthServer cmem_;
  BandwidthServer vmem_copy_;
  DmaEngine dma_;
  TransferEngine host_;
  std::size_t remaining_;
  Tick last_account_ = 0;
  ChipCounters counters_;
  struct UnitPhase {
    bool busy = false;
    bool slots = false;  // busy, next instruction waiting for a slot
    int reason = -1;     // not busy, next instruction waiting: a StallReason; -1 = idle
  };
  std::array<std::vector<UnitPhase>, kHwUnits> phase_;  // by HwUnit, per instance, since the last activation
  net::Interconnect* ici_ = nullptr;
  bool reported_ = false;  // finished, and told the run control
  sc_core::sc_event wake_;
};

// Adds the per-unit statistics gathered from a finished run's chip modules to `r`, whose step_time must be
// set: stalls (UnitUsage::stalled, stalled_by, queue_slots, idle), the MXU and VPU VMEM operand bytes
// (UnitUsage::bytes) and the spread of per-array MXU utilization (SimResult::mxu_array_utilization).
void add_unit_stall_stats(const std::vector<const Chip*>& chips, SimResult& r);

}  // namespace tpusim::models
