#include "random_faults.h"

#include <cmath>

namespace tpusim::models::job {

RandomFaults::RandomFaults(const Scenario& s, const Topology& topo) : topo_(topo), rng_(static_cast<std::uint64_t>(s.seed)) {
  for (std::uint32_t i = 0; i < topo.link_count(); i += 2) {  // 2c is cable c's + direction
    if (topo.link(LinkId(i)).ocs) optical_.push_back(LinkId(i));
  }
  const FaultRates& r = s.faults.rates;
  auto rate = [](std::size_t components, Seconds mtbf) {
    return mtbf.value() > 0 ? static_cast<double>(components) / mtbf.value() : 0.0;
  };
  kinds_[0] = rate(topo.chip_count(), r.chip_down);
  kinds_[1] = rate(topo.link_count() / 2, r.link_down);
  // Two OCS ports per optical cable.
  kinds_[2] = rate(2 * optical_.size(), r.ocs_port_down);
  kinds_[3] = rate(topo.host_count(), r.host_down);
  for (double k : kinds_) total_ += k;
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
  return f;
}

}  // namespace tpusim::models::job
