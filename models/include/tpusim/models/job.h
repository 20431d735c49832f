#pragma once
// The job over many steps (docs/faults.md "The job timeline"): job.steps steps of the simulated steady-state
// step, a checkpoint written every workload.checkpoint.every_steps steps, and the scenario's faults (timed,
// and drawn from fault_rates with the seed). A fault that stops a component is noticed by the heartbeat
// model and handled by the job's recovery policy (models/src/job/recovery_*.cpp); a fault that slows a
// component changes the step time from the step it hits on, until a recovery replaces that component. Steps no
// fault touches are composed from the simulated step, not simulated again. Plain C++, no SystemC; same inputs
// and seed, same result.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models {

// One fault with its target resolved to the pod's components (a random target drawn from the seed).
struct ConcreteFault {
  FaultSpec spec;
  bool drawn = false;  // from fault_rates
  ChipId chip{};       // chip kinds, host_down (a chip of the host), link kinds (the link's source)
  LinkId link{};       // link kinds: the failed direction (the cable's reverse fails too for *_down)
  HostId host{};       // host_down
  int cube = -1;       // the pod cube of `chip` (pods with OCS), else -1
  int pod = -1;        // the pod of `chip` in a multislice (pod.pods above 1), else -1
  // "[1,2,3]", "[0,0,0] x+", "host 4", "random: chip 5 link 12"; in a multislice " of pod 1" after a target
  // written (coordinates and hosts within the pod), " in pod 1" after a drawn one (the multislice's ids).
  [[nodiscard]] std::string target() const;
};

// The costs the timeline composes, from the simulated step and the specs (models/src/job/job_steps.cpp).
struct JobCosts {
  Seconds step;                // the simulated healthy step (checkpoint left out)
  Seconds checkpoint_write;    // one full checkpoint: the host's chips' state / chip.host.storage_bandwidth
  Seconds checkpoint_restore;  // reading it back, at the same bandwidth
  Bytes checkpoint_bytes;      // per chip
  // The step time while `fault` lasts (a rerouted link, a degraded link or HBM, a straggler): the step
  // simulated again with it (models/src/job/job_steps.cpp). Unset: the healthy step.
  std::function<Seconds(const ConcreteFault&)> step_with;
  // Under reroute, the wall time of the step in flight when `fault` (a failed link) lands inside it: the step
  // simulated as it runs, with the faults `lasting` then (as step_stopped's), and the cable failing `offset`
  // after the step's start and detected `detection` after it (models/src/job/job_steps.cpp). Unset or nullopt
  // (also when that step finishes before the tick): the step stalls from the fault to its detection and runs
  // again from its start at the rerouted step time.
  std::function<std::optional<Seconds>(const ConcreteFault& fault, Seconds offset, Seconds detection,
                                       const std::vector<ConcreteFault>& lasting)>
      step_hit;
  // A timed chip_down landing `offset` inside a step (not a checkpoint write) that the job rolls back or ends
  // at: told, so the step in flight can be simulated as it runs, with the faults `lasting` then (the slowdowns
  // and cables routed around that make the step longer than the healthy one) and the chip stopping at its tick,
  // up to `detection` (since the step's start), to report how far it got (models/src/job/job_steps.cpp). The
  // timeline's cost is the same either way: the work since the checkpoint and `offset` of the step are lost.
  std::function<void(const ConcreteFault& fault, Seconds offset, Seconds detection,
                     const std::vector<ConcreteFault>& lasting)>
      step_stopped;
};

// What the job was doing when a fault landed (docs/faults.md, "Over the job").
enum class FaultLanded : std::uint8_t {
  step,              // running step `FaultEvent::step`
  checkpoint_write,  // writing the checkpoint after `FaultEvent::step` steps: that checkpoint is lost
  restore,           // reading a checkpoint back, the last part of a recovery
  recovery,          // down for another fault's recovery (or stalled until a rerouted fault's detection)
};
// "step", "checkpoint_write", "restore", "recovery" (summary.json's faults.timeline[].landed_in).
[[nodiscard]] std::string_view fault_landed_name(FaultLanded where);

// A recovery's parts after the detection, in this order (job.repair; job.restart; the OCS remap of a spare-cube
// swap; the checkpoint read back).
struct RecoveryStages {
  Seconds repair, restart, reconfiguration, restore;
};

// One fault on the timeline.
struct FaultEvent {
  ConcreteFault fault;
  FaultLanded landed = FaultLanded::step;
  std::int64_t step = 0;  // the step in flight when it hit (0-based); in a write, the steps done before it
  Seconds detected;       // = at for faults that only slow a component
  Seconds resumed;        // the job runs again (or, for a slowdown, the step it takes effect)
  std::string recovery;   // "reroute", "spare_cube", "checkpoint_restart", "failed", "slowdown", "not in use (...)";
                          // ", found at the relaunch", ", detected with the fault before it" or ", in the
                          // restore: read again" appended when met after landing in another's recovery
  Seconds lost_work;      // steps since the last checkpoint plus the step in flight, re-run (the step in flight
                          // only when the job keeps every step: keeps_every_step)
  Seconds downtime;       // detection + repair + restart + reconfiguration + restore (or the stall of a reroute)
  Seconds step_before, step_after;
  Seconds step_hit;       // the step in flight simulated with the fault at its tick (JobCosts::step_hit), or 0
  Seconds step_started;   // when the step (or checkpoint write) in flight began
  // The recovery's parts, up to `resumed` (a restore a later fault interrupted ends at `resumed`); 0 for a
  // reroute, a slowdown and a fault during recovery.
  RecoveryStages stages;
};

// Where the job's wall time went; the parts add up to `wall`.
struct JobLosses {
  Seconds checkpoint, lost_work, detection, repair, restart, reconfiguration, restore, slowdown;
};

struct JobResult {
  std::int64_t steps = 0;       // the job's work, in steps
  std::int64_t steps_done = 0;  // completed and kept (< steps when the job failed)
  std::int64_t checkpoints = 0;
  bool failed = false;          // recovery `fail` ended it
  Seconds wall;                 // start to end (or to the failure's detection)
  Seconds useful;               // steps_done x the healthy step
  double goodput = 0;           // useful / wall
  JobLosses losses;
  std::vector<FaultEvent> events;  // in time order
  // When each checkpoint write began (each takes JobCosts::checkpoint_write; a write a fault cut short is not
  // listed: its time is lost work), the first kMaxRecordedCheckpoints of them (`checkpoints` counts all).
  std::vector<Seconds> checkpoint_writes;
  int spare_cubes_left = 0;
  std::uint64_t ocs_remaps = 0;  // circuits the spare-cube swaps remapped
  // reroute: the most cables routed around at once while the job ran on. Each step with a failed cable is
  // simulated with that one cable alone (a drawn one: its axis's, chip 0's + link) and the job runs at the
  // slowest of them, so with more than one down the step time is optimistic.
  std::size_t cables_down_at_most = 0;
};

// A job that meets this many faults is not making progress worth reporting: it stops with an error (and a
// fault plan expecting far more is refused before the run, tools/src/preflight.cpp).
inline constexpr std::size_t kMaxJobFaults = 1'000'000;
// JobResult::checkpoint_writes keeps this many (a year of short steps writes more than a trace can show).
inline constexpr std::size_t kMaxRecordedCheckpoints = 100'000;

// Throws ConfigError at job.duration for a job given by a duration shorter than its step: no step fits in it.
void check_duration_holds_a_step(const Scenario& s, Seconds step);
// Whether the job keeps every step it completes (docs/faults.md "Over the job"): a step that does not train
// (decode, prefill, forward) updates no state, so what it served is delivered and a fault never rolls it back: it
// loses only the step in flight, and a restart reads no checkpoint. A training step is kept by a checkpoint only.
[[nodiscard]] inline bool keeps_every_step(const Scenario& s) { return s.workload.step != StepKind::train; }

// The job's work in steps: job.steps, or with job.duration the steps a fault-free run fits in it (each with
// its share of the checkpoint writes; a duration shorter than one step throws as check_duration_holds_a_step).
[[nodiscard]] std::int64_t job_steps(const Scenario& s, Seconds step, Seconds checkpoint_write);

// The faults fault_rates draw on `topo` (models/src/job/random_faults.cpp), per kind that fails at random, in
// the order chip_down, link_down, ocs_port_down, host_down: the pod's components of the kind (chips; cables;
// OCS ports, two per optical cable; hosts) and their summed rate, components / the kind's mean time between
// failures (0 when fault_rates leaves the kind out).
struct RandomFaultSource {
  FaultKind kind = FaultKind::chip_down;
  std::size_t components = 0;
  double per_second = 0;
};
[[nodiscard]] std::vector<RandomFaultSource> random_fault_sources(const Scenario& s, const Topology& topo);

// Resolves a timed fault's target on the pod (its spec was checked by resolve_fault_plan). A random target is
// drawn from `seed` and the entry's position in `faults` (a stream of its own, so adding an entry moves no
// other), among the pod's components of the fault's kind.
[[nodiscard]] ConcreteFault concrete_fault(const FaultSpec& spec, const Topology& topo, std::int64_t seed);

// Runs the job's timeline. `topo` is the scenario's pod. A job that meets `max_faults` faults stops with an
// error (std::runtime_error): kMaxJobFaults, or fewer when the caller's memory limit holds fewer (each fault met
// is kept in JobResult::events).
[[nodiscard]] JobResult run_job(const Scenario& s, const Topology& topo, const JobCosts& costs,
                                std::size_t max_faults = kMaxJobFaults);

}  // namespace tpusim::models
