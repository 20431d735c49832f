#pragma once
// Hand-built pod and chip specs, and chips by coordinates, for the topology tests (the bundled YAML configs are tested elsewhere).
// Link rates are the one-direction figures of docs/hardware.md.
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/topology/topology.h"

namespace tpusim::test {

inline PodSpec make_pod(std::vector<int> shape, std::vector<int> wrap, std::vector<int> host_shape,
                        std::vector<int> cube = {}, int pods = 1, bool twisted = false) {
  PodSpec p;
  p.name = "test";
  p.chip = "test-chip";
  p.shape = std::move(shape);
  p.wraparound = std::move(wrap);
  p.host_shape = std::move(host_shape);
  p.cube = std::move(cube);
  p.pods = pods;
  p.twisted = twisted;
  return p;
}

inline ChipSpec make_chip(const std::string& name, int links, double link_gb_per_s, double dcn_gb_per_s = 0) {
  ChipSpec c;
  c.name = name;
  c.ici.links = links;
  c.ici.link_bandwidth = BytesPerSecond(link_gb_per_s * 1e9);
  c.ici.hop_latency = Seconds(1e-6);
  c.host.dcn_bandwidth = BytesPerSecond(dcn_gb_per_s * 1e9);
  return c;
}

// The chip at (x, y, z) of pod `pod`.
inline ChipId at(const Topology& t, int x, int y = 0, int z = 0, int pod = 0) {
  ChipCoord c;
  c.pod = pod;
  c.pos = {x, y, z};
  return t.chip_at(c);
}

}  // namespace tpusim::test
