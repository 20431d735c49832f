// HBM channels (chip.hbm.channels): the bandwidth split evenly over the channels, a transfer striped over
// min(channels, ceil(bytes / kHbmStripe)) of them. One simulation per test process.
#include <gtest/gtest.h>

#include "memory_test_support.h"
#include "test_chips.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

using memtest::dma;
using memtest::single;
using testing::scenario_for;
using testing::v4_like;

using testing::kPicosecond;

ChipSpec v4_with_channels(int channels) {
  ChipSpec chip = v4_like();
  chip.hbm.channels = channels;
  return chip;
}

TEST(HbmChannels, ATransferUsesOneChannelPerStripeUpToAllOfThem) {
  const ChipSpec chip = v4_with_channels(32);
  EXPECT_EQ(kHbmStripe, 256u);
  EXPECT_EQ(hbm_channels_used(chip.hbm, 0), 0);
  EXPECT_EQ(hbm_channels_used(chip.hbm, 100), 1);
  EXPECT_EQ(hbm_channels_used(chip.hbm, 1024), 4);
  EXPECT_EQ(hbm_channels_used(chip.hbm, 1025), 5);
  EXPECT_EQ(hbm_channels_used(chip.hbm, 32 * 256), 32);  // 8 KiB: every channel
  EXPECT_EQ(hbm_channels_used(chip.hbm, 64 << 20), 32);
  EXPECT_DOUBLE_EQ(hbm_channel_share(chip.hbm, 1024), 4.0 / 32);
  EXPECT_DOUBLE_EQ(hbm_channel_share(v4_with_channels(1).hbm, 100), 1.0);
  // Alone: latency + bytes / (bandwidth x efficiency x share).
  EXPECT_DOUBLE_EQ(hbm_transfer_time(chip.hbm, Bytes(1024), Seconds(500e-9)).value(), 500e-9 + 1024 / 150e9);
  EXPECT_DOUBLE_EQ(hbm_transfer_time(chip.hbm, Bytes(64 << 20), Seconds(0)).value(), (64 << 20) / 1200e9);
}

// One 64 MiB stream is striped over all 32 channels: the full 1200 GB/s, as with a single channel.
TEST(HbmChannels, OneBigStreamGetsTheFullBandwidth) {
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 64ULL << 20), {}, "load");
  const SimResult r = simulate(scenario_for(v4_with_channels(32)), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 500e-9 + (64 << 20) / 1200e9, 2 * kPicosecond);
}

// A 2 KiB transfer spans 8 of 32 channels: 1200 x 8 / 32 = 300 GB/s.
TEST(HbmChannels, ASmallTransferMovesAtItsChannelsShare) {
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 2048), {}, "load");
  const SimResult r = simulate(scenario_for(v4_with_channels(32)), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 500e-9 + 2048 / 300e9, 2 * kPicosecond);
}

// Two 1 KiB transfers of one descriptor queue each use their own 4 channels, so they move side by side at
// 150 GB/s each (a single channel would serve them one after the other at 1200 GB/s: 1.71 ns vs 6.83 ns).
TEST(HbmChannels, SmallTransfersOfOneQueueMoveTogetherOnTheirOwnChannels) {
  ir::Program p;
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 1024), {}, "load0");
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, 1024), {}, "load1");
  const SimResult r = simulate(scenario_for(v4_with_channels(32)), single(std::move(p)), {});
  EXPECT_NEAR(r.step_time.value(), 500e-9 + 1024 / 150e9, 2 * kPicosecond);
}

}  // namespace
}  // namespace tpusim::models
