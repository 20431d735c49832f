#pragma once
// The fault plan and the job it hits (DESIGN.md "Faults", docs/faults.md): timed faults (`faults:`), random
// faults from per-component mean times between failures (`fault_rates:`), and the job's length, detection and
// recovery (`job:`). resolve_fault_plan() reads all three with the field tables below, checks every target
// against the pod, and reports every problem at once; nothing downstream sees YAML.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/pod_spec.h"

namespace tpusim {

// A fault kind: an index into the catalogue below. The built-in kinds are its first entries, in this order; a
// kind added with add_fault_kind takes the next index.
enum class FaultKind : std::uint8_t {
  chip_down,      // the chip stops (its work, its ICI ports)
  link_down,      // one directed ICI link and its reverse (the cable) stop carrying data
  link_degraded,  // a link keeps a fraction of its bandwidth, adds latency, or corrupts bits (retransmitted)
  ocs_port_down,  // the optical switch port of an inter-cube link: the link stops
  host_down,      // the host stops: its chips lose their input, launches and heartbeats
  hbm_degraded,   // a chip's HBM keeps a fraction of its bandwidth
  straggler,      // a chip runs at a fraction of its clock
};
inline constexpr int kBuiltInFaultKinds = 7;

// What a fault kind strikes: a chip, a link (its cable when the fault stops it), a link through an optical
// switch port, a host (with its chips). A random target is drawn among the pod's components of that sort.
enum class FaultComponent : std::uint8_t { chip, link, ocs_link, host };
// What a fault does to the job and to the step it is simulated in (models/src/job: the timeline prices the
// kinds that stop a component, job_steps.cpp turns the others into the options of a step of their own).
enum class FaultEffect : std::uint8_t {
  stops_chip,     // the job detects it and recovers; a timed one inside a step is simulated to its stop
  stops_cable,    // both directions stop: routed around (reroute), else the job restarts on a repaired slice
  degrades_link,  // the link keeps bandwidth_fraction, adds added_latency, corrupts at bit_error_rate
  stops_host,     // the host stops with its chips: the job detects it and recovers
  degrades_hbm,   // the chip's HBM keeps bandwidth_fraction
  slows_clock,    // the chip runs at clock_fraction
};
// The parameters of a fault entry beyond its time and target, as bits of FaultKindInfo::parameters().
enum FaultParameter : std::uint8_t {
  kBandwidthFraction = 1U << 0,
  kAddedLatency = 1U << 1,
  kBitErrorRate = 1U << 2,
  kClockFraction = 1U << 3,
};
// A fault kind in the catalogue: its name, what it strikes and what it does. Whether it stops its component
// and which parameters it takes follow from the effect.
struct FaultKindInfo {
  FaultKind kind = FaultKind::chip_down;  // its index (add_fault_kind sets it)
  std::string name;
  FaultComponent component = FaultComponent::chip;
  FaultEffect effect = FaultEffect::stops_chip;
  [[nodiscard]] bool stops() const {
    return effect == FaultEffect::stops_chip || effect == FaultEffect::stops_cable || effect == FaultEffect::stops_host;
  }
  [[nodiscard]] std::uint8_t parameters() const;
};
// The catalogue of fault kinds (core/src/fault_plan.cpp lists the built-in ones), in index order.
[[nodiscard]] const std::vector<FaultKindInfo>& fault_kinds();
[[nodiscard]] const FaultKindInfo& fault_info(FaultKind k);
// Adds a fault kind after the others and returns its index: a study's or a test's own kind is this one call.
// Throws std::invalid_argument for an empty or known name, or an effect its component cannot have (a chip
// effect on a link...). remove_fault_kind takes an added kind out again (false: no added kind of that name;
// only the last added can go, as later ones hold its index). Neither is thread-safe: call them before any
// scenario is read.
FaultKind add_fault_kind(FaultKindInfo kind);
bool remove_fault_kind(std::string_view name);
[[nodiscard]] const std::vector<std::pair<std::string, FaultKind>>& fault_kind_names();
[[nodiscard]] inline std::string_view fault_kind_name(FaultKind k) { return fault_info(k).name; }
// Faults that stop a component (the job must detect them and recover), as opposed to ones that slow it.
[[nodiscard]] inline bool fault_stops(FaultKind k) { return fault_info(k).stops(); }
[[nodiscard]] inline FaultEffect fault_effect(FaultKind k) { return fault_info(k).effect; }
// Faults that stop a cable (a link or an OCS port): routed around under reroute.
[[nodiscard]] inline bool fault_stops_cable(FaultKind k) { return fault_effect(k) == FaultEffect::stops_cable; }
// Faults that strike a link (given as a chip and a direction).
[[nodiscard]] inline bool fault_on_link(FaultKind k) {
  return fault_info(k).component == FaultComponent::link || fault_info(k).component == FaultComponent::ocs_link;
}

// A fault's target. `random` targets are drawn from the scenario's seed among the components of the fault's
// kind of every pod (models/job.h). Otherwise: chip coordinates (every kind but host_down by index), plus the
// direction of the link leaving that chip (link and OCS port kinds), or a host index (host_down), in the pod
// `pod` of a multislice (pod.pods; coordinates and host indices are those within one pod).
struct FaultTarget {
  bool random = false;
  std::vector<int> chip;  // coordinates in the slice, one per axis of pod.shape
  int axis = -1;          // link kinds: 0, 1, 2 for x, y, z
  int sign = 0;           // link kinds: +1 or -1
  int host = -1;          // host_down given as {host: N}
  int pod = -1;           // {..., pod: P}: the pod of a multislice; -1 when not written (pod 0)
  [[nodiscard]] int pod_index() const { return pod < 0 ? 0 : pod; }
  // "random", "[1,2,3]", "[1,2,3] x+", "host 4"; with `name_pod` (a scenario of several pods) " of pod P"
  // after it, so a single-pod target reads as before.
  [[nodiscard]] std::string str(bool name_pod = false) const;
};

struct FaultSpec {
  Seconds at;  // since the job started
  FaultKind kind = FaultKind::chip_down;
  FaultTarget target;
  double bandwidth_fraction = 1;  // link_degraded, hbm_degraded: fraction of the nominal bandwidth kept
  Seconds added_latency;          // link_degraded: added to the link's hop latency
  double bit_error_rate = 0;      // link_degraded: per bit; a corrupted chunk is sent again
  double clock_fraction = 1;      // straggler: fraction of the chip clock it runs at
  SourceLoc loc;                  // the entry's `at`, for errors found after the step is simulated
  int index = 0;                  // position in the scenario's `faults` list
};

// Mean time between failures of ONE component of each kind that fails at random (0 = never). The pod's
// rate of a kind is components / mtbf (chips, directed-link pairs = cables, OCS ports, hosts).
struct FaultRates {
  Seconds chip_down;
  Seconds link_down;
  Seconds ocs_port_down;
  Seconds host_down;
  [[nodiscard]] bool any() const {
    return chip_down.value() > 0 || link_down.value() > 0 || ocs_port_down.value() > 0 || host_down.value() > 0;
  }
};

// How the job recovers from a fault that stops a component (models/src/job/recovery_*.cpp, one per policy).
enum class RecoveryPolicyKind : std::uint8_t { fail, checkpoint_restart, reroute, spare_cube };

// What happens to the transfers in flight on a link that fails inside a simulated step (job.in_flight): lost:
// the sender learns it only when the job's heartbeat model declares the link failed, and then sends the whole
// transfer again over the surviving route (the default: ICI routes are static, the runtime reroutes); or sent
// again at once over the surviving route from the first byte not delivered (assumes the link layer notices the
// lost signal and the routes change at once).
enum class InFlightPolicy : std::uint8_t { retransmit, lose };

// How far the step a chip stops in is simulated for the report (job.stopped_step); the job's costs are the same
// either way. to_stop: up to the stop, where the step's work is lost (what completed by then, the transfers the
// stop cuts; the chips stay mirrored until then). to_detection: on to the detection, the others running on and
// stalling on what needs the chip (every chip simulated past the stop: minutes on a full pod).
enum class StoppedStep : std::uint8_t { to_stop, to_detection };

// The job: how long it runs, how failures are noticed and how it recovers. The checkpoint interval is
// workload.checkpoint.every_steps; with a job, each checkpoint is written in full every that many steps
// (instead of amortised into the simulated step).
struct JobSpec {
  bool enabled = false;          // the scenario has `job:`, `faults:` or `fault_rates:`
  std::int64_t steps = 1;        // training steps to run (used when duration is 0)
  Seconds duration;              // or: run this long (0 = use steps)
  Seconds heartbeat;             // every component reports alive this often
  Seconds timeout;               // silence for this long means failed
  RecoveryPolicyKind recovery = RecoveryPolicyKind::checkpoint_restart;
  Seconds restart;               // relaunch the job on its slice (schedule, compile, initialise)
  Seconds repair;                // replace the failed chip, host or optics (checkpoint_restart after repair)
  int spare_cubes = 0;           // spare_cube: idle 4x4x4 cubes the OCS can switch in
  InFlightPolicy in_flight = InFlightPolicy::lose;  // reroute: transfers on a link failing mid-step
  StoppedStep stopped_step = StoppedStep::to_stop;  // a chip stopping inside a step: how far it is simulated
  std::map<std::string, FieldOrigin> origins;

  // The job's length is job.steps, not a duration: its end is known only once its step is simulated.
  [[nodiscard]] bool given_in_steps() const { return duration.value() <= 0; }
};

struct FaultPlan {
  std::vector<FaultSpec> faults;  // as written, sorted by `at` (stable)
  FaultRates rates;
};

// Whether the pod has components a fault of that sort can strike, as topology/src/topology.cpp builds them: every
// pod has chips and hosts; a pod of one chip per slice has no cable; OCS ports need cubes (pod.cube) and an axis
// whose links leave a cube or close its ring.
[[nodiscard]] bool pod_has_components(const PodSpec& pod, FaultComponent component);

// Reads `job`, `faults` and `fault_rates` of the scenario tree into `job` and `plan`, checking targets against
// `pod` (coordinates in range, the link exists, an OCS port only between cubes, the host exists), a rate against
// the pod's components of its kind (pod_has_components), parameters against their kind, and `at` against
// job.duration when the job has one (a job of `steps` is checked once its step time is known: check_fault_times).
// `link_chunk` (fidelity.link_chunk) is the unit a degraded link resends: a bit error rate at which a chunk
// would almost never get through (kMaxRetransmission) is refused.
void resolve_fault_plan(const ConfigNode& tree, const PodSpec& pod, JobSpec& job, FaultPlan& plan,
                        Bytes link_chunk, Diagnostics& diags);

// With a bit error rate each chunk is sent 1 / (1 - p) times on average, p = 1 - (1 - ber)^(chunk bits): the
// factor a degraded link's rate is divided by (1 without errors).
[[nodiscard]] double retransmission_factor(double bit_error_rate, Bytes chunk);
// Above this many sends per chunk a link delivers under 0.1% of its rate: a dead link, not a degraded one.
inline constexpr double kMaxRetransmission = 1e3;
// A fault at or after the job's end is bad input: `end` is job.duration or steps x the simulated step time
// (with the checkpoint writes), `how` says which for the message.
void check_fault_times(const FaultPlan& plan, Seconds end, std::string_view how, Diagnostics& diags);

[[nodiscard]] const FieldTable<JobSpec>& job_fields();
[[nodiscard]] const FieldTable<FaultSpec>& fault_fields();
[[nodiscard]] const FieldTable<FaultRates>& fault_rate_fields();

}  // namespace tpusim
