// Point-to-point send / recv over ICI (net/point_to_point.h): peer = offset along the first axis in mesh_axes;
// a send completes when delivered and read out of its HBM, a recv (whose peer names its source) when the
// matching send has arrived and been written into its HBM. One simulation per test process.
#include <string>

#include "collective_test_support.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;

constexpr std::uint64_t kBytes = 8ULL << 20;
const double kOneHop = static_cast<double>(kBytes) / kLinkRate + kHop;  // one link, 1 MiB chunks, no fill

ir::Instruction p2p(ir::OpKind kind, int peer, std::uint64_t bytes = kBytes) {
  ir::Instruction ins;
  ins.kind = kind;
  ins.comm.peer = peer;
  ins.bytes = kind == ir::OpKind::send ? bytes : 0;
  return ins;
}

ir::Program shift() {
  ir::Program p("shift");
  p.add(p2p(ir::OpKind::send, +1), {}, "shift.send");
  p.add(p2p(ir::OpKind::recv, -1), {}, "shift.recv");
  return p;
}

// An HBM of `rate` bytes/s at full efficiency, no read/write turnaround.
Scenario with_hbm(Scenario s, double rate) {
  s.chip.hbm.bandwidth = BytesPerSecond(rate);
  s.chip.hbm.efficiency = 1.0;
  s.chip.hbm.turnaround = 0.0;
  return s;
}

// The SPMD shift: every chip sends to +1 and receives from -1; both complete after one link time and one hop
// (the HBM reads and writes the 8 MiB far faster than the 45 GB/s link moves it). Each chip's HBM is read and
// written once.
TEST(SendRecv, RingShiftCompletesAfterOneLinkTimeAndOneHop) {
  const SimResult r = simulate(pod_scenario({16}, true), single(shift()), {});
  EXPECT_NEAR(r.step_time.value(), kOneHop, 1e-4 * kOneHop);
  EXPECT_EQ(r.network.ici_transfers, 16u);
  EXPECT_EQ(r.cost.instructions_executed, 32u);
  EXPECT_EQ(r.traffic.hbm_read.count(), 16 * kBytes);
  EXPECT_EQ(r.traffic.hbm_written.count(), 16 * kBytes);
}

// An HBM of 20 GB/s, slower than the link: the send's read and the recv's write of 8 MiB each share it from
// the start, so the shift ends at 2 x 8 MiB / 20 GB/s (0.84 ms) instead of the link's 0.19 ms.
TEST(SendRecv, ASlowHbmBoundsTheShiftByItsReadAndWrite) {
  constexpr double kSlowHbm = 20e9;
  const SimResult r = simulate(with_hbm(pod_scenario({4}, true), kSlowHbm), single(shift()), {});
  const double expected = 2.0 * static_cast<double>(kBytes) / kSlowHbm;
  EXPECT_NEAR(r.step_time.value(), expected, 1e-4 * expected);
}

// A forward that depends on the receive: two shifts in sequence. Each recv is posted once its own chip's send is
// delivered, when the send it takes has arrived too, so it pays its write then (8 MiB at 1 TB/s, 8.4 us):
// 2 x (one hop time + the write).
TEST(SendRecv, ForwardingAfterTheReceiveTakesTwoHopTimesAndTwoWrites) {
  constexpr double kHbm = 1e12;
  ir::Program p("relay");
  const std::uint32_t s0 = p.add(p2p(ir::OpKind::send, +1), {}, "relay.send0");
  const std::uint32_t r0 = p.add(p2p(ir::OpKind::recv, -1), {s0}, "relay.recv0");
  const std::uint32_t s1 = p.add(p2p(ir::OpKind::send, +1), {r0}, "relay.send1");
  p.add(p2p(ir::OpKind::recv, -1), {s1}, "relay.recv1");
  const SimResult r = simulate(with_hbm(pod_scenario({4}, true), kHbm), single(std::move(p)), {});
  const double expected = 2 * (kOneHop + static_cast<double>(kBytes) / kHbm);
  EXPECT_NEAR(r.step_time.value(), expected, 1e-4 * kOneHop);
}

// Roles: chip 0 computes for 1 ms before sending to chip 1 along axis 1 (mesh_axes = 0b10); chip 1 posts its
// recv at once and waits for the send; the others do nothing. Chip 1 finishes at 1 ms + one hop time.
TEST(SendRecv, RecvWaitsForTheMatchingSendAlongTheNamedAxis) {
  const Scenario s = pod_scenario({2, 4}, true);
  ir::Instruction compute;
  compute.kind = ir::OpKind::vector;
  compute.vector.op = ir::VectorOp::elementwise;
  compute.vector.elements = 1024LL * 1'050'000;  // 1.05e6 cycles of a 128 x 8 VPU at 1.05 GHz = 1 ms
  ir::Program sender("sender");
  const std::uint32_t c = sender.add(compute, {}, "stage0.compute");
  ir::Instruction send = p2p(ir::OpKind::send, +1);
  send.comm.mesh_axes = 0b10;
  sender.add(send, {c}, "stage0.send");
  ir::Program receiver("receiver");
  ir::Instruction recv = p2p(ir::OpKind::recv, -1);
  recv.comm.mesh_axes = 0b10;
  receiver.add(recv, {}, "stage1.recv");
  ir::Program idle("idle");
  idle.add(ir::Instruction{}, {}, "idle.barrier");

  ir::ProgramSet set;
  set.programs = {std::move(sender), std::move(receiver), std::move(idle)};
  set.role_of_chip.assign(8, 2);
  set.role_of_chip[0] = 0;  // (0,0)
  set.role_of_chip[2] = 1;  // (0,1): +1 along axis 1
  const SimResult r = simulate(s, set, {});
  EXPECT_NEAR(r.chips.at(2).finish.value(), 1e-3 + kOneHop, 1e-4 * kOneHop);
  EXPECT_NEAR(r.step_time.value(), 1e-3 + kOneHop, 1e-4 * kOneHop);
  EXPECT_EQ(r.network.ici_transfers, 1u);
}

TEST(SendRecv, SendToTheChipItselfIsRejectedNamingTheInstruction) {
  ir::Program p("self");
  p.add(p2p(ir::OpKind::send, 16), {}, "self.send");  // 16 mod 16 = 0
  try {
    (void)simulate(pod_scenario({16}, true), single(std::move(p)), {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.label(), "self.send");
    EXPECT_NE(std::string(e.what()).find("names the chip itself"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim::models::net
