// A chip that stops at a tick inside the step (SimOptions::timed_chips): on a 4x4 torus (flow links, per-step
// sends) each chip runs a 10 us vector op, a 64 MiB all-reduce over x (its row's ring) and a 1 us vector op.
// Chip 5, (1, 1), stops 50 us into the all-reduce, detected 5 ms later (the healthy step takes 1.16 ms). Pinned: the simulation ends at the
// detection; the rows without chip 5 finish their step exactly as without the fault; row 1 stalls (its
// ring needs chip 5); the step's progress counts what completed (every first vector op, the other rows' rest);
// the transfers on chip 5's cables at the tick are dropped, none resent. One simulation per process.
#include <gtest/gtest.h>

#include "collective_test_support.h"

namespace tpusim::models::net {
namespace {

using namespace nettest;

constexpr std::uint64_t kStoppedBytes = 64ULL << 20;
constexpr double kChipStop = 10e-6 + 0.5e-6 + 50e-6;  // the first vector op, the collective's start-up, 50 us
constexpr double kChipDetected = kChipStop + 5e-3;
constexpr std::uint32_t kStoppedChip = 5;  // (1, 1)

Scenario chip_fault_torus() {
  Scenario s = pod_scenario({4, 4}, true, LinkFidelity::flow);
  s.fidelity.collectives = CollectiveFidelity::per_step;
  return s;
}

ir::ProgramSet chip_fault_step() {
  ir::Program p("step");
  const std::uint32_t before = p.add(vector_us(10.0), {}, "before");
  const ir::Instruction x = one_collective(CollectiveKind::all_reduce, kStoppedBytes,
                                           kernels::CollectiveAlgorithm::automatic, 1u << 0).programs.at(0)[0];
  const std::uint32_t ar = p.add(x, {before}, "x.all_reduce");
  p.add(vector_us(1.0), {ar}, "after");
  return single(std::move(p));
}

SimOptions chip_stopping(InFlightPolicy policy) {
  SimOptions o;
  o.timed_chips.push_back(TimedChipFault{ChipId(kStoppedChip), Seconds(kChipStop), Seconds(kChipDetected)});
  o.in_flight = policy;
  return o;
}

TEST(TimedChipFault, TheStepRunsToTheDetectionAndTheRowsWithoutTheChipFinishAsWithoutIt) {
  const Scenario s = chip_fault_torus();
  const double healthy = in_child([&] { return ::tpusim::testing::simulate_step(s, chip_fault_step(), {}).step_time.value(); });
  ASSERT_GT(healthy, kChipStop);  // the fault lands inside the all-reduce
  ASSERT_LT(healthy, kChipDetected);
  std::vector<TraceSpan> spans;
  SimOptions o = chip_stopping(InFlightPolicy::lose);
  o.trace = [&](const TraceSpan& span) { spans.push_back(span); };
  const SimResult r = ::tpusim::testing::simulate_step(s, chip_fault_step(), o);
  EXPECT_EQ(r.step_time.value(), to_seconds(to_ticks(Seconds(kChipDetected))).value());
  const StepProgress& p = r.progress;
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.instructions, 16u * 3);
  // Every chip's first vector op (10 us < the tick); rows 0, 2, 3 (12 chips) their all-reduce and last op.
  EXPECT_EQ(p.completed, 16u + 12u * 2);
  EXPECT_DOUBLE_EQ(p.fraction(), 40.0 / 48.0);
  EXPECT_EQ(p.last_completion.value(), healthy);  // the rows that do not need chip 5: as without the fault
  ASSERT_EQ(spans.size(), p.completed);
  for (const TraceSpan& span : spans) {
    const std::uint32_t row = span.chip / 4;
    if (row == 1) {
      EXPECT_EQ(span.instruction, 0u) << "chip " << span.chip;  // row 1 stalls in its all-reduce
    }
    EXPECT_LE(span.end.value(), kChipStop + (row == 1 ? 0.0 : healthy));
  }
  // At the tick step 0 of row 1's ring has four sends on chip 5's cables (4 -> 5 and 5 -> 6 one way, 6 -> 5
  // and 5 -> 4 the other), each to or from chip 5: dropped, none resent, nothing lost to a later resend.
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  EXPECT_EQ(f.chip, static_cast<std::int64_t>(kStoppedChip));
  EXPECT_EQ(f.transfers_cut, 4u);
  EXPECT_EQ(f.transfers_dropped, 4u);
  EXPECT_EQ(f.dropped.count(), f.in_flight.count());
  EXPECT_EQ(f.lost.count(), 0u);
  EXPECT_EQ(f.retransmitted.count(), 0u);
  EXPECT_EQ(f.resent_done.value(), 0.0);
  // The bidirectional ring sends half the buffer each way in 4 blocks: each of the four is 8 MiB, and had
  // moved at the link rate for 50 us by the tick, 2.25 MB each.
  EXPECT_EQ(f.in_flight.count(), 4 * (kStoppedBytes / 8));
  EXPECT_NEAR(f.delivered.as_double(), 4 * kLinkRate * 50e-6, 4);
}

// Ended at the stop (SimOptions::end_at_stop, job.stopped_step: to_stop): the simulation covers the step up to
// the tick, where each chip has completed its first vector op and nothing else, and the stop's cuts are counted
// as when the run goes on to the detection.
TEST(TimedChipFault, EndedAtTheStopTheStepCountsWhatCompletedByThenAndWhatTheStopCut) {
  SimOptions o = chip_stopping(InFlightPolicy::lose);
  o.end_at_stop = true;
  std::vector<TraceSpan> spans;
  o.trace = [&](const TraceSpan& span) { spans.push_back(span); };
  const SimResult r = ::tpusim::testing::simulate_step(chip_fault_torus(), chip_fault_step(), o);
  EXPECT_EQ(r.step_time.value(), to_seconds(to_ticks(Seconds(kChipStop))).value());
  const StepProgress& p = r.progress;
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.instructions, 16u * 3);
  EXPECT_EQ(p.completed, 16u);  // every chip's first vector op, 10 us < the tick
  EXPECT_NEAR(p.last_completion.value(), 10e-6, 1e-12);
  ASSERT_EQ(spans.size(), 16u);
  for (const TraceSpan& span : spans) EXPECT_EQ(span.instruction, 0u) << "chip " << span.chip;
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  EXPECT_EQ(f.chip, static_cast<std::int64_t>(kStoppedChip));
  EXPECT_EQ(f.transfers_cut, 4u);
  EXPECT_EQ(f.transfers_dropped, 4u);
  EXPECT_EQ(f.in_flight.count(), 4 * (kStoppedBytes / 8));
  EXPECT_NEAR(f.delivered.as_double(), 4 * kLinkRate * 50e-6, 4);
}

// The same with aggregate collectives (the default fidelity), which a run ending at the stop keeps: up to the
// tick row 1's ring runs as one aggregate flow, cut at the tick as one transfer and dropped whole.
TEST(TimedChipFault, EndedAtTheStopAnAggregateCutAtTheTickIsDroppedWhole) {
  Scenario s = chip_fault_torus();
  s.fidelity.collectives = CollectiveFidelity::aggregate;
  SimOptions o = chip_stopping(InFlightPolicy::lose);
  o.end_at_stop = true;
  const SimResult r = ::tpusim::testing::simulate_step(s, chip_fault_step(), o);
  EXPECT_EQ(r.progress.completed, 16u);
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  EXPECT_EQ(f.transfers_cut, 1u);
  EXPECT_EQ(f.transfers_dropped, 1u);
  EXPECT_EQ(f.dropped.count(), f.in_flight.count());
  // The run's six steps (three of the reduce-scatter, three of the all-gather), 8 MiB each way per step, over
  // each of chip 5's four ring channels; 50 us of them moved at the link rate on each, as per step.
  EXPECT_EQ(f.in_flight.count(), 4 * 6 * (kStoppedBytes / 8));
  EXPECT_NEAR(f.delivered.as_double(), 4 * kLinkRate * 50e-6, 4);
}

// Without a chip fault nothing of this is set: no progress, the whole step.
TEST(TimedChipFault, WithoutOneTheProgressIsUnset) {
  const SimResult r = simulate(chip_fault_torus(), chip_fault_step(), {});
  EXPECT_FALSE(r.progress.stopped);
  EXPECT_EQ(r.progress.instructions, 0u);
  EXPECT_TRUE(r.network.in_step_faults.empty());
}

}  // namespace
}  // namespace tpusim::models::net
