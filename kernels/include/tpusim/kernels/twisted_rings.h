#pragma once
// Rings that follow a twisted torus's links (kernels/README.md, "Twisted tori"). On a twisted torus the
// wraparound of a short axis moves L/2 along every long axis (topology.h), so the + neighbour of a ring's last
// member is the first member of another ring, one link away. A ring plan over a group that holds every such
// shifted ring (it spans every long axis whole, in lanes the shift keeps) sends along the short axes to the
// chip the links reach: each short-axis ring becomes a cycle through the shifted rings, every send one hop,
// and each chip still reduces (and gathers) every member of its group exactly once.
#include <array>
#include <cstdint>

#include "tpusim/kernels/collectives.h"

namespace tpusim::kernels {

// Whether `group` holds the rings a twisted torus's short-axis wraparounds shift onto: it spans every long axis
// whole, with strides dividing L/2. Where it does not, a short axis's ring does not close over the links: the
// group axis is a line (GroupAxis::wraps is false, kernels/README.md, "Twisted tori"). False when not twisted.
[[nodiscard]] bool holds_shifted_rings(const Topology& topo, const ir::CollectiveGroup& group);
// Whether a group axis spanning torus axis `axis` whole closes a ring over the links: the axis wraps, and on a
// twisted torus it is long or the group holds the shifted rings.
[[nodiscard]] bool closes_ring(const Topology& topo, const ir::CollectiveGroup& group, int axis);

// The torus axes (bit i = axis i) along which `plan`'s sends follow the twisted links: the short axes the
// group spans whole, when the topology is twisted, the plan is a ring all-reduce, reduce-scatter or all-gather
// with no cut axis, and the group spans every long axis whole with strides dividing L/2. 0 otherwise.
[[nodiscard]] std::uint32_t twisted_ring_axes(const Topology& topo, const CollectivePlan& plan,
                                              const ir::CollectiveGroup& group);

// group_destination, with the moves along the axes of `follow` (twisted_ring_axes) taken over the links: each
// crossing of such an axis's wraparound also moves L/2 along every long axis. follow = 0 is group_destination.
[[nodiscard]] ChipId group_destination(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip,
                                       const std::array<int, kMaxAxes>& offset, int pod_offset, std::uint32_t follow);

}  // namespace tpusim::kernels
