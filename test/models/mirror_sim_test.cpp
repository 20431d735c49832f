// Mirrored chips through simulate() (mirror/mirroring.h): where they apply the result equals simulating every
// chip (the comparison runs in a child process), a mismatch throws MirrorFallback (with finer classes to try
// when chips diverged from their representative: a fault), and where they must not (chunked links) the
// result says why they did not.
#include <string>

#include <gtest/gtest.h>

#include "collective_test_support.h"
#include "mirror/translation_classes.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

using net::nettest::one_collective;
using net::nettest::Outcome;
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

// A straggler runs in a class of its own; what it does to the others (they wait for it in the all-reduce)
// shows in what reaches them, and the classes are refined until the run verifies: the same result as every
// chip simulated, to the tick.
TEST(Mirrored, AStragglerRunsInAClassOfItsOwnAndTheResultEqualsEveryChipSimulated) {
  const Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  const ir::ProgramSet programs = one_collective(CollectiveKind::all_reduce, 64ULL << 20);
  SimOptions o;
  o.degraded_chips.push_back({ChipId(5), 0.8, 1.0});
  EXPECT_TRUE(runs_mirrored(s, programs, o));
  const Outcome full = net::nettest::outcome_in_child([&] {
    SimOptions every = o;
    every.mirror = false;
    return simulate(s, programs, every);
  });
  const SimResult r = tpusim::testing::simulate_step(s, programs, o);
  EXPECT_GT(r.cost.chips_mirrored, 0u);
  EXPECT_NE(r.cost.mirroring.find("mirrored; inputs verified"), std::string::npos) << r.cost.mirroring;
  const Outcome mirrored = net::nettest::outcome(r);
  EXPECT_GT(full.time, 0);
  EXPECT_EQ(mirrored.time, full.time);
  EXPECT_EQ(mirrored.link_bytes_hash, full.link_bytes_hash);
}

// A cable failed for the whole step: the first mirrored run (the translation classes) finds the chips whose
// completions differ from their representative's and gives finer classes, each inside one of the old ones;
// the classes it converges to give the result of every chip simulated.
TEST(Mirrored, AFailedCableRefinesTheClassesUntilTheRunVerifies) {
  Scenario s = pod_scenario({4, 4, 4}, true, LinkFidelity::flow);
  s.fidelity.routing = RoutingPolicy::fault_aware;
  const ir::ProgramSet programs = one_collective(CollectiveKind::all_reduce, 64ULL << 20);
  const Topology topo = build_topology(s.pod, s.chip);
  const auto run = [&](const SimOptions& options) {
    net::InterconnectOptions network;
    network.faults.add_cable(topo, net::nettest::cable_from(topo, 0));
    return net::simulate_with_network(s, programs, options, network);
  };
  struct Refined {
    std::uint32_t before = 0, after = 0;
    bool within = true;  // every new class inside an old one, under its lowest chip
  };
  const Refined refined = tpusim::testing::in_child<Refined>(
      [&] {
        Refined out;
        try {
          (void)run(SimOptions{});
        } catch (const MirrorFallback& e) {
          const std::vector<std::uint32_t>& rep = e.refined();
          const TranslationClasses old = translation_classes(topo, programs);
          out.before = old.classes;
          for (std::uint32_t c = 0; c < rep.size(); ++c) {
            out.after += rep[c] == c ? 1 : 0;
            out.within = out.within && rep[c] <= c && rep[rep[c]] == rep[c] &&
                         old.representative[rep[c]] == old.representative[c];
          }
        }
        return out;
      },
      Refined{});
  EXPECT_EQ(refined.before, 1u);
  EXPECT_GT(refined.after, refined.before);
  EXPECT_LT(refined.after, 64u);
  EXPECT_TRUE(refined.within);
  const Outcome full = net::nettest::outcome_in_child([&] {
    SimOptions every;
    every.mirror = false;
    return run(every);
  });
  const SimResult r = tpusim::testing::simulate_refined(run, SimOptions{});
  EXPECT_NE(r.cost.mirroring.find("mirrored; inputs verified"), std::string::npos) << r.cost.mirroring;
  const Outcome mirrored = net::nettest::outcome(r);
  EXPECT_GT(full.time, 0);
  EXPECT_EQ(mirrored.time, full.time);
  EXPECT_EQ(mirrored.link_bytes_hash, full.link_bytes_hash);
  EXPECT_EQ(mirrored.link_bytes, full.link_bytes);
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
