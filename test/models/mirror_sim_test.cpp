// Mirrored chips through simulate() (mirror/mirroring.h): where they apply the result equals simulating every
// chip (the comparison runs in a child process), and where they must not (a straggler, chunked links) the
// result says why they did not.
#include <gtest/gtest.h>

#include "collective_test_support.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

using net::nettest::one_collective;
using net::nettest::pod_scenario;

TEST(Mirrored, AllReduceOnATorusEqualsEveryChipSimulated) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  const ir::ProgramSet programs = one_collective(CollectiveKind::all_reduce, 64ULL << 20);
  const double full = tpusim::testing::in_child<double>(
      [&] {
        SimOptions o;
        o.mirror = false;
        return simulate(s, programs, o).step_time.value();
      },
      -1);
  const SimResult r = simulate(s, programs, {});
  EXPECT_EQ(r.chips_mirrored, 63u);
  EXPECT_EQ(r.mirroring, "1 of 64 chips simulated, 63 mirrored; inputs verified");
  EXPECT_GT(full, 0);
  EXPECT_EQ(r.step_time.value(), full);
  ASSERT_EQ(r.chips.size(), 64u);
  for (const ChipResult& c : r.chips) EXPECT_EQ(c.finish.value(), r.chips[0].finish.value());
}

TEST(Mirrored, AStragglerIsSimulatedWithEveryChip) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  SimOptions o;
  o.degraded_chips.push_back({ChipId(5), 0.8, 1.0});
  const SimResult r = simulate(s, one_collective(CollectiveKind::all_reduce, 1 << 20), o);
  EXPECT_EQ(r.chips_mirrored, 0u);
  EXPECT_EQ(r.mirroring, "a straggler or degraded chip");
}

TEST(Mirrored, ChunkedLinksAreSimulatedWithEveryChip) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::chunked);
  const SimResult r = simulate(s, one_collective(CollectiveKind::all_reduce, 1 << 20), {});
  EXPECT_EQ(r.chips_mirrored, 0u);
  EXPECT_EQ(r.mirroring, "chunked links (chunks of one tick are served in process order)");
}

}  // namespace
}  // namespace tpusim::models
