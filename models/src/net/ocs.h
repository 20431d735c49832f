#pragma once
// The optical circuit switches of a pod (v4/v5p): each OCS holds a port map (which port's light goes to which
// port), initialised from the topology's optical links, and can remap a port pair, which takes
// PodSpec::ocs_reconfiguration during which both ports carry nothing. An optical ICI link behaves like an
// electrical one for bandwidth and latency while its circuit is up (the OCS is a passive mirror path; its
// insertion delay is inside the per-hop latency).
//
// Used by fault recovery (swap in a spare cube: remap the failed cube's ports to the spare's,
// models/src/job/recovery_spare_cube.cpp), between steps. A step holds none: its optical links are the
// topology's, and an ocs_port_down fault reaches them through the topology's port map (FaultSet::add_ocs_port).
// Spare cube s (0-based) has ports ports_used + 2s (+ face) and ports_used + 2s + 1 (- face) on every OCS,
// unconnected until remapped.
// Plain C++, no SystemC.
#include <cstdint>
#include <optional>
#include <vector>

#include "../ticks.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

class OcsFabric {
 public:
  OcsFabric(const Topology& topo, Seconds reconfiguration, int spare_cubes = 0);

  [[nodiscard]] int switches() const { return static_cast<int>(peer_.size()); }
  [[nodiscard]] int ports() const { return ports_; }  // per OCS, spares included
  [[nodiscard]] int ports_used() const { return ports_used_; }  // by the pod's own cubes
  // The port `port` of `ocs` is connected to, nullopt if unconnected or being reconfigured at `now`.
  [[nodiscard]] std::optional<PortId> peer(OcsId ocs, PortId port, Tick now) const;
  // Connects a <-> b on `ocs` (a != b), disconnecting their previous peers. Both ports (and the old peers)
  // carry nothing until the returned tick, now + reconfiguration; the old peers stay unconnected. Throws
  // std::out_of_range for an OCS or port the pod does not have.
  Tick remap(OcsId ocs, PortId a, PortId b, Tick now);
  // Moves every circuit of cube `cube`'s two face ports, on each OCS of pod `pod`, to spare cube `spare`'s
  // ports (a cube that is its own neighbour along an axis keeps that circuit, between the spare's ports).
  // The failed cube's ports end unconnected. Returns when the last circuit is up (all OCS switch in parallel:
  // now + reconfiguration). Throws std::out_of_range for a spare the fabric was not built with.
  Tick swap_in_spare(int pod, int cube, int spare, Tick now);
  [[nodiscard]] Tick reconfiguration() const { return reconfiguration_; }
  [[nodiscard]] std::uint64_t remaps() const { return remaps_; }

 private:
  static constexpr std::int32_t kUnconnected = -1;
  void check(OcsId ocs, PortId port) const;

  int ocs_per_pod_ = 0;
  int ports_used_ = 0;
  int ports_ = 0;
  Tick reconfiguration_ = 0;
  std::vector<std::vector<std::int32_t>> peer_;  // [ocs][port] -> port or kUnconnected
  std::vector<std::vector<Tick>> ready_;         // [ocs][port] -> tick the port's circuit is up
  std::uint64_t remaps_ = 0;
};

}  // namespace tpusim::models::net
