#include "tpusim/core/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim {

namespace {

// The fault kinds, built-in then added, with their names for the field table's choice; `generation` counts the
// changes, so that the field table of a fault entry follows them.
struct FaultCatalogue {
  std::vector<FaultKindInfo> kinds{
      {FaultKind::chip_down, "chip_down", FaultComponent::chip, FaultEffect::stops_chip},
      {FaultKind::link_down, "link_down", FaultComponent::link, FaultEffect::stops_cable},
      {FaultKind::link_degraded, "link_degraded", FaultComponent::link, FaultEffect::degrades_link},
      {FaultKind::ocs_port_down, "ocs_port_down", FaultComponent::ocs_link, FaultEffect::stops_cable},
      {FaultKind::host_down, "host_down", FaultComponent::host, FaultEffect::stops_host},
      {FaultKind::hbm_degraded, "hbm_degraded", FaultComponent::chip, FaultEffect::degrades_hbm},
      {FaultKind::straggler, "straggler", FaultComponent::chip, FaultEffect::slows_clock},
  };
  std::vector<std::pair<std::string, FaultKind>> names = derive_names();
  int generation = 0;
  std::vector<std::pair<std::string, FaultKind>> derive_names() const {
    std::vector<std::pair<std::string, FaultKind>> out;
    for (const FaultKindInfo& k : kinds) out.emplace_back(k.name, k.kind);
    return out;
  }
  void changed() {
    names = derive_names();
    ++generation;
  }
};

FaultCatalogue& fault_catalogue() {
  static FaultCatalogue c;
  return c;
}

// The component an effect can strike.
bool effect_fits(FaultEffect e, FaultComponent c) {
  switch (e) {
    case FaultEffect::stops_chip:
    case FaultEffect::degrades_hbm:
    case FaultEffect::slows_clock:
      return c == FaultComponent::chip;
    case FaultEffect::stops_cable:
    case FaultEffect::degrades_link:
      return c == FaultComponent::link || c == FaultComponent::ocs_link;
    case FaultEffect::stops_host:
      return c == FaultComponent::host;
  }
  return false;
}

}  // namespace

std::uint8_t FaultKindInfo::parameters() const {
  switch (effect) {
    case FaultEffect::degrades_link:
      return kBandwidthFraction | kAddedLatency | kBitErrorRate;
    case FaultEffect::degrades_hbm:
      return kBandwidthFraction;
    case FaultEffect::slows_clock:
      return kClockFraction;
    default:
      return 0;
  }
}

const std::vector<FaultKindInfo>& fault_kinds() { return fault_catalogue().kinds; }

const FaultKindInfo& fault_info(FaultKind k) { return fault_catalogue().kinds.at(static_cast<std::size_t>(k)); }

const std::vector<std::pair<std::string, FaultKind>>& fault_kind_names() { return fault_catalogue().names; }

FaultKind add_fault_kind(FaultKindInfo kind) {
  FaultCatalogue& c = fault_catalogue();
  if (kind.name.empty()) throw std::invalid_argument("add_fault_kind: a fault kind with no name");
  for (const FaultKindInfo& k : c.kinds) {
    if (k.name == kind.name) {
      throw std::invalid_argument(fmt::format("add_fault_kind: the catalogue has a kind named {}", kind.name));
    }
  }
  if (!effect_fits(kind.effect, kind.component)) {
    throw std::invalid_argument(fmt::format("add_fault_kind: {}'s effect cannot strike its component", kind.name));
  }
  if (c.kinds.size() > std::numeric_limits<std::uint8_t>::max()) {
    throw std::invalid_argument("add_fault_kind: the catalogue is full");
  }
  kind.kind = static_cast<FaultKind>(c.kinds.size());
  c.kinds.push_back(std::move(kind));
  c.changed();
  return c.kinds.back().kind;
}

bool remove_fault_kind(std::string_view name) {
  FaultCatalogue& c = fault_catalogue();
  if (c.kinds.size() <= kBuiltInFaultKinds || c.kinds.back().name != name) return false;
  c.kinds.pop_back();
  c.changed();
  return true;
}

std::string FaultTarget::str(bool name_pod) const {
  if (random) return "random";
  std::string s = host >= 0 ? fmt::format("host {}", host) : fmt::format("[{}]", fmt::join(chip, ","));
  if (host < 0 && axis >= 0) s += fmt::format(" {}{}", "xyz"[axis], sign > 0 ? '+' : '-');
  if (name_pod) s += fmt::format(" of pod {}", pod_index());
  return s;
}

const FieldTable<JobSpec>& job_fields() {
  using S = JobSpec;
  static const FieldTable<JobSpec> table = [] {
    FieldTable<JobSpec> t;
    t.add<std::int64_t>("steps", [](S& s) -> std::int64_t& { return s.steps; }, "1",
                        "training steps the job runs (when duration is 0; not with a duration)",
                        positive<std::int64_t>());
    t.add<Seconds>("duration", [](S& s) -> Seconds& { return s.duration; }, "0 s",
                   "or: the job runs this long (steps as many as fit; not with steps; shorter than one step is "
                   "refused once the step is simulated); 0 = use steps",
                   non_negative<Seconds>());
    t.add<Seconds>("heartbeat", [](S& s) -> Seconds& { return s.heartbeat; }, "5 s",
                   "every chip, host and link reports alive this often (assumption: a watchdog period of "
                   "seconds; not published for TPU)",
                   positive<Seconds>());
    t.add<Seconds>("timeout", [](S& s) -> Seconds& { return s.timeout; }, "30 s",
                   "a component silent this long is declared failed (assumption: several missed heartbeats; not "
                   "published)",
                   positive<Seconds>());
    t.add_choice<RecoveryPolicyKind>(
        "recovery", [](S& s) -> RecoveryPolicyKind& { return s.recovery; },
        {{"fail", RecoveryPolicyKind::fail},
         {"checkpoint_restart", RecoveryPolicyKind::checkpoint_restart},
         {"reroute", RecoveryPolicyKind::reroute},
         {"spare_cube", RecoveryPolicyKind::spare_cube}},
        "checkpoint_restart",
        "after a fault that stops a component: fail the job; restart from the last checkpoint after repair; "
        "reroute around failed links in place; or switch a spare cube in through the OCS (v4/v5p)");
    t.add<Seconds>("restart", [](S& s) -> Seconds& { return s.restart; }, "10 min",
                   "relaunch the job on its slice: schedule, compile, initialise (assumption: minutes; not "
                   "published)",
                   non_negative<Seconds>());
    t.add<Seconds>("repair", [](S& s) -> Seconds& { return s.repair; }, "1 h",
                   "replace a failed chip, host or optical port before a restart on the same slice (assumption: "
                   "a tray swap or a move to a healthy slice; not published)",
                   non_negative<Seconds>());
    t.add<int>("spare_cubes", [](S& s) -> int& { return s.spare_cubes; }, "1",
               "spare_cube: idle cubes the OCS can switch in for a cube with a failed chip, host or port",
               at_least(0));
    t.add_choice<InFlightPolicy>(
        "in_flight", [](S& s) -> InFlightPolicy& { return s.in_flight; },
        {{"lose", InFlightPolicy::lose}, {"retransmit", InFlightPolicy::retransmit}},
        "lose",
        "reroute: the transfers in flight on a link that fails inside the step are lost and sent again in full "
        "over the surviving route when the failure is detected, as is what is sent over the link until then (lose: "
        "the routes are static until the timeout detects it, and the step stalls until then), or "
        "sent again at once from the first byte not delivered (retransmit: assumes the link layer notices the "
        "lost signal and the routes change at once)");
    t.add_choice<StoppedStep>(
        "stopped_step", [](S& s) -> StoppedStep& { return s.stopped_step; },
        {{"to_stop", StoppedStep::to_stop}, {"to_detection", StoppedStep::to_detection}},
        "to_stop",
        "a chip stopping inside a step: simulate that step for the report up to the stop, where its work is lost "
        "(to_stop: what completed by then and what the stop cut; the chips stay mirrored until then), or on to the "
        "detection (to_detection: how the other chips run on and stall on what needs the chip; every chip "
        "simulated past the stop, minutes on a full pod); the job's costs are the same either way");
    return t;
  }();
  return table;
}

const FieldTable<FaultSpec>& fault_fields() {
  using S = FaultSpec;
  const auto make = [] {
    FieldTable<FaultSpec> t;
    t.add<Seconds>("at", [](S& s) -> Seconds& { return s.at; }, std::nullopt, "when the fault hits, since the job "
                   "started", non_negative<Seconds>());
    t.add_choice<FaultKind>("kind", [](S& s) -> FaultKind& { return s.kind; }, fault_kind_names(), std::nullopt,
                            "what fails");
    t.add<double>("bandwidth_fraction", [](S& s) -> double& { return s.bandwidth_fraction; }, "1",
                  "link_degraded, hbm_degraded: fraction of the nominal bandwidth kept", fraction());
    t.add<Seconds>("added_latency", [](S& s) -> Seconds& { return s.added_latency; }, "0 s",
                   "link_degraded: latency added to the link's hop", non_negative<Seconds>());
    t.add<double>("bit_error_rate", [](S& s) -> double& { return s.bit_error_rate; }, "0",
                  "link_degraded: errors per bit; a corrupted chunk is sent again", [](const double& v) {
                    return v >= 0 && v <= 1e-6 ? std::string{} : std::string("a rate in [0, 1e-6]");
                  });
    t.add<double>("clock_fraction", [](S& s) -> double& { return s.clock_fraction; }, "1",
                  "straggler: fraction of its clock the chip runs at", fraction());
    return t;
  };
  // Built again when a kind was added or removed (its choice of kinds changed).
  static FieldTable<FaultSpec> table = make();
  static int generation = 0;
  if (generation != fault_catalogue().generation) {
    table = make();
    generation = fault_catalogue().generation;
  }
  return table;
}

const FieldTable<FaultRates>& fault_rate_fields() {
  using S = FaultRates;
  static const FieldTable<FaultRates> table = [] {
    FieldTable<FaultRates> t;
    t.add<Seconds>("chip_down", [](S& s) -> Seconds& { return s.chip_down; }, "0 s",
                   "mean time between failures of one chip; 0 = chips never fail at random", non_negative<Seconds>());
    t.add<Seconds>("link_down", [](S& s) -> Seconds& { return s.link_down; }, "0 s",
                   "mean time between failures of one ICI cable (both directions); 0 = never",
                   non_negative<Seconds>());
    t.add<Seconds>("ocs_port_down", [](S& s) -> Seconds& { return s.ocs_port_down; }, "0 s",
                   "mean time between failures of one OCS port; 0 = never", non_negative<Seconds>());
    t.add<Seconds>("host_down", [](S& s) -> Seconds& { return s.host_down; }, "0 s",
                   "mean time between failures of one host; 0 = never", non_negative<Seconds>());
    return t;
  }();
  return table;
}

namespace {

// Reads `target` (random, a coordinate list, or a map of chip / dir / host and the pod) into `out`.
void read_target(const ConfigNode& n, const std::string& path, FaultTarget& out, Diagnostics& diags) {
  auto coords = [&](const ConfigNode& c, const std::string& key_path) {
    std::string expected;
    if (!parse_scalar(c, out.chip, expected)) {
      diags.error(c.loc(), key_path, "invalid chip coordinates", "a list of integers, one per axis", c.describe());
      return false;
    }
    return true;
  };
  if (n.is_scalar()) {
    if (n.scalar() == "random") {
      out.random = true;
      return;
    }
    diags.error(n.loc(), path, "invalid target", "random, chip coordinates [x, y, z], or a map {chip, dir} / {host}",
                n.describe());
    return;
  }
  if (n.is_seq()) {
    coords(n, path);
    return;
  }
  if (!n.is_map()) {
    diags.error(n.loc(), path, "missing target", "random, chip coordinates [x, y, z], or a map {chip, dir} / {host}",
                n.describe());
    return;
  }
  for (const auto& e : n.entries()) {
    const std::string key_path = path + "." + e.key;
    if (e.key == "chip") {
      coords(e.value, key_path);
    } else if (e.key == "dir") {
      const std::string& d = e.value.scalar();
      if (!e.value.is_scalar() || d.size() != 2 || d[0] < 'x' || d[0] > 'z' || (d[1] != '+' && d[1] != '-')) {
        diags.error(e.value.loc(), key_path, "invalid link direction", "x+, x-, y+, y-, z+ or z-", e.value.describe());
        continue;
      }
      out.axis = d[0] - 'x';
      out.sign = d[1] == '+' ? 1 : -1;
    } else if (e.key == "host") {
      std::string expected;
      if (!parse_scalar(e.value, out.host, expected) || out.host < 0) {
        diags.error(e.value.loc(), key_path, "invalid host", "a host index >= 0", e.value.describe());
      }
    } else if (e.key == "pod") {
      std::string expected;
      if (!parse_scalar(e.value, out.pod, expected) || out.pod < 0) {
        out.pod = -1;
        diags.error(e.value.loc(), key_path, "invalid pod", "a pod index >= 0 (below pod.pods)", e.value.describe());
      }
    } else if (e.key == "random") {
      // A drawn target is the word alone, and draws among every pod's components: a pod beside it would be
      // dropped without a word.
      const ConfigNode* pod = n.find("pod");
      diags.error(e.key_loc, key_path,
                  pod != nullptr ? "a random target takes no pod: it is drawn among every pod's components"
                                 : "a random target is the word random, not a map",
                  "target: random, or a chip, link or host with its pod ({chip: [x, y], pod: 1})",
                  pod != nullptr ? fmt::format("random with pod {}", pod->describe()) : n.describe());
    } else {
      diags.error(e.key_loc, key_path, "unknown key '" + e.key + "'", "a known key", e.key,
                  suggestion(e.key, {"chip", "dir", "host", "pod"}));
    }
  }
}

// What is wrong with a pod that has no component of a fault kind's sort (pod_has_components), and what would
// have one: the message and the expected value of the error.
std::pair<std::string, std::string> no_components(const PodSpec& pod, FaultComponent component) {
  if (component == FaultComponent::ocs_link) {
    return {fmt::format("pod {} has no OCS ports ({})", pod.name,
                        pod.cube.empty() ? "no optical switches: no cube" : "no link leaves a cube or closes a ring"),
            "a pod whose cubes are joined by optical switches (pod.cube set: v4, v5p)"};
  }
  return {fmt::format("pod {} has no ICI cables (one chip per slice)", pod.name), "a pod of more than one chip"};
}

// Checks a resolved target against the fault's kind and the pod.
void check_target(const FaultSpec& f, const ConfigNode& n, const std::string& path, const PodSpec& pod,
                  Diagnostics& diags) {
  const FaultTarget& t = f.target;
  const std::string kind(fault_kind_name(f.kind));
  auto bad = [&](const std::string& msg, const std::string& expected) {
    diags.error(n.loc(), path, msg, expected, t.str(pod.pods > 1));
  };
  if (t.pod >= std::max(1, pod.pods)) {  // coordinates and host indices are those within a pod: checked below
    const ConfigNode* at = n.find("pod");
    diags.error(at != nullptr ? at->loc() : n.loc(), path + ".pod",
                pod.pods > 1 ? fmt::format("no such pod: the scenario joins {} pods", pod.pods)
                             : "no such pod: the scenario has one pod",
                pod.pods > 1 ? fmt::format("a pod index below {} (pod.pods)", pod.pods)
                             : "pod 0, or pod.pods above the index",
                std::to_string(t.pod));
    return;
  }
  if (t.random) {
    // A draw among no components would strike one that does not exist.
    const FaultComponent component = fault_info(f.kind).component;
    if (!pod_has_components(pod, component)) {
      const auto [message, expected] = no_components(pod, component);
      bad(message, fmt::format("{}, or no {} fault", expected, kind));
    }
    return;
  }
  long long hosts = pod.chip_count() / std::max(1, pod.pods);
  for (int h : pod.host_shape) hosts /= std::max(1, h);
  if (fault_info(f.kind).component == FaultComponent::host && t.host >= 0) {
    if (t.host >= hosts) {
      bad("the pod has no such host", fmt::format("a host index below {}{}", hosts,
                                                  pod.pods > 1 ? " (the hosts of one pod; pod names which)" : ""));
    }
    return;
  }
  if (t.host >= 0) {
    bad(fmt::format("a {} fault targets a chip, not a host", kind), "chip coordinates");
    return;
  }
  const std::size_t axes = pod.shape.size();
  if (t.chip.size() != axes) {
    bad("chip coordinates need one entry per axis of the pod",
        fmt::format("{} coordinates within {} (pod {})", axes, format_value(pod.shape), pod.name));
    return;
  }
  for (std::size_t i = 0; i < axes; ++i) {
    if (t.chip[i] < 0 || t.chip[i] >= pod.shape[i]) {
      bad("the pod has no chip there", fmt::format("coordinates within {} (pod {})", format_value(pod.shape),
                                                   pod.name));
      return;
    }
  }
  if (!fault_on_link(f.kind)) {
    if (t.axis >= 0) bad(fmt::format("a {} fault takes no link direction", kind), "chip coordinates only");
    return;
  }
  if (t.axis < 0) {
    bad(fmt::format("a {} fault needs the link's direction", kind), "{chip: [x, y, z], dir: x+}");
    return;
  }
  const auto a = static_cast<std::size_t>(t.axis);
  if (a >= axes || pod.shape[a] == 1) {
    bad("the pod has no link along that axis", fmt::format("an axis of {} longer than 1", format_value(pod.shape)));
    return;
  }
  const int next = t.chip[a] + t.sign;
  const bool wraps = next < 0 || next >= pod.shape[a];
  if (wraps && (a >= pod.wraparound.size() || pod.wraparound[a] == 0)) {
    bad("the pod has no link there (a mesh edge)", "a link between two chips of the pod");
    return;
  }
  if (fault_info(f.kind).component == FaultComponent::ocs_link) {
    if (pod.cube.empty()) {
      bad(fmt::format("pod {} has no optical switches (no cube)", pod.name), "a pod with pod.cube set (v4, v5p)");
      return;
    }
    // The link crosses the OCS when it leaves the chip's cube.
    const int from_cube = t.chip[a] / pod.cube[a];
    const int to = (next + pod.shape[a]) % pod.shape[a];
    // (A wraparound link runs through the OCS even when one cube spans the axis.)
    if (to / pod.cube[a] == from_cube && !wraps) {
      bad("that link is electrical, inside a cube", "a link that leaves its cube (through an OCS port)");
    }
  }
}

void check_parameters(const FaultSpec& f, const std::map<std::string, FieldOrigin>& origins, const std::string& path,
                      Diagnostics& diags) {
  auto applies = [&](const std::string& key, FaultParameter parameter) {
    const auto it = origins.find(key);
    if (it == origins.end() || it->second.defaulted) return;
    if ((fault_info(f.kind).parameters() & parameter) != 0) return;
    std::vector<std::string> names;
    for (const FaultKindInfo& k : fault_kinds()) {
      if ((k.parameters() & parameter) != 0) names.emplace_back(k.name);
    }
    diags.error(it->second.loc, path + "." + key, fmt::format("{} does not apply to a {} fault", key,
                                                               fault_kind_name(f.kind)),
                fmt::format("a fault of kind {}", fmt::join(names, " or ")), std::string(fault_kind_name(f.kind)));
  };
  applies("bandwidth_fraction", kBandwidthFraction);
  applies("added_latency", kAddedLatency);
  applies("bit_error_rate", kBitErrorRate);
  applies("clock_fraction", kClockFraction);
}

// fault_rates' fields, by the kind each gives a mean time between failures for.
constexpr std::array<std::pair<FaultKind, Seconds FaultRates::*>, 4> kRates{{
    {FaultKind::chip_down, &FaultRates::chip_down},
    {FaultKind::link_down, &FaultRates::link_down},
    {FaultKind::ocs_port_down, &FaultRates::ocs_port_down},
    {FaultKind::host_down, &FaultRates::host_down},
}};

// A rate for components the pod lacks would draw nothing: it is bad input at the rate, as a timed fault on them is.
// `node` is fault_rates' map, which holds every rate above 0 (the default is 0).
void check_rate_components(const FaultRates& rates, const ConfigNode& node, const PodSpec& pod, Diagnostics& diags) {
  for (const auto& [kind, field] : kRates) {
    const FaultComponent component = fault_info(kind).component;
    if ((rates.*field).value() <= 0 || pod_has_components(pod, component)) continue;
    const std::string key(fault_kind_name(kind));
    const ConfigNode* rate = node.find(key);
    const auto [message, expected] = no_components(pod, component);
    diags.error(rate != nullptr ? rate->loc() : node.loc(), "fault_rates." + key, message,
                fmt::format("{}, or no {} rate", expected, key),
                rate != nullptr ? rate->describe() : format_value(rates.*field));
  }
}

}  // namespace

bool pod_has_components(const PodSpec& pod, FaultComponent component) {
  const std::size_t axes = pod.shape.size();
  auto wraps = [&](std::size_t a) { return a < pod.wraparound.size() && pod.wraparound[a] != 0; };
  for (std::size_t a = 0; a < axes; ++a) {
    if (pod.shape[a] <= 1) continue;
    if (component == FaultComponent::link) return true;
    // An optical link leaves its cube, or closes the axis's ring (topology/src/topology.cpp).
    if (component == FaultComponent::ocs_link && !pod.cube.empty() && (pod.shape[a] > pod.cube[a] || wraps(a))) {
      return true;
    }
  }
  return component == FaultComponent::chip || component == FaultComponent::host;
}

double retransmission_factor(double bit_error_rate, Bytes chunk) {
  if (bit_error_rate <= 0) return 1.0;
  // p = 1 - (1 - ber)^bits, computed without cancellation.
  const double p = -std::expm1(chunk.as_double() * 8 * std::log1p(-bit_error_rate));
  return 1.0 / std::max(1.0 - p, 1e-12);
}

void resolve_fault_plan(const ConfigNode& tree, const PodSpec& pod, JobSpec& job, FaultPlan& plan,
                        Bytes link_chunk, Diagnostics& diags) {
  const ConfigNode* job_node = tree.find("job");
  const ConfigNode* faults = tree.find("faults");
  const ConfigNode* rates = tree.find("fault_rates");
  job.enabled = job_node != nullptr || faults != nullptr || rates != nullptr;
  const ConfigNode empty = ConfigNode::make_map(tree.loc());
  job_fields().resolve(job_node != nullptr ? *job_node : empty, "job", job, diags, &job.origins);
  fault_rate_fields().resolve(rates != nullptr ? *rates : empty, "fault_rates", plan.rates, diags);
  if (rates != nullptr && rates->is_map()) check_rate_components(plan.rates, *rates, pod, diags);
  if (job.timeout.value() > 0 && job.heartbeat.value() > job.timeout.value()) {
    // At the one the user wrote: the timeout, or the heartbeat set past the default timeout.
    const auto written = [&](const char* key) {
      const auto it = job.origins.find(key);
      return it != job.origins.end() && !it->second.defaulted ? &it->second : nullptr;
    };
    const FieldOrigin* timeout = written("timeout");
    const FieldOrigin* heartbeat = written("heartbeat");
    if (timeout != nullptr || heartbeat == nullptr) {
      diags.error(timeout != nullptr ? timeout->loc : tree.loc(), "job.timeout",
                  "the timeout must cover at least one heartbeat",
                  fmt::format(">= job.heartbeat ({})", format_value(job.heartbeat)), format_value(job.timeout));
    } else {
      diags.error(heartbeat->loc, "job.heartbeat", "the timeout must cover at least one heartbeat",
                  fmt::format("<= job.timeout ({}, its default)", format_value(job.timeout)),
                  format_value(job.heartbeat), "set job.timeout too");
    }
  }
  // A job runs job.steps or lasts job.duration: with both, one would be dropped without a word. (duration: 0 s
  // is the documented "use steps".)
  const auto steps = job.origins.find("steps"), duration = job.origins.find("duration");
  if (steps != job.origins.end() && !steps->second.defaulted && duration != job.origins.end() &&
      !duration->second.defaulted && job.duration.value() > 0) {
    diags.error(duration->second.loc, "job.duration", "a job given both in steps and by its duration",
                "job.steps or job.duration, not both", fmt::format("job.steps {} (at {}) and job.duration {}",
                                                                   job.steps, steps->second.loc.str(),
                                                                   format_value(job.duration)),
                "drop one: the job runs job.steps steps, or as many steps as fit in job.duration");
  }
  if (job.recovery == RecoveryPolicyKind::spare_cube && pod.cube.empty()) {
    const auto it = job.origins.find("recovery");
    diags.error(it != job.origins.end() ? it->second.loc : tree.loc(), "job.recovery",
                fmt::format("pod {} has no optical switches to swap a cube through", pod.name),
                "a pod with pod.cube set (v4, v5p), or another recovery", "spare_cube");
  }
  if (faults == nullptr) return;
  if (!faults->is_seq()) {  // `faults:` with no value too: leave the key out for no timed fault
    diags.error(faults->loc(), "faults", "wrong type", "a list of faults ({at, kind, target, ...})",
                faults->describe());
    return;
  }
  for (std::size_t i = 0; i < faults->items().size(); ++i) {
    const ConfigNode& entry = faults->items()[i];
    const std::string path = fmt::format("faults[{}]", i);
    FaultSpec f;
    std::map<std::string, FieldOrigin> origins;
    const std::size_t before = diags.size();
    fault_fields().resolve(entry, path, f, diags, &origins, {"target"});
    if (!entry.is_map()) continue;
    f.loc = origins.count("at") != 0 ? origins["at"].loc : entry.loc();
    f.index = static_cast<int>(i);
    const ConfigNode* target = entry.find("target");
    if (target == nullptr) {
      diags.error(entry.loc(), path + ".target", "missing required key",
                  "random, chip coordinates [x, y, z], or a map {chip, dir} / {host}", "nothing");
      continue;
    }
    read_target(*target, path + ".target", f.target, diags);
    if (diags.size() != before) continue;
    check_target(f, *target, path + ".target", pod, diags);
    check_parameters(f, origins, path, diags);
    if (retransmission_factor(f.bit_error_rate, link_chunk) > kMaxRetransmission) {
      const auto it = origins.find("bit_error_rate");
      diags.error(it != origins.end() ? it->second.loc : f.loc, path + ".bit_error_rate",
                  fmt::format("a {} chunk (fidelity.link_chunk) would be sent more than {:g} times on average: "
                              "the link delivers nothing",
                              format_bytes(link_chunk), kMaxRetransmission),
                  fmt::format("a rate at which a chunk is sent at most {:g} times (about {:.3g} per bit or less)",
                              kMaxRetransmission, std::log(kMaxRetransmission) / (8 * link_chunk.as_double())),
                  fmt::format("{:g}", f.bit_error_rate),
                  "a link that delivers nothing is link_down; or a smaller fidelity.link_chunk (real links resend "
                  "packets, not MiB chunks)");
    }
    if (!job.given_in_steps() && f.at.value() >= job.duration.value()) {
      diags.error(f.loc, path + ".at", "the fault comes after the job ends",
                  fmt::format("a time before job.duration ({})", format_value(job.duration)), format_value(f.at));
    }
    plan.faults.push_back(std::move(f));
  }
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const FaultSpec& a, const FaultSpec& b) { return a.at.value() < b.at.value(); });
}

void check_fault_times(const FaultPlan& plan, Seconds end, std::string_view how, Diagnostics& diags) {
  for (const FaultSpec& f : plan.faults) {
    if (f.at.value() >= end.value()) {
      diags.error(f.loc, fmt::format("faults[{}].at", f.index), "the fault comes after the job ends",
                  fmt::format("a time before the job's end ({}: {})", format_value(end), how),
                  format_value(f.at));
    }
  }
}

}  // namespace tpusim
