// ring_bidirectional: per axis two rings, one each way, each carrying half the buffer, so both directions of
// every ring link are busy: the bandwidth-optimal all-reduce on a torus, 2 (N-1)/N x S / (2B) per axis
// (docs/hardware.md, "Useful derived checks"). The automatic choice for all_reduce, reduce_scatter and all_gather
// at every size. Decomposition in collectives.h with D = 2.
// All-to-all: per axis floor(N/2) neighbour steps, each block going the shorter way round (ring_axis_all_to_all);
// with only one-hop sends on distinct links it meets ideal_time exactly on a torus (collectives.h), where
// direct loses to DOR sending every tie the + way.
#include "collectives/collective_algorithm.h"

namespace tpusim::kernels::detail {

namespace {

// A permute here is the exchange of a bidirectional ring step (kernels/README.md, "Where the ring lies"): half to each
// ring neighbour of the first participating axis, so it needs an axis in the pod.
std::string unsupported(CollectiveKind kind, const std::vector<GroupAxis>& axes) {
  if (kind == CollectiveKind::permute && axes.empty()) return "permute across pods only (the DCN stage runs one way)";
  return "";
}

PhasePlan phase(Phase p, const std::vector<GroupAxis>& axes, std::uint64_t elements, int dtype_bytes) {
  return compose_per_axis(p, axes, elements, dtype_bytes, 2, ring_axis_phase);
}

std::vector<CollectiveStep> all_to_all(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                       int dtype_bytes) {
  return ring_all_to_all(axes, elements, dtype_bytes, true);
}

}  // namespace

AlgorithmVariant ring_bidirectional_algorithm() {
  AlgorithmVariant v;
  v.id = CollectiveAlgorithm::ring_bidirectional;
  v.name = "ring_bidirectional";
  v.unsupported = unsupported;
  v.phase = phase;
  v.all_to_all = all_to_all;
  return v;
}

}  // namespace tpusim::kernels::detail
