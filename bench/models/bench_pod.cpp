// Pod-scale benchmarks of the interconnect. One simulation per process, so the binary runs one case per call:
//   bench_pod elaborate-v5p          build the full v5p pod (16x20x28 = 8960 chips) with its interconnect and a
//                                    planned all-reduce; prints wall time and peak RSS (budget < 5 s, < 2 GiB)
//   bench_pod allreduce-v4 MODE [CHUNK_MIB]
//                                    1 GiB all-reduce on the full v4 pod (16x16x16), MODE flow|chunked;
//                                    prints simulated time, wall time, kernel events and events/s
//   bench_pod raw N                  the raw SystemC rate: one SC_METHOD re-notifying itself N times
// The all-reduce uses a hand-built bidirectional ring plan, axis by axis (kernels::plan_collective is not
// linked yet).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

#include "net/simulate_with_planner.h"
#include "pod.h"
#include "run_control.h"
#include "test_chips.h"

namespace tpusim::models {
namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

Scenario pod_scenario(std::vector<int> shape, LinkFidelity links, Bytes chunk) {
  Scenario s = testing::scenario_for(testing::v4_like(), shape);
  s.pod.wraparound.assign(shape.size(), 1);
  s.pod.cube = {4, 4, 4};
  s.pod.host_shape = {2, 2, 1};
  s.pod.ocs_reconfiguration = Seconds(0.1);
  s.fidelity.links = links;
  s.fidelity.link_chunk = chunk;
  return s;
}

kernels::CollectivePlan ring_plan(const std::vector<int>& shape, std::uint64_t bytes, double link_rate, double hop) {
  kernels::CollectivePlan p;
  p.algorithm = kernels::CollectiveAlgorithm::ring_bidirectional;
  p.bytes_per_chip = bytes;
  p.participants = 1;
  std::vector<std::uint64_t> sizes;
  std::uint64_t c = bytes;
  double ideal = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    p.axes_mask |= 1U << a;
    p.participants *= shape[a];
    sizes.push_back(c);
    ideal += 2.0 * (shape[a] - 1) / shape[a] * static_cast<double>(c) / (2 * link_rate) + 2.0 * (shape[a] - 1) * hop;
    c /= static_cast<std::uint64_t>(shape[a]);
  }
  const auto steps = [&](std::size_t a, bool reduce) {
    const auto n = static_cast<std::uint64_t>(shape[a]);
    for (std::uint64_t s = 0; s + 1 < n; ++s) {
      kernels::CollectiveStep step;
      for (int dir : {+1, -1}) {
        kernels::CollectiveSend send;
        send.offset[a] = dir;
        send.bytes = (sizes[a] + 2 * n - 1) / (2 * n);
        step.sends.push_back(send);
      }
      step.reduce_elements = reduce ? sizes[a] / n / 2 : 0;
      p.steps.push_back(step);
    }
  };
  for (std::size_t a = 0; a < shape.size(); ++a) steps(a, true);
  for (std::size_t a = shape.size(); a-- > 0;) steps(a, false);
  p.ideal_time = Seconds(ideal);
  p.bus_factor = 2.0 * (p.participants - 1) / p.participants;
  return p;
}

ir::ProgramSet one_all_reduce(std::uint64_t bytes) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.bytes = bytes;
  ir::Program p("allreduce");
  p.add(ins, {}, "allreduce");
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

net::CollectivePlanner fixed(const kernels::CollectivePlan& plan) {
  return [plan](const Topology&, const ir::Instruction&) { return plan; };
}

int elaborate_v5p() {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const std::vector<int> shape{16, 20, 28};
  const Scenario s = pod_scenario(shape, LinkFidelity::flow, MiB(1));
  const ir::ProgramSet programs = one_all_reduce(1ULL << 30);
  const auto plan = ring_plan(shape, 1ULL << 30, 45e9, 1e-6);
  const auto t0 = std::chrono::steady_clock::now();
  RunControl control({}, {}, static_cast<std::uint32_t>(s.pod.chip_count()));
  Pod pod("pod", s, programs, control, fixed(plan));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("elaborate v5p 16x20x28: chips %lld links %zu wall %.3f s peak_rss %.1f MiB\n", s.pod.chip_count(),
              static_cast<std::size_t>(s.pod.chip_count()) * 6, wall, peak_rss_mib());
  return 0;
}

int allreduce_v4(const std::string& mode, std::uint64_t chunk_mib) {
  const std::vector<int> shape{16, 16, 16};
  const LinkFidelity links = mode == "chunked" ? LinkFidelity::chunked : LinkFidelity::flow;
  const Scenario s = pod_scenario(shape, links, MiB(chunk_mib));
  const auto plan = ring_plan(shape, 1ULL << 30, s.chip.ici.link_bandwidth.value(), s.chip.ici.hop_latency.value());
  const SimResult r = net::simulate_with_planner(s, one_all_reduce(1ULL << 30), {}, fixed(plan));
  std::printf("allreduce 1 GiB v4 16x16x16 %s chunk %llu MiB: simulated %.3f ms (ideal %.3f ms) wall %.3f s "
              "kernel_events %llu events/s %.0f ici_transfers %llu link_util mean %.3f max %.3f peak_rss %.1f MiB\n",
              r.link_model.c_str(), static_cast<unsigned long long>(chunk_mib), r.step_time.value() * 1e3,
              plan.ideal_time.value() * 1e3, r.wall_seconds, static_cast<unsigned long long>(r.kernel_events),
              static_cast<double>(r.kernel_events) / r.wall_seconds, static_cast<unsigned long long>(r.ici_transfers),
              r.link_utilization.mean, r.link_utilization.max, peak_rss_mib());
  return 0;
}

struct Ticker : sc_core::sc_module {
  SC_HAS_PROCESS(Ticker);
  Ticker(const sc_core::sc_module_name& n, std::uint64_t count) : sc_core::sc_module(n), left(count) {
    SC_METHOD(tick);
    sensitive << ev;
  }
  void tick() {
    if (left-- > 0) ev.notify(sc_core::sc_time(1, sc_core::SC_NS));
  }
  std::uint64_t left;
  sc_core::sc_event ev;
};

int raw(std::uint64_t n) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  Ticker t("ticker", n);
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("raw SystemC: %llu events wall %.3f s events/s %.0f\n", static_cast<unsigned long long>(n), wall,
              static_cast<double>(n) / wall);
  return 0;
}

}  // namespace
}  // namespace tpusim::models

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  try {
    if (what == "elaborate-v5p") return tpusim::models::elaborate_v5p();
    if (what == "allreduce-v4" && argc > 2) {
      return tpusim::models::allreduce_v4(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
    }
    if (what == "raw" && argc > 2) return tpusim::models::raw(std::strtoull(argv[2], nullptr, 10));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_pod: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: bench_pod elaborate-v5p | allreduce-v4 flow|chunked [CHUNK_MIB] | raw N\n");
  return 2;
}
