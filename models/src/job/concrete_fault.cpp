// A fault plan's entries made concrete on the pod (tpusim/models/job.h): the chip, link or OCS port a target
// names or a seeded draw picks, and the steps of a job given by its duration.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "random_faults.h"
#include "tpusim/models/job.h"

namespace tpusim::models {

std::string ConcreteFault::target() const {
  if (spec.target.random) {
    // The component drawn: a host, or a chip and (a link kind, degraded links too) the link leaving it.
    const FaultComponent component = fault_info(spec.kind).component;
    const std::string in_pod = pod >= 0 ? fmt::format(" in pod {}", pod) : std::string();
    if (component == FaultComponent::host) return fmt::format("random: host {}{}", host.value(), in_pod);
    return fmt::format("random: chip {}{}{}", chip.value(),
                       fault_on_link(spec.kind) ? fmt::format(" link {}", link.value()) : std::string(), in_pod);
  }
  return spec.target.str(pod >= 0);  // a multislice's targets name their pod
}

namespace job {

int cube_of(const Topology& topo, ChipId chip) {
  if (topo.cube().empty()) return -1;
  const ChipCoord c = topo.coord(chip);
  int cube = 0, stride = 1;
  for (int a = 0; a < topo.axes(); ++a) {
    const auto i = static_cast<std::size_t>(a);
    cube += c.pos[i] / topo.cube()[i] * stride;
    stride *= topo.shape()[i] / topo.cube()[i];
  }
  return cube;
}

int pod_of(const Topology& topo, ChipId chip) { return topo.pods() > 1 ? topo.coord(chip).pod : -1; }

}  // namespace job

namespace {

ConcreteFault draw_target(const FaultSpec& spec, std::int64_t seed, const Topology& topo) {
  // A stream of its own (seed mixed with the entry's position), so adding one does not move the others.
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(spec.index));
  auto pick = [&rng](std::size_t n) { return static_cast<std::uint32_t>((rng() >> 11) % std::max<std::size_t>(n, 1)); };
  ConcreteFault f;
  f.spec = spec;
  const FaultComponent component = fault_info(spec.kind).component;
  switch (component) {
    case FaultComponent::host:
      f.host = HostId(pick(topo.host_count()));
      f.chip = topo.chips_of(f.host).front();
      break;
    case FaultComponent::link:
    case FaultComponent::ocs_link: {
      std::vector<LinkId> links;
      for (std::uint32_t i = 0; i < topo.link_count(); ++i) {
        if (component == FaultComponent::link || topo.link(LinkId(i)).ocs) links.emplace_back(i);
      }
      // resolve_fault_plan refuses a random link or OCS fault on a pod without such links.
      if (links.empty()) throw std::logic_error("a random link fault on a pod with no link of its sort");
      f.link = links[pick(links.size())];
      f.chip = topo.link(f.link).src;
      break;
    }
    case FaultComponent::chip: f.chip = ChipId(pick(topo.chip_count())); break;
  }
  if (component != FaultComponent::host) f.host = topo.host_of(f.chip);
  f.cube = job::cube_of(topo, f.chip);
  f.pod = job::pod_of(topo, f.chip);
  return f;
}

}  // namespace

ConcreteFault concrete_fault(const FaultSpec& spec, const Topology& topo, std::int64_t seed) {
  if (spec.target.random) return draw_target(spec, seed, topo);
  ConcreteFault f;
  f.spec = spec;
  const FaultTarget& t = spec.target;
  // Coordinates and host indices are those within the target's pod (resolve_fault_plan checked it exists).
  if (fault_info(spec.kind).component == FaultComponent::host && t.host >= 0) {
    const std::size_t hosts_per_pod = topo.host_count() / static_cast<std::size_t>(std::max(1, topo.pods()));
    f.host = HostId(static_cast<std::uint32_t>(static_cast<std::size_t>(t.pod_index()) * hosts_per_pod +
                                               static_cast<std::size_t>(t.host)));
    f.chip = topo.chips_of(f.host).front();
  } else {
    ChipCoord c;
    c.pod = t.pod_index();
    for (std::size_t i = 0; i < t.chip.size() && i < c.pos.size(); ++i) c.pos[i] = t.chip[i];
    f.chip = topo.chip_at(c);
    f.host = topo.host_of(f.chip);
    if (t.axis >= 0) {
      const auto link = topo.out_link(f.chip, t.axis, t.sign);
      if (link) f.link = *link;
    }
  }
  f.cube = job::cube_of(topo, f.chip);
  f.pod = job::pod_of(topo, f.chip);
  return f;
}

std::string_view fault_landed_name(FaultLanded where) {
  switch (where) {
    case FaultLanded::step:
      return "step";
    case FaultLanded::checkpoint_write:
      return "checkpoint_write";
    case FaultLanded::restore:
      return "restore";
    case FaultLanded::recovery:
      return "recovery";
  }
  return "step";
}

void check_duration_holds_a_step(const Scenario& s, Seconds step) {
  if (s.job.given_in_steps() || s.job.duration.value() >= step.value()) return;
  const auto it = s.job.origins.find("duration");
  throw ConfigError({Diagnostic{it != s.job.origins.end() ? it->second.loc : SourceLoc{s.name}, "job.duration",
                                "the job is shorter than one step: no step fits in it",
                                fmt::format("at least the simulated step, {}", format_value(step)),
                                format_value(s.job.duration), "a longer job.duration, or job.steps"}});
}

std::int64_t job_steps(const Scenario& s, Seconds step, Seconds checkpoint_write) {
  if (s.job.given_in_steps()) return s.job.steps;
  check_duration_holds_a_step(s, step);
  const int every = s.workload.host.checkpoint.every_steps;
  const double per_step = step.value() + (every > 0 ? checkpoint_write.value() / every : 0.0);
  const double d = s.job.duration.value(), t = step.value();
  double steps = per_step > 0 ? d / per_step : 1.0;
  if (every > 0 && t > 0 && checkpoint_write.value() > 0) {
    // As many steps as fit, as the timeline runs them: `every` steps then a write, no write after the last step.
    // c whole intervals with their writes, then 1 .. every steps: c P + m T <= d.
    const double period = every * t + checkpoint_write.value();
    const double c = std::max(0.0, std::floor((d - t) / period));
    steps = c * every + std::min<double>(every, std::floor((d - c * period) / t));
  }
  if (steps >= 0x1p63) {  // an int64 step count cannot hold it (the cast would wrap)
    const auto it = s.job.origins.find("duration");
    throw ConfigError({Diagnostic{it != s.job.origins.end() ? it->second.loc : SourceLoc{s.name}, "job.duration",
                                  "the job has more steps than the simulator can count",
                                  fmt::format("at most {:.3g} steps of {} each", 0x1p63, format_value(Seconds(per_step))),
                                  fmt::format("{} = {:.3g} steps", format_value(s.job.duration), steps), ""}});
  }
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(steps));  // 1 when the step takes 0 s
}

}  // namespace tpusim::models
