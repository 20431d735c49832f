#pragma once
// Collective algorithms as plans: the contract between the collective library (kernels/) and the network
// model (models/). A plan is SPMD: every chip of a group runs the same list of steps, each a few concurrent
// sends to chips at fixed offsets in group space (members modulo the group's size, pods modulo `pods`),
// followed by a reduction on the VPU. A chip starts step s+1 when its own sends of step s are delivered, the
// matching receives have arrived and its reduction is done; there is no global barrier.
// plan_collective() chooses the steps from the group's shape, the operation, the size and the algorithm; it
// never routes. The network model routes each send (DOR, or around faults) over ICI links, or the DCN for
// steps across pods.
// `bytes_per_chip` is each chip's input: all_reduce S -> S, reduce_scatter S -> S/n, all_gather S -> n S,
// all_to_all S -> S, permute S -> S; whole elements of the dtype, uneven splits padded up (ceil).
// The algorithms, their closed forms, the automatic choice, groups, the stages across pods and the plans
// around failed links are derived in kernels/README.md, "Collectives".
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/core/units.h"
#include "tpusim/kernels/program.h"
#include "tpusim/topology/routing.h"
#include "tpusim/topology/topology.h"

namespace tpusim::kernels {

static_assert(ir::kGroupAxes == kMaxAxes, "a collective group describes every torus axis");

// The registry of algorithms (their ids: ir::CollectiveAlgorithm, kernels/program.h, which an instruction
// stores). Index 0 is "auto" (the default for the operation and topology).
using CollectiveAlgorithm = ir::CollectiveAlgorithm;

[[nodiscard]] std::string_view algorithm_name(CollectiveAlgorithm a);
// Every registered name, index order ("auto", "ring_bidirectional", ...).
[[nodiscard]] std::vector<std::string> algorithm_names();
[[nodiscard]] std::optional<CollectiveAlgorithm> algorithm_by_name(std::string_view name);

// A send of a chain on a group axis planned as a line (CollectivePlan::cut; "Re-planned around failed links"
// above). Not every chip sends it: chain_sends() says which do at this step.
struct LineChain {
  std::int8_t axis = -1;   // the group axis the chain runs along; -1: an ordinary send, every chip sends it
  bool gather = false;     // broadcast chain (all-gather) rather than reduce chain (reduce-scatter)
  std::uint8_t step = 0;   // 1-based step within the chain's phase
  // Elements the receiver reduces when this send arrives (in addition to the step's reduce_elements, which
  // every chip reduces): a chain send reaches only some chips, and a chip may receive both chains.
  std::uint64_t reduce_elements = 0;
  // Same chain step (sends of the same chain step to the same offset are merged, their reductions summed).
  [[nodiscard]] bool same_step(const LineChain& o) const { return axis == o.axis && gather == o.gather && step == o.step; }
};

// Whether the chip at `position` (0 = the first member after the cut in the send's direction, length - 1 =
// the last, just before the cut) sends a chain send of `chain` on a line of `length` members. The reduce
// chain: position p sends at step t iff p < t; the broadcast chain: iff p >= t - 1; the last member never
// sends (its next is across the cut).
[[nodiscard]] bool chain_sends(const LineChain& chain, int position, int length);
// The position along a line of `length` members cut between member `cut` and member cut + 1 (mod length) of
// member `member`, for a send in `direction` (+1 or -1): the members are numbered from the one after the cut.
[[nodiscard]] int chain_position(int member, int cut, int length, int direction);

// One send of a step: `bytes` to the chip at `offset` (per axis, applied modulo the axis length) in the same
// pod, or, when `pod_offset` != 0, to the chip with the same coordinates `pod_offset` pods away (DCN).
struct CollectiveSend {
  std::array<int, kMaxAxes> offset{};
  int pod_offset = 0;
  std::uint64_t bytes = 0;
  LineChain chain;  // set on the sends of an axis planned as a line
};

struct CollectiveStep {
  std::vector<CollectiveSend> sends;  // concurrent; each chip receives the mirror image of these
  std::uint64_t reduce_elements = 0;  // elements each chip reduces on its VPU after the step's receives
};

// The rings of a group axis planned as a line that a failed cable cuts (CollectivePlan::ring_cuts): the rings
// along torus axis `axis` through the chips with `member`'s coordinates on the other axes and its pod (one per
// lane of a strided group axis: the cable lies on each lane's ring), cut at the cable between torus
// coordinates `cable` and cable + 1 (modulo the axis length n). Lane l of stride s (the members at
// l, l + s, ...) is cut after member ((cable - l) mod n) / s: the hop from it to the next crosses the cable.
struct RingCut {
  int axis = 0;
  ChipId member;
  int cable = 0;
};

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;  // the one chosen (never automatic)
  std::uint32_t axes_mask = 0;     // the axes taking part
  int participants = 0;            // chips in one group (product of the participating axis lengths x pods)
  std::uint64_t bytes_per_chip = 0;
  std::vector<CollectiveStep> steps;
  // Bandwidth-optimal closed form for this op on these axes (link-rate bound, plus the hop latencies of the
  // ring schedule), for tests and for the `ideal` column of reports. Not a lower bound on small buffers: a
  // latency-optimal plan (direct: one step per phase, at most a diameter of hops) can beat it there.
  Seconds ideal_time;
  // Bus bandwidth convention (as in NCCL): bus_bytes / time; e.g. all-reduce moves 2 (n-1)/n x size per chip.
  double bus_factor = 1.0;
  // Planned around failed links (the plan_collective overload with a FaultSet), or a line the automatic choice
  // planned: per torus axis, -1, or the group member after which the axis's ring is cut (the axis runs as a
  // line, LineChain sends; length - 1 on an axis that does not wrap); `replan` says which alternative the
  // fault planner chose and `estimate` its alpha-beta network time (plan_network_time), or, for the automatic
  // choice, the chosen candidate's estimate_collective_time.
  std::array<int, kMaxAxes> cut{-1, -1, -1};
  // The rings of a cut axis that the fault planner cut at a failed cable of their own (each ring's line starts
  // after its failed cable, so none crosses it); the other rings of the axis are cut after member cut[axis]
  // (line_cut() says which applies to a chip).
  std::vector<RingCut> ring_cuts;
  enum class Replan : std::uint8_t { none, detour, line } replan = Replan::none;
  Seconds estimate;
};

// The group of whole torus axes `axes_mask` (bit i = axis i; 0 = every axis) across every pod: what an
// instruction's mesh_axes names. Throws ConfigError (key workload.model.axes) for an axis the topology lacks.
[[nodiscard]] ir::CollectiveGroup whole_axes_group(const Topology& topo, std::uint32_t axes_mask);
// "size 4x1x1, stride 4x1x1, 1 pod(s)", for messages and reports.
[[nodiscard]] std::string describe_group(const ir::CollectiveGroup& group);
// The chip `offset` members on (per axis, modulo the group's size) from `chip` in its group, or, when
// pod_offset != 0, the chip with its coordinates pod_offset pods on (modulo the group's pods) ("Groups").
[[nodiscard]] ChipId group_destination(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip,
                                       const std::array<int, kMaxAxes>& offset, int pod_offset);
// The member index of `chip` along torus axis `axis` of its group.
[[nodiscard]] int group_member(const Topology& topo, const ir::CollectiveGroup& group, ChipId chip, int axis);
// The member after which the line of `chip` along torus axis `axis` of a plan with that axis cut
// (CollectivePlan::cut >= 0) is cut: its ring's own cut (CollectivePlan::ring_cuts), else cut[axis].
[[nodiscard]] int line_cut(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group,
                           ChipId chip, int axis);
// The position of `chip` along the line of the chain send `send` (send.chain.axis >= 0) of `plan`:
// chain_position of its member, its line's cut (line_cut) and the send's direction.
[[nodiscard]] int line_position(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group,
                                ChipId chip, const CollectiveSend& send);
// Chips in one group of this shape (throws as plan_collective for a group that does not fit).
[[nodiscard]] int group_participants(const Topology& topo, const ir::CollectiveGroup& group);

// Plans `kind` of `bytes_per_chip` (the input buffer of each chip) of `dtype` over the group of whole axes
// `axes_mask` (whole_axes_group), across every pod when the topology has several (a DCN stage).
// Throws ConfigError naming the algorithm when it cannot run on these axes (e.g. halving_doubling on a
// length that is not a power of two) with the algorithms that can in the hint.
// Also throws ConfigError (key workload.model.axes) for an axis the topology does not have, and (key
// chip.host.dcn_bandwidth) for a multi-pod plan on a chip without DCN bandwidth. An empty group (no axis of
// length > 1, one pod) or zero bytes gives a plan without steps.
[[nodiscard]] CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind,
                                             std::uint64_t bytes_per_chip, DType dtype, std::uint32_t axes_mask,
                                             CollectiveAlgorithm algorithm);
// The same over any group (Groups above). Also throws ConfigError (key `group`) for a group that does not
// tile the topology: a zero size or stride, members on an axis the pod lacks, size x stride not dividing the
// axis length, a pod count not dividing the slice's.
[[nodiscard]] CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind,
                                             std::uint64_t bytes_per_chip, DType dtype,
                                             const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm);

// The same, planned for the surviving topology when `failed` holds links of a ring the group runs over
// ("Re-planned around failed links" above): the fastest, by plan_network_time, of the ring plan (its sends
// through a failed link detour on the router's surviving path) and the plans with such axes cut into lines
// (each cut ring after one of its failed cables), with `estimate` its time. The plan without faults (or with
// faults that touch no participating ring) is plan_collective's.
[[nodiscard]] CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind,
                                             std::uint64_t bytes_per_chip, DType dtype,
                                             const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm,
                                             const FaultSet& failed);
// The alpha-beta network time of `plan` over `group` with `failed` links and chips: every chip's sends of each
// step (chain sends only where chain_sends() says) routed by the fault-aware router, the step taking
// (the most bytes any link carries in it) / link bandwidth + (its longest route's hops) x hop latency; the
// steps summed (lockstep; the DCN steps, the reductions and the runtime's overheads left out). nullopt when
// a send has no surviving route.
[[nodiscard]] std::optional<Seconds> plan_network_time(const Topology& topo, const CollectivePlan& plan,
                                        const ir::CollectiveGroup& group, const FaultSet& failed);

// The alpha-beta closed form of `plan` over `group` on the healthy topology, without routing a send: per step,
// (the most bytes any link carries) / link bandwidth + (the most hops a send takes) x hop latency, from the
// one-axis pattern of each send's offsets (DOR in group space: the shorter way round a ring, a tie the + way;
// straight along a line; chain sends only from the members chain_sends() names), a strided group's links
// shared by its lanes; plus the step's DCN bytes / the per-chip DCN rate. The steps summed (lockstep; the DCN
// latency, the reductions and the runtime's overheads left out: the same for every candidate of the
// automatic choice but for the step count, which the hop terms dominate). Equals plan_network_time on a
// healthy topology for single-axis sends.
[[nodiscard]] Seconds estimate_collective_time(const Topology& topo, const CollectivePlan& plan,
                                               const ir::CollectiveGroup& group);

// The algorithm `automatic` resolves to by a rule of its own (all_to_all, permute; the other kinds choose by
// closed form in plan_collective, which this does not do: it answers ring_bidirectional for them); any other
// value is returned as is. `twisted_short_axis`: the group spans a short axis of a twisted torus, whose
// wraparound lands on another ring, so an all_to_all goes direct at every size (its DOR routes take the twisted
// links; the rings' closing steps would cross them several hops at a time).
inline constexpr std::uint64_t kAutoDirectMaxBytes = 64 * 1024;  // all_to_all only
[[nodiscard]] CollectiveAlgorithm resolve_algorithm(CollectiveAlgorithm requested, CollectiveKind kind,
                                                    std::uint64_t bytes_per_chip, int pod_group_size,
                                                    bool twisted_short_axis = false);

// The time of the bandwidth-optimal schedule (CollectivePlan::ideal_time; independent of the algorithm): the
// link-rate bound plus the hop latencies of the bandwidth-optimal ring schedule (one per ring step). Latency
// terms are that schedule's, not the least possible: direct beats them on small buffers (efficiency > 1).
// S = bytes_per_chip, B = link rate one way, a = hop latency, for the participating axes of lengths N_i:
// r_i = 2B on an axis with wraparound (two ring directions), B on a mesh axis (the ring is embedded in the
// line, so each direction carries twice the traffic); R = sum r_i; P = prod N_i; L = sum (N_i - 1).
//   all_reduce      2 (P-1)/P x S / R + 2 L a     (one axis: 2 (N-1)/N x S / (2B), docs/hardware.md; several
//   reduce_scatter    (P-1)/P x S / R +   L a      axes: the scaling book's "divide by the number of axes",
//   all_gather        (P-1)   x S / R +   L a      all links busy; the S, S/N0, S/(N0 N1) terms telescope)
//   all_to_all      max_i floor(N_i^2 / 4) x S / (N_i r_i) + diameter x a  (the per-link load of minimal
//                   routing: a chip sends S/P to each peer; on a bidirectional ring N S / (8B) for even N,
//                   1/4 of an all-gather of S, as the scaling book states)
//   permute         S / B + h a, h = 1 hop (N - 1 on a mesh axis of length > 2, the way back along the line)
// Pods (M > 1, D = DCN bandwidth per chip = per host / chips per host): all_reduce adds 2 (M-1)/M x (S/P)/D
// to the in-pod reduce-scatter of S and all-gather of S/P; reduce_scatter adds (M-1)/M x (S/P)/D;
// all_gather = (M-1) S / D + the in-pod all-gather of M S; all_to_all adds (M-1)/M x S / D. The DCN's own
// latency is the network model's and is not included. Throws as plan_collective does.
[[nodiscard]] Seconds ideal_collective_time(const Topology& topo, CollectiveKind kind,
                                            std::uint64_t bytes_per_chip, std::uint32_t axes_mask);
// The same over any group: N_i = the group's sizes, r_i = (2B with wraparound of the group, else B) / stride_i,
// a hop latency per ring step of stride_i x a (diameter and permute hops likewise x stride_i), M = its pods.
[[nodiscard]] Seconds ideal_collective_time(const Topology& topo, CollectiveKind kind,
                                            std::uint64_t bytes_per_chip, const ir::CollectiveGroup& group);

// bus_factor of CollectivePlan for n participants, relative to bytes_per_chip (NCCL's busbw = algbw x factor,
// rewritten for an input-sized buffer): all_reduce 2 (n-1)/n, reduce_scatter (n-1)/n, all_gather n-1
// (NCCL's size is the n S output), all_to_all (n-1)/n, permute 1.
[[nodiscard]] double bus_factor(CollectiveKind kind, int participants);

// lower_workload for ModelKind::collective: one program with one collective instruction (bytes, dtype,
// mesh_axes from the listed axes, the algorithm's registry index), no dependencies, model FLOPs 0. Throws
// ConfigError for an unknown algorithm name (key workload.model.algorithm, did-you-mean) and for an axis
// outside [0, kMaxAxes) or listed twice (key workload.model.axes); the pod is not known here, so whether the
// axis exists is checked by plan_collective.
[[nodiscard]] ir::ProgramSet lower_collective(const WorkloadSpec& workload);

}  // namespace tpusim::kernels
