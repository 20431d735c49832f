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
// same coordinate pod_offset pods away over the DCN), routed by the router (fidelity.routing); it ends when the
// chip's own sends are delivered and the mirror receives (one per send whose destination is another chip)
// have arrived; then the chip reduces reduce_elements on the VPU of the instruction's TensorCore, timed by
// vpu_cycles(elementwise) and counted as VPU busy time. Assumption: the reduction does not wait for, or
// block, the VPU instruction queue (the hardware interleaves them; modelling the contention would need the
// VPU to be shared with the chip's sequencer). The instruction completes after the last step.
//
// Matching: a chip's k-th collective (in ICI queue order) pairs with its peers' k-th collectives (SPMD: the
// chips of one group issue the same collectives in the same order). Receives that arrive before the chip has
// reached that collective are kept until it does. Chips that share no group never exchange data.
//
// Point to point (send / recv, in the same ICI queue): `peer` is a coordinate offset along the first axis in
// mesh_axes (the lowest set bit; with mesh_axes 0, the first axis of length > 1), taken modulo the axis
// length, in the same pod. A send moves `bytes` to the chip at +peer and completes when they are delivered
// (eager: it never waits for the recv). A recv names its SOURCE, as in MPI: recv peer = -1 takes what the
// chip at -1 sent, so the SPMD shift is `send peer=+1; recv peer=-1`. The k-th recv from chip S on chip D
// matches the k-th send from S to D; it completes when that send has been delivered (at once if it already
// was). A send or recv whose peer is the chip itself is rejected at elaboration.
//
// Remote DMA (a dma with dst: remote, issued to the ICI queue, see queue_unit in program_index.h): a one-sided
// put of `bytes` to the chip at +peer along the same axis rule as a send. It travels and completes like a
// send (when delivered), but the destination runs nothing and nothing matches it (no recv).
//
// Routing (fidelity.routing): `dor`, or `fault_aware` around the failed links and chips of
// InterconnectOptions::faults. Every route is computed (or looked up) when a send starts; a destination the
// router cannot reach is a SimulationError naming both chips.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <vector>

#include <systemc>

#include "../program_index.h"
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

// Collective overheads of the runtime (calibrated on measurement C1; reasoning in `tpusim describe
// assumptions`). A collective's first step starts kCollectiveStartup after the instruction starts, and every
// step ends kCollectiveStepSync after its receives have arrived, its sends are delivered and its reduction is
// done (the next step, or the instruction's completion, follows). Point-to-point send/recv and remote puts pay
// neither (they are one DMA each).
inline constexpr Seconds kCollectiveStartup{0.5e-6};
inline constexpr Seconds kCollectiveStepSync{10e-9};

// Plans one collective instruction on the topology. The default is kernels::plan_collective
// (default_collective_planner()); tests pass hand-built plans.
using CollectivePlanner = std::function<kernels::CollectivePlan(const Topology&, const ir::Instruction&)>;
[[nodiscard]] CollectivePlanner default_collective_planner();

// What the network is built with besides the scenario.
struct InterconnectOptions {
  CollectivePlanner planner = default_collective_planner();
  // Failed links and chips seen by the `fault_aware` router. Test-only entry until the scenario's `faults`
  // input exists: the faults hold for the whole run. Non-empty with fidelity.routing = dor is rejected
  // (std::invalid_argument), since DOR would send traffic over the failed links.
  FaultSet faults;
};

class Interconnect : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Interconnect);
  // `programs` and `topo` must outlive the module. Plans every distinct collective instruction of the programs
  // in use once and routes every send the plans make (throws what the planner throws; SimulationError for a
  // DCN step on a pod without DCN bandwidth, a send/recv to the chip itself or along an axis the pod lacks,
  // and a destination the router cannot reach; std::invalid_argument for faults under DOR routing).
  Interconnect(const sc_core::sc_module_name& name, const Topology& topo, const Scenario& scenario,
               const ir::ProgramSet& programs, const InterconnectOptions& options, RunControl& control);

  // Wiring, by the pod: the event that wakes chip `chip` when its ICI instruction completes.
  void attach_chip(std::uint32_t chip, sc_core::sc_event& wake);

  // The ICI unit of chip `chip`, called from the chip's process at `now`.
  [[nodiscard]] bool busy(std::uint32_t chip) const { return chips_[chip].instr != kIdle; }
  // Starts ICI instruction `instr` (collective, send or recv) of the chip's program (the unit must be idle).
  void start(std::uint32_t chip, std::uint32_t instr, Tick now);
  // If the chip's running instruction has completed: returns true with it and its start tick, and frees the unit.
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started);
  // VPU ticks the chip spent reducing for collectives.
  [[nodiscard]] Tick reduce_ticks(std::uint32_t chip) const { return chips_[chip].reduce_ticks; }

  [[nodiscard]] OcsFabric& ocs() { return ocs_; }
  [[nodiscard]] const char* link_model_name() const { return model_->name(); }
  [[nodiscard]] const char* router_name() const { return router_->name(); }

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
  struct Arrivals {  // point-to-point sends from `source` delivered but not yet taken by a recv
    std::uint32_t source, count;
  };
  enum class Op : std::uint8_t { collective, send, recv, put };
  struct Origin {  // the first instruction that uses a target, for error messages
    std::size_t program = 0;
    std::uint32_t instr = 0;
  };
  struct ChipState {
    std::uint32_t instr = kIdle;  // running instruction
    Op op = Op::collective;
    std::uint32_t peer = 0;       // recv: the source chip
    std::uint32_t plan = 0;
    std::uint32_t seq = 0;        // collectives started so far (the running one is seq - 1)
    std::uint32_t step = 0;
    std::uint32_t sends_pending = 0;
    bool starting = false;  // the collective's start-up (kCollectiveStartup) is pending
    bool reducing = false;  // the step's reduction and synchronisation (kCollectiveStepSync) are pending
    bool done = false;
    Tick started = 0;
    Tick reduce_ticks = 0;
    std::vector<std::uint32_t> arrived;  // [step] of the running collective
    std::vector<Early> early;
    std::vector<Arrivals> p2p;
  };
  struct Transfer {
    std::uint32_t src = 0, dst = 0, seq = 0, step = 0;
    bool p2p = false;
    std::vector<std::uint32_t> path;  // used when the target's routes are not cached
  };
  struct Timer {
    Tick time;
    std::uint64_t seq;
    std::uint32_t chip;
    bool start = false;  // ends the start-up (begins step 0); else ends a step's reduction and sync
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
  void start_p2p(std::uint32_t chip, const ir::Instruction& ins, std::uint32_t target, Tick now);
  void start_instruction(std::uint32_t chip, std::uint32_t instr, Tick now);
  // Marks the chip's running instruction complete and wakes the chip, unless the chip is the one inside
  // start(): its own activation collects the completion (take_completed) before it returns, and a wake after
  // its last instruction would activate a finished chip.
  void finish(std::uint32_t chip);
  // Starts a transfer of `bytes` from `chip` under target `t` (over a cached route when there is one).
  TransferId send(std::uint32_t chip, std::uint32_t t, std::uint64_t bytes, Tick now);
  std::uint32_t p2p_target(std::size_t program, std::uint32_t instr, const ir::Instruction& ins);
  void receive(std::uint32_t chip, std::uint32_t seq, std::uint32_t step, std::uint32_t count, Tick now);
  std::uint32_t plan_for(std::size_t program, std::uint32_t instr, const ir::Instruction& ins,
                         const CollectivePlanner& planner);
  std::uint32_t target_index(const Target& t, Origin origin);
  [[nodiscard]] std::optional<ChipId> destination(std::uint32_t chip, const Target& t) const;
  // The channel path from `chip` to its destination under target `target` into `out`; false when it is the
  // chip itself. Throws SimulationError (naming both chips and the target's first instruction) when the router
  // finds no path.
  bool route(std::uint32_t chip, std::uint32_t target, std::vector<std::uint32_t>& out);
  void cache_routes(std::uint32_t target);

  const Topology& topo_;
  const Scenario& scenario_;
  const ir::ProgramSet& programs_;
  RunControl& control_;
  FaultSet faults_;
  std::unique_ptr<Router> router_;
  OcsFabric ocs_;
  std::uint32_t dcn_base_ = 0;  // channel of host h's NIC: egress dcn_base_ + h, ingress dcn_base_ + hosts + h
  std::unique_ptr<LinkModel> model_;

  std::vector<PlanInfo> plans_;
  std::map<std::tuple<int, std::uint64_t, int, std::uint32_t, int>, std::uint32_t> plan_by_key_;
  std::vector<std::vector<std::uint32_t>> plan_of_instr_;  // [program][instr] -> plan (kIdle if none)
  std::vector<std::vector<std::uint32_t>> p2p_of_instr_;   // [program][instr] -> send/recv target (kIdle if none)
  std::vector<std::vector<InstrStats>> instr_stats_;       // [program][instr]
  std::vector<Target> targets_;
  std::vector<Origin> target_origin_;
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
  std::uint32_t starting_ = kIdle;  // the chip inside start(), if any
  sc_core::sc_event event_;
};

}  // namespace tpusim::models::net
