// The link models (chunked and flow) driven directly, without SystemC: exact tick counts for tiny cases.
//
// Numbers: 50 GB/s links (0.05 bytes per picosecond tick, so a 1 MiB chunk takes exactly 20,971,520 ticks)
// and 1 us of latency per hop; 64 MiB transfers (64 chunks of 1 MiB).
#include <gtest/gtest.h>

#include "net/link_model.h"

namespace tpusim::models::net {
namespace {

constexpr double kRate = 50e9 / kTicksPerSecond;  // bytes per tick
constexpr Tick kLatency = 1'000'000;              // 1 us
constexpr std::uint64_t kChunk = 1 << 20;
constexpr std::uint64_t kBytes = 64 * kChunk;
constexpr Tick kChunkTicks = 20'971'520;           // kChunk / kRate
constexpr Tick kBytesTicks = 64 * kChunkTicks;     // kBytes / kRate

std::vector<Channel> channels(int n) { return std::vector<Channel>(static_cast<std::size_t>(n), Channel{kRate, kLatency}); }

// Runs the model until idle; returns the delivery tick of each transfer id.
std::vector<Tick> run(LinkModel& m, std::size_t transfers) {
  std::vector<Tick> at(transfers, kNever);
  std::vector<TransferId> done;
  for (Tick t = m.next_event(); t != kNever; t = m.next_event()) {
    m.advance(t, done);
    for (TransferId id : done) at[id] = t;
    done.clear();
  }
  return at;
}

std::unique_ptr<LinkModel> make(bool chunked, int n) {
  return chunked ? make_chunked_link_model(channels(n), kChunk) : make_flow_link_model(channels(n));
}

TEST(LinkModels, OneTransferOverOneHopTakesLatencyPlusBytesOverBandwidthInBothModes) {
  for (bool chunked : {true, false}) {
    auto m = make(chunked, 1);
    const std::uint32_t path[] = {0};
    m->start(0, 0, path, 1, kBytes);
    EXPECT_EQ(run(*m, 1)[0], kLatency + kBytesTicks) << m->name();
  }
}

// Flow: 3 L + B / R. Chunked adds the pipeline fill of (H - 1) chunk times: 3 L + (64 + 2) x C / R.
TEST(LinkModels, OneTransferOverThreeHopsAddsLatencyPerHopAndChunkedAddsThePipelineFill) {
  const std::uint32_t path[] = {0, 1, 2};
  auto flow = make(false, 3);
  flow->start(0, 0, path, 3, kBytes);
  EXPECT_EQ(run(*flow, 1)[0], 3 * kLatency + kBytesTicks);
  auto chunked = make(true, 3);
  chunked->start(0, 0, path, 3, kBytes);
  EXPECT_EQ(run(*chunked, 1)[0], 3 * kLatency + (64 + 2) * kChunkTicks);
}

TEST(LinkModels, ZeroBytesAreDeliveredAfterThePathLatency) {
  const std::uint32_t path[] = {0, 1};
  for (bool chunked : {true, false}) {
    auto m = make(chunked, 2);
    m->start(5, 0, path, 2, 0);
    EXPECT_EQ(run(*m, 1)[0], 5 + 2 * kLatency) << m->name();
  }
}

// Two transfers entering through the same link each get half of it. Flow: both finish at L + 2 B / R.
// Chunked: chunks alternate, so the first finishes one chunk time before the second: L + (128 - 1) C / R and
// L + 128 C / R (each averaged B/2 over its lifetime within one chunk time).
TEST(LinkModels, TwoTransfersSharingTheirFirstLinkGetHalfItsBandwidthEach) {
  const std::uint32_t path[] = {0};
  auto flow = make(false, 1);
  flow->start(0, 0, path, 1, kBytes);
  flow->start(0, 1, path, 1, kBytes);
  const auto f = run(*flow, 2);
  EXPECT_EQ(f[0], kLatency + 2 * kBytesTicks);
  EXPECT_EQ(f[1], kLatency + 2 * kBytesTicks);

  auto chunked = make(true, 1);
  chunked->start(0, 0, path, 1, kBytes);
  chunked->start(0, 1, path, 1, kBytes);
  const auto c = run(*chunked, 2);
  EXPECT_EQ(c[0], kLatency + 127 * kChunkTicks);
  EXPECT_EQ(c[1], kLatency + 128 * kChunkTicks);
}

// Transfers 0->2 and 1->2 share only their second link. Flow: B/2 each, both at 2 L + 2 B / R. Chunked: link
// 2 receives two chunks per chunk time and serves one, so it is busy from L + C/R for 128 chunk times; the
// last chunk is delivered at 2 L + 129 C / R, the other transfer's one chunk time earlier. Link 2 shows the
// queueing: chunk k of the pair waits (k - 1) / 2 chunk times on average.
TEST(LinkModels, TwoTransfersSharingTheirSecondLinkGetHalfItsBandwidthEach) {
  const std::uint32_t a[] = {0, 2};
  const std::uint32_t b[] = {1, 2};
  auto flow = make(false, 3);
  flow->start(0, 0, a, 2, kBytes);
  flow->start(0, 1, b, 2, kBytes);
  const auto f = run(*flow, 2);
  EXPECT_EQ(f[0], 2 * kLatency + 2 * kBytesTicks);
  EXPECT_EQ(f[1], 2 * kLatency + 2 * kBytesTicks);
  const auto fs = flow->stats(f[0]);
  EXPECT_EQ(fs[2].bytes, 2 * kBytes);
  EXPECT_EQ(fs[2].busy, 2 * kBytesTicks);

  auto chunked = make(true, 3);
  chunked->start(0, 0, a, 2, kBytes);
  chunked->start(0, 1, b, 2, kBytes);
  const auto c = run(*chunked, 2);
  EXPECT_EQ(std::max(c[0], c[1]), 2 * kLatency + 129 * kChunkTicks);
  EXPECT_EQ(std::min(c[0], c[1]), 2 * kLatency + 128 * kChunkTicks);
  const auto cs = chunked->stats(c[1]);
  EXPECT_EQ(cs[2].bytes, 2 * kBytes);
  EXPECT_EQ(cs[2].busy, 128 * kChunkTicks);
  EXPECT_EQ(cs[2].chunks, 128u);
  EXPECT_GT(cs[2].queueing, 0u);
  EXPECT_EQ(cs[0].queueing, 0u);  // injection keeps one chunk per transfer in the first queue
}

// Max-min fairness: flows A (links 0,1) and B (link 1) and C (link 0, at half rate capacity elsewhere):
// with link 0 at rate R and link 1 at R, A and B split link 1 (R/2 each), C gets the rest of link 0 (R/2).
// When B ends early (it is shorter), A speeds up to the R/2 left by C... both at R/2 until C ends.
TEST(LinkModels, FlowRatesAreMaxMinFairAndRecomputedWhenAFlowEnds) {
  auto m = make_flow_link_model(channels(2));
  const std::uint32_t ab[] = {0, 1};
  const std::uint32_t b[] = {1};
  const std::uint32_t c[] = {0};
  m->start(0, 0, ab, 2, kBytes);      // A
  m->start(0, 1, b, 1, kBytes / 2);   // B: half the bytes
  m->start(0, 2, c, 1, 2 * kBytes);   // C: twice the bytes
  const auto at = run(*m, 3);
  // All three at R/2 until B drains at kBytesTicks; then A still R/2 (link 0 shared with C). A has drained
  // kBytes/2 by then, so it drains at 2 kBytesTicks; C (2 kBytes, R/2 until then) has kBytes left and runs
  // at R alone: 3 kBytesTicks.
  EXPECT_EQ(at[1], kLatency + kBytesTicks);
  EXPECT_EQ(at[0], 2 * kLatency + 2 * kBytesTicks);
  EXPECT_EQ(at[2], kLatency + 3 * kBytesTicks);
}

// Progressive filling over two rounds: B, C and D share channel 1 (R/3 each, the bottleneck), and A, alone on
// channel 0 beside B, takes what B leaves of it, 2R/3. Its B bytes drain in 1.5 B/R; the others, whose rates do
// not change when A leaves, in 3 B/R. A settle that froze every flow in the first round would give A R/3 too.
TEST(LinkModels, TheFlowsTheFirstFillingRoundLeavesShareWhatIsLeft) {
  auto m = make_flow_link_model(channels(2));
  const std::uint32_t a[] = {0};
  const std::uint32_t b[] = {0, 1};
  const std::uint32_t cd[] = {1};
  m->start(0, 0, a, 1, kBytes);
  m->start(0, 1, b, 2, kBytes);
  m->start(0, 2, cd, 1, kBytes);
  m->start(0, 3, cd, 1, kBytes);
  const auto at = run(*m, 4);
  EXPECT_EQ(at[0], kLatency + kBytesTicks * 3 / 2);
  const auto near = [](Tick got, Tick want) { return got + 1 >= want && got <= want + 1; };
  EXPECT_PRED2(near, at[1], 2 * kLatency + 3 * kBytesTicks);
  EXPECT_PRED2(near, at[2], kLatency + 3 * kBytesTicks);
  EXPECT_PRED2(near, at[3], kLatency + 3 * kBytesTicks);
}

// A drained flow leaves each channel's list and the list's last flow takes its place: four flows share
// channel 0 (each with a channel of its own after it) and drain smallest first, from different places in the
// list. Max-min fair with B = kBytes, R = kRate: all at R/4 until the B flow drains at 4B/R; three at R/3
// until the next (B left) at 7B/R; two at R/2 until 9B/R; the last alone at 10B/R. Taking the wrong flow
// off the channel would move every later time. The ids are then reused in another order, with the same
// times.
TEST(LinkModels, FlowsLeavingASharedChannelOutOfOrderKeepTheOthersRates) {
  auto m = make_flow_link_model(channels(5));
  const std::uint32_t paths[4][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}};
  for (int round = 0; round < 2; ++round) {
    const std::uint64_t sizes[4] = {4 * kBytes, kBytes, 3 * kBytes, 2 * kBytes};
    const Tick t0 = round == 0 ? 0 : 20 * kBytesTicks;  // after the first round has ended
    for (TransferId i = 0; i < 4; ++i) {
      const TransferId id = round == 0 ? i : 3 - i;  // the second round starts them in reverse id order
      m->start(t0, id, paths[id], 2, sizes[id]);
    }
    std::vector<Tick> at(4, kNever);
    std::vector<TransferId> done;
    for (Tick t = m->next_event(); t != kNever; t = m->next_event()) {
      m->advance(t, done);
      for (TransferId id : done) at[id] = t - t0;
      done.clear();
    }
    // Each drain is ceil(remaining / rate) ticks after the previous one: within a tick of the closed form
    // per drain (three drains before the last).
    const auto near = [](Tick got, Tick want) { return got + 3 >= want && got <= want + 3; };
    EXPECT_PRED2(near, at[1], 2 * kLatency + 4 * kBytesTicks) << "round " << round;
    EXPECT_PRED2(near, at[3], 2 * kLatency + 7 * kBytesTicks) << "round " << round;
    EXPECT_PRED2(near, at[2], 2 * kLatency + 9 * kBytesTicks) << "round " << round;
    EXPECT_PRED2(near, at[0], 2 * kLatency + 10 * kBytesTicks) << "round " << round;
  }
}

// A path that lists a channel twice holds two shares of it (and leaves it by search): X over {0, 0} and Y
// over {0} split channel 0 as 2/3 and 1/3 of R, each R/3. X (B) drains at 3B/R; Y (2B, B left) then runs
// at R and drains at 4B/R. Y moves in the channel's list when X leaves it.
TEST(LinkModels, AFlowListingAChannelTwiceHoldsTwoSharesOfIt) {
  auto m = make_flow_link_model(channels(1));
  const std::uint32_t twice[] = {0, 0};
  const std::uint32_t once[] = {0};
  m->start(0, 0, twice, 2, kBytes);
  m->start(0, 1, once, 1, 2 * kBytes);
  const auto at = run(*m, 2);
  const auto near = [](Tick got, Tick want) { return got + 2 >= want && got <= want + 2; };
  EXPECT_PRED2(near, at[0], 2 * kLatency + 3 * kBytesTicks);
  EXPECT_PRED2(near, at[1], kLatency + 4 * kBytesTicks);
}

}  // namespace
}  // namespace tpusim::models::net
