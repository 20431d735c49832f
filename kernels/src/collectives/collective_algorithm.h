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

// One participating axis of the group's virtual shape (length > 1): `length` members `stride` chips apart
// along torus axis `axis`; `wraps` when the members close a ring over the torus wraparound (collectives.h,
// "Groups"). Plans use length only; the closed forms also wraps and stride.
struct GroupAxis {
  int axis = 0;
  int length = 1;
  bool wraps = false;
  int stride = 1;
  int cut = -1;  // >= 0: a ring cut after this member by a failed link, planned as a line (collectives.h)
};

// plan_collective with the ring of torus axis a cut after member cut[a] (-1: not cut); the cut applies to a
// participating group axis that wraps, or to a line (a group axis that does not wrap) cut after its last
// member, which plans it as a line (kernels/README.md, "auto"); only the ring algorithms use it
// (kernels/README.md, "Around failed links").
[[nodiscard]] CollectivePlan plan_collective_cut(const Topology& topo, CollectiveKind kind,
                                                 std::uint64_t bytes_per_chip, DType dtype,
                                                 const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm,
                                                 const std::array<int, kMaxAxes>& cut);

// The automatic choice for all_reduce, reduce_scatter and all_gather (collective_choice.cpp): the candidate
// plan with the smallest estimate_collective_time, which it carries in CollectivePlan::estimate.
[[nodiscard]] CollectivePlan plan_automatic(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip,
                                            DType dtype, const ir::CollectiveGroup& group);

// The longest axis a plan may run as a line (LineChain::step counts its steps in 8 bits).
inline constexpr int kMaxLineLength = 256;

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
  // the offending axis or operation (becomes the ConfigError's "found").
  std::string (*unsupported)(CollectiveKind kind, const std::vector<GroupAxis>& axes) = nullptr;
  // reduce_scatter / all_gather over non-empty `axes` (all_reduce = one then the other).
  PhasePlan (*phase)(Phase phase, const std::vector<GroupAxis>& axes, std::uint64_t elements,
                     int dtype_bytes) = nullptr;
  // all_to_all over non-empty `axes` (S/P elements to every peer); nullptr when the variant rejects it.
  std::vector<CollectiveStep> (*all_to_all)(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                            int dtype_bytes) = nullptr;
};

// The `unsupported` answer of halving_doubling and direct for permute: a +1 shift has one plan (collectives.h
// says why there is no alternative), named ring_unidirectional; ring_bidirectional's is the two-way exchange.
inline constexpr std::string_view kPermuteHasOnePlan =
    "permute (a +1 shift has one plan, ring_unidirectional; half to each neighbour is ring_bidirectional)";

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
// ceil(c / N)); all_gather N - 1 steps each forwarding one block of c (the result is N c). On a cut axis
// the same step counts and blocks as the two chains of the line, each step sending the block both ways
// (LineChain sends), each arriving block reduced by its receiver (LineChain::reduce_elements).
std::uint64_t ring_axis_phase(Phase phase, const GroupAxis& axis, int dir, std::uint64_t elements, int dtype_bytes,
                              std::vector<CollectiveStep>& out);

// The ring all-to-all on one axis of length N for one sub-buffer of `elements`, cut into N blocks of
// b = ceil(elements / N) (block j is bound for the chip j steps ahead): appends its steps to `out` (no
// reductions) and returns N b, the elements the chip holds afterwards. Each step, every chip sends to its ring
// neighbour the blocks still in transit and keeps the one that has arrived.
//   both_directions = false: N - 1 steps, step i sending N - i blocks to +1 (N (N-1) / 2 blocks in all);
//   both_directions = true:  a block goes the shorter way round: distances 1 .. h = floor((N-1)/2) to +1,
//     as many to -1, and for even N the opposite block (distance N/2) is split, ceil(b/2) + and floor(b/2) -.
//     floor(N/2) steps, step i sending max(0, h - i + 1) blocks, plus the opposite half-block for even N, to
//     each of +1 and -1: N^2/8 blocks per direction for even N, (N^2 - 1)/8 for odd N.
std::uint64_t ring_axis_all_to_all(const GroupAxis& axis, bool both_directions, std::uint64_t elements,
                                   int dtype_bytes, std::vector<CollectiveStep>& out);

// The multi-axis ring all-to-all (collectives.h): `elements` cut into axes.size() sub-buffers, sub-buffer r
// exchanged axis by axis in the rotated order axes[r], axes[r+1], ... with ring_axis_all_to_all, the step lists
// merged step by step (compose_per_axis with one direction and the reduce-scatter axis order).
[[nodiscard]] std::vector<CollectiveStep> ring_all_to_all(const std::vector<GroupAxis>& axes, std::uint64_t elements,
                                                          int dtype_bytes, bool both_directions);

// A send of `bytes` to `distance` along `axis` (taken modulo the axis length by the network model).
[[nodiscard]] CollectiveSend axis_send(int axis, int distance, std::uint64_t bytes);

// Every non-zero offset combination over `axes` (P - 1 of them; offsets in [0, N)), axis 0 fastest.
[[nodiscard]] std::vector<std::array<int, kMaxAxes>> peer_offsets(const std::vector<GroupAxis>& axes);

[[nodiscard]] inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace tpusim::kernels::detail
