#pragma once
// The optical circuit switches of a pod (v4/v5p): each OCS holds a port map (which port's light goes to which
// port), initialised from the topology's optical links, and can remap a port pair, which takes
// PodSpec::ocs_reconfiguration during which both ports carry nothing. An optical ICI link behaves like an
// electrical one for bandwidth and latency while its circuit is up (the OCS is a passive mirror path; its
// insertion delay is inside the per-hop latency).
//
// Used by fault recovery (swap in a spare cube: remap the failed cube's ports to the spare's); the run itself
// only reads the map. Plain C++, no SystemC.
#include <cstdint>
#include <optional>
#include <vector>

#include "../ticks.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models::net {

class OcsFabric {
 public:
  OcsFabric(const Topology& topo, Seconds reconfiguration);

  [[nodiscard]] int switches() const { return static_cast<int>(peer_.size()); }
  [[nodiscard]] int ports() const { return ports_; }
  // The port `port` of `ocs` is connected to, nullopt if unconnected or being reconfigured at `now`.
  [[nodiscard]] std::optional<PortId> peer(OcsId ocs, PortId port, Tick now) const;
  // Connects a <-> b on `ocs` (a != b), disconnecting their previous peers. Both ports (and the old peers)
  // carry nothing until the returned tick, now + reconfiguration; the old peers stay unconnected. Throws
  // std::out_of_range for an OCS or port the pod does not have.
  Tick remap(OcsId ocs, PortId a, PortId b, Tick now);
  [[nodiscard]] Tick reconfiguration() const { return reconfiguration_; }
  [[nodiscard]] std::uint64_t remaps() const { return remaps_; }

 private:
  static constexpr std::int32_t kUnconnected = -1;
  void check(OcsId ocs, PortId port) const;

  int ports_ = 0;
  Tick reconfiguration_ = 0;
  std::vector<std::vector<std::int32_t>> peer_;  // [ocs][port] -> port or kUnconnected
  std::vector<std::vector<Tick>> ready_;         // [ocs][port] -> tick the port's circuit is up
  std::uint64_t remaps_ = 0;
};

}  // namespace tpusim::models::net
