// Collectives executed on the SystemC pod with hand-built plans (kernels::plan_collective is not linked yet):
// a bidirectional ring all-reduce, axis by axis. One simulation per test process (gtest_discover_tests); the
// tests that compare two runs fork() a child for one of them.
//
// The plan: for each participating axis in order, a reduce-scatter of the chip's current data c over N
// chips, N - 1 steps each sending c / (2N) to +1 and to -1 and reducing the c / N elements received; then
// the all-gathers in reverse axis order, N - 1 steps each forwarding the same sizes. Its ideal time (the
// convention of kernels/collectives.h: link-rate bound plus hop latencies) is
//   sum over axes of 2 (N - 1) / N x c_axis / (2 B)  +  2 sum (N - 1) x a,   c_0 = S, c_{i+1} = c_i / N_i.
// It leaves out the reductions on the VPU (c / N elements per reduce-scatter step at 1024 elements per
// cycle: 2.1% of the 16-ring's time for 256 MiB), so the tolerances below are 5% above the ideal.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "net/simulate_with_planner.h"
#include "test_chips.h"

namespace tpusim::models::net {
namespace {

constexpr double kLinkRate = 45e9;  // v4, one direction (tpu-specs.md)
constexpr double kHop = 1e-6;       // the scaling book's assumed hop latency

Scenario pod_scenario(std::vector<int> shape, bool wrap, LinkFidelity links, Bytes chunk = MiB(1)) {
  ChipSpec chip = testing::v4_like();
  chip.ici.link_bandwidth = BytesPerSecond(kLinkRate);
  chip.ici.hop_latency = Seconds(kHop);
  Scenario s = testing::scenario_for(chip, shape);
  s.pod.wraparound.assign(shape.size(), wrap ? 1 : 0);
  s.pod.host_shape.assign(shape.size(), 1);
  s.fidelity.links = links;
  s.fidelity.link_chunk = chunk;
  return s;
}

kernels::CollectivePlan ring_all_reduce(const std::vector<int>& shape, std::uint64_t bytes) {
  kernels::CollectivePlan p;
  p.kind = CollectiveKind::all_reduce;
  p.algorithm = kernels::CollectiveAlgorithm::ring_bidirectional;
  p.bytes_per_chip = bytes;
  p.participants = 1;
  double ideal = 0;
  std::vector<std::uint64_t> sizes;  // c per axis
  std::uint64_t c = bytes;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    p.axes_mask |= 1U << a;
    p.participants *= shape[a];
    sizes.push_back(c);
    const int n = shape[a];
    ideal += 2.0 * (n - 1) / n * static_cast<double>(c) / (2 * kLinkRate) + 2.0 * (n - 1) * kHop;
    c /= static_cast<std::uint64_t>(n);
  }
  const auto steps = [&](std::size_t a, bool reduce) {
    const auto n = static_cast<std::uint64_t>(shape[a]);
    for (std::uint64_t s = 0; s + 1 < n; ++s) {
      kernels::CollectiveStep step;
      for (int dir : {+1, -1}) {
        kernels::CollectiveSend send;
        send.offset[a] = dir;
        send.bytes = sizes[a] / (2 * n);
        step.sends.push_back(send);
      }
      step.reduce_elements = reduce ? sizes[a] / n / 2 : 0;  // bf16
      p.steps.push_back(step);
    }
  };
  for (std::size_t a = 0; a < shape.size(); ++a) steps(a, true);
  for (std::size_t a = shape.size(); a-- > 0;) steps(a, false);
  p.ideal_time = Seconds(ideal);
  p.bus_factor = 2.0 * (p.participants - 1) / p.participants;
  return p;
}

ir::ProgramSet one_collective(std::uint64_t bytes) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.collective = CollectiveKind::all_reduce;
  ins.bytes = bytes;
  ir::Program p("allreduce");
  p.add(ins, {}, "grads.allreduce");
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

struct RingRun {
  SimResult result;
  kernels::CollectivePlan plan;
};

RingRun run_ring(std::vector<int> shape, bool wrap, LinkFidelity links, std::uint64_t bytes, Bytes chunk = MiB(1)) {
  RingRun r;
  r.plan = ring_all_reduce(shape, bytes);
  const kernels::CollectivePlan plan = r.plan;
  r.result = simulate_with_planner(pod_scenario(shape, wrap, links, chunk), one_collective(bytes), {},
                                   [plan](const Topology&, const ir::Instruction&) { return plan; });
  return r;
}

// Runs `f` (returning a step time) in a forked child, so the parent can run its own simulation.
double in_child(const std::function<double()>& f) {
  if (std::getenv("NET_NO_FORK") != nullptr) return f();
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double v = -1;
    try {
      v = f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child failed: %s\n", e.what());
    }
    if (write(fds[1], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  double v = -1;
  if (read(fds[0], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return v;
}

constexpr std::uint64_t k256MiB = 256ULL << 20;

void expect_near_ideal(const RingRun& r, double tolerance) {
  const double ideal = r.plan.ideal_time.value();
  const double t = r.result.step_time.value();
  EXPECT_GE(t, ideal);
  EXPECT_LE(t, ideal * (1 + tolerance)) << "ratio " << t / ideal;
  ::testing::Test::RecordProperty("time_over_ideal", std::to_string(t / ideal));
  ASSERT_EQ(r.result.collectives.size(), 1u);
  const CollectiveUsage& c = r.result.collectives[0];
  EXPECT_EQ(c.executions, r.result.chips_simulated);
  EXPECT_NEAR(c.time.value(), t, 1e-12);
  EXPECT_NEAR(c.algorithm_bandwidth.value(), static_cast<double>(r.plan.bytes_per_chip) / t, 1.0);
  EXPECT_NEAR(c.bus_bandwidth.value(), c.algorithm_bandwidth.value() * r.plan.bus_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.ideal_time.value(), ideal);
  EXPECT_GT(r.result.link_utilization.max, 0.5);
  EXPECT_GT(r.result.breakdown.communication.value(), 0.9 * t);
}

TEST(CollectiveRing, LargeAllReduceOnA16ChipRingIsWithin5PercentOfIdealChunked) {
  expect_near_ideal(run_ring({16}, true, LinkFidelity::chunked, k256MiB), 0.05);
}

TEST(CollectiveRing, LargeAllReduceOnA16ChipRingIsWithin5PercentOfIdealFlow) {
  expect_near_ideal(run_ring({16}, true, LinkFidelity::flow, k256MiB), 0.05);
}

TEST(CollectiveRing, LargeAllReduceOnA4x4TorusIsWithin5PercentOfIdeal) {
  expect_near_ideal(run_ring({4, 4}, true, LinkFidelity::chunked, k256MiB), 0.05);
}

TEST(CollectiveRing, LargeAllReduceOnA4x4x4TorusIsWithin5PercentOfIdeal) {
  expect_near_ideal(run_ring({4, 4, 4}, true, LinkFidelity::chunked, k256MiB), 0.05);
}

// 4 KiB over 16 chips: 30 steps of 128-byte sends (3 ns at 45 GB/s) and 64-element reductions (1 cycle), so
// the time is the 30 hop latencies plus under 2%.
TEST(CollectiveRing, SmallAllReduceIsLatencyBound) {
  const RingRun r = run_ring({16}, true, LinkFidelity::chunked, 4096);
  const double latency_bound = 30 * kHop;
  EXPECT_GE(r.result.step_time.value(), latency_bound);
  EXPECT_LE(r.result.step_time.value(), latency_bound * 1.02);
}

// Chunked and flow agree within 1% on a 16-ring (every send is one hop on its own link, so the only
// differences are per-chunk rounding and the chunk's store-and-forward of the last hop, none here).
TEST(CollectiveRing, ChunkedAndFlowAgreeOnARingAllReduce) {
  const double flow = in_child([] { return run_ring({16}, true, LinkFidelity::flow, k256MiB).result.step_time.value(); });
  const double chunked = run_ring({16}, true, LinkFidelity::chunked, k256MiB).result.step_time.value();
  ASSERT_GT(flow, 0);
  EXPECT_NEAR(chunked / flow, 1.0, 0.01);
}

// The same ring on a 16-chip line (no wraparound): the +1 send of the last chip goes back 15 hops over the
// links the -1 sends use (and symmetrically), so every link carries two sends per step and the bandwidth
// term doubles; each step also waits 15 hop latencies instead of 1. Expected (flow mode, reductions R equal
// in both): mesh = 2 T_bw + 30 x 15 a + R, torus = T_bw + 30 a + R; ratio within 2%.
TEST(CollectiveRing, AllReduceOnAMeshLineIsSlowerThanOnTheRingByTheExpectedFactor) {
  const double mesh = in_child([] { return run_ring({16}, false, LinkFidelity::flow, k256MiB).result.step_time.value(); });
  const RingRun torus = run_ring({16}, true, LinkFidelity::flow, k256MiB);
  ASSERT_GT(mesh, 0);
  const double t_bw = 2.0 * 15 / 16 * static_cast<double>(k256MiB) / (2 * kLinkRate);
  const double reduce = torus.result.step_time.value() - t_bw - 30 * kHop;
  const double expected = (2 * t_bw + 30 * 15 * kHop + reduce) / (t_bw + 30 * kHop + reduce);
  EXPECT_NEAR(mesh / torus.result.step_time.value(), expected, 0.02 * expected);
}

}  // namespace
}  // namespace tpusim::models::net
