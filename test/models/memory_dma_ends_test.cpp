// A DMA between two memories is timed by the slower end (dma/dma.cpp), and counted by both: HBM's read and
// written bytes and the PCIe bytes are what the program moves through them, whichever end times the transfer.
// The faster end keeps up (an assumption): the step time is the slower end's alone. One simulation per test
// process.
#include <cstdint>

#include <gtest/gtest.h>

#include "memory_test_support.h"
#include "test_chips.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using memtest::dma;
using memtest::single;
using testing::kPicosecond;
using testing::scenario_for;
using testing::v4_like;

constexpr std::uint64_t kLoad = 12'000'000;   // HBM -> VMEM: 10 us at 1200 GB/s
constexpr std::uint64_t kStore = 1'600'000;   // HBM -> host: 100 us at 16 GB/s

// One HBM -> VMEM load of kLoad bytes, then one HBM -> host store of kStore bytes (after it, so their times add).
ir::ProgramSet load_then_store() {
  ir::Program p("dma-ends");
  const std::uint32_t load = p.add(dma(ir::Memory::hbm, ir::Memory::vmem, kLoad), {}, "load");
  p.add(dma(ir::Memory::hbm, ir::Memory::host, kStore), {load}, "store");
  return single(std::move(p));
}

void expect_traffic(const SimResult& r) {
  EXPECT_EQ(r.traffic.hbm_read.count(), kLoad + kStore);
  EXPECT_EQ(r.traffic.hbm_written.count(), 0u);
  EXPECT_EQ(r.traffic.dma_bytes.count(), kLoad + kStore);
  EXPECT_EQ(r.traffic.host_bytes.count(), kStore);
  EXPECT_EQ(r.unit(HwUnit::hbm).bytes.count(), kLoad + kStore);
}

// v4-like (VMEM 4 TB/s > HBM 1200 GB/s > PCIe 16 GB/s): HBM times the load, PCIe the store; HBM counts both.
TEST(DmaEnds, HbmCountsTheLoadItTimesAndTheStoreToHostPcieTimes) {
  const ChipSpec chip = v4_like();
  const SimResult r = simulate(scenario_for(chip), load_then_store(), {});
  expect_traffic(r);
  const double load = 500e-9 + kLoad / 1200e9;
  const double store = kPcieLatency.value() + kStore / 16e9;
  EXPECT_NEAR(r.step_time.value(), load + store, 4 * kPicosecond);
  // HBM's utilization is its bytes over its peak for the step; its busy time is the load alone (it served that).
  EXPECT_NEAR(r.unit(HwUnit::hbm).utilization.max, (kLoad + kStore) / (1200e9 * (load + store)), 1e-12);
  EXPECT_NEAR(r.unit(HwUnit::hbm).busy.value(), kLoad / 1200e9, 4 * kPicosecond);
}

// The bandwidths swapped: HBM at 4 TB/s is faster than VMEM at 1200 GB/s, so VMEM times the load (no HBM
// latency); HBM still counts the load's bytes, and the store's.
TEST(DmaEnds, HbmFasterThanVmemStillCountsTheLoadVmemTimes) {
  ChipSpec chip = v4_like();
  chip.hbm.bandwidth = BytesPerSecond(4e12);
  chip.vmem.bandwidth = BytesPerSecond(1200e9);
  const SimResult r = simulate(scenario_for(chip), load_then_store(), {});
  expect_traffic(r);
  const double load = kOnChipCopyLatency.value() + kLoad / 1200e9;
  const double store = kPcieLatency.value() + kStore / 16e9;
  EXPECT_NEAR(r.step_time.value(), load + store, 4 * kPicosecond);
  EXPECT_NEAR(r.unit(HwUnit::hbm).utilization.max, (kLoad + kStore) / (4e12 * (load + store)), 1e-12);
  EXPECT_EQ(r.unit(HwUnit::hbm).busy.value(), 0.0);  // HBM served nothing: the faster end is not modelled
}

// PCIe at 2400 GB/s, faster than HBM: HBM times the store, and the host still counts its bytes.
TEST(DmaEnds, PcieFasterThanHbmStillCountsTheStoreHbmTimes) {
  ChipSpec chip = v4_like();
  chip.host.pcie_bandwidth = BytesPerSecond(2400e9);
  const SimResult r = simulate(scenario_for(chip), load_then_store(), {});
  expect_traffic(r);
  const double load = 500e-9 + kLoad / 1200e9;
  const double store = 500e-9 + kStore / 1200e9;
  EXPECT_NEAR(r.step_time.value(), load + store, 4 * kPicosecond);
}

// The host's own transfers move bytes between host memory and HBM over PCIe: an infeed writes HBM, a
// checkpoint reads it.
TEST(DmaEnds, HostInfeedAndCheckpointCountInHbmTraffic) {
  constexpr std::uint64_t kInfeed = 3'200'000, kCheckpoint = 4'800'000;  // 200 us and 300 us at 16 GB/s
  ir::Program p("host-transfers");
  ir::Instruction infeed;
  infeed.kind = ir::OpKind::host;
  infeed.host.op = ir::HostOp::infeed;
  infeed.bytes = kInfeed;
  ir::Instruction checkpoint = infeed;
  checkpoint.host.op = ir::HostOp::checkpoint;
  checkpoint.bytes = kCheckpoint;
  const std::uint32_t in = p.add(infeed, {}, "infeed");
  p.add(checkpoint, {in}, "checkpoint");
  const SimResult r = simulate(scenario_for(v4_like()), single(std::move(p)), {});
  EXPECT_EQ(r.traffic.hbm_written.count(), kInfeed);
  EXPECT_EQ(r.traffic.hbm_read.count(), kCheckpoint);
  EXPECT_EQ(r.traffic.host_bytes.count(), kInfeed + kCheckpoint);
  EXPECT_NEAR(r.step_time.value(), 2 * kPcieLatency.value() + (kInfeed + kCheckpoint) / 16e9, 4 * kPicosecond);
}

}  // namespace
}  // namespace tpusim::models
