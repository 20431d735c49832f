// The automatic choice by closed form (kernels/README.md, "auto") and the closed form itself
// (estimate_collective_time): on a torus ring the bandwidth-optimal ring, on a line (a mesh axis, a segment of a
// ring) the ring planned as a line, at every size; the choice is the argmin of the candidates' estimates.
#include <vector>

#include "collective_test_support.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using namespace testing;  // collective_test_support.h: Algo, Kind, kB, kHop, kS, ring16
using test::make_chip;
using test::make_pod;

Topology line16() { return build_topology(make_pod({16}, {0}, {1}), make_chip("c", 2, 45)); }
Topology mesh4x4() { return build_topology(make_pod({4, 4}, {0, 0}, {1, 1}), make_chip("c", 4, 45)); }

ir::CollectiveGroup whole(const Topology& t) { return whole_axes_group(t, 0); }

double estimate(const Topology& t, Kind kind, std::uint64_t bytes, Algo algo, const ir::CollectiveGroup& g) {
  return estimate_collective_time(t, plan_collective(t, kind, bytes, DType::bf16, g, algo), g).value();
}

// The named algorithms auto weighs (direct is not a candidate: measurement C1), where they can run.
std::vector<Algo> named(const ir::CollectiveGroup& g) {
  std::vector<Algo> out{Algo::ring_bidirectional, Algo::ring_unidirectional};
  bool powers = true;
  for (const std::uint32_t n : g.size) powers = powers && (n & (n - 1)) == 0;
  if (powers) out.push_back(Algo::halving_doubling);
  return out;
}

// Auto's plan has the smallest estimate of the candidates (a later one wins only by 0.1%).
void expect_argmin(const Topology& t, Kind kind, std::uint64_t bytes, const ir::CollectiveGroup& g) {
  const CollectivePlan a = plan_collective(t, kind, bytes, DType::bf16, g, Algo::automatic);
  EXPECT_DOUBLE_EQ(a.estimate.value(), estimate_collective_time(t, a, g).value());
  for (const Algo algo : named(g)) {
    EXPECT_LE(a.estimate.value(), estimate(t, kind, bytes, algo, g) / (1 - 1e-3)) << algorithm_name(algo);
  }
}

// The closed form of the ring on a torus ring is the ideal (kS divides evenly: no padding).
TEST(CollectiveChoice, TheRingsEstimateOnATorusIsTheIdeal) {
  const Topology t = ring16();
  const CollectivePlan p = plan_collective(t, Kind::all_reduce, 1ULL << 30, DType::bf16, whole(t), Algo::ring_bidirectional);
  EXPECT_NEAR(estimate_collective_time(t, p, whole(t)).value(), p.ideal_time.value(), 1e-12);
  EXPECT_NEAR(p.ideal_time.value(), 2 * 15.0 / 16 * kS / (2 * kB) + 30 * kHop, 1e-12);
}

// The ring embedded in a 16-chip line: each link direction carries the step's send and the wrap send of the
// other direction (twice the bytes), and every step waits for the wrap send's 15 hops.
TEST(CollectiveChoice, TheEmbeddedRingOnALineWaitsFifteenHopsPerStep) {
  const Topology t = line16();
  EXPECT_NEAR(estimate(t, Kind::all_reduce, 1ULL << 30, Algo::ring_bidirectional, whole(t)),
              2 * 15.0 / 16 * kS / kB + 30 * 15 * kHop, 1e-12);
}

// On the line auto plans the line: the same bytes per link, one hop per step: 2 (N-1)/N S/B + 2 (N-1) a.
TEST(CollectiveChoice, AutoPlansALineOnAMeshAxisAtEverySize) {
  const Topology t = line16();
  for (const std::uint64_t bytes : {std::uint64_t{1} << 30, std::uint64_t{256} << 10, std::uint64_t{4096}}) {
    const CollectivePlan p = plan_collective(t, Kind::all_reduce, bytes, DType::bf16, whole(t), Algo::automatic);
    EXPECT_EQ(p.algorithm, Algo::ring_bidirectional);
    EXPECT_EQ(p.cut[0], 15) << bytes;
    expect_argmin(t, Kind::all_reduce, bytes, whole(t));
  }
  const CollectivePlan p = plan_collective(t, Kind::all_reduce, 1ULL << 30, DType::bf16, whole(t), Algo::automatic);
  EXPECT_NEAR(p.estimate.value(), 2 * 15.0 / 16 * kS / kB + 30 * kHop, 1e-12);
}

// On a torus ring the ring wins at every size: halving-doubling has the same hops per phase (8 + 4 + 2 + 1)
// and more bytes per link; the 512 B all-gather is measurement C1's smallest size.
TEST(CollectiveChoice, AutoKeepsTheRingOnATorusAtEverySize) {
  const Topology t = ring16();
  for (const Kind kind : {Kind::all_reduce, Kind::all_gather, Kind::reduce_scatter}) {
    for (const std::uint64_t bytes : {std::uint64_t{512}, std::uint64_t{32} << 10, std::uint64_t{1} << 30}) {
      const CollectivePlan p = plan_collective(t, kind, bytes, DType::bf16, whole(t), Algo::automatic);
      EXPECT_EQ(p.algorithm, Algo::ring_bidirectional) << bytes;
      EXPECT_EQ(p.cut[0], -1);
      expect_argmin(t, kind, bytes, whole(t));
    }
  }
}

// LLaMA-2 70B decode's tensor all-reduce shape: 256 KiB per chip over a 4x4 mesh. Both axes as lines: 6 steps
// per phase of one hop (12 hops) against the embedded ring's 6 steps of 3 hops (36 hops).
TEST(CollectiveChoice, AutoPlansBothAxesOfA4x4MeshAsLines) {
  const Topology t = mesh4x4();
  const std::uint64_t bytes = 256 << 10;
  const CollectivePlan p = plan_collective(t, Kind::all_reduce, bytes, DType::bf16, whole(t), Algo::automatic);
  EXPECT_EQ(p.cut[0], 3);
  EXPECT_EQ(p.cut[1], 3);
  expect_argmin(t, Kind::all_reduce, bytes, whole(t));
  const double ring = estimate(t, Kind::all_reduce, bytes, Algo::ring_bidirectional, whole(t));
  EXPECT_NEAR(ring - p.estimate.value(), (36 - 12) * kHop, 1e-9);
}

// A 4-chip segment of a 16-ring (a tensor group) is a line too; its stride-4 partner (every 4th chip, which
// closes a ring over the wraparound) keeps the ring.
TEST(CollectiveChoice, ASegmentIsALineAndAStridedRingStaysARing) {
  const Topology t = ring16();
  const ir::CollectiveGroup segment{{4, 1, 1}, {1, 1, 1}, 1}, strided{{4, 1, 1}, {4, 1, 1}, 1};
  const CollectivePlan s = plan_collective(t, Kind::all_reduce, 1 << 20, DType::bf16, segment, Algo::automatic);
  EXPECT_EQ(s.cut[0], 3);
  expect_argmin(t, Kind::all_reduce, 1 << 20, segment);
  const CollectivePlan r = plan_collective(t, Kind::all_reduce, 1 << 20, DType::bf16, strided, Algo::automatic);
  EXPECT_EQ(r.cut[0], -1);
  EXPECT_EQ(r.algorithm, Algo::ring_bidirectional);
  expect_argmin(t, Kind::all_reduce, 1 << 20, strided);
}

// The rules of their own stay: all_to_all and permute are not chosen by estimate.
TEST(CollectiveChoice, AllToAllAndPermuteKeepTheirRule) {
  const Topology t = line16();
  EXPECT_EQ(plan_collective(t, Kind::all_to_all, 4096, DType::bf16, whole(t), Algo::automatic).algorithm, Algo::direct);
  EXPECT_EQ(plan_collective(t, Kind::permute, 4096, DType::bf16, whole(t), Algo::automatic).algorithm,
            Algo::ring_unidirectional);
}

}  // namespace
}  // namespace tpusim::kernels
