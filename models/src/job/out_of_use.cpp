// Hardware the job does not use for a while (out_of_use.h).
#include "out_of_use.h"

#include <algorithm>
#include <utility>

#include "random_faults.h"

namespace tpusim::models::job {
namespace {

std::uint32_t cable_of(const Topology& topo, LinkId link) {
  return std::min(link.value(), topo.link(link).reverse.value());
}

bool chip_kind(FaultKind k) { return fault_info(k).component == FaultComponent::chip; }
bool host_kind(FaultKind k) { return fault_info(k).component == FaultComponent::host; }

}  // namespace

OutOfUse out_of_use(const Topology& topo, const ConcreteFault& fault, bool swapped, double until, std::string why) {
  OutOfUse o;
  o.until = until;
  o.why = std::move(why);
  if (swapped) {
    const int pod = topo.coord(fault.chip).pod;
    for (std::uint32_t i = 0; i < topo.chip_count(); ++i) {
      if (topo.coord(ChipId(i)).pod == pod && cube_of(topo, ChipId(i)) == fault.cube) o.chips.emplace_back(i);
    }
    o.links = true;
  } else if (host_kind(fault.spec.kind)) {
    o.chips = topo.chips_of(fault.host);
    std::sort(o.chips.begin(), o.chips.end());
    o.host = true;
  } else if (chip_kind(fault.spec.kind)) {
    o.chips = {fault.chip};
  } else {
    o.cable = cable_of(topo, fault.link);
  }
  return o;
}

bool on(const Topology& topo, const OutOfUse& o, const ConcreteFault& f) {
  auto holds = [&o](ChipId c) { return std::binary_search(o.chips.begin(), o.chips.end(), c); };
  if (host_kind(f.spec.kind)) {
    const std::vector<ChipId> chips = topo.chips_of(f.host);
    return !chips.empty() && std::all_of(chips.begin(), chips.end(), holds);
  }
  if (chip_kind(f.spec.kind)) return holds(f.chip) && !o.host;
  return (o.cable && *o.cable == cable_of(topo, f.link)) || (o.links && holds(f.chip));
}

}  // namespace tpusim::models::job
