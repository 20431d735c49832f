// A DMA to a remote chip (dst: remote): a one-sided put to the chip at +peer along the first axis of
// mesh_axes, run by the ICI unit like a send but matched by nothing. One simulation per test process.
#include <string>

#include "collective_test_support.h"
#include "memory_test_support.h"
#include "tpusim/models/errors.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;
using memtest::dma;
using memtest::single;

constexpr std::uint64_t kBytes = 8ULL << 20;
const double kOneHop = static_cast<double>(kBytes) / kLinkRate + kHop;  // one link, no fill

ir::Instruction put(int peer, std::uint32_t axes = 0) {
  ir::Instruction ins = dma(ir::Memory::hbm, ir::Memory::remote, kBytes);
  ins.comm.peer = peer;
  ins.comm.mesh_axes = axes;
  return ins;
}

// Every chip of a 16-chip ring puts 8 MiB into its +1 neighbour: one link time and one hop, with no recv.
TEST(RemoteDma, APutTakesOneLinkTimeAndOneHopWithoutARecv) {
  ir::Program p("put");
  p.add(put(+1), {}, "put");
  const SimResult r = simulate(pod_scenario({16}, true), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), kOneHop, 1e-4 * kOneHop);
  EXPECT_EQ(r.network.ici_transfers, 16u);
  EXPECT_EQ(r.traffic.dma_bytes.count(), 16 * kBytes);
  EXPECT_EQ(r.instructions_per_unit[static_cast<std::size_t>(ir::UnitKind::dma)], 16u);
  // Each put reads its source and writes its destination's HBM (counted there; 15 of the chips mirror one).
  EXPECT_EQ(r.traffic.hbm_read.count(), 16 * kBytes);
  EXPECT_EQ(r.traffic.hbm_written.count(), 16 * kBytes);
}

// Two chips on a line, chip 0 puts 8 MiB into chip 1, which runs nothing: chip 0's HBM reads them and chip 1's
// HBM writes them, each chip's HBM utilization is 8 MiB / (bandwidth x step), and the write takes no HBM time
// on chip 1 (counted only), so the step is still one link time and one hop.
TEST(RemoteDma, APutsWriteCountsInTheDestinationsHbm) {
  ir::Program sender("sender");
  sender.add(put(+1), {}, "put");
  ir::Program idle("idle");
  idle.add(ir::Instruction{}, {}, "idle.barrier");
  ir::ProgramSet set;
  set.programs = {std::move(sender), std::move(idle)};
  set.role_of_chip = {0, 1};
  const Scenario s = pod_scenario({2}, false);
  const SimResult r = simulate(s, set, {});
  EXPECT_NEAR(r.step_time.value(), kOneHop, 1e-4 * kOneHop);
  EXPECT_EQ(r.traffic.hbm_read.count(), kBytes);
  EXPECT_EQ(r.traffic.hbm_written.count(), kBytes);
  EXPECT_EQ(r.unit(HwUnit::hbm).bytes.count(), 2 * kBytes);
  const auto hbm = static_cast<std::size_t>(HwUnit::hbm);
  const double expected = static_cast<double>(kBytes) / (s.chip.hbm.bandwidth.value() * r.step_time.value());
  EXPECT_GT(expected, 0.01);
  EXPECT_DOUBLE_EQ(r.chips.at(0).utilization[hbm], expected);
  EXPECT_DOUBLE_EQ(r.chips.at(1).utilization[hbm], expected);
  EXPECT_EQ(r.chips.at(1).busy[hbm].value(), 0.0);
}

// Along axis 1 of a 2 x 4 mesh (mesh_axes = 0b10) from chip (0,0) to (0,1) = chip 2; the others idle. A put
// carries nothing a later recv could match: chip 2's recv from -1 still waits for a real send, which chip 0
// issues after the put, so chip 2 finishes after two transfer times.
TEST(RemoteDma, APutIsNotMatchedByARecv) {
  ir::Program sender("sender");
  const std::uint32_t a = sender.add(put(+1, 0b10), {}, "put");
  ir::Instruction send;
  send.kind = ir::OpKind::send;
  send.comm.peer = +1;
  send.comm.mesh_axes = 0b10;
  send.bytes = kBytes;
  sender.add(send, {a}, "send");
  ir::Program receiver("receiver");
  ir::Instruction recv;
  recv.kind = ir::OpKind::recv;
  recv.comm.peer = -1;
  recv.comm.mesh_axes = 0b10;
  receiver.add(recv, {}, "recv");
  ir::Program idle("idle");
  idle.add(ir::Instruction{}, {}, "idle.barrier");
  ir::ProgramSet set;
  set.programs = {std::move(sender), std::move(receiver), std::move(idle)};
  set.role_of_chip.assign(8, 2);
  set.role_of_chip[0] = 0;
  set.role_of_chip[2] = 1;
  const SimResult r = simulate(pod_scenario({2, 4}, false), set, {});
  EXPECT_NEAR(r.chips.at(2).finish.value(), 2 * kOneHop, 1e-4 * kOneHop);
}

TEST(RemoteDma, AGetFromARemoteChipIsRejectedNamingTheInstruction) {
  ir::Program p("get");
  ir::Instruction get = dma(ir::Memory::remote, ir::Memory::hbm, kBytes);
  get.comm.peer = 1;
  p.add(get, {}, "get");
  try {
    (void)simulate(pod_scenario({4}, true), single(std::move(p)), {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("one-sided get"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim::models::net
