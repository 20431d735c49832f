// The sequencer's record of which positions of a unit queue have completed (chip/completion_window.h):
// exact cases at the window's edges, and completions in shuffled orders against a plain set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "chip/completion_window.h"

namespace tpusim::models {
namespace {

TEST(CompletionWindow, InOrderCompletionsMoveThePrefix) {
  CompletionWindow w;
  EXPECT_FALSE(w.done(0));
  for (std::uint32_t p = 0; p < 200; ++p) w.complete(p);
  EXPECT_EQ(w.prefix(), 200u);
  EXPECT_TRUE(w.done(199));
  EXPECT_FALSE(w.done(200));
  EXPECT_EQ(w.listed(), 0u);
}

// Positions 1..64 past the prefix are bits; 65 and more go to the list.
TEST(CompletionWindow, PositionsMoreThan64AheadAreListedThenMovedIntoTheBits) {
  CompletionWindow w;
  w.complete(64);  // 64 past the prefix 0: bit 63
  w.complete(65);  // 65 past: the list
  w.complete(200);
  EXPECT_EQ(w.listed(), 2u);
  EXPECT_TRUE(w.done(64));
  EXPECT_TRUE(w.done(65));
  EXPECT_TRUE(w.done(200));
  EXPECT_FALSE(w.done(0));
  EXPECT_FALSE(w.done(66));
  w.complete(0);  // prefix 1: 65 is 64 past it, kept in the list (bit 63 stays empty after the final shift)
  EXPECT_EQ(w.prefix(), 1u);
  EXPECT_TRUE(w.done(65));
  EXPECT_TRUE(w.done(64));
  EXPECT_FALSE(w.done(63));
  for (std::uint32_t p = 1; p < 64; ++p) w.complete(p);
  EXPECT_EQ(w.prefix(), 66u);  // 64 and 65 joined the prefix
  EXPECT_EQ(w.listed(), 1u);   // 200 is 134 past it
  EXPECT_TRUE(w.done(200));
  EXPECT_FALSE(w.done(199));
}

// The case the list was added for: one long instruction in flight while 100 later ones complete.
TEST(CompletionWindow, OneLongInstructionAndAHundredLaterOnes) {
  CompletionWindow w;
  for (std::uint32_t p = 1; p <= 100; ++p) w.complete(p);
  for (std::uint32_t p = 1; p <= 100; ++p) EXPECT_TRUE(w.done(p)) << p;
  EXPECT_FALSE(w.done(0));
  EXPECT_FALSE(w.done(101));
  w.complete(0);
  EXPECT_EQ(w.prefix(), 101u);
  EXPECT_EQ(w.listed(), 0u);
}

// Completions in random orders (fixed seeds) agree with a set at every step, for every position queried.
TEST(CompletionWindow, ShuffledCompletionsAgreeWithASet) {
  for (const std::uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    constexpr std::uint32_t kPositions = 400;
    std::vector<std::uint32_t> order(kPositions);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937 rng(seed);
    // Shuffle within windows of 150, so completions run up to 150 positions ahead of the prefix.
    for (std::uint32_t start = 0; start < kPositions; start += 150) {
      std::shuffle(order.begin() + start, order.begin() + std::min(start + 150, kPositions), rng);
    }
    CompletionWindow w;
    std::set<std::uint32_t> done;
    for (const std::uint32_t p : order) {
      w.complete(p);
      done.insert(p);
      std::uint32_t prefix = 0;
      while (done.count(prefix) != 0) ++prefix;
      ASSERT_EQ(w.prefix(), prefix) << "seed " << seed;
      for (std::uint32_t q = 0; q < kPositions; ++q) {
        ASSERT_EQ(w.done(q), done.count(q) != 0) << "seed " << seed << " position " << q;
      }
    }
    EXPECT_EQ(w.prefix(), kPositions);
    EXPECT_EQ(w.listed(), 0u);
  }
}

}  // namespace
}  // namespace tpusim::models
