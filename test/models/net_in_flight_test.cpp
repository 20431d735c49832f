// Several ICI operations in flight per chip (net/ici_unit.h): collectives, sends and recvs of one chip's ICI
// queue start in program order, run at the same time and complete independently; matching stays SPMD (the
// k-th collective over a group pairs with the k-th over the same group on the peers; the k-th recv from S
// with the k-th send from S). One simulation per test process; the comparisons fork a child.
//
// All-gathers keep these tests free of VPU reductions: on a ring of N = 4 (wraparound) of 45 GB/s links and
// 1 us hops, an all-gather of a shard S is ring_bidirectional, 3 one-hop steps each sending S/2 both ways:
//   ideal = 3 S / (2B) + 3 a      (kernels/collectives.h), which the flow model meets to the tick,
// plus the runtime's start-up and 3 step synchronisations (net/collective_engine.h).
#include "collective_test_support.h"
#include "support/simulate_step.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;

constexpr std::uint64_t kShard = 16ULL << 20;
const double kOverhead = kCollectiveStartup.value() + 3 * kCollectiveStepSync.value();
const double kAllGather = 3.0 * static_cast<double>(kShard) / (2 * kLinkRate) + 3 * kHop + kOverhead;
constexpr double kTolerance = 1e-6;  // relative: tick rounding

ir::Instruction all_gather(std::uint64_t shard, std::uint32_t axes) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.comm.collective = CollectiveKind::all_gather;
  ins.bytes = shard;
  ins.comm.mesh_axes = axes;
  return ins;
}

SimResult two_all_gathers(std::uint32_t first_axes, std::uint32_t second_axes) {
  ir::Program p("two");
  p.add(all_gather(kShard, first_axes), {}, "first");
  p.add(all_gather(kShard, second_axes), {}, "second");
  return ::tpusim::testing::simulate_step(pod_scenario({4, 4}, true, LinkFidelity::flow), single(std::move(p)), {});
}

// Over axis 0 and axis 1 of a 4x4 torus the two all-gathers use disjoint links: both run at once and the step
// takes one all-gather's time, the max of the two, not their sum.
TEST(IciInFlight, AllGathersOnDisjointAxesOverlapCompletely) {
  const SimResult r = two_all_gathers(0b01, 0b10);
  EXPECT_NEAR(r.step_time.value(), kAllGather, kTolerance * kAllGather);
  ASSERT_EQ(r.network.collectives.size(), 2u);
  for (const CollectiveUsage& c : r.network.collectives) {
    EXPECT_EQ(c.executions, 16u);
    EXPECT_NEAR(c.time.value(), kAllGather, kTolerance * kAllGather);
    EXPECT_EQ(c.start.value(), 0.0);
  }
}

// Both over axis 0: every step of each sends S/2 to the same neighbours over the same links at the same time,
// so each flow gets half a link: 3 steps of S / B plus the 3 hops and the overheads, which the two share in
// time: 2 x 3 S / (2B) + 3 a + overheads.
TEST(IciInFlight, AllGathersOnTheSameLinksShareTheirBandwidth) {
  const SimResult r = two_all_gathers(0b01, 0b01);
  const double expected = 2 * kAllGather - 3 * kHop - kOverhead;
  EXPECT_NEAR(r.step_time.value(), expected, kTolerance * expected);
  ASSERT_EQ(r.network.collectives.size(), 2u);
  for (const CollectiveUsage& c : r.network.collectives) EXPECT_NEAR(c.time.value(), expected, kTolerance * expected);
}

// Two all-reduces (256 MiB, ring_bidirectional) on the two axes of a 4x4 torus: disjoint links, so they
// overlap and the step takes about one all-reduce's time, far from the sum. Their reductions share the VPU of
// TensorCore 0 (ici/chip_port.h), so each may wait for the other's: at most the other's reduction time later
// (measured: exactly that, 1.0205 x alone, since both reduce at the same moments of every step). On
// different TensorCores nothing is shared and the step is exactly one all-reduce's time.
TEST(IciInFlight, AllReducesOnDisjointAxesOverlapAndShareOnlyTheVpu) {
  const auto all_reduce = [](std::uint32_t axes, int core) {
    ir::Instruction ins = all_gather(k256MiB, axes);
    ins.comm.collective = CollectiveKind::all_reduce;
    ins.core = static_cast<std::uint8_t>(core);
    return ins;
  };
  const auto two = [&](int second_core) {
    ir::Program p("two");
    p.add(all_reduce(0b01, 0), {}, "axis0");
    p.add(all_reduce(0b10, second_core), {}, "axis1");
    return ::tpusim::testing::simulate_step(pod_scenario({4, 4}, true, LinkFidelity::flow), single(std::move(p)), {});
  };
  const double other_cores = in_child([&] { return two(1).step_time.value(); });
  const double same_core = in_child([&] { return two(0).step_time.value(); });
  const CollectiveRun alone = run_collective(pod_scenario({4, 4}, true, LinkFidelity::flow),
                                             one_collective(CollectiveKind::all_reduce, k256MiB,
                                                            kernels::CollectiveAlgorithm::automatic, 0b01));
  ASSERT_GT(other_cores, 0);
  ASSERT_GT(same_core, 0);
  EXPECT_NEAR(other_cores, alone.time(), kTolerance * alone.time());
  EXPECT_GE(same_core, alone.time());
  EXPECT_LE(same_core, alone.time() + alone.reduce + 1e-9);
  EXPECT_LT(same_core, 1.1 * alone.time());
  ::testing::Test::RecordProperty("same_core_over_alone", std::to_string(same_core / alone.time()));
  ::testing::Test::RecordProperty("reductions_over_alone", std::to_string(alone.reduce / alone.time()));
}

// A long all-gather (16 MiB shard) and a short one (1 MiB) start together on different axes; a 1 ms vector op
// depends on the short one only. It starts when the short one completes, although the long one, started
// first, is still running: the ICI queue completes out of order and dependencies see it.
TEST(IciInFlight, ADependentOfALaterShortCollectiveDoesNotWaitForAnEarlierLongOne) {
  ir::Program p("overtake");
  p.add(all_gather(kShard, 0b01), {}, "long");
  const std::uint32_t small = p.add(all_gather(1ULL << 20, 0b10), {}, "short");
  p.add(vector_us(1000), {small}, "compute");
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({4, 4}, true, LinkFidelity::flow), single(std::move(p)), {});
  const double short_time = 3.0 * (1 << 20) / (2 * kLinkRate) + 3 * kHop + kOverhead;
  ASSERT_LT(short_time + 1e-3, kAllGather + 1e-3);
  const double expected = short_time + 1e-3;
  EXPECT_NEAR(r.step_time.value(), expected, 1e-9 + kTolerance * expected);
  ASSERT_EQ(r.network.collectives.size(), 2u);
  EXPECT_NEAR(r.network.collectives[0].time.value(), kAllGather, kTolerance * kAllGather);
  EXPECT_NEAR(r.network.collectives[1].time.value(), short_time, kTolerance * short_time);
}

// Matching pairs the k-th collective over a group with the k-th over the same group, not the k-th overall:
// chips of even x (on axis 0) issue the all-gather over axis 1 first, chips of odd x the one over axis 0
// first. Each collective still meets its own kind on its peers, and both overlap as in the first test.
TEST(IciInFlight, CollectivesMatchPerGroupWhateverTheIssueOrder) {
  ir::Program even("even");
  even.add(all_gather(kShard, 0b10), {}, "axis1");
  even.add(all_gather(kShard, 0b01), {}, "axis0");
  ir::Program odd("odd");
  odd.add(all_gather(kShard, 0b01), {}, "axis0");
  odd.add(all_gather(kShard, 0b10), {}, "axis1");
  ir::ProgramSet set;
  set.programs = {std::move(even), std::move(odd)};
  for (std::uint16_t c = 0; c < 16; ++c) set.role_of_chip.push_back(c % 2);  // x = chip mod 4
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({4, 4}, true, LinkFidelity::flow), set, {});
  EXPECT_NEAR(r.step_time.value(), kAllGather, kTolerance * kAllGather);
  EXPECT_EQ(r.network.collectives.size(), 4u);
}

// Two sends from each chip to +1 (8 MiB, then 1 MiB) and two recvs from -1: both sends run at once and share
// the one link, so the 1 MiB send is delivered first, at 2 x 1 MiB / B + a. The second recv matches the
// second send (k-th with k-th), so the vector op that depends on it starts then, long before the 8 MiB send
// arrives (9 MiB / B + a).
TEST(IciInFlight, TheKthRecvMatchesTheKthSendEvenWhenALaterSendArrivesFirst) {
  ir::Program p("sends");
  const auto p2p = [](ir::OpKind kind, int peer, std::uint64_t bytes) {
    ir::Instruction ins;
    ins.kind = kind;
    ins.comm.peer = peer;
    ins.bytes = bytes;
    return ins;
  };
  p.add(p2p(ir::OpKind::send, +1, 8ULL << 20), {}, "big.send");
  p.add(p2p(ir::OpKind::send, +1, 1ULL << 20), {}, "small.send");
  p.add(p2p(ir::OpKind::recv, -1, 0), {}, "big.recv");
  const std::uint32_t small = p.add(p2p(ir::OpKind::recv, -1, 0), {}, "small.recv");
  p.add(vector_us(1000), {small}, "compute");
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({4}, true, LinkFidelity::flow), single(std::move(p)), {});
  const double small_arrives = 2.0 * (1 << 20) / kLinkRate + kHop;
  const double big_arrives = 9.0 * (1 << 20) / kLinkRate + kHop;
  ASSERT_LT(big_arrives, small_arrives + 1e-3);
  EXPECT_NEAR(r.step_time.value(), small_arrives + 1e-3, 1e-9);
  EXPECT_EQ(r.network.ici_transfers, 8u);
}

// Twelve 1 MiB sends to +1, then twelve recvs from -1, on a 4-ring: more than the 8 slots. The first 8 sends
// share the link (B / 8 each) and are delivered together at 8 MiB / B + a; their slots then take sends 9-12
// and recvs 1-8 (which match delivered sends and complete at once), then recvs 9-12, which wait for sends
// 9-12: delivered at 12 MiB / B + 2a.
TEST(IciInFlight, MoreOperationsThanSlotsWaitForAFreeSlot) {
  ASSERT_EQ(kIciOperationsInFlight, 8);
  ir::Program p("many");
  for (int i = 0; i < 12; ++i) {
    ir::Instruction send;
    send.kind = ir::OpKind::send;
    send.comm.peer = 1;
    send.bytes = 1ULL << 20;
    p.add(send, {}, "send");
  }
  for (int i = 0; i < 12; ++i) {
    ir::Instruction recv;
    recv.kind = ir::OpKind::recv;
    recv.comm.peer = -1;
    p.add(recv, {}, "recv");
  }
  const SimResult r = ::tpusim::testing::simulate_step(pod_scenario({4}, true, LinkFidelity::flow), single(std::move(p)), {});
  const double expected = 12.0 * (1 << 20) / kLinkRate + 2 * kHop;
  EXPECT_NEAR(r.step_time.value(), expected, kTolerance * expected);
  EXPECT_EQ(r.network.ici_transfers, 48u);
}

}  // namespace
}  // namespace tpusim::models::net
