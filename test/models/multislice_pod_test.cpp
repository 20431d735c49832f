// A multislice all-reduce: the bundled scenario multislice-v5e-2x16x16 (two v5e 16x16 pods joined by the
// DCN), lowered by the collective library and run on the SystemC pod. One simulation per test process.
#include "collective_test_support.h"
#include "tpusim/kernels/lowering.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;

// The plan is hierarchical (kernels/collectives.h): in-pod reduce-scatter (30 ring steps) to a 1 MiB shard,
// the shard's all-reduce across the M = 2 pods over the DCN (a unidirectional ring: one reduce-scatter step
// and one all-gather step, each sending half the shard to the other pod), in-pod all-gather (30 steps). Expected
// time = ideal + VPU reductions + 2 x kDcnLatency + the runtime's overheads (the DCN latency, start-up and step
// synchronisations are the network model's, outside the ideal), with ideal ICI links (ici.link_efficiency 1, so
// the ICI terms are the ideal's), within 1%: the DCN sends of the 8 chips of a host share its
// 8 x 25 Gb/s NIC, so each runs at exactly the per-chip rate the ideal uses, and the in-pod sends are one hop
// each as in collective_ring_test.cpp.
TEST(Multislice, TwoPodAllReduceAddsADcnStageAtTheNicRate) {
  Scenario s = load_scenario("multislice-v5e-2x16x16", {});
  s.chip.ici.link_efficiency = 1.0;
  // The step's wait for the slowest of the 64 hosts (pod.host_jitter) is host_sync_test.cpp's, not this one's.
  s.pod.host_jitter = 0;
  ASSERT_EQ(s.pod.pods, 2);
  // configs/chips/v5e.yaml: docs/hardware.md "2 x 100 Gb/s NICs per host" / 8 chips = 25 Gb/s per chip.
  EXPECT_DOUBLE_EQ(s.chip.host.dcn_bandwidth.value(), 25e9 / 8);
  const ir::ProgramSet programs = kernels::lower_workload(s.workload, s.chip);
  const CollectiveRun r = run_collective(s, programs);

  ASSERT_EQ(r.plan.participants, 512);
  ASSERT_EQ(r.plan.steps.size(), 62u);
  int dcn_steps = 0;
  for (const kernels::CollectiveStep& step : r.plan.steps) {
    for (const kernels::CollectiveSend& send : step.sends) {
      if (send.pod_offset != 0) {
        ++dcn_steps;
        EXPECT_EQ(send.bytes, 512ULL << 10);  // half of the 1 MiB shard (256 MiB / 256 chips) per pod
      }
    }
  }
  EXPECT_EQ(dcn_steps, 2);

  const double dcn = 2 * (1ULL << 20) / 2.0 / (25e9 / 8);  // 2 (M-1)/M x shard / D
  EXPECT_GT(dcn, 0.3e-3);
  const double expected = r.ideal() + r.reduce + 2 * kDcnLatency.value() + r.overhead;
  EXPECT_GE(r.time(), r.ideal());
  EXPECT_NEAR(r.time(), expected, 0.01 * expected) << "time / ideal " << r.time() / r.ideal();

  // Every host's NIC sent its 8 chips' half-shards twice (reduce-scatter, all-gather).
  ASSERT_EQ(r.result.network.dcn.egress.size(), 64u);
  for (const LinkUsage& nic : r.result.network.dcn.egress) EXPECT_EQ(nic.bytes.count(), 8 * 2 * (512ULL << 10));
  ::testing::Test::RecordProperty("time_over_ideal", std::to_string(r.time() / r.ideal()));
}

}  // namespace
}  // namespace tpusim::models::net
