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
//
// Sizes. `bytes_per_chip` is each chip's INPUT buffer: all_reduce S -> S; reduce_scatter S -> S / n;
// all_gather S -> n S (so an all-gather of S moves the same as the second half of an all-reduce of n S);
// all_to_all S -> S (S / n to every peer); permute S -> S. Plans work in whole elements of the dtype
// (bytes rounded up to a whole element); a split that does not divide evenly is padded up (ceil), as XLA pads
// a sharded dimension, so a chip may send a few bytes more than the exact share.
//
// Multi-axis decomposition (ring_bidirectional, ring_unidirectional, halving_doubling). With k participating
// axes (length > 1) the buffer is cut into k x D sub-buffers, D = 2 directions for ring_bidirectional and
// halving_doubling (the two halves go opposite ways: offsets + and -), D = 1 for ring_unidirectional (+ only).
// Sub-buffer (r, dir) reduce-scatters axis by axis in the rotated order axes[r], axes[r+1], ... (sizes shrink:
// c, c / N0, c / (N0 N1), ...), and all-gathers in the reverse order (sizes grow back). At any moment the k
// rotations sit on k different axes, so every link of the chip carries traffic, as the multi-axis formula of
// the JAX scaling book assumes (time / number of axes). The k x D step lists all have the same length (each
// sub-buffer visits every axis once per phase) and are merged step by step: step s of the plan holds step s of
// every sub-buffer (sends to the same offset are summed). Per axis of length N:
//   ring:             reduce-scatter N - 1 steps, each sending ceil(c / N) to dir x (+1) and reducing it;
//                     all-gather N - 1 steps, each forwarding one block of c;
//   halving_doubling: reduce-scatter log2 N steps at distances 1, 2, 4, ..., N/2 sending half of what is
//                     left (c/2, c/4, ...: the cyclic form of recursive halving, which needs only fixed
//                     offsets); all-gather the mirror image (distances N/2, ..., 1, doubling the data).
// direct: reduce-scatter = one step sending ceil(S / P) to each of the P - 1 peers of the group (every
// combination of offsets on the participating axes), all-gather = one step sending S to each peer,
// all-reduce = both, all_to_all = one step sending ceil(S / P) to each peer.
//
// Ring all-to-all (ring_bidirectional, ring_unidirectional): dimension by dimension, with the rotation of the
// multi-axis decomposition (k sub-buffers S' = S/k, D = 1; sub-buffer r exchanges along axes[r], axes[r+1],
// ...; after the exchange on an axis a chip holds what the chips of its line had for destinations sharing its
// coordinate on that axis, so after k exchanges every block is home; the buffer stays S' throughout). Per
// axis the buffer is N blocks b = S'/N; each step every chip sends its ring neighbour the blocks still in
// transit and keeps the one that has arrived; only one-hop sends, so DOR never has to break a tie.
//   ring_unidirectional: N - 1 steps to +1, step i carrying N - i blocks: (N-1)/2 x S' per link, 4 (N-1)/N
//     times the ideal's bandwidth term on a torus axis.
//   ring_bidirectional: each block goes the shorter way; for even N the opposite block is halved over both
//     ways. floor(N/2) steps, step i carrying (h - i + 1) b + b/2 [even N] each way, h = floor((N-1)/2):
//     N^2/8 b = N S'/8 per direction for even N, (N^2-1)/(8N) S' for odd N, exactly floor(N^2/4) S'/(2N):
//     the ideal's all_to_all term with r = 2B. Alpha-beta time (each step: its largest send / B + one hop):
//       one wrapped axis:  floor(N^2/4) S / (2 N B) + floor(N/2) a  = ideal_time;
//       k wrapped axes:    the k rotations sit on k different axes at every step when the lengths are equal
//                          (4x4x4: 6 steps, S/2 per link direction, S / (2B) + 6 a = ideal_time); with
//                          unequal lengths the step lists are merged by index, so the rotations no longer
//                          line up and the balance is approximate (not derived here);
//       mesh axis:         the wrap send of the embedded ring goes back N - 1 hops over the links the other
//                          direction uses, so each link direction carries twice N S'/8 = the ideal's mesh term
//                          (r = B), but every step waits N - 1 hops: floor(N/2) (N - 1) a instead of (N - 1) a.
//     direct (the automatic all_to_all) needs one step of at most a diameter of hops, the same latency, but
//     DOR sends every tie the + way, so on even torus axes its + links carry sum_{d=1..N/2} d blocks instead
//     of N^2/8: 3/2 of the ideal's bandwidth term on a 4-ring (and a 4x4x4 torus), 9/8 on a 16-ring.
// permute: one step, S to offset +1 on the first participating axis. It has one plan, named
// ring_unidirectional (halving_doubling, direct rejected). ring_bidirectional: a step of a bidirectional collective
// matmul (kernels/README.md), ceil(S/2) to +1 and the rest to -1, ideal the +1 shift of ceil(S/2), in the pod only;
// over several axes S is shared by every axis's neighbours by its links (wrapped: +1 and -1; a pair: the
// partner; a longer line: +1 and -1 at half weight), ideal S / (sum of rates) + hops. No alternative to +1: the +1 sends of
// all chips fill the + direction of every link of the axis; the only capacity left is the - direction of a
// torus axis, which reaches the +1 chip only the long way round (N - 1 hops, as a relay of N - 1
// store-and-forward steps, since sends name a destination and the network routes it the short way): a fraction
// 1/N sent that way would gain at most N/(N-1) in the bandwidth term (7% on a 16-ring) for N - 1 more hop
// latencies and pipeline fill; on a mesh axis the - direction already carries the last chip's way back.
// No extra pipelining slices: the network model already chunks every send.
//
// Across pods (topo.pods() = M > 1), hierarchically, the DCN only ever carries the smallest data:
//   all_reduce:     reduce-scatter in the pod, all-reduce of the shard across pods, all-gather in the pod;
//   reduce_scatter: reduce-scatter in the pod, then across pods;
//   all_gather:     all-gather across pods, then in the pod (of M x S);
//   all_to_all:     one DCN step (S / M to the same chip of every other pod), then the in-pod all_to_all;
//   permute:        stays in the pod (+1 across pods only when no in-pod axis takes part).
// The DCN stage is a unidirectional ring over pods (pod_offset +1; the DCN is switched, so one send and one
// receive per chip use both directions of its attachment) with M - 1 steps per phase, or one direct step per
// phase (pod_offsets 1 .. M-1) when the algorithm is `direct`.
//
// Groups (ir::CollectiveGroup). A collective runs over a replica group: along torus axis a, size[a] members
// stride[a] chips apart; a chip's group is the chips that differ from it only in the group's coordinates
// (aligned blocks of size x stride chips, which must divide the axis length), and `pods` consecutive pods.
// mesh_axes names the group of whole torus axes across every pod (whole_axes_group): size = the axis length,
// stride 1. A plan is made for the group's virtual shape, one GroupAxis per axis with size > 1: its length is
// the size, and it wraps only when the members span the whole axis (size x stride = length) and the axis
// wraps, so the last member's next is the first, stride chips on over the wraparound; otherwise the group is a
// line (no link closes it) and its ring is embedded in the line as on a mesh axis. Offsets in a plan's sends
// are in group space (members, modulo the size; pods, modulo `pods`); the network maps them to chips: member
// i of the block starting at b, lane l (the chip's position mod stride), is chip b + l + i x stride. Examples
// on a 16-ring: size 4 stride 1 = four 4-chip lines (a tensor group: disjoint links); size 4 stride 4 = four
// rings of every 4th chip, each hop 4 links, all four sharing every link (a data group beside a tensor group).
// In the closed forms a group axis of stride t has rate (2B or B) / t (the t lanes of a block interleave on
// the same links) and t hop latencies per ring step.
//
// Automatic choice (CollectiveAlgorithm::automatic): all_to_all -> direct up to kAutoDirectMaxBytes (one step),
// else ring_bidirectional (neighbour links only; faster for large buffers, see above); permute -> ring_unidirectional;
// all_reduce / reduce_scatter / all_gather -> by closed form: the candidate plan with the smallest
// estimate_collective_time (below) for this group, kind and size, ties to the earlier candidate:
//   1. ring_bidirectional (on a group axis that does not wrap, the ring embedded in the line: the last
//      member's +1 goes back N - 1 hops, so every step waits N - 1 hops);
//   2. ring_bidirectional with every such axis of 3 to 256 members planned as a line (the LineChain plan of
//      "Re-planned around failed links" below, cut after the last member, where no link is): the same bytes
//      per link, one hop per step. On a mesh axis or a segment of a ring it always beats 1 by
//      (N - 2) hop latencies per step;
//   3. ring_unidirectional;  4. halving_doubling (power-of-two lengths).
// Not direct: measurement C1 (measurements.md, a 16-ring of v5e) shows the calibration all-gather running like
// the bandwidth-optimal ring at every size, with a latency floor of ~15 us (15 ring steps of ~1 us) even at
// 512 B per chip, where `direct` (one step of at most 8 hops) would take ~9 us by its closed form, which
// leaves out what the P - 1 sends of a step cost the DMA engines; at 32 KiB per chip `direct` (DOR loads one
// link direction with 36 of the 15 blocks' worth) would take ~36 us against the measured 19 us. `direct`
// stays available by name. On a torus ring the ring and halving-doubling have the same hops per phase
// (1 + 2 + ... + N/2 = N - 1) and halving-doubling more bytes per link, so the ring is chosen there at every
// size, as C1 measured. The plan records the chosen candidate's estimate (CollectivePlan::estimate).
//
// Re-planned around failed links (plan_collective with a FaultSet; ring algorithms, reduce_scatter /
// all_gather / all_reduce, group axes that close rings over a whole, untwisted torus axis: size x stride =
// the axis length, 3 to 256 members, any stride). A ring with a failed link between members c and c + 1 has
// two plans, and the planner takes the one with the smaller plan_network_time:
//   detour: the ring plan unchanged; the sends through the failed link take the router's shortest surviving
//           path. Every ring step has one such send, and every path round the cut shares a link with a send
//           of the step, so each step moves twice its bytes over some link and waits the detour's hops h
//           (3 through a neighbouring ring of another wrapped axis):  2 (T - n a) + n h a, T = the healthy
//           plan's network time, n its steps.
//   line:   the axis runs as a line starting after the cut: per phase N - 1 steps of two chains, one each way,
//           each step sending one block (the sub-buffer's c / N in reduce-scatter, its shard in all-gather)
//           one hop: the reduce chain carries the partial sums from the line's start towards each block's
//           owner (position p sends at step t iff p < t), the broadcast chain carries each owner's block to
//           the line's end (p sends iff p >= t - 1); the last member never sends over the cut. Each
//           sub-buffer needs both chains, so the axis carries twice the ring's bytes per direction (its rate
//           is B, not 2B) with one hop per step. One axis alone: 2 (N-1)/N x S / B + 2 (N - 1) a for an
//           all-reduce (the mesh-axis ideal_time). Several axes: the rotations sit on different axes at every
//           step (equal lengths), so every step moves twice the healthy step's bytes on the cut axis:
//           2 (T - n a) + n a, which beats the detour by 2 n a (and leaves the other rings' links alone).
// A plan is SPMD, but the cut of a line is per ring (line_cut): each ring a failed cable lies on starts after
// its own failed cable (CollectivePlan::ring_cuts), the other rings of the axis after member cut[axis] (any
// place serves a ring without a failed cable). So cables of several rows of an axis cut at different places
// leave every line clear of them: the one-cut line's 2 (T - n a) + n a. On a strided group axis (stride s > 1:
// every s-th chip, s lanes interleaved on the axis's links, each send s hops) a failed cable lies on one send
// of every lane's ring, lane l's after member ((c - l) mod N x s) / s; each lane's line starts there. The hops
// are s: line 2 (T - s n a) + s n a, detour (s + 2 hops) 2 (T - s n a) + (s + 2) n a.
// A ring with two or more failed cables has no line clear of them: a line after one cut crosses the others,
// its hop there detouring and loading links that the neighbouring rows' chains already fill at twice the
// ring's bytes (3.33x T on the 4x4 and 4x4x4 tori with two cuts on one row), while the kept ring's detours
// cost what one costs when they use different links (2 (T - n a) + 3 n a, two cables two apart). The
// candidates, compared by plan_network_time (ties to the earlier, more lines): per axis a line after the
// k-th failed cable of each ring (k < 3; a ring with fewer takes its last), then the axis's fault-free plan
// (the ring), every combination over the axes (the first 32; the ring kept on every axis always). Not
// candidates: a segment of an axis (a group axis that does not wrap: the automatic choice already runs it as
// a line, and a failed cable inside it splits it, so its hop there detours), other axis orders (every
// rotation of the multi-axis plan visits the cut axis once per stage: no order avoids it), and unequal
// sub-buffer splits.
// Ring plans only: halving_doubling, direct, all_to_all and permute keep their plan and detour.
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

// The registry of algorithms. Index 0 is "auto" (the default for the operation and topology); the IR stores
// the index (ir::Instruction::comm.algorithm).
enum class CollectiveAlgorithm : std::uint8_t {
  automatic = 0,
  ring_bidirectional,    // per axis, data halved over both ring directions (bandwidth-optimal on a torus;
                         // all_to_all: each block the shorter way round)
  ring_unidirectional,   // per axis, one direction only (and the one permute plan)
  halving_doubling,      // recursive halving / doubling (log2 steps at distances 1, 2, 4, ...; power-of-two axes)
  direct,                // one step: every chip sends straight to every peer (latency-optimal; auto all-to-all)
};

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
// value is returned as is.
inline constexpr std::uint64_t kAutoDirectMaxBytes = 64 * 1024;  // all_to_all only
[[nodiscard]] CollectiveAlgorithm resolve_algorithm(CollectiveAlgorithm requested, CollectiveKind kind,
                                                    std::uint64_t bytes_per_chip, int pod_group_size);

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
