// A collective's own HBM traffic (net/collective_engine.h, ici/chip_port.h): each step reads what its sends
// carry and the local operand of its reduction from the chip's HBM and writes what its receives carry, on the
// chip's HBM scheduler beside the chip's own transfers; a step's reduction (or an aggregate run's end) waits
// for those bytes too. One simulation per test process; the comparisons fork a child.
//
// The collectives: S = 16 MiB bf16 per chip on a 4-chip ring (wraparound, flow links), ring_bidirectional,
// 3 steps each sending both ways over one hop.
//   all-gather of a shard of S per chip: each step sends half a shard each way, so per chip 3 x 2 x S/2 = 3S
//                   read (the sends) and 3S written (the receives).
//   reduce-scatter of S per chip: each step sends S/8 each way (3 x 2 x S/8 = 3S/4 read and 3S/4 written) and
//                   reduces the two received pieces, 2 x S/8 / 2 B = S/8 elements, reading as many local bf16
//                   operands: 3 x S/8 x 2 B = 3S/4 more read, so 3S/2 read and 3S/4 written.
#include "collective_test_support.h"
#include "support/simulate_step.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

constexpr std::uint64_t kS = 16ULL << 20;
constexpr double kSlowHbm = 20e9;  // bytes/s: slower than the 45 GB/s links, so the HBM bounds the collective

Scenario ring4(CollectiveFidelity fidelity) {
  Scenario s = pod_scenario({4}, true, LinkFidelity::flow);
  s.fidelity.collectives = fidelity;
  return s;
}

Scenario slow_hbm(CollectiveFidelity fidelity, double turnaround) {
  Scenario s = ring4(fidelity);
  s.chip.hbm.bandwidth = BytesPerSecond(kSlowHbm);
  s.chip.hbm.efficiency = 1.0;
  s.chip.hbm.turnaround = turnaround;
  return s;
}

struct Bytes2 {
  double read = 0, written = 0;
};
Bytes2 hbm_bytes(const SimResult& r) { return {r.traffic.hbm_read.as_double(), r.traffic.hbm_written.as_double()}; }

TEST(CollectiveHbm, AllGatherReadsItsSendsAndWritesItsReceives) {
  for (const CollectiveFidelity f : {CollectiveFidelity::per_step, CollectiveFidelity::aggregate}) {
    const double read = in_child([&] {
      return hbm_bytes(run_collective(ring4(f), one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional))
                           .result)
          .read;
    });
    const double written = in_child([&] {
      return hbm_bytes(run_collective(ring4(f), one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional))
                           .result)
          .written;
    });
    EXPECT_EQ(read, 4.0 * 3 * kS) << static_cast<int>(f);
    EXPECT_EQ(written, 4.0 * 3 * kS) << static_cast<int>(f);
  }
}

TEST(CollectiveHbm, ReduceScatterAlsoReadsTheLocalOperandOfEachReduction) {
  for (const CollectiveFidelity f : {CollectiveFidelity::per_step, CollectiveFidelity::aggregate}) {
    const double read = in_child([&] {
      return hbm_bytes(
                 run_collective(ring4(f), one_collective(CollectiveKind::reduce_scatter, kS, Algo::ring_bidirectional))
                     .result)
          .read;
    });
    const double written = in_child([&] {
      return hbm_bytes(
                 run_collective(ring4(f), one_collective(CollectiveKind::reduce_scatter, kS, Algo::ring_bidirectional))
                     .result)
          .written;
    });
    EXPECT_EQ(read, 4.0 * 3 * kS / 2) << static_cast<int>(f);
    EXPECT_EQ(written, 4.0 * 3 * kS / 4) << static_cast<int>(f);
  }
}

// The all-gather per step on a 20 GB/s HBM with a 10% read/write turnaround: a step moves S/2 over each of
// its links (S/2 / 45 GB/s + 1 us = 187.4 us) while its HBM reads and writes 2 x S/2 each, 2S that pay the
// turnaround (the charge reads and writes at once, as a copy does): 2S / (20 GB/s x 0.9) = 1.864 ms. The step
// takes the larger, then the engine takes the HBM's completion one tick later, then kCollectiveStepSync:
// step = startup + 3 x (2S / (R x 0.9) + 1 tick + sync).
TEST(CollectiveHbm, ASlowHbmBoundsEachStep) {
  const SimResult r = run_collective(slow_hbm(CollectiveFidelity::per_step, 0.1),
                                     one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional))
                          .result;
  const double link = kS / 2.0 / kLinkRate + kHop;
  const double hbm = 2.0 * kS / (kSlowHbm * 0.9);
  ASSERT_GT(hbm, link);
  const double expected = kCollectiveStartup.value() + 3 * (hbm + 1e-12 + kCollectiveStepSync.value());
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
}

// Aggregate: the run's three steps are one flow (3 x (S/2 / 45 GB/s + 1 us) = 562.2 us) and one charge per
// chip of its 3S read and 3S written (6S / 20 GB/s = 5.03 ms without turnaround); the run ends at the later,
// and the collective 3 x kCollectiveStepSync after.
TEST(CollectiveHbm, ASlowHbmBoundsAnAggregateRun) {
  const SimResult r = run_collective(slow_hbm(CollectiveFidelity::aggregate, 0.0),
                                     one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional))
                          .result;
  const double link = 3 * (kS / 2.0 / kLinkRate + kHop);
  const double hbm = 6.0 * kS / kSlowHbm;
  ASSERT_GT(hbm, link);
  const double expected = kCollectiveStartup.value() + hbm + 1e-12 + 3 * kCollectiveStepSync.value();
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
}

// The HBM fast again (1200 GB/s): the links bound the step as before, 3 x (S/2 / 45 GB/s + 1 us) + the
// overheads; the HBM's 6S per chip takes 90 us of it (with the 7% turnaround), hidden.
TEST(CollectiveHbm, AFastHbmLeavesTheLinksTheBound) {
  Scenario s = ring4(CollectiveFidelity::aggregate);
  const SimResult r = run_collective(s, one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional)).result;
  const double expected = kCollectiveStartup.value() + 3 * (kS / 2.0 / kLinkRate + kHop) + 3 * kCollectiveStepSync.value();
  EXPECT_NEAR(r.step_time.value(), expected, 1e-6 * expected);
}

// An HBM -> HBM copy of 64 MiB on every chip beside the all-gather, HBM 20 GB/s without turnaround. The copy
// (128 MiB of HBM time: it reads and writes) starts moving bytes after hbm.latency (500 ns), the collective's
// charge (Vc = 6S = 96 MiB per chip) after its
// start-up (0.5 us): at the same tick. Two engines then share the HBM equally until the charge is done, at
// 0.5 us + 2 Vc / R; the copy has moved Vc by then and finishes alone, Vc / R later than it would alone. The
// collective ends 1 tick + 3 x kCollectiveStepSync after its charge.
TEST(CollectiveHbm, AnOverlappedCopySharesTheHbmWithTheCollective) {
  constexpr std::uint64_t kCopy = 64ULL << 20;
  const auto program = [] {
    ir::Program p("copy-beside-gather");
    p.add(models::testing::dma(ir::Memory::hbm, ir::Memory::hbm, kCopy), {}, "copy");
    ir::Instruction gather = one_collective(CollectiveKind::all_gather, kS, Algo::ring_bidirectional).programs[0][0];
    p.add(gather, {}, "gather");
    return single(std::move(p));
  };
  const double copy_alone = in_child([] {
    ir::Program p("copy");
    p.add(models::testing::dma(ir::Memory::hbm, ir::Memory::hbm, kCopy), {}, "copy");
    return ::tpusim::testing::simulate_step(slow_hbm(CollectiveFidelity::aggregate, 0.0), single(std::move(p)), {}).step_time.value();
  });
  ASSERT_GT(copy_alone, 0);
  const double vc = 6.0 * kS;
  ASSERT_GT(2.0 * kCopy, vc);  // the copy outlasts the charge
  const SimResult r = ::tpusim::testing::simulate_step(slow_hbm(CollectiveFidelity::aggregate, 0.0), program(), {});
  EXPECT_NEAR(r.step_time.value(), copy_alone + vc / kSlowHbm, 1e-6 * copy_alone);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  const double gather_end = kCollectiveStartup.value() + 2 * vc / kSlowHbm + 1e-12 + 3 * kCollectiveStepSync.value();
  EXPECT_NEAR(r.network.collectives[0].end.value(), gather_end, 1e-6 * gather_end);
}

}  // namespace
}  // namespace tpusim::models::net
