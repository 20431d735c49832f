// Collective plans: exact steps, bytes and reductions per algorithm, the closed forms, the automatic rule,
// the DCN stage, and the collective workload's lowering and file format.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "collective_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/topology/routing.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using namespace testing;  // collective_test_support.h: Algo, Kind, kB, kHop, kS, ring16, along, config_error
using test::make_chip;
using test::make_pod;

Topology torus4x4() { return build_topology(make_pod({4, 4}, {1, 1}, {2, 2}), make_chip("c", 4, 45)); }
Topology torus4x4x4() {
  return build_topology(make_pod({4, 4, 4}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4}), make_chip("c", 6, 45));
}
Topology mesh2x2x1() { return build_topology(make_pod({2, 2, 1}, {0, 0, 0}, {2, 2, 1}), make_chip("c", 6, 45)); }

std::uint64_t bytes_sent(const CollectivePlan& p) {
  std::uint64_t b = 0;
  for (const auto& s : p.steps) {
    for (const auto& send : s.sends) b += send.bytes;
  }
  return b;
}

std::uint64_t reduced(const CollectivePlan& p) {
  std::uint64_t e = 0;
  for (const auto& s : p.steps) e += s.reduce_elements;
  return e;
}

TEST(CollectiveRegistry, NamesFollowTheEnumIndices) {
  const std::vector<std::string> names = algorithm_names();
  ASSERT_EQ(names, (std::vector<std::string>{"auto", "ring_bidirectional", "ring_unidirectional",
                                              "halving_doubling", "direct"}));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto a = algorithm_by_name(names[i]);
    ASSERT_TRUE(a.has_value()) << names[i];
    EXPECT_EQ(static_cast<std::size_t>(*a), i);
    EXPECT_EQ(algorithm_name(*a), names[i]);
  }
  EXPECT_FALSE(algorithm_by_name("ring").has_value());
}

TEST(CollectivePlan, UnidirectionalRingAllReduceSendsTwoNMinusOneOverNOfTheBufferToTheNextChip) {
  const std::uint64_t s = 16 * 1024 * 2;  // 16 Ki bf16 elements
  const CollectivePlan p = plan_collective(ring16(), Kind::all_reduce, s, DType::bf16, 0, Algo::ring_unidirectional);
  EXPECT_EQ(p.algorithm, Algo::ring_unidirectional);
  EXPECT_EQ(p.participants, 16);
  EXPECT_EQ(p.axes_mask, 1u);
  ASSERT_EQ(p.steps.size(), 30u);  // 15 reduce-scatter + 15 all-gather
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    ASSERT_EQ(p.steps[i].sends.size(), 1u);
    EXPECT_EQ(p.steps[i].sends[0].offset, along(0, 1));
    EXPECT_EQ(p.steps[i].sends[0].pod_offset, 0);
    EXPECT_EQ(p.steps[i].sends[0].bytes, s / 16);
    EXPECT_EQ(p.steps[i].reduce_elements, i < 15 ? 1024u : 0u);  // S/16 bytes / 2 bytes per bf16
  }
  EXPECT_EQ(bytes_sent(p), 2 * 15 * s / 16);
}

TEST(CollectivePlan, BidirectionalRingSendsHalfTheBlockEachWay) {
  const std::uint64_t s = 32 * 1024 * 4;  // f32
  const CollectivePlan p = plan_collective(ring16(), Kind::all_reduce, s, DType::f32, 0, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 30u);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    ASSERT_EQ(p.steps[i].sends.size(), 2u);
    EXPECT_EQ(p.steps[i].sends[0].offset, along(0, 1));
    EXPECT_EQ(p.steps[i].sends[1].offset, along(0, -1));
    EXPECT_EQ(p.steps[i].sends[0].bytes, s / 32);
    EXPECT_EQ(p.steps[i].sends[1].bytes, s / 32);
    EXPECT_EQ(p.steps[i].reduce_elements, i < 15 ? s / 16 / 4 : 0u);  // both halves' blocks, f32 elements
  }
  EXPECT_EQ(bytes_sent(p), 2 * 15 * s / 16);
  EXPECT_EQ(reduced(p), 15 * s / 16 / 4);
}

TEST(CollectivePlan, ThreeDimensionalAllReduceRunsSixSubBuffersOverRotatedAxesWithShrinkingBlocks) {
  // 1536 bf16 elements = 6 sub-buffers (3 rotations x 2 directions) of 256.
  const std::uint64_t s = 1536 * 2;
  const CollectivePlan p =
      plan_collective(torus4x4x4(), Kind::all_reduce, s, DType::bf16, 0, Algo::ring_bidirectional);
  EXPECT_EQ(p.participants, 64);
  EXPECT_EQ(p.axes_mask, 7u);
  ASSERT_EQ(p.steps.size(), 18u);  // 3 steps per axis per phase
  // Block per send: 256/4 = 64, 16, 4 elements in the reduce-scatter, then back up in the all-gather.
  const std::uint64_t block[] = {64, 16, 4, 4, 16, 64};
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const auto& step = p.steps[i];
    ASSERT_EQ(step.sends.size(), 6u) << "step " << i;
    std::set<std::array<int, kMaxAxes>> offsets;
    for (const auto& send : step.sends) {
      offsets.insert(send.offset);
      EXPECT_EQ(send.bytes, block[i / 3] * 2) << "step " << i;
    }
    // Every link of the chip is busy: the rotations sit on different axes, both directions each.
    EXPECT_EQ(offsets, (std::set<std::array<int, kMaxAxes>>{along(0, 1), along(0, -1), along(1, 1), along(1, -1),
                                                              along(2, 1), along(2, -1)}));
    EXPECT_EQ(step.reduce_elements, i < 9 ? 6 * block[i / 3] : 0u);
  }
  EXPECT_EQ(bytes_sent(p), 2 * 63 * s / 64);  // 2 (P-1)/P x S
}

TEST(CollectivePlan, MeshAxesOfLengthTwoStillUseBothDirections) {
  const std::uint64_t s = 64 * 2;
  const CollectivePlan p = plan_collective(mesh2x2x1(), Kind::all_reduce, s, DType::bf16, 0, Algo::ring_bidirectional);
  EXPECT_EQ(p.participants, 4);
  EXPECT_EQ(p.axes_mask, 3u);  // the axis of length 1 does not take part
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.steps[0].sends.size(), 4u);
  EXPECT_EQ(p.steps[0].sends[0].bytes, 16u * 2 / 2);  // 16-element sub-buffer, half of it
  EXPECT_EQ(bytes_sent(p), 2 * 3 * s / 4);
}

TEST(CollectivePlan, EveryAlgorithmSendsTheBandwidthOptimalBytesAndReducesEachElementOnce) {
  const Topology torus2x4 = build_topology(make_pod({2, 4}, {1, 1}, {2, 2}), make_chip("c", 4, 45));
  const Topology* topologies[] = {nullptr, nullptr, nullptr, &torus2x4};
  const Topology r = ring16(), t = torus4x4x4(), m = mesh2x2x1();
  topologies[0] = &r;
  topologies[1] = &t;
  topologies[2] = &m;
  const std::uint64_t e = 6 * 64 * 16;  // divides evenly for every sub-buffer split here
  for (const Topology* topo : topologies) {
    for (Algo a : {Algo::ring_bidirectional, Algo::ring_unidirectional, Algo::halving_doubling, Algo::direct}) {
      const CollectivePlan p = plan_collective(*topo, Kind::all_reduce, e * 2, DType::bf16, 0, a);
      const auto n = static_cast<std::uint64_t>(p.participants);
      EXPECT_EQ(bytes_sent(p), 2 * (n - 1) * e * 2 / n) << topo->name() << " " << algorithm_name(a);
      EXPECT_EQ(reduced(p), (n - 1) * e / n) << topo->name() << " " << algorithm_name(a);
    }
  }
}

TEST(CollectivePlan, UnevenSizesArePaddedUpToWholeBlocks) {
  const CollectivePlan p = plan_collective(ring16(), Kind::all_reduce, 1001, DType::bf16, 0, Algo::ring_unidirectional);
  // 501 elements (1001 bytes rounded up), blocks of ceil(501 / 16) = 32 elements.
  EXPECT_EQ(p.steps.front().sends.front().bytes, 64u);
  EXPECT_EQ(bytes_sent(p), 30u * 64);
}

TEST(CollectivePlan, HalvingDoublingUsesDistancesOneToHalfTheRing) {
  const std::uint64_t s = 64 * 2;
  const CollectivePlan p = plan_collective(ring16(), Kind::all_reduce, s, DType::bf16, 0, Algo::halving_doubling);
  ASSERT_EQ(p.steps.size(), 8u);  // log2 16 per phase
  const int distance[] = {1, 2, 4, 8, 8, 4, 2, 1};
  const std::uint64_t elements[] = {16, 8, 4, 2, 2, 4, 8, 16};  // per direction (half of 64)
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(p.steps[i].sends.size(), 2u);
    EXPECT_EQ(p.steps[i].sends[0].offset, along(0, distance[i]));
    EXPECT_EQ(p.steps[i].sends[1].offset, along(0, -distance[i]));
    EXPECT_EQ(p.steps[i].sends[0].bytes, elements[i] * 2);
    EXPECT_EQ(p.steps[i].reduce_elements, i < 4 ? 2 * elements[i] : 0u);
  }
  EXPECT_EQ(bytes_sent(p), 2 * 15 * s / 16);  // the same bytes as the ring, over more links
}

TEST(CollectivePlan, HalvingDoublingOnALengthThatIsNotAPowerOfTwoIsRejectedWithTheAlternatives) {
  const Topology six = build_topology(make_pod({6}, {1}, {1}), make_chip("c", 2, 45));
  const Diagnostic d = config_error(
      [&] { (void)plan_collective(six, Kind::all_reduce, 1024, DType::bf16, 0, Algo::halving_doubling); });
  EXPECT_EQ(d.key_path, "workload.model.algorithm");
  EXPECT_NE(d.found.find("axis 0 of length 6"), std::string::npos) << d.found;
  EXPECT_EQ(d.hint, "algorithms that can: auto, ring_bidirectional, ring_unidirectional, direct");
}

TEST(CollectivePlan, DirectAllToAllSendsOneBlockToEveryPeerInOneStep) {
  const std::uint64_t s = 16 * 8 * 2;
  const CollectivePlan p = plan_collective(torus4x4(), Kind::all_to_all, s, DType::bf16, 0, Algo::automatic);
  EXPECT_EQ(p.algorithm, Algo::direct);
  ASSERT_EQ(p.steps.size(), 1u);
  const auto& sends = p.steps[0].sends;
  ASSERT_EQ(sends.size(), 15u);
  std::set<std::array<int, kMaxAxes>> peers;
  for (const auto& send : sends) {
    EXPECT_EQ(send.bytes, s / 16);
    EXPECT_NE(send.offset, along(0, 0));
    peers.insert(send.offset);
  }
  EXPECT_EQ(peers.size(), 15u);
  EXPECT_EQ(p.steps[0].reduce_elements, 0u);
}

// Ring all-to-all (kernels/README.md, "Ring all-to-all"): 1024 bf16 elements on a 16-ring = 16 blocks of 64.
TEST(CollectivePlan, BidirectionalRingAllToAllSendsEveryBlockTheShorterWayAndHalvesTheOppositeOne) {
  const std::uint64_t s = 1024 * 2;
  const CollectivePlan p = plan_collective(ring16(), Kind::all_to_all, s, DType::bf16, 0, Algo::ring_bidirectional);
  EXPECT_EQ(p.algorithm, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 8u);  // floor(16 / 2)
  for (std::size_t i = 1; i <= 8; ++i) {
    const CollectiveStep& step = p.steps[i - 1];
    ASSERT_EQ(step.sends.size(), 2u);
    EXPECT_EQ(step.sends[0].offset, along(0, 1));
    EXPECT_EQ(step.sends[1].offset, along(0, -1));
    // Blocks for distances i .. 7 each way, plus half of the distance-8 block.
    EXPECT_EQ(step.sends[0].bytes, ((8 - i) * 64 + 32) * 2) << "step " << i;
    EXPECT_EQ(step.sends[1].bytes, ((8 - i) * 64 + 32) * 2) << "step " << i;
    EXPECT_EQ(step.reduce_elements, 0u);
  }
  EXPECT_EQ(bytes_sent(p), 2 * (16 * s / 8));  // N S / 8 per direction
}

TEST(CollectivePlan, UnidirectionalRingAllToAllForwardsTheBlocksStillInTransit) {
  const std::uint64_t s = 1024 * 2;
  const CollectivePlan p = plan_collective(ring16(), Kind::all_to_all, s, DType::bf16, 0, Algo::ring_unidirectional);
  ASSERT_EQ(p.steps.size(), 15u);
  for (std::size_t i = 1; i <= 15; ++i) {
    ASSERT_EQ(p.steps[i - 1].sends.size(), 1u);
    EXPECT_EQ(p.steps[i - 1].sends[0].offset, along(0, 1));
    EXPECT_EQ(p.steps[i - 1].sends[0].bytes, (16 - i) * 64 * 2) << "step " << i;
  }
  EXPECT_EQ(bytes_sent(p), 15 * s / 2);  // (N - 1) / 2 x S
}

TEST(CollectivePlan, OddRingAllToAllHasNoOppositeBlockToSplit) {
  const Topology five = build_topology(make_pod({5}, {1}, {1}), make_chip("c", 2, 45));
  const CollectivePlan p = plan_collective(five, Kind::all_to_all, 40 * 2, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 2u);
  const std::uint64_t blocks[] = {2, 1};  // distances 1 and 2, then 2
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(p.steps[i].sends.size(), 2u);
    EXPECT_EQ(p.steps[i].sends[0].bytes, blocks[i] * 8 * 2);
    EXPECT_EQ(p.steps[i].sends[1].bytes, blocks[i] * 8 * 2);
  }
}

TEST(CollectivePlan, ThreeDimensionalRingAllToAllRunsThreeRotatedSubBuffersOnAllSixLinks) {
  // 192 bf16 elements = 3 sub-buffers of 64 = 4 blocks of 16 per axis: step 1 of an axis sends 1.5 blocks each
  // way (distance 1 and half of distance 2), step 2 the remaining half block.
  const std::uint64_t s = 192 * 2;
  const CollectivePlan p = plan_collective(torus4x4x4(), Kind::all_to_all, s, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 6u);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    ASSERT_EQ(p.steps[i].sends.size(), 6u) << "step " << i;
    std::set<std::array<int, kMaxAxes>> offsets;
    for (const auto& send : p.steps[i].sends) {
      offsets.insert(send.offset);
      EXPECT_EQ(send.bytes, (i % 2 == 0 ? 24u : 8u) * 2) << "step " << i;
    }
    EXPECT_EQ(offsets, (std::set<std::array<int, kMaxAxes>>{along(0, 1), along(0, -1), along(1, 1), along(1, -1),
                                                              along(2, 1), along(2, -1)}));
  }
  EXPECT_EQ(bytes_sent(p), 3 * s);  // S / 2 on each of the 6 link directions
}

// Alpha-beta time of a plan whose sends are all one hop on links of their own: each step lasts its largest send
// at B plus one hop.
double one_hop_plan_time(const CollectivePlan& p) {
  double t = 0;
  for (const CollectiveStep& step : p.steps) {
    std::uint64_t largest = 0;
    for (const CollectiveSend& send : step.sends) largest = std::max(largest, send.bytes);
    t += static_cast<double>(largest) / kB + kHop;
  }
  return t;
}

TEST(CollectivePlan, BidirectionalRingAllToAllMeetsTheIdealTimeOnATorus) {
  const Topology five = build_topology(make_pod({5}, {1}, {1}), make_chip("c", 2, 45));
  const Topology r = ring16(), t2 = torus4x4(), t3 = torus4x4x4();
  const Topology* topologies[] = {&r, &t2, &t3, &five};
  const std::uint64_t sizes[] = {1024 * 2, 128 * 2, 192 * 2, 40 * 2};  // whole blocks for every sub-buffer
  for (std::size_t i = 0; i < 4; ++i) {
    const CollectivePlan p =
        plan_collective(*topologies[i], Kind::all_to_all, sizes[i], DType::bf16, 0, Algo::ring_bidirectional);
    for (const CollectiveStep& step : p.steps) {
      for (const CollectiveSend& send : step.sends) {
        int hops = 0;
        for (int d : send.offset) hops += std::abs(d);
        EXPECT_EQ(hops, 1) << topologies[i]->name();
      }
    }
    EXPECT_NEAR(one_hop_plan_time(p), p.ideal_time.value(), 1e-12 * p.ideal_time.value()) << topologies[i]->name();
  }
}

// Bytes per directed link when every chip runs `p` with dimension-order routes (the network model's default).
std::map<std::uint32_t, std::uint64_t> dor_link_load(const Topology& t, const CollectivePlan& p) {
  std::map<std::uint32_t, std::uint64_t> load;
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    const ChipCoord from = t.coord(ChipId(c));
    for (const CollectiveStep& step : p.steps) {
      for (const CollectiveSend& send : step.sends) {
        ChipCoord to = from;
        for (std::size_t a = 0; a < kMaxAxes; ++a) {
          const int n = t.shape()[a];
          to.pos[a] = ((to.pos[a] + send.offset[a]) % n + n) % n;
        }
        const std::optional<Path> path = dor_route(t, ChipId(c), t.chip_at(to));
        for (const LinkId l : path.value()) load[l.value()] += send.bytes;
      }
    }
  }
  return load;
}

std::uint64_t max_load(const std::map<std::uint32_t, std::uint64_t>& load) {
  std::uint64_t m = 0;
  for (const auto& [link, bytes] : load) m = std::max(m, bytes);
  return m;
}

// The reason to pick the ring: direct's distance-2 sends on each 4-ring all go the + way under DOR, so its
// busiest link carries 16 x (1 + 2) blocks of S/64 = 3/4 S, against S / 2 on every link for the ring.
TEST(CollectivePlan, OnA4x4x4TorusDirectAllToAllLoadsItsBusiestLinkThreeHalvesOfTheRingsUnderDor) {
  const Topology t = torus4x4x4();
  const std::uint64_t s = 192 * 2;
  const auto ring = dor_link_load(t, plan_collective(t, Kind::all_to_all, s, DType::bf16, 0, Algo::ring_bidirectional));
  const auto direct = dor_link_load(t, plan_collective(t, Kind::all_to_all, s, DType::bf16, 0, Algo::direct));
  EXPECT_EQ(ring.size(), t.link_count());
  for (const auto& [link, bytes] : ring) EXPECT_EQ(bytes, s / 2) << "link " << link;
  EXPECT_EQ(max_load(direct), 3 * s / 4);
  // 16-ring: sum_{d=1..8} d = 36 blocks of S/16 on the + links against N^2/8 = 32 for the ring.
  const Topology r = ring16();
  const std::uint64_t s16 = 1024 * 2;
  auto busiest = [&](Algo a) {
    return max_load(dor_link_load(r, plan_collective(r, Kind::all_to_all, s16, DType::bf16, 0, a)));
  };
  EXPECT_EQ(busiest(Algo::direct), 36 * s16 / 16);
  EXPECT_EQ(busiest(Algo::ring_bidirectional), 32 * s16 / 16);
}

TEST(CollectivePlan, HalvingDoublingDoesNotPlanAllToAll) {
  const Diagnostic d = config_error(
      [] { (void)plan_collective(ring16(), Kind::all_to_all, 1024, DType::bf16, 0, Algo::halving_doubling); });
  EXPECT_EQ(d.key_path, "workload.model.algorithm");
  EXPECT_EQ(d.found, "all_to_all (halving_doubling has no all-to-all plan)");
  EXPECT_EQ(d.hint, "algorithms that can: auto, ring_bidirectional, ring_unidirectional, direct");
}

TEST(CollectivePlan, AcrossPodsARingAllToAllFollowsTheDcnStep) {
  const Topology two = build_topology(make_pod({4}, {1}, {2}, {}, 2), make_chip("c", 2, 45, 6.25));
  const CollectivePlan p = plan_collective(two, Kind::all_to_all, 16 * 2, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 3u);  // one DCN step, then floor(4 / 2) ring steps
  EXPECT_EQ(p.steps[0].sends.at(0).pod_offset, 1);
  EXPECT_EQ(p.steps[0].sends.at(0).bytes, 8u * 2);  // half the buffer is bound for the other pod
  EXPECT_EQ(p.steps[1].sends.at(0).bytes, 6u * 2);  // blocks of 4: one whole and half the opposite one
  EXPECT_EQ(p.steps[2].sends.at(0).bytes, 2u * 2);
}

TEST(CollectivePlan, DirectAllReduceIsAReduceScatterStepAndAnAllGatherStep) {
  const std::uint64_t s = 16 * 4 * 2;
  const CollectivePlan p = plan_collective(torus4x4(), Kind::all_reduce, s, DType::bf16, 0, Algo::direct);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].sends.size(), 15u);
  EXPECT_EQ(p.steps[0].reduce_elements, 15u * 4);
  EXPECT_EQ(p.steps[1].reduce_elements, 0u);
  EXPECT_EQ(bytes_sent(p), 2 * 15 * s / 16);
}

TEST(CollectivePlan, AllGatherAndReduceScatterAreTheHalvesOfAnAllReduce) {
  const std::uint64_t s = 4 * 64 * 2;
  const CollectivePlan rs = plan_collective(torus4x4(), Kind::reduce_scatter, s, DType::bf16, 0, Algo::ring_bidirectional);
  const CollectivePlan ag =
      plan_collective(torus4x4(), Kind::all_gather, s / 16, DType::bf16, 0, Algo::ring_bidirectional);
  const CollectivePlan ar = plan_collective(torus4x4(), Kind::all_reduce, s, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(rs.steps.size() + ag.steps.size(), ar.steps.size());
  for (std::size_t i = 0; i < ar.steps.size(); ++i) {
    const CollectiveStep& half = i < rs.steps.size() ? rs.steps[i] : ag.steps[i - rs.steps.size()];
    ASSERT_EQ(half.sends.size(), ar.steps[i].sends.size());
    for (std::size_t j = 0; j < half.sends.size(); ++j) {
      EXPECT_EQ(half.sends[j].offset, ar.steps[i].sends[j].offset);
      EXPECT_EQ(half.sends[j].bytes, ar.steps[i].sends[j].bytes);
    }
    EXPECT_EQ(half.reduce_elements, ar.steps[i].reduce_elements);
  }
  EXPECT_EQ(bytes_sent(ag), 15 * s / 16);  // (n-1) x the input shard
}

TEST(CollectivePlan, PermuteSendsTheBufferToTheNextChipOfTheFirstParticipatingAxis) {
  const CollectivePlan p = plan_collective(torus4x4(), Kind::permute, 4096, DType::bf16, 0b10, Algo::automatic);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_EQ(p.steps[0].sends.size(), 1u);
  EXPECT_EQ(p.steps[0].sends[0].offset, along(1, 1));
  EXPECT_EQ(p.steps[0].sends[0].bytes, 4096u);
  EXPECT_EQ(p.participants, 4);
}

// Permute has one plan (collectives.h says why there is no alternative); the others say so in the hint.
TEST(CollectivePlan, PermuteHasOnePlanAndOtherAlgorithmsAreRejectedWithTheReason) {
  const CollectivePlan p = plan_collective(ring16(), Kind::permute, 4096, DType::bf16, 0, Algo::ring_unidirectional);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].sends.at(0).offset, along(0, 1));
  for (Algo a : {Algo::halving_doubling, Algo::direct}) {
    const Diagnostic d = config_error([&] { (void)plan_collective(ring16(), Kind::permute, 4096, DType::bf16, 0, a); });
    EXPECT_EQ(d.key_path, "workload.model.algorithm");
    EXPECT_EQ(d.found,
              "permute (a +1 shift has one plan, ring_unidirectional; half to each neighbour is ring_bidirectional)");
    EXPECT_EQ(d.hint.rfind("algorithms that can: auto, ring_bidirectional, ring_unidirectional. A +1 shift", 0), 0u)
        << d.hint;
    EXPECT_NE(d.hint.find("at most N/(N-1)"), std::string::npos) << d.hint;
  }
}

// The bidirectional exchange (one step of a bidirectional collective matmul): 4096 bf16 bytes = 2048 elements,
// 1024 to each neighbour, one step; its ideal is the +1 shift of 2048 bytes. An odd count gives +1 the extra one.
TEST(CollectivePlan, ABidirectionalPermuteSendsHalfToEachNeighbourInOneStep) {
  const CollectivePlan p = plan_collective(ring16(), Kind::permute, 4096, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_EQ(p.steps[0].sends.size(), 2u);
  EXPECT_EQ(p.steps[0].sends[0].offset, along(0, 1));
  EXPECT_EQ(p.steps[0].sends[0].bytes, 2048u);
  EXPECT_EQ(p.steps[0].sends[1].offset, along(0, -1));
  EXPECT_EQ(p.steps[0].sends[1].bytes, 2048u);
  EXPECT_DOUBLE_EQ(p.ideal_time.value(),
                   ideal_collective_time(ring16(), Kind::permute, 2048, whole_axes_group(ring16(), 1)).value());
  const CollectivePlan odd = plan_collective(ring16(), Kind::permute, 6, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(odd.steps[0].sends.size(), 2u);
  EXPECT_EQ(odd.steps[0].sends[0].bytes, 4u);
  EXPECT_EQ(odd.steps[0].sends[1].bytes, 2u);
}

// Over a group of several axes the exchange uses every axis's links (kernels/README.md, "Where the ring lies"): a 4x2
// block of a 4x4x4 torus (axis 0 a ring of 4, axis 1 a line of 2) has per chip two links on axis 0 and one on axis 1,
// so 3 MiB (1.5 Mi bf16 elements) goes 1 MiB to +1 and to -1 of axis 0 and 1 MiB to the other member of axis 1; every
// directed link of the block carries 1 MiB: 1 MiB / B + one hop (a single-axis exchange would put 1.5 MiB on each link
// of axis 0). A 2x2x2 block (three lines of 2): 1 MiB to each of the three partners.
TEST(CollectivePlan, ABidirectionalPermuteOverSeveralAxesSpreadsItsBytesOverEveryAxissLinks) {
  const std::uint64_t mib = 1ull << 20;
  const Topology t = torus4x4x4();
  const CollectivePlan p = plan_collective(t, Kind::permute, 3 * mib, DType::bf16, ir::CollectiveGroup{{4, 2, 1}, {1, 1, 1}, 1},
                                           Algo::ring_bidirectional);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_EQ(p.steps[0].sends.size(), 3u);
  EXPECT_EQ(p.steps[0].sends[0].offset, along(0, 1));
  EXPECT_EQ(p.steps[0].sends[1].offset, along(0, -1));
  EXPECT_EQ(p.steps[0].sends[2].offset, along(1, 1));
  for (const CollectiveSend& send : p.steps[0].sends) EXPECT_EQ(send.bytes, mib);
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), static_cast<double>(mib) / kB + kHop);
  // A 4x2 torus whose pair wraps (two cables): DOR sends +1 and -1 out of the same port, one cable each way, so
  // the pair is one partner as in the segment above, the same three sends.
  const Topology wrapped = build_topology(test::make_pod({4, 2}, {1, 1}, {2, 2}), test::make_chip("c", 4, 45));
  const CollectivePlan pair = plan_collective(wrapped, Kind::permute, 3 * mib, DType::bf16, 0, Algo::ring_bidirectional);
  ASSERT_EQ(pair.steps.at(0).sends.size(), 3u);
  EXPECT_EQ(pair.steps[0].sends[2].offset, along(1, 1));
  for (const CollectiveSend& send : pair.steps[0].sends) EXPECT_EQ(send.bytes, mib);
  EXPECT_DOUBLE_EQ(pair.ideal_time.value(), static_cast<double>(mib) / kB + kHop);

  const CollectivePlan cube =
      plan_collective(t, Kind::permute, 3 * mib, DType::bf16, ir::CollectiveGroup{{2, 2, 2}, {1, 1, 1}, 1},
                      Algo::ring_bidirectional);
  ASSERT_EQ(cube.steps.size(), 1u);
  ASSERT_EQ(cube.steps[0].sends.size(), 3u);
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(cube.steps[0].sends[static_cast<std::size_t>(a)].offset, along(a, 1));
    EXPECT_EQ(cube.steps[0].sends[static_cast<std::size_t>(a)].bytes, mib);
  }
  EXPECT_DOUBLE_EQ(cube.ideal_time.value(), static_cast<double>(mib) / kB + kHop);

  // A longer line (a 4x4 block of an 8x8 torus: two lines of 4) sends a quarter each way on each axis, and each
  // directed link carries two of them (its ring's wrap send goes back 3 hops): S / (2B) + 3 hops. 7 elements
  // shared by weight 1, 1, 1, 1: the first three lanes one more.
  const Topology big = build_topology(test::make_pod({8, 8}, {1, 1}, {2, 2}), test::make_chip("c", 4, 45));
  const CollectivePlan box =
      plan_collective(big, Kind::permute, 4 * mib, DType::bf16, ir::CollectiveGroup{{4, 4, 1}, {1, 1, 1}, 1},
                      Algo::ring_bidirectional);
  ASSERT_EQ(box.steps[0].sends.size(), 4u);
  for (const CollectiveSend& send : box.steps[0].sends) EXPECT_EQ(send.bytes, mib);
  EXPECT_DOUBLE_EQ(box.ideal_time.value(), 2.0 * static_cast<double>(mib) / kB + 3 * kHop);
  const CollectivePlan odd = plan_collective(big, Kind::permute, 14, DType::bf16, ir::CollectiveGroup{{4, 4, 1}, {1, 1, 1}, 1},
                                             Algo::ring_bidirectional);
  ASSERT_EQ(odd.steps[0].sends.size(), 4u);
  EXPECT_EQ(odd.steps[0].sends[0].bytes, 4u);
  EXPECT_EQ(odd.steps[0].sends[1].bytes, 4u);
  EXPECT_EQ(odd.steps[0].sends[2].bytes, 4u);
  EXPECT_EQ(odd.steps[0].sends[3].bytes, 2u);
}

TEST(CollectivePlan, AcrossPodsReducesTheInPodShardOverTheDcn) {
  const Topology two = build_topology(make_pod({4}, {1}, {2}, {}, 2), make_chip("c", 2, 45, 6.25));
  const std::uint64_t s = 8 * 2 * 2;  // 16 elements
  const CollectivePlan p = plan_collective(two, Kind::all_reduce, s, DType::bf16, 0, Algo::ring_bidirectional);
  EXPECT_EQ(p.participants, 8);
  ASSERT_EQ(p.steps.size(), 3u + 2 + 3);  // in-pod reduce-scatter, DCN ring (M - 1 = 1 step each way), gather
  for (std::size_t i : {3, 4}) {
    ASSERT_EQ(p.steps[i].sends.size(), 1u);
    EXPECT_EQ(p.steps[i].sends[0].pod_offset, 1);
    EXPECT_EQ(p.steps[i].sends[0].offset, along(0, 0));
    EXPECT_EQ(p.steps[i].sends[0].bytes, 2u * 2);  // the in-pod shard of 4 elements, halved
  }
  EXPECT_EQ(p.steps[3].reduce_elements, 2u);
  EXPECT_EQ(p.steps[4].reduce_elements, 0u);
  // Ideal: in-pod reduce-scatter of S and all-gather of S/4, plus 2 (M-1)/M x (S/4) over 2 x 6.25 GB/s / 2 chips.
  const double in_pod = 2 * (3.0 / 4 * s / (2 * kB) + 3 * kHop);
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), in_pod + (s / 4.0) / 6.25e9);

  const Topology three = build_topology(make_pod({4}, {1}, {2}, {}, 3), make_chip("c", 2, 45, 6.25));
  const CollectivePlan d = plan_collective(three, Kind::all_reduce, 12 * 4 * 2, DType::bf16, 0, Algo::direct);
  ASSERT_EQ(d.steps.size(), 4u);  // direct in the pod and over the DCN: one step per phase
  ASSERT_EQ(d.steps[1].sends.size(), 2u);
  EXPECT_EQ(d.steps[1].sends[0].pod_offset, 1);
  EXPECT_EQ(d.steps[1].sends[1].pod_offset, 2);
  EXPECT_EQ(d.steps[1].reduce_elements, 2u * 4);
}

TEST(CollectivePlan, AcrossPodsWithoutDcnBandwidthIsAConfigError) {
  const Topology two = build_topology(make_pod({4}, {1}, {2}, {}, 2), make_chip("c", 2, 45, 0));
  const Diagnostic d =
      config_error([&] { (void)plan_collective(two, Kind::all_reduce, 1024, DType::bf16, 0, Algo::automatic); });
  EXPECT_EQ(d.key_path, "chip.host.dcn_bandwidth");
}

TEST(CollectivePlan, AnAxisThePodDoesNotHaveIsAConfigError) {
  const Diagnostic d =
      config_error([] { (void)plan_collective(torus4x4(), Kind::all_reduce, 1024, DType::bf16, 0b100, Algo::automatic); });
  EXPECT_EQ(d.key_path, "workload.model.axes");
  EXPECT_EQ(d.found, "axis 2");
}

TEST(CollectivePlan, ASingleChipGroupHasNoSteps) {
  const Topology one = build_topology(make_pod({1}, {0}, {1}), make_chip("c", 2, 45));
  const CollectivePlan p = plan_collective(one, Kind::all_reduce, 1 << 20, DType::bf16, 0, Algo::automatic);
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(p.participants, 1);
  EXPECT_EQ(p.ideal_time.value(), 0);
}

TEST(CollectiveAuto, TheBidirectionalRingForReductionsAndGathersAtEverySizeDirectForSmallAllToAlls) {
  for (const Kind k : {Kind::all_reduce, Kind::reduce_scatter, Kind::all_gather}) {
    EXPECT_EQ(resolve_algorithm(Algo::automatic, k, 1, 2), Algo::ring_bidirectional);
    EXPECT_EQ(resolve_algorithm(Algo::automatic, k, 512, 16), Algo::ring_bidirectional);
    EXPECT_EQ(resolve_algorithm(Algo::automatic, k, 1ull << 30, 4096), Algo::ring_bidirectional);
  }
  EXPECT_EQ(resolve_algorithm(Algo::automatic, Kind::all_to_all, kAutoDirectMaxBytes, 4096), Algo::direct);
  EXPECT_EQ(resolve_algorithm(Algo::automatic, Kind::all_to_all, kAutoDirectMaxBytes + 1, 4096),
            Algo::ring_bidirectional);
  EXPECT_EQ(resolve_algorithm(Algo::automatic, Kind::permute, 1 << 30, 4096), Algo::ring_unidirectional);
  EXPECT_EQ(resolve_algorithm(Algo::halving_doubling, Kind::all_reduce, 1, 4), Algo::halving_doubling);
  EXPECT_EQ(plan_collective(torus4x4x4(), Kind::all_reduce, 64 << 20, DType::bf16, 0, Algo::automatic).algorithm,
            Algo::ring_bidirectional);
}

// On a twisted torus (v4 4x4x8: the short x and y axes wrap onto the ring shifted by 4 along z) an all-to-all over
// a group spanning a short axis goes direct at every size: the rings' closing steps would cross the twisted
// wraparound and several hops after it. Simulated at 64 MiB per chip over the whole torus (the fault-free run of
// `tpusim run` on this pod): ring 2.299 ms, direct 1.296 ms; untwisted, ring 1.727 ms, direct 1.992 ms. A group
// along the long axis alone keeps the ring (1.591 ms against 1.988 ms direct).
TEST(CollectiveAuto, AnAllToAllOverAShortAxisOfATwistedTorusGoesDirect) {
  PodSpec pod = make_pod({4, 4, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4});
  pod.twisted = true;
  const Topology twisted = build_topology(pod, make_chip("c", 6, 45));
  const std::uint64_t big = 64 << 20;
  EXPECT_EQ(plan_collective(twisted, Kind::all_to_all, big, DType::bf16, 0b111, Algo::automatic).algorithm,
            Algo::direct);
  EXPECT_EQ(plan_collective(twisted, Kind::all_to_all, big, DType::bf16, 0b001, Algo::automatic).algorithm,
            Algo::direct);
  EXPECT_EQ(plan_collective(twisted, Kind::all_to_all, big, DType::bf16, 0b100, Algo::automatic).algorithm,
            Algo::ring_bidirectional);
  pod.twisted = false;
  const Topology plain = build_topology(pod, make_chip("c", 6, 45));
  EXPECT_EQ(plan_collective(plain, Kind::all_to_all, big, DType::bf16, 0b111, Algo::automatic).algorithm,
            Algo::ring_bidirectional);
  // The reductions and gathers keep their closed-form choice.
  EXPECT_EQ(plan_collective(twisted, Kind::all_reduce, big, DType::bf16, 0b111, Algo::automatic).algorithm,
            Algo::ring_bidirectional);
}

// Closed forms (collectives.h): S = 1 GiB, B = 45 GB/s, hop 1 us.

TEST(CollectiveIdeal, SixteenRing) {
  const Topology t = ring16();
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, 0).value(),
                   2.0 * 15 / 16 * kS / (2 * kB) + 30 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::reduce_scatter, 1ull << 30, 0).value(),
                   15.0 / 16 * kS / (2 * kB) + 15 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_gather, 1ull << 26, 0).value(),
                   15.0 * (kS / 16) / (2 * kB) + 15 * kHop);
  // All-to-all on a bidirectional ring: N S / (8B), a quarter of an all-gather of S (scaling book).
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_to_all, 1ull << 30, 0).value(), 16 * kS / (8 * kB) + 8 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::permute, 1ull << 30, 0).value(), kS / kB + kHop);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::all_reduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::all_gather, 16), 15.0);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::all_to_all, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::permute, 16), 1.0);
}

TEST(CollectiveIdeal, FourByFourTorusUsesBothAxesAtOnce) {
  const Topology t = torus4x4();
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, 0).value(),
                   2.0 * 15 / 16 * kS / (4 * kB) + 2 * 6 * kHop);
  // One axis only: a ring of 4.
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, 0b01).value(),
                   2.0 * 3 / 4 * kS / (2 * kB) + 2 * 3 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_to_all, 1ull << 30, 0).value(), 4 * kS / (4 * 2 * kB) + 4 * kHop);
}

TEST(CollectiveIdeal, FourCubedTorusUsesAllSixLinks) {
  const Topology t = torus4x4x4();
  const CollectivePlan p = plan_collective(t, Kind::all_reduce, 1ull << 30, DType::bf16, 0, Algo::automatic);
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), 2.0 * 63 / 64 * kS / (6 * kB) + 2 * 9 * kHop);
  EXPECT_DOUBLE_EQ(p.bus_factor, 2.0 * 63 / 64);
  // All-to-all: bisection-bound, S / (2B) (32 chips x 32 chips x S/64 over 32 links one way).
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_to_all, 1ull << 30, 0).value(), kS / (2 * kB) + 6 * kHop);
}

TEST(CollectiveIdeal, MeshAxesCarryTwiceTheTrafficPerDirection) {
  const Topology t = mesh2x2x1();
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, 0).value(),
                   2.0 * 3 / 4 * kS / (2 * kB) + 2 * 2 * kHop);
  const Topology line = build_topology(make_pod({4}, {0}, {1}), make_chip("c", 2, 45));
  EXPECT_DOUBLE_EQ(ideal_collective_time(line, Kind::all_reduce, 1ull << 30, 0).value(),
                   2.0 * 3 / 4 * kS / kB + 2 * 3 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(line, Kind::all_to_all, 1ull << 30, 0).value(), 4 * kS / (4 * kB) + 3 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(line, Kind::permute, 1ull << 30, 0).value(), kS / kB + 3 * kHop);
}

ChipSpec testing_chip() { return testing::v4_like(); }

WorkloadSpec collective(const std::string& algorithm, std::vector<int> axes = {}) {
  WorkloadSpec w;
  w.model.name = "ar";
  w.model.kind = ModelKind::collective;
  w.model.collective.op = Kind::reduce_scatter;
  w.model.collective.bytes = MiB(64);
  w.model.collective.axes = std::move(axes);
  w.model.collective.algorithm = algorithm;
  w.numerics.dtype = DType::f32;
  return w;
}

TEST(CollectiveLowering, OneCollectiveInstruction) {
  const ir::ProgramSet set = lower_workload(collective("halving_doubling", {0, 2}), testing_chip());
  ASSERT_EQ(set.programs.size(), 1u);
  const ir::Program& p = set.programs[0];
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, ir::OpKind::collective);
  EXPECT_EQ(p[0].op_class, ir::OpClass::communication);  // was other: op_classes did not count it as communication
  EXPECT_EQ(p[0].comm.collective, Kind::reduce_scatter);
  EXPECT_EQ(p[0].bytes, 64u << 20);
  EXPECT_EQ(p[0].dtype, DType::f32);
  EXPECT_EQ(p[0].comm.mesh_axes, 0b101u);
  EXPECT_EQ(p[0].comm.algorithm, static_cast<std::uint8_t>(Algo::halving_doubling));
  EXPECT_EQ(p[0].deps.count, 0u);
  EXPECT_EQ(p.model_flops(), 0);
  EXPECT_EQ(p.label_of(p[0]), "reduce_scatter");
}

TEST(CollectiveLowering, AnUnknownAlgorithmNameIsAConfigErrorWithASuggestion) {
  const Diagnostic d = config_error([] { (void)lower_workload(collective("ring_bidirectonal"), testing_chip()); });
  EXPECT_EQ(d.key_path, "workload.model.algorithm");
  EXPECT_EQ(d.found, "ring_bidirectonal");
  EXPECT_EQ(d.hint, "did you mean 'ring_bidirectional'?");
}

TEST(CollectiveLowering, AxesOutsideTheTorusOrRepeatedAreConfigErrors) {
  try {
    (void)lower_workload(collective("auto", {0, 0, 3}), testing_chip());
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u);
    EXPECT_EQ(e.diagnostics()[0].key_path, "workload.model.axes");
    EXPECT_EQ(e.diagnostics()[0].message, "axis listed twice");
    EXPECT_EQ(e.diagnostics()[1].found, "3");
  }
}

TEST(CollectiveProgramFile, TheAlgorithmIsWrittenByNameUnlessAuto) {
  ir::ProgramSet set = lower_workload(collective("direct"), testing_chip());
  std::ostringstream out;
  ir::write_program_json(set, out);
  EXPECT_NE(out.str().find(R"("mesh_axes":[],"algorithm":"direct")"), std::string::npos)
      << out.str();
  const ir::ProgramSet back = ir::parse_program_json(out.str(), "x.json");
  EXPECT_EQ(back.programs[0][0].comm.algorithm, static_cast<std::uint8_t>(Algo::direct));
  // Its class, communication, is a collective's default: left out of the file and read back.
  EXPECT_EQ(back.programs[0][0].op_class, ir::OpClass::communication);
  std::ostringstream again;
  ir::write_program_json(back, again);
  EXPECT_EQ(again.str(), out.str());

  std::ostringstream automatic;
  ir::write_program_json(lower_workload(collective("auto"), testing_chip()), automatic);
  EXPECT_EQ(automatic.str().find("algorithm"), std::string::npos);
}

TEST(CollectiveProgramFile, AnUnknownAlgorithmNameIsReportedWithItsPointer) {
  std::ostringstream out;
  ir::write_program_json(lower_workload(collective("direct"), testing_chip()), out);
  std::string text = out.str();
  text.replace(text.find("\"direct\""), 8, "\"dirct\"");
  const Diagnostic d = config_error([&] { (void)ir::parse_program_json(text, "x.json"); });
  EXPECT_EQ(d.key_path, "/programs/0/instructions/0/algorithm");
  EXPECT_EQ(d.hint, "did you mean 'direct'?");
}

}  // namespace
}  // namespace tpusim::kernels
