#pragma once
// The collective engine: runs collective instructions as the steps of their plans (kernels/collectives.h)
// over the transport.
//
// Contract:
// - Elaboration: add() plans a collective instruction over its group (once per distinct kind, bytes, dtype,
//   group shape and algorithm) and interns the targets of its sends with the transport.
// - A chip runs the plan's steps in order, in the ICI slot the unit gave the instruction; the chip's other
//   slots run their own instructions meanwhile. A step issues its sends (to other chips), and ends when the
//   chip's own sends are delivered and the mirror receives (one per send to another chip) have arrived;
//   then the chip reduces the step's reduce_elements on the VPU of the instruction's TensorCore, at the
//   elementwise rate, reserved through the chip's ChipPort: the reduction waits for what the VPU holds and
//   vector instructions issued after it wait for it. A step's HBM traffic (reads: what its sends carry, and
//   the local operand of its reduction, reduce_elements x the dtype's bytes; writes: what its receives carry,
//   the reduction's sums written in place of the received shards) is charged to the chip's HBM
//   through the same port when the step begins, sharing the HBM with the chip's own transfers; the step's
//   reduction also waits until the HBM has moved those bytes (the chip reports it from its activation, the
//   engine takes it one tick later in its own process). The step ends kCollectiveStepSync after the reduction
//   (the next step, or the instruction's completion, follows); step 0 starts kCollectiveStartup after the
//   instruction does. Reductions that become due on one chip at one tick reserve its VPU in program order
//   once the tick is processed (flush_reductions), whatever order the network processed them in.
// - Matching: a chip's k-th collective over a group pairs with its peers' k-th collectives over the same
//   group (SPMD), whatever else is in flight. Receives that arrive before the chip has reached their
//   collective are kept until it does.
// - A plan with chain sends (an axis planned as a line around a failed link, kernels/collectives.h) sends
//   each only where kernels::chain_sends() says for the chip's place on the line, and expects a chain receive
//   only where its upstream neighbour sends.
// - Aggregate (fidelity.collectives = aggregate, when the transport runs aggregates and the plan is congruent:
//   a ring all-reduce, all-gather or reduce-scatter, whose steps send the same bytes to the same ring
//   neighbours on every chip, or on an axis planned as a line only on the chips chain_sends() names; its DCN
//   stage a ring over the pods): the steps are cut into runs of identical sends; a chip's start-up ends by
//   joining its group's gathering; when the last member has joined, each run of the group runs as ONE flow
//   over every member's routes to those neighbours carrying the bytes the member sends over the run's steps,
//   delivered steps x (the longest of those routes' latencies) after it drains. At the first run each
//   member's HBM is charged with what all its steps read and write, paced over the plan's bandwidth-optimal
//   time (the links pace the DMAs); the last run ends once its flow is delivered and every member's HBM has
//   moved its bytes. After the last run each member
//   reduces the steps' reductions (their VPU time summed, one reservation) and ends steps x
//   kCollectiveStepSync later. Derivation and agreement with per_step: README.md.
// - Timed faults (a cable failing inside the step, transport.h): the first chip to start a group shape's k-th
//   collective picks its plan for every chip: the one planned around the cables failed by then (planned on
//   first use). Collectives in flight at the tick keep their plan; their later sends take the new routes (an
//   aggregate's flow cut at the tick sends its rest over them: Transport::start_aggregate, and its later runs
//   are routed again).
// - No SystemC process: the interconnect calls fire_timers() and keeps its kernel event at next_timer().
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include "../ticks.h"
#include "ici/chip_port.h"
#include "ici_unit.h"
#include "statistics.h"
#include "transport.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models::net {

// Plans one collective instruction over its group (the whole axes of mesh_axes, or the program set's group it
// names) on the topology with the failed links and chips the transport routes around. The default is
// kernels::plan_collective with the FaultSet (default_collective_planner(): re-planned around failed links);
// tests may pass their own.
using CollectivePlanner = std::function<kernels::CollectivePlan(const Topology&, const ir::Instruction&,
                                                                const ir::CollectiveGroup&, const FaultSet&)>;
[[nodiscard]] CollectivePlanner default_collective_planner();

using PlanId = std::uint32_t;

// Collective overheads of the runtime (calibrated on measurement C1: docs/calibration.md; reasoning in
// `tpusim describe assumptions`). A collective's first step starts kCollectiveStartup after the instruction
// starts, and every step ends kCollectiveStepSync after its receives have arrived, its sends are delivered
// and its reduction is done. Point-to-point send/recv and remote puts pay neither (they are one DMA each).
inline constexpr Seconds kCollectiveStartup{0.5e-6};
inline constexpr Seconds kCollectiveStepSync{10e-9};

class CollectiveEngine {
 public:
  CollectiveEngine(Transport& transport, const ChipSpec& chip, IciUnits& units, NetStatistics& stats,
                   CollectivePlanner planner, CollectiveFidelity fidelity);

  // Plans `ins` (the instruction `origin` names) over `group`; throws what the planner throws, and
  // SimulationError for a DCN step on a pod without DCN bandwidth.
  [[nodiscard]] PlanId add(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup& group);
  [[nodiscard]] const kernels::CollectivePlan& plan(PlanId id) const { return plans_[id].plan; }
  // Plan `id` runs as aggregate flows (see the contract).
  [[nodiscard]] bool aggregate(PlanId id) const { return plans_[id].aggregate; }

  // Wiring: the VPUs and HBM of chip `chip`, which its reductions reserve and its steps' traffic loads.
  void attach_chip(std::uint32_t chip, ChipPort& port) { ports_[chip] = &port; }

  // Runs collective instruction `instr` (with `ins`'s TensorCore, whose VPU reduces) under plan `id` in ICI
  // slot `slot` of `chip` (its ICI unit has begun it); its completion is recorded under `entry` of the
  // statistics.
  void start(std::uint32_t chip, Slot slot, std::uint32_t instr, const ir::Instruction& ins, PlanId id,
             NetStatistics::Entry entry, Tick now);
  // A transfer of this engine was delivered (the transport still holds it; the engine releases it).
  void on_delivered(TransferId id, Tick now);
  // The HBM of `chip` has moved what the collective in `slot` charged it with (ChipPort::charge_hbm), at
  // `now`, inside the chip's activation: the engine takes it at now + 1 tick from its own process, so that
  // what follows reaches chips from outside their activations, as every other input from the network does;
  // when nothing waits for it yet (the step's or the collective's transfers are still moving) it is marked at
  // once, without a timer. Returns whether it pushed a timer.
  bool hbm_done(std::uint32_t chip, Slot slot, Tick now);
  // Ends the start-ups and steps (reduction and synchronisation) due by `now`; false if none was.
  bool fire_timers(Tick now);
  [[nodiscard]] Tick next_timer() const { return timers_.next(); }
  // Reserves the VPUs for the reductions that became due at `now` (each chip's in program order) and times
  // their ends; the interconnect calls it once it has processed everything at `now`.
  void flush_reductions(Tick now);

 private:
  using GroupId = GroupShapeId;  // collectives match per group shape
  struct GroupFlow {  // one run of one group: its members' routes to the run's targets
    std::vector<AggregatePart> parts;      // what each member sends to each target over the run
    std::vector<std::uint32_t> path;       // the parts' routes (when routed under `epoch`)
    std::vector<std::uint64_t> hop_bytes;  // [hop]: the run's bytes to the target whose route the hop is on
    std::uint64_t bytes = 0;               // the largest of hop_bytes
    Tick latency = 0;                      // the run's steps x the longest route's latency
    bool built = false;
    std::uint32_t epoch = 0;  // Transport::epoch() the routes were taken at
  };
  struct Run {
    std::uint32_t first = 0;  // the plan's step the run starts at
    std::uint32_t steps = 0;
    std::vector<std::pair<TargetId, std::uint64_t>> sends;  // other-chip targets, bytes summed over the steps
    std::vector<GroupFlow> flows;                           // [group of the shape], built on use
    bool hbm_known = false;  // plans without chain sends: every member's HBM bytes over the run, once known
    std::uint64_t hbm_read = 0, hbm_written = 0;
  };
  struct PlanSource {  // what a plan was made from (kept with timed faults, to re-plan after a cut)
    Origin origin;
    ir::Instruction ins;
    ir::CollectiveGroup group;
  };
  struct PlanInfo {
    kernels::CollectivePlan plan;
    std::unique_ptr<PlanSource> source;  // with timed faults only
    GroupId group = 0;
    std::vector<std::vector<TargetId>> targets;  // [step][send]
    std::vector<std::uint32_t> receives;         // [step] -> receives expected (sends to another chip)
    bool chains = false;                         // some sends are LineChain sends (not every chip sends them)
    // Aggregate plans only: the steps as runs of consecutive steps that send the same bytes to the same
    // targets, each run one flow per group.
    bool aggregate = false;
    std::vector<Run> runs;
    Tick reduce = 0;  // the steps' reductions on one chip (chain plans: the one reducing most), each rounded
    std::uint64_t element_bytes = 0;  // of the instruction's dtype: a reduction reads its local operand
    // Aggregate chain plans: each chip's HBM bytes over all runs (read, written), once known (kUnknownHbm
    // before): a chain's sends depend on the chip's place on its line, which is costly to find.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> hbm_of_chip;
  };
  struct Layout {  // the groups of one shape (aggregate plans): dense index per chip, members per group
    std::vector<std::uint32_t> group_of_chip;
    std::vector<std::vector<std::uint32_t>> members;
  };
  struct Member {
    std::uint32_t chip;
    Slot slot;
  };
  struct GroupRun {  // one run of an aggregate group in flight: its flow and its members' HBM charges
    std::vector<Member> members;
    std::uint32_t run = 0;
    bool flow_pending = false;
    std::uint32_t hbm_pending = 0;  // members whose HBM has not moved the collective's bytes yet
  };
  struct Early {  // receives that arrived before the chip reached their collective
    GroupId group;
    std::uint32_t seq, step, count;
  };
  struct StepCursor {  // the step an op is at, and what that step still waits for
    std::uint32_t index = 0;
    std::uint32_t sends_pending = 0;
    std::uint32_t expected = 0;  // receives the step waits for
    std::uint64_t reduce = 0;    // elements the step reduces once they have arrived
  };
  struct Op {  // the collective in one ICI slot of one chip
    bool active = false;
    bool starting = false;  // the start-up (kCollectiveStartup) is pending
    bool reducing = false;  // the step's reduction and synchronisation (kCollectiveStepSync) are pending
    bool aggregate = false; // runs as its group's aggregate flow
    bool hbm_pending = false;  // the HBM has not yet moved the step's (or the run's) bytes
    PlanId plan = 0;
    NetStatistics::Entry entry = 0;
    GroupId group = 0;
    int core = 0;           // the TensorCore whose VPU reduces
    std::uint32_t instr = 0;
    std::uint32_t seq = 0;  // the chip's collectives over the group started before this one
    StepCursor step;
    std::uint32_t group_run = 0;  // aggregate: its group's run in Aggregates
    Tick started = 0;
    std::vector<std::uint32_t> arrived;  // [step]
  };
  struct Sent {  // per transfer id: the sender's slot, and the collective and step it belongs to
    Slot slot = 0;
    GroupId group = 0;
    std::uint32_t seq = 0, step = 0;
    bool aggregate = false;  // a run of a group's aggregate flow (step = its index in group_runs_)
  };
  struct Reduction {  // due at the current tick, reserved by flush_reductions()
    std::uint32_t chip;
    Slot slot;
    std::uint32_t instr;
    int core;
    Tick duration, after;  // the VPU time, and the synchronisation after it
    Tick end;
  };
  enum class TimerKind : std::uint8_t {
    start,  // ends the start-up (begins step 0)
    step,   // ends a step (its reduction and synchronisation)
    hbm,    // the chip's HBM has moved the step's (or run's) bytes
  };
  struct Timer {
    Tick time;
    std::uint64_t seq;
    std::uint32_t chip;
    Slot slot;
    TimerKind kind;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  // The plans: made once per key by add(), and with timed faults the plan each collective runs and the plans
  // re-planned around the cables failed by then.
  class PlanBook {
   public:
    // What add() plans once for: the collective's kind, bytes, dtype, group shape and algorithm.
    using Key = std::tuple<int, std::uint64_t, int, GroupShapeId, int>;

    explicit PlanBook(CollectivePlanner planner) : planner_(std::move(planner)) {}
    [[nodiscard]] const CollectivePlanner& planner() const { return planner_; }
    [[nodiscard]] PlanInfo& operator[](PlanId id) { return plans_[id]; }
    [[nodiscard]] const PlanInfo& operator[](PlanId id) const { return plans_[id]; }
    // The plan added under `key`, if any.
    [[nodiscard]] std::optional<PlanId> find(const Key& key) const;
    // Adds `info` under `key`; returns its id.
    PlanId add(const Key& key, PlanInfo info);
    // Notes that a plan runs over group shape `shape`: shapes() is one past the largest noted.
    void note_shape(GroupShapeId shape) { shapes_ = std::max<std::size_t>(shapes_, shape + 1); }
    [[nodiscard]] std::size_t shapes() const { return shapes_; }
    // Timed faults: the plan collective `key` (the engine's key(shape, seq)) runs, picked by its first caller:
    // `id` while no cable has failed (`epoch` 0), else id's plan for `epoch`, made on first use by
    // replan(its PlanSource, its group shape).
    template <typename Replan>
    [[nodiscard]] PlanId choose(std::uint64_t key, PlanId id, std::uint32_t epoch, Replan replan);

   private:
    CollectivePlanner planner_;
    std::vector<PlanInfo> plans_;
    std::map<Key, PlanId> by_key_;
    std::size_t shapes_ = 0;  // group shapes of the plans (ids below this)
    // Timed faults (Transport::has_timed_faults): the plan each (shape, seq) runs, and the re-planned plans by
    // (plan, epoch).
    std::map<std::uint64_t, PlanId> chosen_;
    std::map<std::pair<PlanId, std::uint32_t>, PlanId> variants_;
  };
  // The aggregate collectives' state (see the contract): whether they run, the groups of each shape, the ops
  // gathering per collective, the group runs in flight, and the routes that timed faults retired.
  class Aggregates {
   public:
    explicit Aggregates(bool enabled) : enabled_(enabled) {}
    // fidelity.collectives = aggregate and the transport runs aggregates.
    [[nodiscard]] bool enabled() const { return enabled_; }
    // The groups of shape `group` on `transport`'s topology, built on first use.
    const Layout& layout(GroupId group, const Transport& transport);
    // Adds `member` to the ops of group `g` of the `seq`-th collective over `shape` whose start-up has ended;
    // when it is the last of the group's `size` members, returns the group run that now holds them all.
    [[nodiscard]] std::optional<std::uint32_t> gather(GroupId shape, std::uint32_t seq, std::uint32_t g,
                                                      Member member, std::size_t size);
    [[nodiscard]] GroupRun& run(std::uint32_t group_run) { return group_runs_[group_run]; }
    [[nodiscard]] const GroupRun& run(std::uint32_t group_run) const { return group_runs_[group_run]; }
    // Group run `group_run` has ended: a later gather() may reuse its entry.
    void release(std::uint32_t group_run) { free_group_runs_.push_back(group_run); }
    // Timed faults: keeps the routes of `flow` for its flows still in flight, and empties them for routing again.
    void retire(GroupFlow& flow);

   private:
    bool enabled_;
    std::vector<Layout> layouts_;  // [group shape], built on use
    // Aggregate ops whose start-up has ended, per (group shape, seq, group) until the last member joins.
    std::map<std::tuple<GroupId, std::uint32_t, std::uint32_t>, std::vector<Member>> gathering_;
    std::vector<GroupRun> group_runs_;  // aggregate runs in flight (and free entries)
    std::vector<std::uint32_t> free_group_runs_;
    // Timed faults: the routes of group flows taken before a cable failed, kept for the flows still in flight.
    std::vector<std::vector<std::uint32_t>> retired_paths_;
    std::vector<std::vector<std::uint64_t>> retired_hop_bytes_;
  };
  // The start-ups, steps and HBM completions to time, earliest first (at one tick in the order pushed).
  class TimerQueue {
   public:
    void push(Tick time, std::uint32_t chip, Slot slot, TimerKind kind) {
      timers_.push(Timer{time, seq_++, chip, slot, kind});
    }
    [[nodiscard]] bool empty() const { return timers_.empty(); }
    [[nodiscard]] const Timer& top() const { return timers_.top(); }
    void pop() { timers_.pop(); }
    // The earliest timer's time, kNever when none.
    [[nodiscard]] Tick next() const { return timers_.empty() ? kNever : timers_.top().time; }

   private:
    std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
    std::uint64_t seq_ = 0;
  };
  // The reductions due at the current tick, until flush_reductions() reserves the VPUs for them.
  class DueReductions {
   public:
    void push(const Reduction& r) { due_.push_back(r); }
    [[nodiscard]] bool empty() const { return due_.empty(); }
    [[nodiscard]] Reduction& operator[](std::uint32_t i) { return due_[i]; }
    // The indices of the reductions, each chip's in program order (by instruction, then as they came).
    [[nodiscard]] const std::vector<std::uint32_t>& program_order();
    // The reductions as they came.
    [[nodiscard]] const std::vector<Reduction>& due() const { return due_; }
    void clear() { due_.clear(); }

   private:
    std::vector<Reduction> due_;
    std::vector<std::uint32_t> order_;  // program_order() scratch
  };

  [[nodiscard]] Op& op(std::uint32_t chip, Slot slot) {
    return ops_[static_cast<std::size_t>(chip) * IciUnits::kSlots + slot];
  }
  // The (group, seq) a slot runs, kIdleKey when none: what receive() scans (one cache line per chip).
  static constexpr std::uint64_t kIdleKey = ~std::uint64_t{0};
  [[nodiscard]] static std::uint64_t key(GroupId group, std::uint32_t seq) {
    return (std::uint64_t{group} << 32) | seq;
  }
  void set_key(std::uint32_t chip, Slot slot, std::uint64_t k) {
    keys_[static_cast<std::size_t>(chip) * IciUnits::kSlots + slot] = k;
  }
  // Whether `chip` sends chain send `send` of a plan (true for an ordinary send), and whether it receives
  // its mirror from its upstream neighbour.
  [[nodiscard]] bool sends(std::uint32_t chip, const PlanInfo& info, const kernels::CollectiveSend& send) const;
  [[nodiscard]] bool receives(std::uint32_t chip, const PlanInfo& info, const kernels::CollectiveSend& send) const;
  void begin_step(std::uint32_t chip, Slot slot, Tick now);
  void check_step(std::uint32_t chip, Slot slot, Tick now);
  void end_step(std::uint32_t chip, Slot slot, Tick now);
  void receive(std::uint32_t chip, const Sent& sent, Tick now);
  [[nodiscard]] PlanInfo make_plan(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup& group,
                                   GroupShapeId shape);
  [[nodiscard]] PlanId plan_now(PlanId id, GroupId group, std::uint32_t seq);
  [[nodiscard]] static bool ring_plan(const kernels::CollectivePlan& plan);
  void split_runs(PlanInfo& info);
  [[nodiscard]] std::uint64_t chain_bytes(std::uint32_t chip, const PlanInfo& info, const Run& r,
                                          TargetId target) const;
  void join(std::uint32_t chip, Slot slot, Tick now);
  void start_run(std::uint32_t group_run, std::uint32_t run, Tick now);
  void aggregate_delivered(TransferId id, Tick now);
  // The next run of the group, or its end, once its flow is delivered and its members' HBM is done.
  void advance_run(std::uint32_t group_run, Tick now);
  // The bytes `chip` reads from and writes to its HBM over run `r` (each of its steps' HBM traffic, summed).
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> run_hbm(std::uint32_t chip, const PlanInfo& info, Run& r) const;
  void charge(std::uint32_t chip, Slot slot, Tick now, std::uint64_t read, std::uint64_t written, Tick spread);

  Transport& transport_;
  const ChipSpec& chip_;
  IciUnits& units_;
  NetStatistics& stats_;
  PlanBook plans_;
  std::size_t chips_;
  std::vector<Op> ops_;                   // [chip][slot]
  std::vector<std::uint64_t> keys_;       // [chip][slot]: key() of the running collective, or kIdleKey
  std::vector<std::uint32_t> seq_;        // [chip][group]: collectives over the group started so far
  std::vector<std::vector<Early>> early_;  // [chip]
  std::vector<ChipPort*> ports_;            // [chip]
  std::vector<Sent> sent_;                 // by TransferId
  TimerQueue timers_;
  DueReductions reductions_;
  Aggregates aggregates_;
};

}  // namespace tpusim::models::net
