#pragma once
// Translation classes of a pod's chips: which chips provably run the same history, so that one representative
// per class is simulated and the others mirror it (mirror/mirroring.h, models/README.md "Mirrored chips").
//
// A translation tau of the torus by p_d along dimension d (the pod index is one more dimension in a
// multislice) is an automorphism of the whole system when it maps
//   - the topology onto itself: the axis wraps (a mesh axis has no symmetry: p_d = its length), the torus is
//     not twisted, and across pods the host blocks (which share a DCN NIC) onto host blocks;
//   - every chip onto a chip of the same role (program);
//   - every group of every ICI instruction some chip runs onto a group of the same shape, with the member
//     numbering shifted by a constant along each axis. Along axis d a group of size s and stride t spans
//     blocks of s x t chips: a block shorter than the axis is kept whole only by a multiple of s x t (member
//     indices then unchanged); a block that is the whole (wrapping) axis by any multiple of t (the members
//     rotate, which the plans' offsets modulo s do not see: kernels/README.md, "Groups"). A point-to-point
//     instruction without a group uses the whole axes.
// Per dimension p_d is the smallest divisor of its length satisfying all of these; the classes are the chips
// modulo the lattice they generate (their product in number), and a class's representative is its lowest id.
//
// This only proposes the classes: the mirrored run verifies that each mirror receives exactly what its
// representative receives and falls back to a full simulation otherwise (mirror/mirroring.h).
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"

namespace tpusim::models {

struct TranslationClasses {
  // Period per torus axis (1 past topo.axes()) and along the pods.
  std::array<int, kMaxAxes> period{1, 1, 1};
  int pod_period = 1;
  std::vector<std::uint32_t> representative;  // [chip]: the lowest chip of its class
  std::uint32_t classes = 0;

  [[nodiscard]] bool mirrored(std::uint32_t chip) const { return representative[chip] != chip; }
};

// The classes of `topo`'s chips for `programs` (every chip its own class when no translation but the identity
// qualifies).
[[nodiscard]] TranslationClasses translation_classes(const Topology& topo, const ir::ProgramSet& programs);

}  // namespace tpusim::models
