// direct: every chip sends straight to every peer of its group in one step per phase; the network routes each
// send over several hops. Latency-optimal (one step, at most a diameter of hops) and the automatic all_to_all
// plan; on a torus with even axes DOR sends every tie (the opposite chip) the + way, so its all_to_all loads the
// + links up to 3/2 of ideal_time's bandwidth term (4-rings; 9/8 on 16-rings), which ring_bidirectional avoids.
// For reductions it loads links like an all_to_all of the buffer (about N/4 times the ring's bytes per link on
// a ring of N), so the automatic rule uses it only for small buffers and small groups. A step holds P - 1
// sends, so plans grow with the group: fine for a pod's all_to_all (8,959 sends on a v5p pod), not something
// to pick for large all-reduces.
#include "collectives/collective_algorithm.h"

namespace tpusim::kernels::detail {

namespace {

std::uint64_t group_size(const std::vector<GroupAxis>& axes) {
  std::uint64_t p = 1;
  for (const GroupAxis& a : axes) p *= static_cast<std::uint64_t>(a.length);
  return p;
}

// One step sending `bytes` to every peer, reducing `reduce` elements after it.
CollectiveStep to_every_peer(const std::vector<GroupAxis>& axes, std::uint64_t bytes, std::uint64_t reduce) {
  CollectiveStep step;
  for (const auto& offset : peer_offsets(axes)) {
    CollectiveSend s;
    s.offset = offset;
    s.bytes = bytes;
    step.sends.push_back(s);
  }
  step.reduce_elements = reduce;
  return step;
}

std::string unsupported(CollectiveKind kind, const std::vector<GroupAxis>& /*axes*/) {
  return kind == CollectiveKind::permute ? std::string(kPermuteHasOnePlan) : "";
}

PhasePlan phase(Phase p, const std::vector<GroupAxis>& axes, std::uint64_t elements, int dtype_bytes) {
  const std::uint64_t n = group_size(axes);
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  PhasePlan plan;
  if (p == Phase::reduce_scatter) {
    // Block j of the buffer goes to peer j; each chip adds the P - 1 blocks it receives to its own.
    const std::uint64_t block = ceil_div(elements, n);
    plan.steps.push_back(to_every_peer(axes, block * bytes, (n - 1) * block));
    plan.elements_out = block;
  } else {
    plan.steps.push_back(to_every_peer(axes, elements * bytes, 0));
    plan.elements_out = elements * n;
  }
  return plan;
}

std::vector<CollectiveStep> all_to_all(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                       int dtype_bytes) {
  const std::uint64_t block = ceil_div(elements, group_size(axes));
  return {to_every_peer(axes, block * static_cast<std::uint64_t>(dtype_bytes), 0)};
}

}  // namespace

AlgorithmVariant direct_algorithm() {
  AlgorithmVariant v;
  v.id = CollectiveAlgorithm::direct;
  v.name = "direct";
  v.unsupported = unsupported;
  v.phase = phase;
  v.all_to_all = all_to_all;
  return v;
}

}  // namespace tpusim::kernels::detail
