// Rings that follow a twisted torus's links (tpusim/kernels/twisted_rings.h): which plans follow them, that
// every send of such a ring is one hop, and that each chip's moves over the group's offset box reach every member
// of its group exactly once (what makes the cycles through the shifted rings reduce and gather correctly).
#include <set>

#include "collective_test_support.h"
#include "tpusim/kernels/twisted_rings.h"
#include "tpusim/topology/routing.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using namespace testing;  // collective_test_support.h: Algo, Kind
using test::make_chip;
using test::make_pod;

// v4 4x4x8: the x and y wraparounds land 4 on along z (topology.h).
Topology torus4x4x8(bool twisted) {
  PodSpec pod = make_pod({4, 4, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4});
  pod.twisted = twisted;
  return build_topology(pod, make_chip("c", 6, 45));
}

constexpr std::uint64_t kBig = 64 << 20;

TEST(TwistedRings, ARingOverAGroupHoldingTheShiftedRingsFollowsTheShortAxesLinks) {
  const Topology twisted = torus4x4x8(true);
  const auto follow = [&](std::uint32_t mask, Kind kind, Algo algo) {
    const CollectivePlan plan = plan_collective(twisted, kind, kBig, DType::bf16, mask, algo);
    return twisted_ring_axes(twisted, plan, whole_axes_group(twisted, mask));
  };
  EXPECT_EQ(follow(0b111, Kind::all_reduce, Algo::automatic), 0b011u);
  EXPECT_EQ(follow(0b111, Kind::all_gather, Algo::ring_unidirectional), 0b011u);
  EXPECT_EQ(follow(0b101, Kind::reduce_scatter, Algo::ring_bidirectional), 0b001u);
  // The shifted rings lie outside a group without the long axis: x alone, x and y, z alone.
  EXPECT_EQ(follow(0b001, Kind::all_reduce, Algo::ring_bidirectional), 0u);
  EXPECT_EQ(follow(0b011, Kind::all_reduce, Algo::ring_bidirectional), 0u);
  EXPECT_EQ(follow(0b100, Kind::all_reduce, Algo::ring_bidirectional), 0u);
  // Only the ring reductions and gathers.
  EXPECT_EQ(follow(0b111, Kind::all_reduce, Algo::direct), 0u);
  EXPECT_EQ(follow(0b111, Kind::all_reduce, Algo::halving_doubling), 0u);
  EXPECT_EQ(follow(0b111, Kind::all_to_all, Algo::ring_bidirectional), 0u);
  // A segment of the long axis does not hold the shift of 4.
  ir::CollectiveGroup seg = whole_axes_group(twisted, 0b111);
  seg.size[2] = 4;
  const CollectivePlan p = plan_collective(twisted, Kind::all_reduce, kBig, DType::bf16, seg, Algo::ring_bidirectional);
  EXPECT_EQ(twisted_ring_axes(twisted, p, seg), 0u);
  // An untwisted torus has nothing to follow.
  const Topology plain = torus4x4x8(false);
  const CollectivePlan untwisted = plan_collective(plain, Kind::all_reduce, kBig, DType::bf16, 0b111, Algo::automatic);
  EXPECT_EQ(twisted_ring_axes(plain, untwisted, whole_axes_group(plain, 0b111)), 0u);
}

// Every send of the automatic all-reduce over every chip (ring_bidirectional: +-1 along x, y and z) is one DOR hop
// from every chip once it follows the links; on the coordinates alone, the x and y rings' closing sends take 3.
TEST(TwistedRings, EverySendOfTheRingOverATwistedTorusIsOneHop) {
  const Topology topo = torus4x4x8(true);
  const ir::CollectiveGroup group = whole_axes_group(topo, 0b111);
  const CollectivePlan plan = plan_collective(topo, Kind::all_reduce, kBig, DType::bf16, 0b111, Algo::automatic);
  ASSERT_EQ(plan.algorithm, Algo::ring_bidirectional);
  const std::uint32_t follow = twisted_ring_axes(topo, plan, group);
  int longest_followed = 0, longest_plain = 0;
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    for (const CollectiveStep& step : plan.steps) {
      for (const CollectiveSend& send : step.sends) {
        const ChipId to = group_destination(topo, group, ChipId(c), send.offset, 0, follow);
        longest_followed = std::max(longest_followed, *dor_hops(topo, ChipId(c), to));
        const ChipId plain = group_destination(topo, group, ChipId(c), send.offset, 0);
        longest_plain = std::max(longest_plain, *dor_hops(topo, ChipId(c), plain));
      }
    }
  }
  EXPECT_EQ(longest_followed, 1);
  EXPECT_EQ(longest_plain, 3);
}

// From every chip, the offsets (i, j, k) in [0,4) x [0,4) x [0,8) taken over the links reach all 128 chips once
// (and (i, 0, k) the chip's 32-chip y plane for the group over x and z): chip c's ring reduce-scatter sums the
// inputs of c minus that box, each member once, whatever ring of the cycle each offset lands on.
TEST(TwistedRings, TheOffsetBoxOverTheLinksReachesEveryMemberOnce) {
  const Topology topo = torus4x4x8(true);
  for (const std::uint32_t mask : {0b111u, 0b101u}) {
    const ir::CollectiveGroup group = whole_axes_group(topo, mask);
    const std::uint32_t follow = mask & 0b011u;
    for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
      std::set<std::uint32_t> reached;
      int count = 0;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < static_cast<int>(group.size[1]); ++j) {
          for (int k = 0; k < 8; ++k) {
            reached.insert(group_destination(topo, group, ChipId(c), {-i, -j, -k}, 0, follow).value());
            ++count;
          }
        }
      }
      ASSERT_EQ(static_cast<int>(reached.size()), count) << "chip " << c;
      for (const std::uint32_t r : reached) {
        if (mask == 0b101u) {
          ASSERT_EQ(topo.coord(ChipId(r)).pos[1], topo.coord(ChipId(c)).pos[1]);
        }
      }
    }
  }
}

// The same on a twisted 4x8x8 (x's wraparound moves 4 along y and z) and for a group of every other chip along x
// (size 2, stride 2): the box over the links reaches exactly the chips the box on the coordinates reaches, the
// chip's group.
TEST(TwistedRings, TheBoxOverTheLinksIsTheGroupOn4x8x8AndOnAStridedGroup) {
  PodSpec spec = make_pod({4, 8, 8}, {1, 1, 1}, {2, 2, 1}, {4, 4, 4});
  spec.twisted = true;
  const Topology wide = build_topology(spec, make_chip("c", 6, 45));
  ir::CollectiveGroup strided = whole_axes_group(torus4x4x8(true), 0b111);
  strided.size[0] = 2;
  strided.stride[0] = 2;
  const Topology tall = torus4x4x8(true);
  for (const auto& [topo, group] : {std::pair<const Topology*, ir::CollectiveGroup>{&wide, whole_axes_group(wide, 0)},
                                    std::pair<const Topology*, ir::CollectiveGroup>{&tall, strided}}) {
    const CollectivePlan plan =
        plan_collective(*topo, Kind::all_reduce, kBig, DType::bf16, group, Algo::ring_bidirectional);
    const std::uint32_t follow = twisted_ring_axes(*topo, plan, group);
    EXPECT_EQ(follow, topo == &wide ? 0b001u : 0b011u);
    for (std::uint32_t c = 0; c < topo->chip_count(); ++c) {
      std::set<std::uint32_t> over_links, on_coordinates;
      for (int i = 0; i < static_cast<int>(group.size[0]); ++i) {
        for (int j = 0; j < static_cast<int>(group.size[1]); ++j) {
          for (int k = 0; k < static_cast<int>(group.size[2]); ++k) {
            over_links.insert(group_destination(*topo, group, ChipId(c), {-i, -j, -k}, 0, follow).value());
            on_coordinates.insert(group_destination(*topo, group, ChipId(c), {-i, -j, -k}, 0).value());
          }
        }
      }
      ASSERT_EQ(over_links.size(), static_cast<std::size_t>(group.size[0] * group.size[1] * group.size[2]));
      ASSERT_EQ(over_links, on_coordinates) << "chip " << c;
    }
  }
}

// The + and - moves are each other's inverse, so every chip receives exactly the sends its peers make to it.
TEST(TwistedRings, ThePlusAndMinusMovesAreInverse) {
  const Topology topo = torus4x4x8(true);
  const ir::CollectiveGroup group = whole_axes_group(topo, 0b111);
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    for (int a = 0; a < 2; ++a) {
      std::array<int, kMaxAxes> plus{}, minus{};
      plus[static_cast<std::size_t>(a)] = 1;
      minus[static_cast<std::size_t>(a)] = -1;
      const ChipId there = group_destination(topo, group, ChipId(c), plus, 0, 0b011u);
      EXPECT_EQ(group_destination(topo, group, there, minus, 0, 0b011u), ChipId(c));
    }
  }
  // From x = 3 the + neighbour along x is (0, y, z + 4), over the twisted wraparound.
  const ChipId from = topo.chip_at(ChipCoord{0, {3, 1, 6}});
  EXPECT_EQ(group_destination(topo, group, from, {1, 0, 0}, 0, 0b011u), topo.chip_at(ChipCoord{0, {0, 1, 2}}));
}

// A group without the long axis does not hold the shifted rings, so its short axes are lines: the ideal is the
// line's closed form (rate B, not 2B: x alone, S = 1 GiB, 2 x 3/4 x S/B + 6 hops), and the automatic choice plans
// them as lines at 64 KiB (one hop per step, where the ring's closing send goes 3 hops back).
TEST(TwistedRings, AShortAxisWithoutTheLongAxesIsALine) {
  const Topology twisted = torus4x4x8(true), plain = torus4x4x8(false);
  const auto ideal = [](const Topology& t, std::uint32_t mask) {
    return ideal_collective_time(t, Kind::all_reduce, static_cast<std::uint64_t>(kS), mask).value();
  };
  EXPECT_NEAR(ideal(twisted, 0b001), 2 * 0.75 * kS / kB + 6 * kHop, 1e-12);
  EXPECT_NEAR(ideal(plain, 0b001), 2 * 0.75 * kS / (2 * kB) + 6 * kHop, 1e-12);
  EXPECT_NEAR(ideal(twisted, 0b111), ideal(plain, 0b111), 1e-12);  // the group holds the shifted rings
  const std::uint64_t small = 64 << 10;
  EXPECT_EQ(plan_collective(twisted, Kind::all_reduce, small, DType::bf16, 0b001, Algo::automatic).cut,
            (std::array<int, kMaxAxes>{3, -1, -1}));
  EXPECT_EQ(plan_collective(twisted, Kind::all_gather, small, DType::bf16, 0b011, Algo::automatic).cut,
            (std::array<int, kMaxAxes>{3, 3, -1}));
  EXPECT_EQ(plan_collective(plain, Kind::all_reduce, small, DType::bf16, 0b001, Algo::automatic).cut,
            (std::array<int, kMaxAxes>{-1, -1, -1}));
  EXPECT_EQ(plan_collective(twisted, Kind::all_reduce, small, DType::bf16, 0b111, Algo::automatic).cut,
            (std::array<int, kMaxAxes>{-1, -1, -1}));
}

}  // namespace
}  // namespace tpusim::kernels
