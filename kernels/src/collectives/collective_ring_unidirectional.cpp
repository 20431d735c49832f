// ring_unidirectional: per axis one ring in the + direction carrying the whole buffer (the textbook ring of
// Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 2009). Uses
// one direction of each ring link; the multi-axis decomposition is the one in collectives.h with D = 1.
// All-to-all: per axis N - 1 store-and-forward steps to +1 (ring_axis_all_to_all), (N-1)/2 x S on the + link,
// about 4 times the load of the bidirectional ring's. Permute: the one plan there is (a single +1 send), and
// the automatic choice for it.
#include "collectives/collective_algorithm.h"

namespace tpusim::kernels::detail {

std::uint64_t ring_axis_phase(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements, int dtype_bytes,
                              std::vector<CollectiveStep>& out) {
  const auto n = static_cast<std::uint64_t>(axis.length);
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  if (axis.cut >= 0) {
    // The line (kernels/README.md, "Around failed links"): both chains at every step, whichever
    // direction this sub-buffer would have taken round the ring.
    const bool gather = phase == Phase::all_gather;
    const std::uint64_t block = gather ? elements : ceil_div(elements, n);
    for (std::uint64_t i = 1; i < n; ++i) {
      CollectiveStep step;
      for (const int d : {1, -1}) {
        CollectiveSend send = axis_send(axis.axis, d, block * bytes);
        send.chain = LineChain{static_cast<std::int8_t>(axis.axis), gather, static_cast<std::uint8_t>(i),
                               gather ? 0 : block};
        step.sends.push_back(send);
      }
      out.push_back(std::move(step));
    }
    return gather ? elements * n : block;
  }
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

std::uint64_t ring_axis_all_to_all(const GroupAxis& axis, bool both_directions, std::uint64_t elements,
                                   int dtype_bytes, std::vector<CollectiveStep>& out) {
  const auto n = static_cast<std::uint64_t>(axis.length);
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  const std::uint64_t block = ceil_div(elements, n);
  if (!both_directions) {
    // Step i: the blocks for distances i .. N-1 are in transit; the one for distance i stays at the receiver.
    for (std::uint64_t i = 1; i < n; ++i) {
      CollectiveStep step;
      step.sends.push_back(axis_send(axis.axis, 1, (n - i) * block * bytes));
      out.push_back(std::move(step));
    }
    return n * block;
  }
  const std::uint64_t h = (n - 1) / 2;  // whole blocks going each way
  const bool even = n % 2 == 0;
  const std::uint64_t half_plus = even ? ceil_div(block, 2) : 0;  // the opposite block, split
  const std::uint64_t half_minus = even ? block / 2 : 0;
  for (std::uint64_t i = 1; i <= n / 2; ++i) {
    const std::uint64_t whole = i <= h ? h - i + 1 : 0;
    CollectiveStep step;
    step.sends.push_back(axis_send(axis.axis, 1, (whole * block + half_plus) * bytes));
    step.sends.push_back(axis_send(axis.axis, -1, (whole * block + half_minus) * bytes));
    out.push_back(std::move(step));
  }
  return n * block;
}

namespace {

// compose_per_axis takes a plain function per axis; one adapter per direction mode.
std::uint64_t all_to_all_one_way(Phase /*phase*/, const GroupAxis& axis, int /*dir*/, std::uint64_t elements,
                                 int dtype_bytes, std::vector<CollectiveStep>& out) {
  return ring_axis_all_to_all(axis, false, elements, dtype_bytes, out);
}

std::uint64_t all_to_all_both_ways(Phase /*phase*/, const GroupAxis& axis, int /*dir*/, std::uint64_t elements,
                                   int dtype_bytes, std::vector<CollectiveStep>& out) {
  return ring_axis_all_to_all(axis, true, elements, dtype_bytes, out);
}

}  // namespace

std::vector<CollectiveStep> ring_all_to_all(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                            int dtype_bytes, bool both_directions) {
  // All-to-all neither shrinks nor grows the buffer, so the axis order of either phase would do.
  return compose_per_axis(Phase::reduce_scatter, axes, elements, dtype_bytes, 1,
                          both_directions ? all_to_all_both_ways : all_to_all_one_way)
      .steps;
}

namespace {

std::string unsupported(CollectiveKind /*kind*/, const std::vector<GroupAxis>& /*axes*/) { return ""; }

PhasePlan phase(Phase p, const std::vector<GroupAxis>& axes, std::uint64_t elements, int dtype_bytes) {
  return compose_per_axis(p, axes, elements, dtype_bytes, 1, ring_axis_phase);
}

std::vector<CollectiveStep> all_to_all(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                       int dtype_bytes) {
  return ring_all_to_all(axes, elements, dtype_bytes, false);
}

}  // namespace

AlgorithmVariant ring_unidirectional_algorithm() {
  AlgorithmVariant v;
  v.id = CollectiveAlgorithm::ring_unidirectional;
  v.name = "ring_unidirectional";
  v.unsupported = unsupported;
  v.phase = phase;
  v.all_to_all = all_to_all;
  return v;
}

}  // namespace tpusim::kernels::detail
