// A cable that fails at a tick inside the step (SimOptions::timed_links): a 256 MiB all-reduce on a 4x4 torus
// (flow or chunked links, ideal: ici.link_efficiency 1) loses the cable from chip (0,0) along x+ at 0.5 us (the
// collective's start-up) + 100 us, inside the ring's first step. Pinned: the transfers and bytes in flight on
// it at the tick, the bytes delivered, retransmitted or lost, that nothing crosses the cable after the tick,
// the step time against closed forms, and the same bytes from the same inputs. One simulation per process.
#include <string>

#include "collective_test_support.h"
#include "tpusim/topology/routing.h"
#include <gtest/gtest.h>

namespace tpusim::models::net {
namespace {

using namespace nettest;

constexpr double kTick = 0.5e-6 + 100e-6;  // the collective's start-up + 100 us: inside step 0 of the ring

Scenario torus(LinkFidelity links) {
  Scenario s = pod_scenario({4, 4}, true, links);
  s.fidelity.collectives = CollectiveFidelity::per_step;
  return s;
}

ir::ProgramSet all_reduce() { return one_collective(CollectiveKind::all_reduce, k256MiB); }

SimResult run(const Scenario& s, double at, double detected, InFlightPolicy policy) {
  SimOptions o;
  const Topology topo = build_topology(s.pod, s.chip);
  if (at >= 0) o.timed_links.push_back(TimedLinkFault{cable_from(topo, 0), Seconds(at), Seconds(detected)});
  o.in_flight = policy;
  return ::tpusim::testing::simulate_step(s, all_reduce(), o);
}

// The bytes of step 0's sends over the cable: chip 0's send to x+1 and chip 1's to x-1 (one each way).
std::uint64_t step0_cable_bytes(const Scenario& s) {
  const kernels::CollectivePlan plan = plan_of(s, all_reduce());
  std::uint64_t b = 0;
  for (const kernels::CollectiveSend& send : plan.steps.at(0).sends) {
    if (send.pod_offset == 0 && std::abs(send.offset[0]) == 1 && send.offset[1] == 0) b += send.bytes;
  }
  return b;
}

// The ring kept with the cable failed from the start (net_fault_routing_test): 2 (T - n a) + 3 n a + R + overheads.
double ring_kept_lasting(const Scenario& s) {
  const kernels::CollectivePlan plan = plan_of(s, all_reduce());
  const auto n = static_cast<double>(plan.steps.size());
  return 2 * (plan.ideal_time.value() - n * kHop) + 3 * n * kHop + reduction_seconds(plan, s.chip) +
         overhead_seconds(plan);
}

// Flow links, retransmit. At the tick the cable carries step 0's two sends, each alone on its link at the link
// rate B since 0.5 us: each has delivered B x 100 us = 4.5 MB exactly (within a byte of rounding), and the rest
// is sent again at once over a 3-hop detour. After the tick the ring's later steps detour as when the cable is
// down from the start, so the step is that lasting-fault time minus the 100 us step 0 ran at full rate before
// the tick (it moved 4.5 MB in 100 us instead of 200): T_hit = T_lasting - 100 us, within 0.01% (measured: to
// 9 digits, 5.646 ms; healthy 2.926 ms, lasting 5.746 ms); and the fault-free step < T_hit < T_lasting. The
// cable carries only the delivered bytes (nothing is routed over it after the tick).
TEST(TimedLinkFault, FlowRetransmitCutsStepZerosSendsAtTheTickAndDetoursTheRest) {
  const Scenario s = torus(LinkFidelity::flow);
  const double healthy = in_child([&] { return run(s, -1, 0, InFlightPolicy::retransmit).step_time.value(); });
  const SimResult r = run(s, kTick, kTick + 1e-3, InFlightPolicy::retransmit);
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  const std::uint64_t b0 = step0_cable_bytes(s);
  EXPECT_EQ(f.transfers_cut, 2u);
  EXPECT_EQ(f.in_flight.count(), b0);
  EXPECT_NEAR(f.delivered.as_double(), 2 * 4.5e6, 2);
  EXPECT_EQ(f.retransmitted.count(), f.in_flight.count() - f.delivered.count());
  EXPECT_EQ(f.lost.count(), 0u);
  EXPECT_DOUBLE_EQ(f.at.value(), kTick);

  const Topology topo = build_topology(s.pod, s.chip);
  const LinkId cut = cable_from(topo, 0);
  const std::vector<LinkUsage>& links = r.network.links;
  EXPECT_EQ(links.at(cut.value()).bytes.count() + links.at(topo.link(cut).reverse.value()).bytes.count(),
            f.delivered.count());

  const double lasting = ring_kept_lasting(s);
  const double t = r.step_time.value();
  EXPECT_GT(t, healthy);
  EXPECT_LT(t, lasting);
  EXPECT_NEAR(t, lasting - 100e-6, 1e-4 * lasting) << "healthy " << healthy << " lasting " << lasting;
  ::testing::Test::RecordProperty("hit_over_healthy", std::to_string(t / healthy));
}

// Chunked links (1 MiB chunks), retransmit: at the tick each send has delivered the chunks whose last byte
// reached chip 1 (or 0): chunk k is delivered at 0.5 us + k ceil(C / B) + a, so floor((100 us - a) / (C / B)) = 4
// chunks each way; the chunks still on the wire are dropped and the rest sent again from the first byte not
// delivered.
TEST(TimedLinkFault, ChunkedRetransmitKeepsTheChunksDeliveredBeforeTheTick) {
  const Scenario s = torus(LinkFidelity::chunked);
  const SimResult r = run(s, kTick, kTick + 1e-3, InFlightPolicy::retransmit);
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  const double chunk_s = static_cast<double>(MiB(1).count()) / kLinkRate;
  const auto chunks = static_cast<std::uint64_t>((100e-6 - kHop) / chunk_s);
  EXPECT_EQ(chunks, 4u);
  EXPECT_EQ(f.transfers_cut, 2u);
  EXPECT_EQ(f.in_flight.count(), step0_cable_bytes(s));
  EXPECT_EQ(f.delivered.count(), 2 * chunks * MiB(1).count());
  EXPECT_EQ(f.retransmitted.count(), f.in_flight.count() - f.delivered.count());
  const Topology topo = build_topology(s.pod, s.chip);
  const LinkId cut = cable_from(topo, 0);
  // The cable served the delivered chunks plus the one in service each way at the tick (its bytes counted when
  // it started service), and nothing after.
  const std::vector<LinkUsage>& links = r.network.links;
  EXPECT_EQ(links.at(cut.value()).bytes.count() + links.at(topo.link(cut).reverse.value()).bytes.count(),
            f.delivered.count() + 2 * MiB(1).count());
}

// Flow links, lose, detection 1 ms after the tick: the two sends are lost whole (in_flight bytes lost, nothing
// retransmitted at the tick) and sent again in full at detection. Every chip has stalled by then (each ring
// step needs its neighbours' data), so each resend of b bytes runs alone on its 3-hop detour (b / B + 3 a,
// where the lasting fault's step 0 took 2 b / B + 3 a sharing a link), and the other steps run as with the
// cable down from the start:
//   T = detected + (T_lasting - start-up) - b / B,  within 0.01% (measured: 6.473 ms, to 8 digits);
// and detected + b / B + 3 a <= T <= detected + T_lasting.
// The checks both link models share under lose: the two sends lost whole, nothing retransmitted, and the
// step no shorter than the detection plus one resend alone on its detour; with flow links also no longer than
// the detection plus the whole lasting-fault step (its flow closed form). Returns the step time.
double check_lose(const Scenario& s, double detected) {
  const SimResult r = run(s, kTick, detected, InFlightPolicy::lose);
  EXPECT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault f = r.network.in_step_faults.empty() ? InStepFault{} : r.network.in_step_faults[0];
  EXPECT_EQ(f.transfers_cut, 2u);
  EXPECT_EQ(f.lost.count(), f.in_flight.count());
  EXPECT_EQ(f.retransmitted.count(), 0u);
  const double b = static_cast<double>(step0_cable_bytes(s)) / 2;
  const double t = r.step_time.value();
  EXPECT_GE(t, detected + b / kLinkRate + 3 * kHop);
  if (s.fidelity.links == LinkFidelity::flow) {  // the flow model's closed forms
    EXPECT_LE(t, detected + ring_kept_lasting(s));
    EXPECT_NEAR(f.delivered.as_double(), 2 * 4.5e6, 2);
    // The resends (InStepFault::resent_done, the end of trace-fault-K.json's resend span): each alone on its
    // 3-hop detour from the detection, b / B + 3 a; within 1 ns (a tick is 1 ps).
    EXPECT_NEAR(f.resent_done.value(), detected + b / kLinkRate + 3 * kHop, 1e-9);
  }
  return t;
}

TEST(TimedLinkFault, FlowLoseStallsTheStepUntilDetectionAndResendsTheWholeTransfers) {
  const Scenario s = torus(LinkFidelity::flow);
  const double detected = kTick + 1e-3;
  const double t = check_lose(s, detected);
  const double b = static_cast<double>(step0_cable_bytes(s)) / 2;
  const double lasting = ring_kept_lasting(s);
  const double expected = detected + lasting - kCollectiveStartup.value() - b / kLinkRate;
  EXPECT_NEAR(t, expected, 1e-4 * expected);
}

// The cable fails at 0.25 us, before the collective starts (0.5 us), with nothing on it. Under lose the runtime
// does not know until the detection, 20 ms later (past the whole step with the cable down): the collective is
// planned for the healthy graph and step 0's two sends over the cable start on their static routes, so they
// are lost at their start (nothing delivered) and sent again at the detection; the step ends after it. Under
// retransmit the routes go around the cable at once: nothing is cut, the collective is planned for the
// surviving graph and runs as with the cable down from the start (its closed form, within 0.01%).
TEST(TimedLinkFault, UnderLoseTheRoutesKeepTheCableUntilDetectionSoASendStartedOverItIsLostToo) {
  const Scenario s = torus(LinkFidelity::flow);
  constexpr double kEarly = 0.25e-6, kDetected = kEarly + 20e-3;
  const double retransmit =
      in_child([&] { return run(s, kEarly, kDetected, InFlightPolicy::retransmit).step_time.value(); });
  const double lasting = ring_kept_lasting(s);
  EXPECT_NEAR(retransmit, lasting, 1e-4 * lasting);
  EXPECT_LT(retransmit, kDetected);

  const SimResult r = run(s, kEarly, kDetected, InFlightPolicy::lose);
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  const InStepFault& f = r.network.in_step_faults[0];
  EXPECT_EQ(f.transfers_cut, 2u);
  EXPECT_EQ(f.in_flight.count(), step0_cable_bytes(s));
  EXPECT_EQ(f.lost.count(), f.in_flight.count());
  EXPECT_EQ(f.delivered.count(), 0u);
  const double b = static_cast<double>(step0_cable_bytes(s)) / 2;
  EXPECT_NEAR(f.resent_done.value(), kDetected + b / kLinkRate + 3 * kHop, 1e-9);
  EXPECT_GT(r.step_time.value(), kDetected);
}

// A tick after the step's end changes nothing: the same step time and link bytes as the fault-free run, and no
// transfer cut. The same inputs twice give the same bytes (run in two children).
TEST(TimedLinkFault, AfterTheStepNothingChangesAndTheSameInputsGiveTheSameBytes) {
  const Scenario s = torus(LinkFidelity::flow);
  const auto fingerprint = [&](double at) {
    return in_child([&] {
      const SimResult r = run(s, at, at + 1e-3, InFlightPolicy::retransmit);
      double h = r.step_time.value() * 1e6;
      for (const LinkUsage& l : r.network.links) h = h * 1.0000001 + l.bytes.as_double();
      for (const InStepFault& f : r.network.in_step_faults) {
        h += f.delivered.as_double() + 3 * f.retransmitted.as_double();
      }
      return h;
    });
  };
  const double a = fingerprint(kTick), b = fingerprint(kTick);
  EXPECT_GT(a, 0);
  EXPECT_EQ(a, b);
  const double late = in_child([&] { return run(s, 1.0, 2.0, InFlightPolicy::retransmit).step_time.value(); });
  const SimResult healthy = run(s, -1, 0, InFlightPolicy::retransmit);
  EXPECT_EQ(late, healthy.step_time.value());
}

// Chunked links, lose: the chunks on the wire are dropped and the two sends resent whole at detection.
TEST(TimedLinkFault, ChunkedLoseResendsTheWholeTransfersAtDetection) {
  (void)check_lose(torus(LinkFidelity::chunked), kTick + 1e-3);
}

// Regression (issue 10: a sharded GPT-3 step deadlocked with `in_flight: lose`): while one collective waits for
// its lost sends (until detection) the chip's other ICI slots keep running the instructions behind it, which
// may complete more than 64 queue positions past it. Here a 256 MiB all-reduce over x (its ring's step 0 cut
// and lost at the tick, resent at detection 5 ms later) is followed on the ICI queue by 70 independent 4 KiB
// all-reduces over y (none crosses an x link) and a 1 us vector op that needs all 71. The y ones complete
// during the stall, far ahead of the x one; the chip must still see every completion (it lost those past 64
// positions and deadlocked: "dependencies never complete"). They neither share a link nor hold the VPU when
// the x one needs it, so the step is the same, to the tick, as the x all-reduce and the vector op alone.
ir::ProgramSet x_all_reduce_then(int y_collectives) {
  ir::Program p("stall");
  ir::Instruction x;
  x.kind = ir::OpKind::collective;
  x.comm.collective = CollectiveKind::all_reduce;
  x.bytes = k256MiB;
  x.dtype = DType::bf16;
  x.comm.mesh_axes = 1u << 0;
  std::vector<std::uint32_t> all{p.add(x, {}, "x.all_reduce")};
  ir::Instruction y = x;
  y.bytes = 4096;
  y.comm.mesh_axes = 1u << 1;
  for (int i = 0; i < y_collectives; ++i) all.push_back(p.add(y, {}, "y.all_reduce"));
  p.add(vector_us(1.0), all, "after");
  return single(std::move(p));
}

TEST(TimedLinkFault, LoseStallsOneCollectiveWhileMoreThan64LaterOnesComplete) {
  const Scenario s = torus(LinkFidelity::flow);
  constexpr int kY = 70;
  const double detected = kTick + 5e-3;
  const Topology topo = build_topology(s.pod, s.chip);
  SimOptions o;
  o.timed_links.push_back(TimedLinkFault{cable_from(topo, 0), Seconds(kTick), Seconds(detected)});
  o.in_flight = InFlightPolicy::lose;
  const double alone = in_child([&] { return ::tpusim::testing::simulate_step(s, x_all_reduce_then(0), o).step_time.value(); });
  const SimResult r = ::tpusim::testing::simulate_step(s, x_all_reduce_then(kY), o);
  ASSERT_EQ(r.network.in_step_faults.size(), 1u);
  EXPECT_EQ(r.network.in_step_faults[0].transfers_cut, 2u);
  EXPECT_EQ(r.network.in_step_faults[0].lost.count(), r.network.in_step_faults[0].in_flight.count());
  ASSERT_EQ(r.network.collectives.size(), static_cast<std::size_t>(kY) + 1);
  EXPECT_GT(r.network.collectives[0].end.value(), detected);
  for (int i = 1; i <= kY; ++i) {
    EXPECT_LT(r.network.collectives[static_cast<std::size_t>(i)].end.value(), detected) << i;
  }
  EXPECT_GT(alone, detected);
  EXPECT_EQ(r.step_time.value(), alone);
}

// A collective that starts after the tick runs the plan made for the surviving graph (its first chip picks
// it, collective_engine.h), and SimResult::network.collectives reports that plan, not the one made at elaboration
// for the healthy torus: here a 200 us vector op, then the 256 MiB all-reduce; the cable fails at 100 us.
TEST(TimedLinkFault, ACollectiveReplannedAfterTheTickIsReportedWithThePlanItRan) {
  const Scenario s = torus(LinkFidelity::flow);
  ir::Program p("after");
  const std::uint32_t v = p.add(vector_us(200.0), {}, "before");
  p.add(all_reduce().programs.at(0)[0], {v}, "grads.all_reduce");
  const ir::ProgramSet programs = single(std::move(p));
  const Topology topo = build_topology(s.pod, s.chip);
  SimOptions o;
  o.timed_links.push_back(TimedLinkFault{cable_from(topo, 0), Seconds(kTick), Seconds(kTick + 1e-3)});
  o.in_flight = InFlightPolicy::retransmit;
  const SimResult r = ::tpusim::testing::simulate_step(s, programs, o);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  const CollectiveUsage& c = r.network.collectives[0];
  FaultSet cut;
  cut.add_cable(topo, cable_from(topo, 0));
  const ir::Instruction& ins = programs.programs.at(0)[1];
  const ir::CollectiveGroup group = kernels::whole_axes_group(topo, ins.comm.mesh_axes);
  const kernels::CollectivePlan healthy = default_collective_planner()(topo, ins, group, {});
  const kernels::CollectivePlan replanned = default_collective_planner()(topo, ins, group, cut);
  // The same numbers here (each axis keeps N - 1 steps per phase, ring or line); the plan's sends differ: some
  // of the surviving graph's are chain sends or detour, so the engine made and ran a plan of its own.
  EXPECT_TRUE(c.replanned);
  EXPECT_EQ(healthy.steps.size(), replanned.steps.size());
  EXPECT_EQ(c.steps, replanned.steps.size());
  EXPECT_EQ(c.ideal_time.value(), replanned.ideal_time.value());
  EXPECT_EQ(c.algorithm, replanned.algorithm);
  EXPECT_EQ(r.network.in_step_faults.at(0).transfers_cut, 0u);  // nothing was on the cable at the tick
}

// A collective that started before the tick keeps its plan (and so reports no re-planning).
TEST(TimedLinkFault, ACollectiveInFlightAtTheTickKeepsItsPlan) {
  const Scenario s = torus(LinkFidelity::flow);
  const SimResult r = run(s, kTick, kTick + 1e-3, InFlightPolicy::retransmit);
  ASSERT_EQ(r.network.collectives.size(), 1u);
  EXPECT_FALSE(r.network.collectives[0].replanned);
  EXPECT_EQ(r.network.collectives[0].steps, plan_of(s, all_reduce()).steps.size());
}

}  // namespace
}  // namespace tpusim::models::net
