#pragma once
// The pod's interconnect: ICI links (and the OCS circuits they run through), the DCN between pods, and the
// execution of collective instructions on top of them.
//
// Timing: ONE SC_METHOD and one sc_event for the whole pod. The link model (link_model.h) keeps every
// chunk and flow in its own time-ordered queue, and reductions wait in a small local timer heap; the process
// advances both to the current time and re-arms its event at the earliest next time. Chips enter through
// start() (from their own activation; it first brings the network up to that time) and are woken with a
// delta notification when their collective completes. So the kernel holds at most one pending event for the
// whole network plus one per chip, whatever the traffic.
//
// Collectives (contract in kernels/collectives.h): every chip runs the plan's steps in order. A step issues
// the step's sends (destination = own coordinate + offset, modulo each axis length, in the same pod; or the
// same coordinate pod_offset pods away over the DCN), routed by the router (DOR today); it ends when the
// chip's own sends are delivered and the mirror receives (one per send whose destination is another chip)
// have arrived; then the chip reduces reduce_elements on the VPU of the instruction's TensorCore, timed by
// vpu_cycles(elementwise) and counted as VPU busy time. Assumption: the reduction does not wait for, or
// block, the VPU instruction queue (the hardware interleaves them; modelling the contention would need the
// VPU to be shared with the chip's sequencer). The instruction completes after the last step.
//
// Matching: a chip's k-th collective (in ICI queue order) pairs with its peers' k-th collectives (SPMD: the
// chips of one group issue the same collectives in the same order). Receives that arrive before the chip has
// reached that collective are kept until it does. Chips that share no group never exchange data.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <vector>

#include <systemc>

#include "../run_control.h"
#include "../ticks.h"
#include "link_model.h"
#include "ocs.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_result.h"
#include "tpusim/topology/routing.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

// Assumption: one-way DCN latency between hosts of different pods, 10 us (NIC, a few datacenter switch
// hops and the host stack; Google has not published a TPU DCN latency).
inline constexpr Seconds kDcnLatency{10e-6};

// Plans one collective instruction on the topology. The default is kernels::plan_collective
// (default_collective_planner()); tests pass hand-built plans.
using CollectivePlanner = std::function<kernels::CollectivePlan(const Topology&, const ir::Instruction&)>;
[[nodiscard]] CollectivePlanner default_collective_planner();

class Interconnect : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Interconnect);
  // `programs` and `topo` must outlive the module. Plans every distinct collective instruction of the programs
  // in use once (throws what the planner throws, and std::invalid_argument for a DCN step on a pod without
  // DCN bandwidth).
  Interconnect(const sc_core::sc_module_name& name, const Topology& topo, const Scenario& scenario,
               const ir::ProgramSet& programs, const CollectivePlanner& planner, RunControl& control);

  // Wiring, by the pod: the event that wakes chip `chip` when its ICI instruction completes.
  void attach_chip(std::uint32_t chip, sc_core::sc_event& wake);

  // The ICI unit of chip `chip`, called from the chip's process at `now`.
  [[nodiscard]] bool busy(std::uint32_t chip) const { return chips_[chip].instr != kIdle; }
  // Starts collective instruction `instr` of the chip's program (the unit must be idle).
  void start(std::uint32_t chip, std::uint32_t instr, Tick now);
  // If the chip's running instruction has completed: returns true with it and its start tick, and frees the unit.
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started);
  // VPU ticks the chip spent reducing for collectives.
  [[nodiscard]] Tick reduce_ticks(std::uint32_t chip) const { return chips_[chip].reduce_ticks; }

  [[nodiscard]] OcsFabric& ocs() { return ocs_; }
  [[nodiscard]] const char* link_model_name() const { return model_->name(); }

  // Adds links, DCN, collectives and the link model name to `r`; `end` is the step's end.
  void collect(SimResult& r, Tick end) const;

 private:
  static constexpr std::uint32_t kIdle = 0xffffffffU;

  struct Target {  // where a send goes, relative to the sender
    std::array<int, kMaxAxes> offset{};
    int pod_offset = 0;
    bool operator<(const Target& o) const { return std::tie(offset, pod_offset) < std::tie(o.offset, o.pod_offset); }
  };
  struct PlanInfo {
    kernels::CollectivePlan plan;
    std::vector<std::vector<std::uint32_t>> targets;  // [step][send] -> index into targets_
    std::vector<std::uint32_t> receives;              // [step] -> receives expected (sends to another chip)
  };
  struct Early {  // receives that arrived before the chip reached their collective
    std::uint32_t seq, step, count;
  };
  struct ChipState {
    std::uint32_t instr = kIdle;  // running instruction
    std::uint32_t plan = 0;
    std::uint32_t seq = 0;        // collectives started so far (the running one is seq - 1)
    std::uint32_t step = 0;
    std::uint32_t sends_pending = 0;
    bool reducing = false;
    bool done = false;
    Tick started = 0;
    Tick reduce_ticks = 0;
    std::vector<std::uint32_t> arrived;  // [step] of the running collective
    std::vector<Early> early;
  };
  struct Transfer {
    std::uint32_t src = 0, dst = 0, seq = 0, step = 0;
    std::vector<std::uint32_t> path;  // used when the target's routes are not cached
  };
  struct Timer {
    Tick time;
    std::uint64_t seq;
    std::uint32_t chip;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct InstrStats {  // per (program, instruction)
    std::uint32_t plan = 0;
    std::uint64_t executions = 0;
    Tick first_start = kNever, last_end = 0, longest = 0;
  };

  void run();
  void sync(Tick now);
  void arm(Tick now);
  void begin_step(std::uint32_t chip, Tick now);
  void check_step(std::uint32_t chip, Tick now);
  void end_step(std::uint32_t chip, Tick now);
  void on_delivered(TransferId id, Tick now);
  void receive(std::uint32_t chip, std::uint32_t seq, std::uint32_t step, std::uint32_t count, Tick now);
  std::uint32_t plan_for(std::size_t program, std::uint32_t instr, const ir::Instruction& ins,
                         const CollectivePlanner& planner);
  std::uint32_t target_index(const Target& t);
  [[nodiscard]] std::optional<ChipId> destination(std::uint32_t chip, const Target& t) const;
  // The channel path from `chip` to its destination under target `t` into `out`; false when it is the chip itself.
  bool route(std::uint32_t chip, const Target& t, std::vector<std::uint32_t>& out);
  void cache_routes(std::uint32_t target);

  const Topology& topo_;
  const Scenario& scenario_;
  const ir::ProgramSet& programs_;
  RunControl& control_;
  std::unique_ptr<Router> router_;
  OcsFabric ocs_;
  std::uint32_t dcn_base_ = 0;  // channel of host h's NIC: egress dcn_base_ + h, ingress dcn_base_ + hosts + h
  std::unique_ptr<LinkModel> model_;

  std::vector<PlanInfo> plans_;
  std::map<std::tuple<int, std::uint64_t, int, std::uint32_t, int>, std::uint32_t> plan_by_key_;
  std::vector<std::vector<std::uint32_t>> plan_of_instr_;  // [program][instr] -> plan (kIdle if none)
  std::vector<std::vector<InstrStats>> instr_stats_;       // [program][instr]
  std::vector<Target> targets_;
  std::map<Target, std::uint32_t> target_by_key_;
  // Cached routes: for target t, chip c: channels route_links_[t][route_begin_[t][c] .. route_begin_[t][c+1]).
  std::vector<std::vector<std::uint32_t>> route_begin_;
  std::vector<std::vector<std::uint32_t>> route_links_;

  std::vector<ChipState> chips_;
  std::vector<sc_core::sc_event*> wake_;
  std::vector<Transfer> transfers_;
  std::vector<TransferId> free_transfers_;
  std::vector<TransferId> delivered_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::uint64_t timer_seq_ = 0;
  std::uint64_t transfers_started_ = 0;
  sc_core::sc_event event_;
};

}  // namespace tpusim::models::net
