// halving_doubling: recursive halving (reduce-scatter) and recursive doubling (all-gather) per axis, log2 N
// steps instead of N - 1 (Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 2005). On a ring the partner of the textbook form (rank XOR d) is not a fixed offset, so
// this is the cyclic form, which is: reduce-scatter at distances d = 1, 2, ..., N/2, each chip sending to +d the
// half of its blocks congruent to rank + d modulo 2d and keeping those congruent to rank (after the step with
// distance d a chip holds the blocks = rank mod 2d, summed over ranks rank, rank - 1, ..., rank - 2d + 1);
// all-gather is the mirror image (d = N/2, ..., 1, doubling the data). Needs power-of-two axis lengths. Like
// ring_bidirectional the buffer is halved over the two directions (+d and -d). A distance-d send crosses d
// links, so every step loads each link with S/4 per direction: fewer steps than the ring, more bytes on the
// wire (log2 N x S/4 against (N-1)/N x S/2 per reduce-scatter); useful when latency dominates.
#include <fmt/format.h>

#include "collectives/collective_algorithm.h"

namespace tpusim::kernels::detail {

namespace {

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

std::string unsupported(CollectiveKind kind, const std::vector<GroupAxis>& axes) {
  // Bruck's log-step all-to-all would be this variant's counterpart; it is not implemented.
  if (kind == CollectiveKind::all_to_all) return "all_to_all (halving_doubling has no all-to-all plan)";
  if (kind == CollectiveKind::permute) return std::string(kPermuteHasOnePlan);
  for (const GroupAxis& a : axes) {
    if (!power_of_two(a.length)) {
      return fmt::format("axis {} of length {}, not a power of two", a.axis, a.length);
    }
  }
  return "";
}

std::uint64_t axis_phase(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements, int dtype_bytes,
                         std::vector<CollectiveStep>& out) {
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  if (phase == Phase::reduce_scatter) {
    for (int d = 1; d < axis.length; d *= 2) {
      const std::uint64_t half = ceil_div(elements, 2);
      CollectiveStep step;
      step.sends.push_back(axis_send(axis.axis, dir * d, half * bytes));
      step.reduce_elements = half;
      out.push_back(std::move(step));
      elements = half;
    }
    return elements;
  }
  for (int d = axis.length / 2; d >= 1; d /= 2) {
    CollectiveStep step;
    step.sends.push_back(axis_send(axis.axis, dir * d, elements * bytes));
    out.push_back(std::move(step));
    elements *= 2;
  }
  return elements;
}

PhasePlan phase(Phase p, const std::vector<GroupAxis>& axes, std::uint64_t elements, int dtype_bytes) {
  return compose_per_axis(p, axes, elements, dtype_bytes, 2, axis_phase);
}

}  // namespace

AlgorithmVariant halving_doubling_algorithm() {
  AlgorithmVariant v;
  v.id = CollectiveAlgorithm::halving_doubling;
  v.name = "halving_doubling";
  v.unsupported = unsupported;
  v.phase = phase;
  return v;
}

}  // namespace tpusim::kernels::detail
