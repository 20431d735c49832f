// The DCN stage of an all-reduce over N slices (kernels/src/collectives/collective_plan.cpp, dcn_phase) on the SystemC pod,
// against its closed form. After the in-slice reduce-scatter each chip holds a shard s; the DCN stage is a
// unidirectional ring over the N slices, each chip exchanging with the same chip of the next slice: N - 1
// reduce-scatter steps and N - 1 all-gather steps, each sending s / N at the chip's share of its host's NIC and
// paying the DCN latency once: T_dcn = 2 (N - 1) (s / N / d + kDcnLatency), plus the VPU's reductions and the
// runtime's start-up and per-step synchronisation. Flow links (max-min fair sharing, which the closed forms
// assume). One simulation per test process.
#include "collective_test_support.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

constexpr double kNic = 12.5e9;  // per chip, each direction (one chip per host here)

// One all-reduce of `bytes` over the group of one chip in each of `pods` slices (the DCN stage alone).
ir::ProgramSet across_slices(std::uint32_t pods, std::uint64_t bytes) {
  return one_collective_over(ir::CollectiveGroup{{1, 1, 1}, {1, 1, 1}, pods}, CollectiveKind::all_reduce, bytes,
                             Algo::ring_bidirectional);
}

double dcn_stage(int slices, double shard_bytes, double per_chip_rate) {
  return 2.0 * (slices - 1) * (shard_bytes / slices / per_chip_rate + kDcnLatency.value());
}

// Exact on a small case: 4 slices of a 4-chip ring, 64 MiB per chip, every chip's group its 3 counterparts.
TEST(DcnStage, FourSliceAllReduceTakesItsClosedFormToTheTick) {
  Scenario s = pod_scenario({4}, true, LinkFidelity::flow);
  s.pod.pods = 4;
  s.chip.host.dcn_bandwidth = BytesPerSecond(kNic);
  const std::uint64_t bytes = 64ULL << 20;
  const CollectiveRun r = run_collective(s, across_slices(4, bytes));
  EXPECT_EQ(r.plan.participants, 4);
  ASSERT_EQ(r.plan.steps.size(), 6u);  // 3 reduce-scatter + 3 all-gather steps
  for (const kernels::CollectiveStep& step : r.plan.steps) {
    ASSERT_EQ(step.sends.size(), 1u);
    EXPECT_EQ(step.sends[0].pod_offset, 1);
    EXPECT_EQ(step.sends[0].bytes, bytes / 4);
  }
  const double expected = dcn_stage(4, bytes, kNic) + r.reduce + r.overhead;
  // Each step's time is rounded up to a picosecond tick: at most 1 ps per step and per send.
  EXPECT_NEAR(r.time(), expected, 12e-12);
  // Each NIC carried 2 (N - 1) / N of the buffer.
  ASSERT_EQ(r.result.network.dcn.egress.size(), 16u);
  for (const LinkUsage& nic : r.result.network.dcn.egress) EXPECT_EQ(nic.bytes.count(), 6 * (bytes / 4));
  // A non-blocking fabric (pod.dcn_oversubscription 1, the default) has no uplink that could bind.
  EXPECT_TRUE(r.result.network.dcn.uplink_egress.empty());
}

// Within 1% on a large one: 32 slices of a 4x4 torus with 4 chips per host, 256 MiB per chip. The in-slice
// reduce-scatter leaves s = 16 MiB per chip; the DCN stage runs it around the 32-slice ring at the chip's
// quarter of its host's NIC (the 4 chips of a host send at once); then the in-slice all-gather. The in-slice
// stages are the plan's ideal minus its DCN part (their bandwidth terms and hop latencies); what the closed
// form leaves out is how the in-slice flows share links step by step, hence the 1%.
TEST(DcnStage, ThirtyTwoSliceAllReduceTakesItsClosedFormWithinOnePercent) {
  Scenario s = pod_scenario({4, 4}, true, LinkFidelity::flow);
  s.pod.pods = 32;
  s.pod.host_shape = {2, 2};
  s.chip.ici.link_efficiency = 1.0;
  const double nic = 4 * kNic;  // the host's NIC
  s.chip.host.dcn_bandwidth = BytesPerSecond(kNic);
  const std::uint64_t bytes = k256MiB;
  const CollectiveRun r = run_collective(s, one_collective(CollectiveKind::all_reduce, bytes, Algo::ring_bidirectional));
  EXPECT_EQ(r.plan.participants, 16 * 32);
  int dcn_steps = 0;
  for (const kernels::CollectiveStep& step : r.plan.steps) {
    for (const kernels::CollectiveSend& send : step.sends) {
      if (send.pod_offset == 0) continue;
      ++dcn_steps;
      EXPECT_EQ(send.pod_offset, 1);
      EXPECT_EQ(send.bytes, (bytes / 16) / 32);
    }
  }
  EXPECT_EQ(dcn_steps, 62);
  const double shard = bytes / 16.0;
  const double dcn = dcn_stage(32, shard, nic / 4);
  const double dcn_ideal = 2.0 * 31 / 32 * shard / (nic / 4);
  const double in_slice = r.ideal() - dcn_ideal;
  ASSERT_GT(in_slice, 0);
  const double expected = in_slice + dcn + r.reduce + r.overhead;
  EXPECT_GE(r.time(), expected);
  EXPECT_NEAR(r.time(), expected, 0.01 * expected) << "time / closed form " << r.time() / expected;
  // The DCN stage dominates: 62 steps of 512 KiB at 12.5 GB/s (2.6 ms) against 2 x 15/16 x 256 MiB / 4 links.
  EXPECT_GT(dcn, 0.3 * r.time());
}

// An oversubscribed fabric (pod.dcn_oversubscription = r): each slice's 4 hosts reach the fabric through one
// uplink of 4 NICs / r, and all 4 chips of a slice send off it at every step, so each gets NIC / r. Exact, as
// for the non-blocking case: T_dcn = 2 (N - 1) (s / N / (d / r) + kDcnLatency).
TEST(DcnStage, OversubscribedFabricSlowsTheDcnStageByItsRatioToTheTick) {
  Scenario s = pod_scenario({4}, true, LinkFidelity::flow);
  s.pod.pods = 4;
  s.pod.dcn_oversubscription = 2.5;
  s.chip.host.dcn_bandwidth = BytesPerSecond(kNic);
  const std::uint64_t bytes = 64ULL << 20;
  const CollectiveRun r = run_collective(s, across_slices(4, bytes));
  const double expected = dcn_stage(4, bytes, kNic / 2.5) + r.reduce + r.overhead;
  EXPECT_NEAR(r.time(), expected, 12e-12);
  // The plan's ideal counts the same rate: 2 (N - 1) / N x s / (d / r).
  EXPECT_NEAR(r.ideal(), 2.0 * 3 / 4 * bytes / (kNic / 2.5), 1e-12);
  // Each slice's uplink carried its 4 chips' sends, at full rate all along the DCN stage.
  ASSERT_EQ(r.result.network.dcn.uplink_egress.size(), 4u);
  ASSERT_EQ(r.result.network.dcn.uplink_ingress.size(), 4u);
  const double uplink = 4 * kNic / 2.5;
  for (const auto* side : {&r.result.network.dcn.uplink_egress, &r.result.network.dcn.uplink_ingress}) {
    for (const LinkUsage& u : *side) {
      EXPECT_EQ(u.bytes.count(), 4 * 6 * (bytes / 4));
      EXPECT_NEAR(u.busy.value(), 4.0 * 6 * (bytes / 4) / uplink, 1e-9);
    }
  }
  // The NICs carried what they did without the fabric.
  for (const LinkUsage& nic : r.result.network.dcn.egress) EXPECT_EQ(nic.bytes.count(), 6 * (bytes / 4));
}

// The 32-slice case above with a 4:1 fabric: the DCN stage runs at a quarter of the chip's NIC share, within
// 1% of its closed form, and takes about 4 times as long.
TEST(DcnStage, ThirtyTwoSlicesOverAFourToOneFabricTakeTheirClosedFormWithinOnePercent) {
  Scenario s = pod_scenario({4, 4}, true, LinkFidelity::flow);
  s.pod.pods = 32;
  s.pod.host_shape = {2, 2};
  s.pod.dcn_oversubscription = 4;
  s.chip.ici.link_efficiency = 1.0;
  s.chip.host.dcn_bandwidth = BytesPerSecond(kNic);
  const std::uint64_t bytes = k256MiB;
  const CollectiveRun r =
      run_collective(s, one_collective(CollectiveKind::all_reduce, bytes, Algo::ring_bidirectional));
  const double shard = bytes / 16.0;
  const double rate = kNic / 4;  // a quarter of the chip's share of its host's NIC
  const double dcn_ideal = 2.0 * 31 / 32 * shard / rate;
  const double in_slice = r.ideal() - dcn_ideal;
  ASSERT_GT(in_slice, 0);
  const double expected = in_slice + dcn_stage(32, shard, rate) + r.reduce + r.overhead;
  EXPECT_GE(r.time(), expected);
  EXPECT_NEAR(r.time(), expected, 0.01 * expected) << "time / closed form " << r.time() / expected;
  ASSERT_EQ(r.result.network.dcn.uplink_egress.size(), 32u);
  for (const LinkUsage& u : r.result.network.dcn.uplink_egress) {
    EXPECT_EQ(u.bytes.count(), 16 * 62 * ((bytes / 16) / 32));
  }
}

}  // namespace
}  // namespace tpusim::models::net
