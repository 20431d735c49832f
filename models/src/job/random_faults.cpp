#include "random_faults.h"

#include <cmath>

namespace tpusim::models {
namespace {

// One direction of each optical cable (its two OCS ports fail with it).
std::vector<LinkId> optical_cables(const Topology& topo) {
  std::vector<LinkId> out;
  for (std::uint32_t i = 0; i < topo.link_count(); i += 2) {  // 2c is cable c's + direction
    if (topo.link(LinkId(i)).ocs) out.push_back(LinkId(i));
  }
  return out;
}

}  // namespace

std::vector<RandomFaultSource> random_fault_sources(const Scenario& s, const Topology& topo) {
  const FaultRates& r = s.faults.rates;
  auto source = [](FaultKind kind, std::size_t components, Seconds mtbf) {
    return RandomFaultSource{kind, components,
                             mtbf.value() > 0 ? static_cast<double>(components) / mtbf.value() : 0.0};
  };
  return {source(FaultKind::chip_down, topo.chip_count(), r.chip_down),
          source(FaultKind::link_down, topo.link_count() / 2, r.link_down),
          source(FaultKind::ocs_port_down, 2 * optical_cables(topo).size(), r.ocs_port_down),
          source(FaultKind::host_down, topo.host_count(), r.host_down)};
}

namespace job {

RandomFaults::RandomFaults(const Scenario& s, const Topology& topo)
    : topo_(topo), rng_(static_cast<std::uint64_t>(s.seed)), optical_(optical_cables(topo)) {
  const std::vector<RandomFaultSource> sources = random_fault_sources(s, topo);
  for (std::size_t k = 0; k < sources.size(); ++k) {
    kinds_[k] = sources[k].per_second;
    total_ += kinds_[k];
  }
}

double RandomFaults::uniform() { return (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53; }

std::optional<ConcreteFault> RandomFaults::next() {
  if (total_ <= 0) return std::nullopt;
  now_ += -std::log(uniform()) / total_;
  double pick = uniform() * total_;
  int kind = 0;
  while (kind < 3 && pick > kinds_[kind]) pick -= kinds_[kind++];
  while (kinds_[kind] <= 0) --kind;  // rounding at the top end
  auto index = [this](std::size_t n) {
    return static_cast<std::size_t>(std::min<double>(static_cast<double>(n) - 1, std::floor(uniform() * static_cast<double>(n))));
  };
  FaultSpec spec;
  spec.at = Seconds(now_);
  spec.target.random = true;
  ConcreteFault f;
  f.drawn = true;
  switch (kind) {
    case 0:
      spec.kind = FaultKind::chip_down;
      f.chip = ChipId(static_cast<std::uint32_t>(index(topo_.chip_count())));
      break;
    case 1: {
      spec.kind = FaultKind::link_down;
      f.link = LinkId(static_cast<std::uint32_t>(2 * index(topo_.link_count() / 2)));
      f.chip = topo_.link(f.link).src;
      break;
    }
    case 2:
      spec.kind = FaultKind::ocs_port_down;
      f.link = optical_[index(optical_.size())];
      f.chip = topo_.link(f.link).src;
      break;
    default:
      spec.kind = FaultKind::host_down;
      f.host = HostId(static_cast<std::uint32_t>(index(topo_.host_count())));
      f.chip = topo_.chips_of(f.host).front();
      break;
  }
  f.spec = spec;
  f.cube = cube_of(topo_, f.chip);
  f.pod = pod_of(topo_, f.chip);
  return f;
}

}  // namespace job
}  // namespace tpusim::models
