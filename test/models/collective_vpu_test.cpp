// A collective's reductions occupy the VPU of the instruction's TensorCore (ici/chip_port.h): they wait for
// what the VPU holds and vector instructions issued after them wait for them. One simulation per test
// process; the comparisons fork a child.
//
// The collective: a 16 MiB bf16 all-reduce on a 4-chip ring (wraparound, flow links), ring_bidirectional:
// 3 reduce-scatter steps, each sending S/8 both ways (one hop) and then reducing 2 x S/8 / 2 B = 2 Mi
// elements (2048 cycles of a 128 x 8 VPU at 1.05 GHz, 1.95 us), then 3 all-gather steps. Every chip does the
// same at the same time, so the pod behaves as one chip.
#include "collective_test_support.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using Algo = kernels::CollectiveAlgorithm;

constexpr std::uint64_t kReduced = 16ULL << 20;

ir::Instruction ring_all_reduce() {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.comm.collective = CollectiveKind::all_reduce;
  ins.bytes = kReduced;
  ins.comm.algorithm = static_cast<std::uint8_t>(Algo::ring_bidirectional);
  return ins;
}

// Per step: these tests pin when each step's reduction meets the VPU (the aggregate model reserves the steps'
// reductions at once at the end: collective_aggregate_test.cpp).
Scenario ring4() {
  Scenario s = pod_scenario({4}, true, LinkFidelity::flow);
  s.fidelity.collectives = CollectiveFidelity::per_step;
  return s;
}

// The collective alone (simulated in a child), and its reductions' VPU time (from its plan).
struct Alone {
  double time = 0;
  double reduce = 0;
};
Alone alone() {
  const ir::ProgramSet set = one_collective(CollectiveKind::all_reduce, kReduced, Algo::ring_bidirectional);
  Alone a;
  a.time = in_child([&] { return run_collective(ring4(), set).time(); });
  a.reduce = reduction_seconds(plan_of(ring4(), set), ring4().chip);
  return a;
}

// A 1 ms vector op starts with the collective. The first reduction is due after the runtime's start-up and
// the first step's transfers, t1 = kCollectiveStartup + (S/8) / B + a, but the VPU is busy until 1 ms: it
// starts then, and the rest of the collective follows as it would alone. Step = 1 ms + (alone - t1).
TEST(CollectiveVpu, AReductionWaitsForTheVectorInstructionHoldingTheVpu) {
  const Alone a = alone();
  ASSERT_GT(a.time, 0);
  ir::Program p("busy");
  p.add(vector_us(1000), {}, "compute");
  p.add(ring_all_reduce(), {}, "grads");
  const SimResult r = simulate(ring4(), single(std::move(p)), {});
  const double t1 = kCollectiveStartup.value() + kReduced / 8.0 / kLinkRate + kHop;
  const double expected = 1e-3 + (a.time - t1);
  EXPECT_NEAR(r.step_time.value(), expected, 1e-9);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  EXPECT_NEAR(r.network.collectives[0].time.value(), expected, 1e-9);
  // VPU busy = the vector op and the reductions, on one of the two TensorCores.
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), (1e-3 + a.reduce) / 2, 1e-12);
}

// A chain of 100 dependent 10 us vector ops (1 ms) runs beside the collective. Each reduction is reserved
// when it is due and starts when the running vector op ends; the next vector op waits for it. So the chain
// ends at 1 ms + all the reductions (all three fall inside it), and each reduction is late by at most one
// vector op: the collective ends at most 3 x 10 us after it would alone.
TEST(CollectiveVpu, ReductionsAndVectorWorkDelayEachOther) {
  const Alone a = alone();
  ASSERT_GT(a.time, 0);
  ir::Program p("overlap");
  std::uint32_t prev = p.add(vector_us(10), {}, "compute.0");
  for (int i = 1; i < 100; ++i) prev = p.add(vector_us(10), {prev}, "compute");
  p.add(ring_all_reduce(), {}, "grads");
  const SimResult r = simulate(ring4(), single(std::move(p)), {});
  ASSERT_LT(a.time, 1e-3);
  EXPECT_NEAR(r.step_time.value(), 1e-3 + a.reduce, 1e-9);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  EXPECT_GT(r.network.collectives[0].time.value(), a.time);
  EXPECT_LE(r.network.collectives[0].time.value(), a.time + 3 * 10e-6);
  EXPECT_NEAR(r.unit(HwUnit::vpu).busy.value(), (1e-3 + a.reduce) / 2, 1e-12);
}

// The reductions run on the VPU of the collective's TensorCore: on core 1 they leave core 0's vector work
// alone, and the two overlap as without contention.
TEST(CollectiveVpu, AReductionOnTheOtherTensorCoreDoesNotWait) {
  const Alone a = alone();
  ASSERT_GT(a.time, 0);
  ir::Program p("other-core");
  p.add(vector_us(1000), {}, "compute");
  ir::Instruction ar = ring_all_reduce();
  ar.core = 1;
  p.add(ar, {}, "grads");
  const SimResult r = simulate(ring4(), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 1e-3, 1e-9);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  EXPECT_NEAR(r.network.collectives[0].time.value(), a.time, 1e-9);
}

TEST(CollectiveVpu, AReductionOnATensorCoreTheChipLacksIsRejectedNamingTheInstruction) {
  ir::Program p("bad-core");
  ir::Instruction ar = ring_all_reduce();
  ar.core = 2;
  p.add(ar, {}, "grads");
  try {
    (void)simulate(ring4(), single(std::move(p)), {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.label(), "grads");
    EXPECT_NE(std::string(e.what()).find("collective on TensorCore 2, but the chip has 2"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tpusim::models::net
