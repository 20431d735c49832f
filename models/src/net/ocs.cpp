#include "ocs.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim::models::net {

OcsFabric::OcsFabric(const Topology& topo, Seconds reconfiguration, int spare_cubes)
    : ocs_per_pod_(topo.ocs_count() / std::max(1, topo.pods())),
      ports_used_(topo.ocs_ports_used()),
      ports_(topo.ocs_ports_used() > 0 ? topo.ocs_ports_used() + 2 * spare_cubes : 0),
      reconfiguration_(to_ticks(reconfiguration)),
      peer_(static_cast<std::size_t>(topo.ocs_count()), std::vector<std::int32_t>(static_cast<std::size_t>(ports_), kUnconnected)),
      ready_(static_cast<std::size_t>(topo.ocs_count()), std::vector<Tick>(static_cast<std::size_t>(ports_), 0)) {
  for (const Link& l : topo.links()) {
    if (!l.ocs) continue;
    auto& map = peer_[l.ocs->ocs.value()];
    map[l.ocs->src_port.value()] = static_cast<std::int32_t>(l.ocs->dst_port.value());
    map[l.ocs->dst_port.value()] = static_cast<std::int32_t>(l.ocs->src_port.value());
  }
}

void OcsFabric::check(OcsId ocs, PortId port) const {
  if (ocs.value() >= peer_.size() || port.value() >= static_cast<std::uint32_t>(ports_)) {
    throw std::out_of_range(fmt::format("OCS {} port {}: the pod has {} OCS of {} ports", ocs.value(), port.value(),
                                        peer_.size(), ports_));
  }
}

std::optional<PortId> OcsFabric::peer(OcsId ocs, PortId port, Tick now) const {
  check(ocs, port);
  const std::int32_t p = peer_[ocs.value()][port.value()];
  if (p == kUnconnected || ready_[ocs.value()][port.value()] > now) return std::nullopt;
  return PortId(static_cast<std::uint32_t>(p));
}

Tick OcsFabric::remap(OcsId ocs, PortId a, PortId b, Tick now) {
  check(ocs, a);
  check(ocs, b);
  if (a == b) throw std::invalid_argument(fmt::format("OCS {}: cannot connect port {} to itself", ocs.value(), a.value()));
  auto& map = peer_[ocs.value()];
  auto& ready = ready_[ocs.value()];
  const Tick up = now + reconfiguration_;
  for (const PortId p : {a, b}) {
    const std::int32_t old = map[p.value()];
    if (old != kUnconnected) {
      map[static_cast<std::size_t>(old)] = kUnconnected;
      ready[static_cast<std::size_t>(old)] = up;
    }
  }
  map[a.value()] = static_cast<std::int32_t>(b.value());
  map[b.value()] = static_cast<std::int32_t>(a.value());
  ready[a.value()] = up;
  ready[b.value()] = up;
  ++remaps_;
  return up;
}

Tick OcsFabric::swap_in_spare(int pod, int cube, int spare, Tick now) {
  const auto failed = static_cast<std::uint32_t>(2 * cube);
  const auto spare_port = static_cast<std::uint32_t>(ports_used_ + 2 * spare);
  Tick up = now;
  for (int o = pod * ocs_per_pod_; o < (pod + 1) * ocs_per_pod_; ++o) {
    const OcsId ocs(static_cast<std::uint32_t>(o));
    check(ocs, PortId(spare_port + 1));
    // Read both circuits before remapping: a cube spanning an axis is its own neighbour (+ face to - face).
    std::optional<PortId> peers[2];
    for (std::uint32_t face = 0; face < 2; ++face) peers[face] = peer(ocs, PortId(failed + face), kNever);
    for (std::uint32_t face = 0; face < 2; ++face) {
      if (!peers[face]) continue;
      std::uint32_t to = peers[face]->value();
      if (to == failed || to == failed + 1) {
        if (face == 1) continue;  // the self-circuit moved with face 0
        to = spare_port + (to - failed);
        peer_[ocs.value()][failed] = peer_[ocs.value()][failed + 1] = kUnconnected;
      }
      up = std::max(up, remap(ocs, PortId(spare_port + face), PortId(to), now));
    }
  }
  return up;
}

}  // namespace tpusim::models::net
