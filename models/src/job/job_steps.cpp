// The job's simulated steps (contract in tpusim/models/job_steps.h; models/README.md "Job").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "tpusim/core/fault_plan.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/job_steps.h"

namespace tpusim::models {
namespace {

// What a fault does to the step it is simulated in, by its kind's effect (core/fault_plan.h's catalogue): sets
// the options of that step, or returns false when the fault has no step of its own (a chip or a host stopping
// stops the job, whose recovery the timeline prices; a cable down under a policy other than reroute restarts
// the job on a repaired slice).
bool step_effect(const FaultSpec& spec, const ConcreteFault& f, const Topology& topo, bool reroute, SimOptions& o) {
  switch (fault_effect(spec.kind)) {
    case FaultEffect::stops_chip:
    case FaultEffect::stops_host:
      return false;
    case FaultEffect::stops_cable:
      if (reroute) o.failed.add_cable(topo, f.link);
      return reroute;
    case FaultEffect::degrades_link:
      o.degraded_links.push_back({f.link, spec.bandwidth_fraction, spec.added_latency, spec.bit_error_rate});
      return true;
    case FaultEffect::degrades_hbm:
      o.degraded_chips.push_back({f.chip, 1.0, spec.bandwidth_fraction});
      return true;
    case FaultEffect::slows_clock:
      o.degraded_chips.push_back({f.chip, spec.clock_fraction, 1.0});
      return true;
  }
  return false;
}

// The faults a step the fault lands in runs with, for its name: ", under [1,1] straggler" (", under 3 lasting
// faults" past two), or nothing.
std::string lasting_note(const std::vector<ConcreteFault>& lasting) {
  if (lasting.empty()) return "";
  if (lasting.size() > 2) return fmt::format(", under {} lasting faults", lasting.size());
  std::string names;
  for (const ConcreteFault& l : lasting) {
    names += fmt::format("{}{} {}", names.empty() ? "" : " and ", l.target(), fault_kind_name(l.spec.kind));
  }
  return ", under " + names;
}

// One step simulated by the runner; a step with failed links is routed around them.
FaultStep simulate_step(StepRunner& runner, const Scenario& s, const SimOptions& options, std::string what) {
  FaultStep out;
  out.what = std::move(what);
  Scenario faulty = s;
  if (!options.failed.links.empty()) faulty.fidelity.routing = RoutingPolicy::fault_aware;
  if (std::optional<StepReport> report = runner.run(faulty, options, out.what)) {
    static_cast<StepReport&>(out) = std::move(*report);
    out.ok = true;
  }
  return out;
}

}  // namespace

StepReport step_report(const SimResult& r) {
  StepReport out;
  out.step_time_s = r.step_time.value();
  for (const auto& l : r.network.links) out.link_utilization.push_back(l.utilization);
  InStepFault f;  // the first cable failing in the step (one per simulation here), or none
  if (!r.network.in_step_faults.empty()) f = r.network.in_step_faults.front();
  out.transfers_cut = static_cast<double>(f.transfers_cut);
  out.in_flight_bytes = f.in_flight.as_double();
  out.delivered_bytes = f.delivered.as_double();
  out.retransmitted_bytes = f.retransmitted.as_double();
  out.lost_bytes = f.lost.as_double();
  out.resent_done_s = f.resent_done.value();
  out.dropped_transfers = static_cast<double>(f.transfers_dropped);
  out.dropped_bytes = f.dropped.as_double();
  out.progress.stopped = r.progress.stopped;
  out.progress.instructions = static_cast<double>(r.progress.instructions);
  out.progress.completed = static_cast<double>(r.progress.completed);
  out.progress.last_completion_s = r.progress.last_completion.value();
  out.cost.wall_s = r.cost.wall_seconds;
  out.cost.chips_simulated = static_cast<double>(r.cost.chips_simulated - r.cost.chips_mirrored);
  out.cost.chips_mirrored = static_cast<double>(r.cost.chips_mirrored);
  out.cost.mirroring = r.cost.mirroring;
  return out;
}

Scenario job_step_scenario(const Scenario& s) {
  if (!s.job.enabled) return s;
  Scenario step = s;
  step.workload.host.checkpoint.every_steps = 0;
  return step;
}

FaultSteps::FaultSteps(const Scenario& s, const Topology& topo, Seconds healthy, StepRunner& runner,
                       std::size_t max_faults)
    : topo_(topo), reroute_(s.job.recovery == RecoveryPolicyKind::reroute) {
  // The fault on its trace's track: a chip's in the chip's process, a link's on the link's own track.
  const auto name_fault = [](FaultStep& step, const ConcreteFault& f) {
    step.fault_target = f.target();
    step.fault_name = fmt::format("{} {}", fault_kind_name(f.spec.kind), step.fault_target);
    step.fault_kind = f.spec.kind;
    const FaultComponent on = fault_info(f.spec.kind).component;
    if (on == FaultComponent::link || on == FaultComponent::ocs_link) {
      step.fault_link = f.link;
    } else {
      step.fault_chip = f.chip.value();
    }
  };
  for (const FaultSpec& spec : s.faults.faults) {
    const ConcreteFault f = concrete_fault(spec, topo, s.seed);
    SimOptions o;
    if (!step_effect(spec, f, topo, reroute_, o)) continue;
    by_fault_[spec.index] = steps_.size();
    FaultStep step =
        simulate_step(runner, s, o, fmt::format("{} {}", f.target(), fault_kind_name(spec.kind)));
    name_fault(step, f);
    if (fault_effect(spec.kind) == FaultEffect::degrades_link && step.ok) {
      // A step with no network (a workload without collectives, such as an mlp) reports no links: nothing
      // crosses the degraded link, so nothing is sent again.
      const double factor = retransmission_factor(spec.bit_error_rate, s.fidelity.link_chunk);
      const std::vector<double>& used = step.link_utilization;
      const double utilization = f.link.value() < used.size() ? used[f.link.value()] : 0.0;
      step.retransmitted_bytes =
          utilization * topo.link(f.link).bandwidth.value() * step.step_time_s * (factor - 1);
    }
    steps_.push_back(std::move(step));
  }
  const bool drawn_links = reroute_ && (s.faults.rates.link_down.value() > 0 || s.faults.rates.ocs_port_down.value() > 0);
  if (drawn_links) {
    for (int axis = 0; axis < topo.axes(); ++axis) {
      const auto link = topo.out_link(ChipId(0), axis, +1);
      if (!link) continue;
      SimOptions o;
      o.failed.add_cable(topo, *link);
      by_axis_[axis] = steps_.size();
      FaultStep step =
          simulate_step(runner, s, o, fmt::format("a {} link down (for drawn links)", "xyz"[axis]));
      step.fault_target = fmt::format("chip 0 {}+", "xyz"[axis]);
      step.fault_name = "link_down " + step.fault_target;
      step.fault_kind = FaultKind::link_down;
      step.fault_link = *link;
      steps_.push_back(std::move(step));
    }
  }
  // The steps timed link faults land in. Where a fault lands depends on the step time and on the steps hit
  // before it, so the timeline is composed here with the healthy step, each hit step simulated when the
  // timeline reaches it. run_job_timeline() then finds them at the same offsets.
  const bool timed_links = reroute_ && std::any_of(s.faults.faults.begin(), s.faults.faults.end(),
                                                   [](const FaultSpec& f) { return fault_stops_cable(f.kind); });
  const bool timed_chips =
      std::any_of(s.faults.faults.begin(), s.faults.faults.end(),
                  [](const FaultSpec& f) { return fault_effect(f.kind) == FaultEffect::stops_chip; });
  if (!timed_links && !timed_chips) return;
  JobCosts costs = job_costs(s, healthy, *this);
  // The step in flight simulated with fault `f` at its tick (the options say how), up to its end or detection;
  // `lasting` names the faults it runs with.
  const auto simulate_hit = [&](const ConcreteFault& f, Seconds offset, Seconds detection, SimOptions o,
                                const std::vector<ConcreteFault>& lasting) {
    o.in_flight = s.job.in_flight;
    FaultStep step = simulate_step(runner, s, o,
                                   fmt::format("{} {} landing {} into its step{}", f.target(),
                                               fault_kind_name(f.spec.kind), format_time(offset),
                                               lasting_note(lasting)));
    name_fault(step, f);
    step.hit = true;
    step.fault_at_s = offset.value();
    step.detected_s = detection.value();
    return step;
  };
  // The faults lasting then, for a step a fault lands in: the step runs as it does on the timeline, with them in
  // place (together, where the timeline's step is the slowest of them alone), so a tick past the healthy step's
  // length in a step a straggler lengthened falls inside it.
  const auto lasting_options = [&](const std::vector<ConcreteFault>& lasting) {
    SimOptions o;
    for (const ConcreteFault& l : lasting) (void)step_effect(l.spec, l, topo, reroute_, o);
    return o;
  };
  // A cable failing at its tick, under reroute: the timeline charges the step as simulated here.
  costs.step_hit = [&](const ConcreteFault& f, Seconds offset, Seconds detection,
                       const std::vector<ConcreteFault>& lasting) -> std::optional<Seconds> {
    if (f.drawn || !fault_stops_cable(f.spec.kind)) return std::nullopt;
    SimOptions o = lasting_options(lasting);
    o.timed_links.push_back(TimedLinkFault{f.link, offset, detection});
    FaultStep step = simulate_hit(f, offset, detection, std::move(o), lasting);
    if (!step.ok) {
      std::fprintf(stderr, "tpusim: the job charges that step as a stall to the detection and a rerun instead\n");
      return std::nullopt;
    }
    if (step.step_time_s <= offset.value()) {  // it finished before the tick: not the step the job ran
      std::fprintf(stderr,
                   "tpusim: the step with %s finished before the cable failed: the cut could not be simulated, and "
                   "the step is left out of the report; the job charges it as a stall to the detection and a rerun "
                   "instead\n",
                   step.what.c_str());
      return std::nullopt;
    }
    hit_by_fault_[f.spec.index] = steps_.size();
    steps_.push_back(std::move(step));
    return Seconds(steps_.back().step_time_s);
  };
  // A chip stopping at its tick, with the faults lasting then: simulated to the stop or the detection
  // (job.stopped_step) for the report; the timeline's cost is its own.
  costs.step_stopped = [&](const ConcreteFault& f, Seconds offset, Seconds detection,
                           const std::vector<ConcreteFault>& lasting) {
    SimOptions o = lasting_options(lasting);
    o.timed_chips.push_back(TimedChipFault{f.chip, offset, detection});
    o.end_at_stop = s.job.stopped_step == StoppedStep::to_stop;
    FaultStep step = simulate_hit(f, offset, detection, std::move(o), lasting);
    if (!step.ok) {
      std::fprintf(stderr, "tpusim: the job's timeline does not need that step; it is left out of the report\n");
      return;
    }
    if (!step.progress.stopped) {  // every chip finished before the tick: the step is not the one the job ran
      std::fprintf(stderr,
                   "tpusim: the step with %s finished before the chip's stop: the stop could not be simulated, and "
                   "the step is left out of the report (the job's costs do not depend on it)\n",
                   step.what.c_str());
      return;
    }
    steps_.push_back(std::move(step));
  };
  (void)run_job(s, topo, costs, max_faults);
}

std::optional<Seconds> FaultSteps::step_hit(const ConcreteFault& f, Seconds offset) const {
  if (f.drawn) return std::nullopt;
  const auto it = hit_by_fault_.find(f.spec.index);
  if (it == hit_by_fault_.end()) return std::nullopt;
  const FaultStep& step = steps_[it->second];
  // The same inputs give the same offset; a picosecond of slack for the sums in another order.
  if (std::abs(step.fault_at_s - offset.value()) > 1e-12) return std::nullopt;
  return Seconds(step.step_time_s);
}

std::optional<std::size_t> FaultSteps::index_of(const ConcreteFault& f) const {
  if (!f.drawn) {
    const auto it = by_fault_.find(f.spec.index);
    if (it != by_fault_.end()) return it->second;
    return std::nullopt;
  }
  if (!reroute_ || !fault_stops_cable(f.spec.kind)) return std::nullopt;
  const auto it = by_axis_.find(topo_.link(f.link).axis);
  if (it != by_axis_.end()) return it->second;
  return std::nullopt;
}

Seconds FaultSteps::step_with(const ConcreteFault& f, Seconds healthy) const {
  const auto i = index_of(f);
  if (!i) return healthy;
  const FaultStep& s = steps_[*i];
  if (!s.ok) {
    throw std::runtime_error(fmt::format("the step with {} could not be simulated", s.what));
  }
  return Seconds(s.step_time_s);
}

JobCosts job_costs(const Scenario& s, Seconds step, const FaultSteps& fault_steps) {
  JobCosts costs;
  // One full checkpoint: the host writes the state of each of its chips (kernels::host_step_costs with N = 1).
  WorkloadSpec every_step = s.workload;
  every_step.host.checkpoint.every_steps = 1;
  const kernels::HostStepCosts host = kernels::host_step_costs(every_step, s.chip, s.pod);
  costs.step = step;
  costs.checkpoint_write = Seconds(host.checkpoint_seconds);
  costs.checkpoint_restore = Seconds(host.checkpoint_seconds);
  costs.checkpoint_bytes = Bytes(host.checkpoint_bytes);
  costs.step_with = [&fault_steps, step](const ConcreteFault& f) { return fault_steps.step_with(f, step); };
  costs.step_hit = [&fault_steps](const ConcreteFault& f, Seconds offset, Seconds /*detection*/,
                                  const std::vector<ConcreteFault>& /*lasting*/) {
    return fault_steps.step_hit(f, offset);
  };
  return costs;
}

Seconds healthy_job_length(const Scenario& s, Seconds step) {
  if (!s.job.given_in_steps()) return s.job.duration;
  const int every = s.workload.host.checkpoint.every_steps;
  WorkloadSpec every_step = s.workload;  // one full checkpoint, as job_costs writes it
  every_step.host.checkpoint.every_steps = 1;
  const double write = every > 0 ? kernels::host_step_costs(every_step, s.chip, s.pod).checkpoint_seconds : 0.0;
  return Seconds(static_cast<double>(s.job.steps) * step.value() +
                 (every > 0 ? static_cast<double>((s.job.steps - 1) / every) * write : 0.0));
}

void check_fault_times_of_steps(const Scenario& s, Seconds step) {
  check_duration_holds_a_step(s, step);  // job.h
  if (!s.job.given_in_steps()) return;
  Diagnostics diags;
  const int every = s.workload.host.checkpoint.every_steps;
  const std::string how = fmt::format("job.steps x the simulated step of {}", format_value(step)) +
                          (every > 0 ? fmt::format(", with a checkpoint written every {} steps", every) : "");
  check_fault_times(s.faults, healthy_job_length(s, step), how, diags);
  diags.throw_if_any();
}

JobOutcome run_job_timeline(const Scenario& s, const Topology& topo, Seconds step, const FaultSteps& fault_steps,
                            std::size_t max_faults) {
  JobOutcome out;
  out.costs = job_costs(s, step, fault_steps);
  for (const FaultStep& f : fault_steps.steps()) {
    if (f.hit) out.hit_steps.push_back(f);
  }
  check_fault_times_of_steps(s, step);
  out.result = run_job(s, topo, out.costs, max_faults);
  return out;
}

}  // namespace tpusim::models
