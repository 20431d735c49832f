#include "tools/src/job_run.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tools/src/readable.h"

namespace tpusim::tools {
namespace {

using json = nlohmann::ordered_json;

std::string recovery_name(const Scenario& s) {
  for (const auto& [key, value] : job_fields().render(s.job)) {
    if (key == "recovery") return value;
  }
  return "";
}

// A fault step's link utilization over its directed links: mean and max.
std::pair<double, double> link_load(const models::FaultStep& f) {
  double mean = 0, max = 0;
  for (double u : f.link_utilization) {
    mean += u;
    max = std::max(max, u);
  }
  if (!f.link_utilization.empty()) mean /= static_cast<double>(f.link_utilization.size());
  return {mean, max};
}

// job.simulated_steps[K]'s trace: K counts the healthy step as 0.
std::string fault_trace_name(std::size_t index) { return fmt::format("trace-fault-{}.json", index + 1); }

}  // namespace

std::vector<std::pair<std::string, const models::FaultStep*>> fault_link_maps(const models::FaultSteps& steps) {
  std::vector<std::pair<std::string, const models::FaultStep*>> out;
  for (std::size_t i = 0; i < steps.steps().size(); ++i) {
    const models::FaultStep& f = steps.steps()[i];
    if (!f.ok || std::none_of(f.link_utilization.begin(), f.link_utilization.end(), [](double u) { return u > 0; })) {
      continue;
    }
    out.emplace_back(fmt::format("links-fault-{}.svg", i + 1), &f);
  }
  return out;
}

LinkMapMarks fault_marks(const Topology& topo, const models::FaultStep& step) {
  LinkMapMarks marks;
  if (!step.fault_kind) return marks;
  const FaultKindInfo& kind = fault_info(*step.fault_kind);
  if (!fault_on_link(kind.kind)) {  // a chip, or a host's chip
    if (step.fault_chip) (kind.stops() ? marks.failed_chips : marks.degraded_chips).emplace_back(*step.fault_chip);
  } else if (step.fault_link) {
    if (kind.stops()) {  // the cable: both directions
      marks.failed_links.push_back(*step.fault_link);
      marks.failed_links.push_back(topo.link(*step.fault_link).reverse);
    } else {  // the one direction
      marks.degraded_links.push_back(*step.fault_link);
    }
  }
  return marks;
}

std::vector<std::pair<std::string, const models::FaultStep*>> fault_traces(const models::FaultSteps& steps) {
  std::vector<std::pair<std::string, const models::FaultStep*>> out;
  for (std::size_t i = 0; i < steps.steps().size(); ++i) {
    if (steps.steps()[i].ok && steps.steps()[i].traced) out.emplace_back(fault_trace_name(i), &steps.steps()[i]);
  }
  return out;
}

namespace {

// Planned faults the job never met: they fall at or after its end (the last step that fits in job.duration).
std::vector<const FaultSpec*> after_the_end(const Scenario& s, const models::JobResult& r) {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : s.faults.faults) {
    if (f.at.value() >= r.wall.value()) out.push_back(&f);
  }
  return out;
}

}  // namespace

std::optional<std::string> several_cables_note(const Scenario& s, const models::JobResult& r) {
  if (s.job.recovery != RecoveryPolicyKind::reroute || r.cables_down_at_most < 2) return std::nullopt;
  return fmt::format(
      "up to {} cables were down at once, but each step with a failed cable is simulated with that one cable "
      "alone (for a drawn link, chip 0's + link of its axis) and the job runs at the slowest of those steps: the "
      "step cost models one failed cable per axis, so the step time with several down is optimistic "
      "(docs/faults.md)",
      r.cables_down_at_most);
}

void add_job_json(json& j, const Scenario& s, const models::JobOutcome& job, const models::FaultSteps& fault_steps) {
  const models::JobResult& r = job.result;
  json timeline = json::array();
  for (const models::FaultEvent& e : r.events) {
    timeline.push_back(json{{"at_s", e.fault.spec.at.value()},
                            {"kind", std::string(fault_kind_name(e.fault.spec.kind))},
                            {"target", e.fault.target()},
                            {"drawn", e.fault.drawn},
                            {"landed_in", std::string(models::fault_landed_name(e.landed))},
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
  json after_end = json::array();
  for (const FaultSpec* f : after_the_end(s, r)) {
    after_end.push_back(json{{"index", f->index}, {"at_s", f->at.value()}});
  }
  if (!after_end.empty()) j["faults"]["after_the_end"] = std::move(after_end);
  json simulated = json::array();
  simulated.push_back(json{{"what", "healthy step"}, {"step_time_s", job.costs.step.value()}});
  for (std::size_t i = 0; i < fault_steps.steps().size(); ++i) {
    const models::FaultStep& f = fault_steps.steps()[i];
    const auto [mean, max] = link_load(f);
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
    if (f.progress.stopped) {
      step["fault_in_step"]["transfers_dropped"] = f.dropped_transfers;
      step["fault_in_step"]["dropped_bytes"] = f.dropped_bytes;
      step["progress"] =
          json{{"finished", false},
               {"simulated_to", s.job.stopped_step == StoppedStep::to_stop ? "stop" : "detection"},
               {"instructions", f.progress.instructions},
               {"completed", f.progress.completed},
               {"fraction", f.progress.instructions > 0 ? f.progress.completed / f.progress.instructions : 1.0},
               {"last_completion_s", f.progress.last_completion_s}};
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
  if (const std::optional<std::string> note = several_cables_note(s, r)) {
    j["job"]["cables_down_at_most"] = r.cables_down_at_most;
    j["job"]["notes"] = json::array({*note});
  }
}

namespace {
// A fault's time and the job's end as stdout prints them: with units at four digits, or, where those read alike
// (a fault in the job's last hundredth of a second), in seconds, the fault's time as written and the end to as
// many digits, at least as many as tell them apart.
std::pair<std::string, std::string> told_apart(double at_s, double end_s) {
  const auto time = [](double seconds) { return readable(seconds, Quantity::seconds); };
  if (time(at_s) != time(end_s)) return {time(at_s), time(end_s)};
  for (int digits = 5; digits <= 17; ++digits) {
    const std::string at = fmt::format("{:.{}g}", at_s, digits), end = fmt::format("{:.{}g}", end_s, digits);
    if (at != end && (std::stod(at) == at_s || digits == 17)) return {at + " s", end + " s"};
  }
  return {time(at_s), time(end_s)};
}

// A step's time against the healthy one: a change in percent, or a factor once it is twice as long or more.
std::string vs_healthy(double ratio) {
  return ratio >= 2 ? fmt::format("x{}", readable(ratio, Quantity::count)) : fmt::format("{:+.1f}%", 100 * (ratio - 1));
}
}  // namespace

void print_job(const Scenario& s, const models::JobOutcome& job, const models::FaultSteps& fault_steps,
               std::ostream& out) {
  const models::JobResult& r = job.result;
  const models::JobLosses& l = r.losses;
  const auto time = [](double seconds) { return readable(seconds, Quantity::seconds); };
  out << fmt::format("\n  job: {} of {} steps{}, wall {}, goodput {}\n", r.steps_done, r.steps,
                     r.failed ? " (FAILED)" : "", time(r.wall.value()), readable(r.goodput, Quantity::fraction));
  // Every step simulated in full, so that a fault's cost per step is read here, not dug out of summary.json.
  const double healthy = job.costs.step.value();
  out << fmt::format("    steps simulated in full ({}; the others are composed from them):\n",
                     fault_steps.steps().empty() ? "the healthy step only" : "job.simulated_steps in summary.json");
  // The step column is 54 wide, or as wide as the longest step's name, so that every row keeps its columns.
  std::size_t width = 54;
  for (const models::FaultStep& f : fault_steps.steps()) width = std::max(width, f.what.size());
  out << fmt::format("      {:<2}  {:<{}} {:>10} {:>10}  {}\n", "#", "step", width, "time", "vs healthy",
                     "links (mean / max)");
  out << fmt::format("      {:<2}  {:<{}} {:>10} {:>10}\n", 0, "healthy step", width, time(healthy), "");
  for (std::size_t i = 0; i < fault_steps.steps().size(); ++i) {
    const models::FaultStep& f = fault_steps.steps()[i];
    const auto [mean, max] = link_load(f);
    // A step a chip stopped in never finished: its time is how far it was simulated (to the stop or the
    // detection), not a step time to set against the healthy one.
    std::string against;
    if (f.ok && f.progress.stopped) {
      against = "stopped";
    } else if (f.ok && healthy > 0) {
      against = vs_healthy(f.step_time_s / healthy);
    }
    out << fmt::format("      {:<2}  {:<{}} {:>10} {:>10}  {}\n", i + 1, f.what, width,
                       f.ok ? time(f.step_time_s) : std::string("not run"), against,
                       f.link_utilization.empty()
                           ? std::string()
                           : fmt::format("{} / {}", readable(mean, Quantity::fraction), readable(max, Quantity::fraction)));
  }
  if (models::keeps_every_step(s)) {
    out << "    no checkpoints (the step trains nothing): every step done is kept; a fault loses only the step in "
           "flight (a restart runs it again)\n";
  } else if (s.workload.host.checkpoint.every_steps == 0) {
    out << "    no checkpoints (workload.checkpoint.every_steps is 0): a restart begins again from step 0\n";
  } else {
    out << fmt::format("    checkpoint every {} steps: write {}, restore {} ({} written)\n",
                       s.workload.host.checkpoint.every_steps, time(job.costs.checkpoint_write.value()),
                       time(job.costs.checkpoint_restore.value()), r.checkpoints);
  }
  const std::pair<const char*, Seconds> parts[] = {
      {"checkpoint", l.checkpoint}, {"lost work", l.lost_work}, {"detection", l.detection},
      {"repair", l.repair},         {"restart", l.restart},     {"reconfiguration", l.reconfiguration},
      {"restore", l.restore},       {"slowdown", l.slowdown}};
  for (const auto& [name, t] : parts) {
    if (t.value() > 0) {
      out << fmt::format("    lost to {:<16} {:>10}  {}\n", name, time(t.value()),
                         readable(r.wall.value() > 0 ? t.value() / r.wall.value() : 0.0, Quantity::fraction));
    }
  }
  for (const models::FaultStep& f : job.hit_steps) {
    if (f.progress.stopped) {
      const bool to_stop = s.job.stopped_step == StoppedStep::to_stop;
      out << fmt::format(
          "    the step with {}: stopped; by the {} ({} into the step) the chips had completed {:.0f} of "
          "{:.0f} instructions ({:.2f}%{}); {:.0f} transfers to or from the chip dropped ({}); the step's "
          "work since its start is lost\n",
          f.what, to_stop ? "stop" : "detection", time(to_stop ? f.fault_at_s : f.detected_s),
          f.progress.completed, f.progress.instructions,
          // Rounded down, so a step short of one instruction never reads as 100%.
          f.progress.instructions > 0 ? std::floor(10000 * f.progress.completed / f.progress.instructions) / 100
                                      : 100.0,
          f.progress.completed > 0 ? fmt::format(", the last {} into the step", time(f.progress.last_completion_s))
                                   : std::string(),
          f.dropped_transfers, readable(f.dropped_bytes, Quantity::bytes));
      continue;
    }
    out << fmt::format(
        "    the step with {}: {} (healthy {}); {:.0f} transfers in flight on the cable, {}: {} "
        "delivered, {} retransmitted, {} lost{}\n",
        f.what, time(f.step_time_s), time(healthy), f.transfers_cut,
        readable(f.in_flight_bytes, Quantity::bytes), readable(f.delivered_bytes, Quantity::bytes),
        readable(f.retransmitted_bytes, Quantity::bytes), readable(f.lost_bytes, Quantity::bytes),
        // Lost transfers go again in full at detection; say when only if there were any.
        f.lost_bytes > 0 ? fmt::format(" (sent again at detection, {} into the step)", time(f.detected_s))
                         : std::string());
  }
  if (const std::optional<std::string> note = several_cables_note(s, r)) out << "    note: " << *note << "\n";
  for (const FaultSpec* f : after_the_end(s, r)) {
    const auto [at, end] = told_apart(f->at.value(), r.wall.value());
    out << fmt::format("  faults[{}] at {} falls after the job's end ({}): not met\n", f->index, at, end);
  }
  if (r.events.empty()) return;
  out << fmt::format("  fault timeline ({} fault{}):\n", r.events.size(), r.events.size() == 1 ? "" : "s");
  // `landed in`: what the job was doing (a step, a checkpoint write, a restore, another fault's recovery).
  // The target and recovery columns widen to their longest cell among the rows shown (a multislice's drawn
  // target, "checkpoint_restart, found at the relaunch"), so no cell is cut and the columns after stay in line.
  constexpr std::size_t kShown = 20;
  const std::size_t shown = std::min(r.events.size(), kShown);
  std::size_t target_width = 28;
  std::size_t recovery_width = 22;
  for (std::size_t i = 0; i < shown; ++i) {
    target_width = std::max(target_width, r.events[i].fault.target().size());
    recovery_width = std::max(recovery_width, r.events[i].recovery.size());
  }
  constexpr const char* kRow = "    {:>12}  {:<14} {:<{}} {:>8}  {:<16}  {:>12}  {:<{}} {:>12} {:>12}\n";
  out << fmt::format(kRow, "at", "kind", "target", target_width, "step", "landed in", "detected", "recovery",
                     recovery_width, "downtime", "lost work");
  for (std::size_t i = 0; i < shown; ++i) {
    const models::FaultEvent& e = r.events[i];
    out << fmt::format(kRow, time(e.fault.spec.at.value()), fault_kind_name(e.fault.spec.kind), e.fault.target(),
                       target_width, e.step, models::fault_landed_name(e.landed), time(e.detected.value()),
                       e.recovery, recovery_width, time(e.downtime.value()), time(e.lost_work.value()));
  }
  if (r.events.size() > kShown) out << fmt::format("    ... {} more in summary.json\n", r.events.size() - kShown);
  // A fault that stops hardware in use while a checkpoint is written costs that checkpoint (docs/faults.md).
  const auto in_writes = std::count_if(r.events.begin(), r.events.end(), [](const models::FaultEvent& e) {
    return e.landed == models::FaultLanded::checkpoint_write && fault_stops(e.fault.spec.kind) &&
           e.recovery.rfind("not in use", 0) != 0;
  });
  if (in_writes > 0) {
    out << fmt::format("    {} fault{} stopped hardware during a checkpoint write: the write is lost (no step was "
                       "in flight to simulate); a restart goes back to the checkpoint before it, a reroute writes it "
                       "again\n",
                       in_writes, in_writes == 1 ? "" : "s");
  }
}

}  // namespace tpusim::tools
