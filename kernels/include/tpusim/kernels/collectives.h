#pragma once
// Collective algorithms as plans: the contract between the collective library (kernels/) and the network
// model (models/). A plan is SPMD and symmetric, like the programs: every participating chip executes the same
// list of steps, each step being a few concurrent sends to chips at fixed coordinate offsets (taken modulo the
// axis length, so on a mesh axis the "+1 of the last chip" is routed back along the line, which is how a ring
// is embedded in a line), followed by a reduction on the VPU. A chip starts step s+1 when its own sends of
// step s are delivered, the matching receives of step s have arrived, and its reduction is done; there is no
// global barrier, so steps pipeline across the pod as they do on hardware.
//
// Who does what: plan_collective() chooses the steps from the topology's shape (which axes take part, their
// lengths, wraparound), the operation, the size and the algorithm; it never routes. The network model turns
// each send into a route (DOR, or fault-aware) and moves the bytes over ICI links, or over the DCN for steps
// that cross pods.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/core/units.h"
#include "tpusim/topology/topology.h"

namespace tpusim::kernels {

// The registry of algorithms. Index 0 is "auto" (the default for the operation and topology); the IR stores
// the index (ir::Instruction::algorithm).
enum class CollectiveAlgorithm : std::uint8_t {
  automatic = 0,
  ring_bidirectional,    // per axis, data halved over both ring directions (bandwidth-optimal on a torus)
  ring_unidirectional,   // per axis, one direction only
  halving_doubling,      // recursive halving / doubling (log2 steps at distances 1, 2, 4, ...; power-of-two axes)
  direct,                // one step: every chip sends straight to every peer (latency-optimal, all-to-all)
};

[[nodiscard]] std::string_view algorithm_name(CollectiveAlgorithm a);
// Every registered name, index order ("auto", "ring_bidirectional", ...).
[[nodiscard]] std::vector<std::string> algorithm_names();
[[nodiscard]] std::optional<CollectiveAlgorithm> algorithm_by_name(std::string_view name);

// One send of a step: `bytes` to the chip at `offset` (per axis, applied modulo the axis length) in the same
// pod, or, when `pod_offset` != 0, to the chip with the same coordinates `pod_offset` pods away (DCN).
struct CollectiveSend {
  std::array<int, kMaxAxes> offset{};
  int pod_offset = 0;
  std::uint64_t bytes = 0;
};

struct CollectiveStep {
  std::vector<CollectiveSend> sends;  // concurrent; each chip receives the mirror image of these
  std::uint64_t reduce_elements = 0;  // elements each chip reduces on its VPU after the step's receives
};

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;  // the one chosen (never automatic)
  std::uint32_t axes_mask = 0;     // the axes taking part
  int participants = 0;            // chips in one group (product of the participating axis lengths x pods)
  std::uint64_t bytes_per_chip = 0;
  std::vector<CollectiveStep> steps;
  // Bandwidth-optimal closed form for this op on these axes (link-rate bound, plus hop latencies), for tests
  // and for the `ideal` column of reports.
  Seconds ideal_time;
  // Bus bandwidth convention (as in NCCL): bus_bytes / time; e.g. all-reduce moves 2 (n-1)/n x size per chip.
  double bus_factor = 1.0;
};

// Plans `kind` of `bytes_per_chip` (the input buffer of each chip) of `dtype` over the axes in `axes_mask`
// (bit i = axis i; 0 = every axis of length > 1), across every pod when the topology has several (a DCN stage).
// Throws ConfigError naming the algorithm when it cannot run on these axes (e.g. halving_doubling on a
// length that is not a power of two) with the algorithms that can in the hint.
[[nodiscard]] CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind,
                                             std::uint64_t bytes_per_chip, DType dtype, std::uint32_t axes_mask,
                                             CollectiveAlgorithm algorithm);

}  // namespace tpusim::kernels
