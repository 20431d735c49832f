#pragma once
// Internal: the interface every collective algorithm implements (one collective_<name>.cpp each, without a
// header of its own), and the per-axis composition the ring-like algorithms share. The variants are listed
// explicitly, in CollectiveAlgorithm order, by collective_algorithms() in collective_plan.cpp. The public
// contract (semantics, decomposition, closed forms) is in tpusim/kernels/collectives.h.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/kernels/collectives.h"

namespace tpusim::kernels::detail {

// One participating axis of the pod (length > 1).
struct GroupAxis {
  int axis = 0;
  int length = 1;
  bool wraps = false;
};

enum class Phase : std::uint8_t { reduce_scatter, all_gather };

// In-pod steps of one phase for one chip. reduce_scatter: `elements` in, the chip's shard out (padded up);
// all_gather: the shard in, the whole gathered buffer out.
struct PhasePlan {
  std::vector<CollectiveStep> steps;
  std::uint64_t elements_out = 0;
};

struct AlgorithmVariant {
  CollectiveAlgorithm id = CollectiveAlgorithm::automatic;
  std::string_view name;
  // Empty when the variant can run `kind` over `axes` (never empty), else why not, in a few words naming
  // the offending axis (becomes the ConfigError's "found").
  std::string (*unsupported)(CollectiveKind kind, const std::vector<GroupAxis>& axes) = nullptr;
  // reduce_scatter / all_gather over non-empty `axes` (all_reduce = one then the other).
  PhasePlan (*phase)(Phase phase, const std::vector<GroupAxis>& axes, std::uint64_t elements,
                     int dtype_bytes) = nullptr;
  // all_to_all over non-empty `axes` (S/P elements to every peer); nullptr when the variant rejects it.
  std::vector<CollectiveStep> (*all_to_all)(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                            int dtype_bytes) = nullptr;
};

// The variants (one per .cpp).
[[nodiscard]] AlgorithmVariant ring_bidirectional_algorithm();
[[nodiscard]] AlgorithmVariant ring_unidirectional_algorithm();
[[nodiscard]] AlgorithmVariant halving_doubling_algorithm();
[[nodiscard]] AlgorithmVariant direct_algorithm();

// The registry: every variant, index i + 1 = CollectiveAlgorithm value (0 is `automatic`, not a variant).
[[nodiscard]] std::vector<AlgorithmVariant> collective_algorithms();

// One phase on one axis for one sub-buffer of `elements`, going in direction `dir` (+1 or -1): appends its
// steps to `out` (each with one send) and returns the elements the sub-buffer holds afterwards.
using AxisPhaseFn = std::uint64_t (*)(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements,
                                      int dtype_bytes, std::vector<CollectiveStep>& out);

// The multi-axis decomposition of collectives.h: `elements` cut into axes.size() x `directions` sub-buffers
// (rotation r = axis order starting at axes[r]; direction + for the first, - for the second), each run through
// `fn` axis by axis (reduce_scatter in rotated order, all_gather in the reverse), the step lists merged step by
// step. `directions` is 1 or 2.
[[nodiscard]] PhasePlan compose_per_axis(Phase phase, const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                         int dtype_bytes, int directions, AxisPhaseFn fn);

// The ring on one axis (defined with ring_unidirectional; ring_bidirectional runs it in both directions):
// reduce_scatter N - 1 steps each sending ceil(c / N) to dir x 1 and reducing what arrives (the shard is
// ceil(c / N)); all_gather N - 1 steps each forwarding one block of c (the result is N c).
std::uint64_t ring_axis_phase(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements, int dtype_bytes,
                              std::vector<CollectiveStep>& out);

// A send of `bytes` to `distance` along `axis` (taken modulo the axis length by the network model).
[[nodiscard]] CollectiveSend axis_send(int axis, int distance, std::uint64_t bytes);

// Every non-zero offset combination over `axes` (P - 1 of them; offsets in [0, N)), axis 0 fastest.
[[nodiscard]] std::vector<std::array<int, kMaxAxes>> peer_offsets(const std::vector<GroupAxis>& axes);

[[nodiscard]] inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace tpusim::kernels::detail
