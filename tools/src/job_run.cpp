#include "tools/src/job_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>

#include <fmt/format.h>

#include "tpusim/core/interrupt.h"
#include "tools/src/trace.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::tools {
namespace {

using json = nlohmann::ordered_json;

// The child's report through the pipe: the doubles (step time, link count, utilizations, the in-step fault's
// six numbers), then the traced spans (a count, then the spans as bytes).
constexpr std::size_t kInStepNumbers = 12;
static_assert(std::is_trivially_copyable_v<models::TraceSpan>, "spans go through the pipe as bytes");

// Runs one simulation in a forked child and reads back its step time, link utilizations and, with `trace`,
// the traced chips' spans through a pipe.
FaultStep simulate_in_child(const Scenario& s, const ir::ProgramSet& programs, models::SimOptions options,
                            std::string what, const std::optional<FaultTraceOptions>& trace) {
  FaultStep out;
  out.what = std::move(what);
  int fds[2];
  if (pipe(fds) != 0) return out;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    int status = 1;
    try {
      Scenario faulty = s;
      if (!options.failed.links.empty()) faulty.fidelity.routing = RoutingPolicy::fault_aware;
      std::optional<TraceRecorder> recorder;
      if (trace) {
        recorder.emplace(trace->chips, trace->limit);
        options.trace = [&recorder](const models::TraceSpan& span) { recorder->record(span); };
      }
      const models::SimResult r = models::simulate(faulty, programs, options);
      std::vector<double> data{r.step_time.value(), static_cast<double>(r.links.size())};
      for (const auto& l : r.links) data.push_back(l.utilization);
      models::InStepFault f;  // the first cable failing in the step (one per simulation here), or none
      if (!r.in_step_faults.empty()) f = r.in_step_faults.front();
      for (const double v : {static_cast<double>(f.transfers_cut), f.in_flight.as_double(), f.delivered.as_double(),
                             f.retransmitted.as_double(), f.lost.as_double(), f.resent_done.value(),
                             static_cast<double>(f.transfers_dropped), f.dropped.as_double(),
                             r.progress.stopped ? 1.0 : 0.0, static_cast<double>(r.progress.instructions),
                             static_cast<double>(r.progress.completed), r.progress.last_completion.value()}) {
        data.push_back(v);
      }
      const std::vector<models::TraceSpan> spans = recorder ? recorder->spans() : std::vector<models::TraceSpan>{};
      data.push_back(static_cast<double>(spans.size()));
      status = write_all(fds[1], data.data(), data.size() * sizeof(double)) &&
                       write_all(fds[1], spans.data(), spans.size() * sizeof(models::TraceSpan))
                   ? 0
                   : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tpusim: the step with %s failed to simulate: %s\n", out.what.c_str(), e.what());
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  const std::string bytes = read_from_child(fds[0], pid);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  throw_if_interrupted();
  const auto number = [&](std::size_t i) {
    double v = 0;
    std::memcpy(&v, bytes.data() + i * sizeof(double), sizeof v);
    return v;
  };
  const std::size_t doubles = bytes.size() / sizeof(double);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || doubles < 2) return out;
  const auto links = static_cast<std::size_t>(number(1));
  const std::size_t head = 2 + links + kInStepNumbers + 1;  // + the span count
  if (doubles < head) return out;
  const auto spans = static_cast<std::size_t>(number(head - 1));
  if (bytes.size() != head * sizeof(double) + spans * sizeof(models::TraceSpan)) return out;
  out.step_time_s = number(0);
  for (std::size_t i = 0; i < links; ++i) out.link_utilization.push_back(number(2 + i));
  out.transfers_cut = number(2 + links);
  out.in_flight_bytes = number(3 + links);
  out.delivered_bytes = number(4 + links);
  out.retransmitted_bytes = number(5 + links);
  out.lost_bytes = number(6 + links);
  out.resent_done_s = number(7 + links);
  out.dropped_transfers = number(8 + links);
  out.dropped_bytes = number(9 + links);
  out.stopped = number(10 + links) != 0;
  out.instructions = number(11 + links);
  out.completed = number(12 + links);
  out.last_completion_s = number(13 + links);
  out.traced = trace.has_value();
  out.spans.resize(spans);
  if (spans > 0) std::memcpy(out.spans.data(), bytes.data() + head * sizeof(double), spans * sizeof(models::TraceSpan));
  out.ok = true;
  return out;
}

std::string recovery_name(const Scenario& s) {
  for (const auto& [key, value] : job_fields().render(s.job)) {
    if (key == "recovery") return value;
  }
  return "";
}

// job.simulated_steps[K]'s trace: K counts the healthy step as 0.
std::string fault_trace_name(std::size_t index) { return fmt::format("trace-fault-{}.json", index + 1); }

bool link_kind(FaultKind k) { return k == FaultKind::link_down || k == FaultKind::ocs_port_down; }

}  // namespace

Scenario job_step_scenario(const Scenario& s) {
  if (!s.job.enabled) return s;
  Scenario step = s;
  step.workload.checkpoint.every_steps = 0;
  return step;
}

FaultSteps::FaultSteps(const Scenario& s, const Topology& topo, const ir::ProgramSet& programs,
                       std::optional<FaultTraceOptions> trace)
    : topo_(topo), reroute_(s.job.recovery == RecoveryPolicyKind::reroute) {
  // The fault on its trace's track: a chip's in the chip's process, a link's on the link's own track.
  const auto name_fault = [](FaultStep& step, const models::ConcreteFault& f) {
    step.fault_target = f.target();
    step.fault_name = fmt::format("{} {}", fault_kind_name(f.spec.kind), step.fault_target);
    if (f.spec.kind != FaultKind::link_down && f.spec.kind != FaultKind::ocs_port_down &&
        f.spec.kind != FaultKind::link_degraded) {
      step.fault_chip = f.chip.value();
    }
  };
  for (const FaultSpec& spec : s.faults.faults) {
    const models::ConcreteFault f = models::concrete_fault(spec, topo, s.seed);
    models::SimOptions o;
    switch (spec.kind) {
      case FaultKind::link_down:
      case FaultKind::ocs_port_down:
        if (!reroute_) continue;  // the other policies restart on a repaired slice
        o.failed.add_cable(topo, f.link);
        break;
      case FaultKind::link_degraded:
        o.degraded_links.push_back({f.link, spec.bandwidth_fraction, spec.added_latency, spec.bit_error_rate});
        break;
      case FaultKind::hbm_degraded: o.degraded_chips.push_back({f.chip, 1.0, spec.bandwidth_fraction}); break;
      case FaultKind::straggler: o.degraded_chips.push_back({f.chip, spec.clock_fraction, 1.0}); break;
      default: continue;
    }
    by_fault_[spec.index] = steps_.size();
    FaultStep step =
        simulate_in_child(s, programs, o, fmt::format("{} {}", f.target(), fault_kind_name(spec.kind)), trace);
    name_fault(step, f);
    if (spec.kind == FaultKind::link_degraded && step.ok) {
      const double factor = models::retransmission_factor(spec.bit_error_rate, s.fidelity.link_chunk);
      step.retransmitted_bytes = step.link_utilization.at(f.link.value()) * topo.link(f.link).bandwidth.value() *
                                 step.step_time_s * (factor - 1);
    }
    steps_.push_back(std::move(step));
  }
  const bool drawn_links = reroute_ && (s.faults.rates.link_down.value() > 0 || s.faults.rates.ocs_port_down.value() > 0);
  if (drawn_links) {
    for (int axis = 0; axis < topo.axes(); ++axis) {
      const auto link = topo.out_link(ChipId(0), axis, +1);
      if (!link) continue;
      models::SimOptions o;
      o.failed.add_cable(topo, *link);
      by_axis_[axis] = steps_.size();
      FaultStep step =
          simulate_in_child(s, programs, o, fmt::format("a {} link down (for drawn links)", "xyz"[axis]), trace);
      step.fault_target = fmt::format("chip 0 {}+", "xyz"[axis]);
      step.fault_name = "link_down " + step.fault_target;
      steps_.push_back(std::move(step));
    }
  }
  // The steps timed link faults land in. Where a fault lands depends on the step time and on the steps hit
  // before it, so the timeline is composed here with the healthy step simulated in a child (the run's own
  // simulation comes later, in the parent, and gives the same step: same inputs), each hit step simulated
  // when the timeline reaches it. run_job_timeline() then finds them at the same offsets.
  const bool timed_links = reroute_ && std::any_of(s.faults.faults.begin(), s.faults.faults.end(),
                                                   [](const FaultSpec& f) { return link_kind(f.kind); });
  const bool timed_chips = std::any_of(s.faults.faults.begin(), s.faults.faults.end(),
                                       [](const FaultSpec& f) { return f.kind == FaultKind::chip_down; });
  if (!timed_links && !timed_chips) return;
  const FaultStep healthy = simulate_in_child(s, programs, {}, "no fault (to place the faults in their steps)", std::nullopt);
  if (!healthy.ok) return;  // the run's own simulation reports the error
  models::JobCosts costs = job_costs(s, Seconds(healthy.step_time_s), *this);
  // The step in flight simulated with fault `f` at its tick (the options say how), up to its end or detection.
  const auto simulate_hit = [&](const models::ConcreteFault& f, Seconds offset, Seconds detection,
                                models::SimOptions o) {
    o.in_flight = s.job.in_flight;
    FaultStep step = simulate_in_child(s, programs, o,
                                       fmt::format("{} {} landing {} into its step", f.target(),
                                                   fault_kind_name(f.spec.kind), format_time(offset)),
                                       trace);
    name_fault(step, f);
    step.hit = true;
    step.fault_at_s = offset.value();
    step.detected_s = detection.value();
    return step;
  };
  costs.step_hit = [&](const models::ConcreteFault& f, Seconds offset, Seconds detection) -> std::optional<Seconds> {
    if (f.drawn || !link_kind(f.spec.kind)) return std::nullopt;
    models::SimOptions o;
    o.timed_links.push_back(models::TimedLinkFault{f.link, offset, detection});
    FaultStep step = simulate_hit(f, offset, detection, std::move(o));
    if (!step.ok) {
      std::fprintf(stderr, "tpusim: the job charges that step as a stall to the detection and a rerun instead\n");
      return std::nullopt;
    }
    hit_by_fault_[f.spec.index] = steps_.size();
    steps_.push_back(std::move(step));
    return Seconds(steps_.back().step_time_s);
  };
  // A chip stopping at its tick: simulated to the detection for the report; the timeline's cost is its own.
  costs.step_stopped = [&](const models::ConcreteFault& f, Seconds offset, Seconds detection) {
    models::SimOptions o;
    o.timed_chips.push_back(models::TimedChipFault{f.chip, offset, detection});
    FaultStep step = simulate_hit(f, offset, detection, std::move(o));
    if (!step.ok) {
      std::fprintf(stderr, "tpusim: the job's timeline does not need that step; it is left out of the report\n");
      return;
    }
    steps_.push_back(std::move(step));
  };
  (void)models::run_job(s, topo, costs);
}

std::optional<Seconds> FaultSteps::step_hit(const models::ConcreteFault& f, Seconds offset) const {
  if (f.drawn) return std::nullopt;
  const auto it = hit_by_fault_.find(f.spec.index);
  if (it == hit_by_fault_.end()) return std::nullopt;
  const FaultStep& step = steps_[it->second];
  // The same inputs give the same offset; a picosecond of slack for the sums in another order.
  if (std::abs(step.fault_at_s - offset.value()) > 1e-12) return std::nullopt;
  return Seconds(step.step_time_s);
}

std::vector<std::pair<std::string, const FaultStep*>> FaultSteps::link_maps() const {
  std::vector<std::pair<std::string, const FaultStep*>> out;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const FaultStep& f = steps_[i];
    if (!f.ok || std::none_of(f.link_utilization.begin(), f.link_utilization.end(), [](double u) { return u > 0; })) {
      continue;
    }
    out.emplace_back(fmt::format("links-fault-{}.svg", i + 1), &f);
  }
  return out;
}

std::vector<std::pair<std::string, const FaultStep*>> FaultSteps::traces() const {
  std::vector<std::pair<std::string, const FaultStep*>> out;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].ok && steps_[i].traced) out.emplace_back(fault_trace_name(i), &steps_[i]);
  }
  return out;
}

std::optional<std::size_t> FaultSteps::index_of(const models::ConcreteFault& f) const {
  if (!f.drawn) {
    const auto it = by_fault_.find(f.spec.index);
    if (it != by_fault_.end()) return it->second;
    return std::nullopt;
  }
  if (!reroute_ || !link_kind(f.spec.kind)) return std::nullopt;
  const auto it = by_axis_.find(topo_.link(f.link).axis);
  if (it != by_axis_.end()) return it->second;
  return std::nullopt;
}

Seconds FaultSteps::step_with(const models::ConcreteFault& f, Seconds healthy) const {
  const auto i = index_of(f);
  if (!i) return healthy;
  const FaultStep& s = steps_[*i];
  if (!s.ok) {
    throw std::runtime_error(fmt::format("the step with {} could not be simulated", s.what));
  }
  return Seconds(s.step_time_s);
}

models::JobCosts job_costs(const Scenario& s, Seconds step, const FaultSteps& fault_steps) {
  models::JobCosts costs;
  // One full checkpoint: the host writes the state of each of its chips (kernels::host_step_costs with N = 1).
  WorkloadSpec every_step = s.workload;
  every_step.checkpoint.every_steps = 1;
  const kernels::HostStepCosts host = kernels::host_step_costs(every_step, s.chip, s.pod);
  costs.step = step;
  costs.checkpoint_write = Seconds(host.checkpoint_seconds);
  costs.checkpoint_restore = Seconds(host.checkpoint_seconds);
  costs.checkpoint_bytes = Bytes(host.checkpoint_bytes);
  costs.step_with = [&fault_steps, step](const models::ConcreteFault& f) { return fault_steps.step_with(f, step); };
  costs.step_hit = [&fault_steps](const models::ConcreteFault& f, Seconds offset, Seconds /*detection*/) {
    return fault_steps.step_hit(f, offset);
  };
  return costs;
}

JobOutcome run_job_timeline(const Scenario& s, const Topology& topo, Seconds step, const FaultSteps& fault_steps) {
  JobOutcome out;
  out.costs = job_costs(s, step, fault_steps);
  for (const FaultStep& f : fault_steps.steps()) {
    if (f.hit) out.hit_steps.push_back(f);
  }
  if (s.job.duration.value() <= 0) {
    const int every = s.workload.checkpoint.every_steps;
    const double end = static_cast<double>(s.job.steps) * step.value() +
                       (every > 0 ? static_cast<double>((s.job.steps - 1) / every) * out.costs.checkpoint_write.value()
                                  : 0.0);
    Diagnostics diags;
    check_fault_times(s.faults, Seconds(end), diags);
    diags.throw_if_any();
  }
  out.result = models::run_job(s, topo, out.costs);
  return out;
}

void add_job_json(json& j, const Scenario& s, const JobOutcome& job, const FaultSteps& fault_steps) {
  const models::JobResult& r = job.result;
  json timeline = json::array();
  for (const models::FaultEvent& e : r.events) {
    timeline.push_back(json{{"at_s", e.fault.spec.at.value()},
                            {"kind", std::string(fault_kind_name(e.fault.spec.kind))},
                            {"target", e.fault.target()},
                            {"drawn", e.fault.drawn},
                            {"step", e.step},
                            {"detected_s", e.detected.value()},
                            {"recovery", e.recovery},
                            {"resumed_s", e.resumed.value()},
                            {"lost_work_s", e.lost_work.value()},
                            {"downtime_s", e.downtime.value()},
                            {"step_time_before_s", e.step_before.value()},
                            {"step_time_after_s", e.step_after.value()},
                            {"step_time_hit_s", e.step_hit.value()}});
  }
  j["faults"] = json{{"timeline", timeline}};
  json simulated = json::array();
  simulated.push_back(json{{"what", "healthy step"}, {"step_time_s", job.costs.step.value()}});
  for (std::size_t i = 0; i < fault_steps.steps().size(); ++i) {
    const FaultStep& f = fault_steps.steps()[i];
    double mean = 0, max = 0;
    for (double u : f.link_utilization) {
      mean += u;
      max = std::max(max, u);
    }
    if (!f.link_utilization.empty()) mean /= static_cast<double>(f.link_utilization.size());
    json step{{"what", f.what},
              {"step_time_s", f.step_time_s},
              {"link_utilization", json{{"mean", mean}, {"max", max}}},
              {"retransmitted_bytes_per_step", f.retransmitted_bytes}};
    if (f.ok && f.traced) step["trace"] = fault_trace_name(i);
    if (f.hit) {
      step["fault_in_step"] = json{{"at_s", f.fault_at_s},
                                   {"detected_s", f.detected_s},
                                   {"in_flight_policy", s.job.in_flight == InFlightPolicy::lose ? "lose" : "retransmit"},
                                   {"transfers_cut", f.transfers_cut},
                                   {"in_flight_bytes", f.in_flight_bytes},
                                   {"delivered_bytes", f.delivered_bytes},
                                   {"retransmitted_bytes", f.retransmitted_bytes},
                                   {"lost_bytes", f.lost_bytes},
                                   {"resent_done_s", f.resent_done_s}};
    }
    if (f.stopped) {
      step["fault_in_step"]["transfers_dropped"] = f.dropped_transfers;
      step["fault_in_step"]["dropped_bytes"] = f.dropped_bytes;
      step["progress"] = json{{"finished", false},
                              {"instructions", f.instructions},
                              {"completed", f.completed},
                              {"fraction", f.instructions > 0 ? f.completed / f.instructions : 1.0},
                              {"last_completion_s", f.last_completion_s}};
    }
    simulated.push_back(std::move(step));
  }
  const models::JobLosses& l = r.losses;
  j["job"] = json{{"steps", r.steps},
                  {"steps_done", r.steps_done},
                  {"failed", r.failed},
                  {"recovery", recovery_name(s)},
                  {"wall_s", r.wall.value()},
                  {"useful_s", r.useful.value()},
                  {"goodput", r.goodput},
                  {"losses_s", json{{"checkpoint", l.checkpoint.value()},
                                    {"lost_work", l.lost_work.value()},
                                    {"detection", l.detection.value()},
                                    {"repair", l.repair.value()},
                                    {"restart", l.restart.value()},
                                    {"reconfiguration", l.reconfiguration.value()},
                                    {"restore", l.restore.value()},
                                    {"slowdown", l.slowdown.value()}}},
                  {"checkpoints", r.checkpoints},
                  {"checkpoint_write_s", job.costs.checkpoint_write.value()},
                  {"checkpoint_restore_s", job.costs.checkpoint_restore.value()},
                  {"checkpoint_bytes_per_chip", job.costs.checkpoint_bytes.as_double()},
                  {"spare_cubes_left", r.spare_cubes_left},
                  {"ocs_remaps", r.ocs_remaps},
                  {"simulated_steps", simulated}};
}

void print_job(const Scenario& s, const JobOutcome& job, std::ostream& out) {
  const models::JobResult& r = job.result;
  const models::JobLosses& l = r.losses;
  out << fmt::format("\n  job: {} of {} steps{}, wall {}, goodput {:.2f}%\n", r.steps_done, r.steps,
                     r.failed ? " (FAILED)" : "", format_time(r.wall), 100 * r.goodput);
  out << fmt::format("    steps simulated in full: the healthy step ({}){}; the others are composed from them\n",
                     format_time(job.costs.step),
                     job.result.events.empty() ? "" : " and one per lasting fault (job.simulated_steps in summary.json)");
  if (s.workload.checkpoint.every_steps == 0) {
    out << "    no checkpoints (workload.checkpoint.every_steps is 0): a restart begins again from step 0\n";
  } else {
    out << fmt::format("    checkpoint every {} steps: write {}, restore {} ({} written)\n",
                       s.workload.checkpoint.every_steps, format_time(job.costs.checkpoint_write),
                       format_time(job.costs.checkpoint_restore), r.checkpoints);
  }
  const std::pair<const char*, Seconds> parts[] = {
      {"checkpoint", l.checkpoint}, {"lost work", l.lost_work}, {"detection", l.detection},
      {"repair", l.repair},         {"restart", l.restart},     {"reconfiguration", l.reconfiguration},
      {"restore", l.restore},       {"slowdown", l.slowdown}};
  for (const auto& [name, t] : parts) {
    if (t.value() > 0) {
      out << fmt::format("    lost to {:<16} {:>12}  {:.3f}%\n", name, format_time(t),
                         r.wall.value() > 0 ? 100 * t.value() / r.wall.value() : 0.0);
    }
  }
  for (const FaultStep& f : job.hit_steps) {
    if (f.stopped) {
      out << fmt::format(
          "    the step with {}: stopped; by the detection ({} into the step) the chips had completed {:.0f} of "
          "{:.0f} instructions ({:.2f}%{}); {:.0f} transfers to or from the chip dropped ({:.0f} B); the step's "
          "work since its start is lost\n",
          f.what, format_time(Seconds(f.detected_s)), f.completed, f.instructions,
          // Rounded down, so a step short of one instruction never reads as 100%.
          f.instructions > 0 ? std::floor(10000 * f.completed / f.instructions) / 100 : 100.0,
          f.completed > 0 ? fmt::format(", the last {} into the step", format_time(Seconds(f.last_completion_s)))
                          : std::string(),
          f.dropped_transfers, f.dropped_bytes);
      continue;
    }
    out << fmt::format(
        "    the step with {}: {} (healthy {}); {:.0f} transfers in flight on the cable, {:.0f} B: {:.0f} B "
        "delivered, {:.0f} B retransmitted, {:.0f} B lost{}\n",
        f.what, format_time(Seconds(f.step_time_s)), format_time(job.costs.step), f.transfers_cut, f.in_flight_bytes,
        f.delivered_bytes, f.retransmitted_bytes, f.lost_bytes,
        // Lost transfers go again in full at detection; say when only if there were any.
        f.lost_bytes > 0 ? fmt::format(" (sent again at detection, {} into the step)", format_time(Seconds(f.detected_s)))
                         : std::string());
  }
  if (r.events.empty()) return;
  out << fmt::format("  fault timeline ({} fault{}):\n", r.events.size(), r.events.size() == 1 ? "" : "s");
  out << fmt::format("    {:>12}  {:<14} {:<28} {:>8}  {:>12}  {:<22} {:>12} {:>12}\n", "at", "kind", "target", "step",
                     "detected", "recovery", "downtime", "lost work");
  constexpr std::size_t kShown = 20;
  for (std::size_t i = 0; i < r.events.size() && i < kShown; ++i) {
    const models::FaultEvent& e = r.events[i];
    out << fmt::format("    {:>12}  {:<14} {:<28} {:>8}  {:>12}  {:<22} {:>12} {:>12}\n", format_time(e.fault.spec.at),
                       fault_kind_name(e.fault.spec.kind), e.fault.target(), e.step, format_time(e.detected),
                       e.recovery.substr(0, 22), format_time(e.downtime), format_time(e.lost_work));
  }
  if (r.events.size() > kShown) out << fmt::format("    ... {} more in summary.json\n", r.events.size() - kShown);
}

}  // namespace tpusim::tools
