// ring_unidirectional: per axis one ring in the + direction carrying the whole buffer (the textbook ring of
// Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 2009). Uses
// one direction of each ring link; the multi-axis decomposition is the one in collectives.h with D = 1.
#include "collective_algorithm.h"

namespace tpusim::kernels::detail {

std::uint64_t ring_axis_phase(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements, int dtype_bytes,
                              std::vector<CollectiveStep>& out) {
  const auto n = static_cast<std::uint64_t>(axis.length);
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  if (phase == Phase::reduce_scatter) {
    // Step i: send the partial sum of block (rank - i) and add the incoming block (rank - i - 1) to one's own.
    const std::uint64_t block = ceil_div(elements, n);
    for (std::uint64_t i = 1; i < n; ++i) {
      CollectiveStep step;
      step.sends.push_back(axis_send(axis.axis, dir, block * bytes));
      step.reduce_elements = block;
      out.push_back(std::move(step));
    }
    return block;
  }
  // Step i: forward the block received in step i - 1 (one's own in step 1).
  for (std::uint64_t i = 1; i < n; ++i) {
    CollectiveStep step;
    step.sends.push_back(axis_send(axis.axis, dir, elements * bytes));
    out.push_back(std::move(step));
  }
  return elements * n;
}

namespace {

std::string unsupported(CollectiveKind kind, const std::vector<GroupAxis>& /*axes*/) {
  return kind == CollectiveKind::all_to_all ? "all_to_all (only direct plans it)" : "";
}

PhasePlan phase(Phase p, const std::vector<GroupAxis>& axes, std::uint64_t elements, int dtype_bytes) {
  return compose_per_axis(p, axes, elements, dtype_bytes, 1, ring_axis_phase);
}

}  // namespace

AlgorithmVariant ring_unidirectional_algorithm() {
  AlgorithmVariant v;
  v.id = CollectiveAlgorithm::ring_unidirectional;
  v.name = "ring_unidirectional";
  v.unsupported = unsupported;
  v.phase = phase;
  return v;
}

}  // namespace tpusim::kernels::detail
