#pragma once
// What the collective plan tests share (collectives_test.cpp, collective_groups_test.cpp): the link numbers of
// their hand-built chips and the 16-chip ring both start from.
#include "../topology/specs.h"
#include "kernels_test_support.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/topology/topology.h"

namespace tpusim::kernels::testing {

using Algo = CollectiveAlgorithm;
using Kind = CollectiveKind;

inline constexpr double kB = 45e9;                    // link rate one way (v4, docs/hardware.md)
inline constexpr double kHop = 1e-6;                  // make_chip's hop latency
inline constexpr double kS = 1024.0 * 1024 * 1024;    // the closed forms' S: 1 GiB

// A 16-chip ring with wraparound, 2 links per chip at 45 GB/s.
inline Topology ring16() { return build_topology(test::make_pod({16}, {1}, {1}), test::make_chip("c", 2, 45)); }
inline Topology torus8x8() {
  return build_topology(test::make_pod({8, 8}, {1, 1}, {1, 1}), test::make_chip("c", 4, 45));
}

}  // namespace tpusim::kernels::testing
