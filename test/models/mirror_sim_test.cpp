// Mirrored chips through simulate() (mirror/mirroring.h): where they apply the result equals simulating every
// chip (the comparison runs in a child process), a mismatch throws MirrorFallback, and where they must not (a
// straggler, chunked links) the result says why they did not.
#include <string>

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
  EXPECT_TRUE(runs_mirrored(s, programs, {}));
  const SimResult r = simulate(s, programs, {});
  EXPECT_EQ(r.cost.chips_mirrored, 63u);
  EXPECT_EQ(r.cost.mirroring, "1 of 64 chips simulated, 63 mirrored; inputs verified");
  EXPECT_GT(full, 0);
  EXPECT_EQ(r.step_time.value(), full);
  ASSERT_EQ(r.chips.size(), 64u);
  for (const ChipResult& c : r.chips) EXPECT_EQ(c.finish.value(), r.chips[0].finish.value());
}

// In the process that calls it, simulate() does not run the step again: a mirrored run that does not verify
// throws, naming the first mismatch (the tool then runs every chip in a fresh process, test_mirror).
TEST(Mirrored, AMismatchThrowsMirrorFallback) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  SimOptions o;
  o.mirror_mismatch = true;
  std::string why;
  try {
    (void)simulate(s, one_collective(CollectiveKind::all_reduce, 1 << 20), o);
  } catch (const MirrorFallback& e) {
    why = e.why();
    EXPECT_NE(std::string(e.what()).find("SimOptions::mirror false"), std::string::npos) << e.what();
  }
  EXPECT_EQ(why, "chip 1 (mirroring chip 0): injected (TPUSIM_MIRROR=mismatch)");
}

TEST(Mirrored, AStragglerIsSimulatedWithEveryChip) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  SimOptions o;
  o.degraded_chips.push_back({ChipId(5), 0.8, 1.0});
  EXPECT_FALSE(runs_mirrored(s, one_collective(CollectiveKind::all_reduce, 1 << 20), o));
  const SimResult r = simulate(s, one_collective(CollectiveKind::all_reduce, 1 << 20), o);
  EXPECT_EQ(r.cost.chips_mirrored, 0u);
  EXPECT_EQ(r.cost.mirroring, "a straggler or degraded chip");
}

TEST(Mirrored, ChunkedLinksAreSimulatedWithEveryChip) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::chunked);
  EXPECT_FALSE(runs_mirrored(s, one_collective(CollectiveKind::all_reduce, 1 << 20), {}));
  const SimResult r = simulate(s, one_collective(CollectiveKind::all_reduce, 1 << 20), {});
  EXPECT_EQ(r.cost.chips_mirrored, 0u);
  EXPECT_EQ(r.cost.mirroring, "chunked links (chunks of one tick are served in process order)");
}

}  // namespace
}  // namespace tpusim::models
