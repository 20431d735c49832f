// Long jobs on the job timeline (tpusim/models/job.h): faults that land by the million in a recovery stop the job
// at the cap instead of filling memory; the random faults' sources count every component. Pure C++ (no SystemC).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/scenario_yaml.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

// A step and a checkpoint write of half a second each, a 20 s restore.
JobCosts half_second_costs() {
  JobCosts c;
  c.step = Seconds(0.5);
  c.checkpoint_write = Seconds(0.5);
  c.checkpoint_restore = Seconds(20);
  return c;
}

// An OCS port fails every microsecond on a v4 cube (96 ports, one failing every 1 us each: 9.6e7 faults/s). The
// first one's recovery (an hour's repair) meets them by the million while the job is down: the job stops at the
// cap of faults a job meets (kMaxJobFaults), as it does between steps, instead of holding each one found.
TEST(JobTimelineLong, FaultsByTheMillionDuringARecoveryStopTheJobAtTheCap) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: port-storm
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}
job: {duration: 365 d}
fault_rates: {ocs_port_down: 1 us}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  try {
    (void)run_job(s, topo, half_second_costs());
    ADD_FAILURE() << "the job ran to its end";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the job met 1000000 faults and has done 0 of ", 0), 0u) << e.what();
  }
}

// The rate of random faults each kind draws on a v4 cube: 64 chips, 192 cables, 96 OCS ports (the 48 wraparound
// cables are optical, two ports each), 16 hosts, each over its mean time between failures.
TEST(JobTimelineLong, RandomFaultSourcesCountEveryComponentOfEachKind) {
  const Scenario s = ::tpusim::testing::scenario_from_yaml(R"(
name: sources
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64}
fault_rates: {chip_down: 64 h, link_down: 0 s, ocs_port_down: 1 h, host_down: 16 s}
)");
  const Topology topo = build_topology(s.pod, s.chip);
  const std::vector<RandomFaultSource> sources = random_fault_sources(s, topo);
  ASSERT_EQ(sources.size(), 4u);
  EXPECT_EQ(sources[0].kind, FaultKind::chip_down);
  EXPECT_EQ(sources[0].components, 64u);
  EXPECT_DOUBLE_EQ(sources[0].per_second, 1.0 / 3600);
  EXPECT_EQ(sources[1].kind, FaultKind::link_down);
  EXPECT_EQ(sources[1].components, 192u);
  EXPECT_EQ(sources[1].per_second, 0.0);
  EXPECT_EQ(sources[2].kind, FaultKind::ocs_port_down);
  EXPECT_EQ(sources[2].components, 96u);
  EXPECT_DOUBLE_EQ(sources[2].per_second, 96.0 / 3600);
  EXPECT_EQ(sources[3].kind, FaultKind::host_down);
  EXPECT_EQ(sources[3].components, 16u);
  EXPECT_DOUBLE_EQ(sources[3].per_second, 1.0);
}

}  // namespace
}  // namespace tpusim::models
