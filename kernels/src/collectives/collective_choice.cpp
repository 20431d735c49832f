// The automatic algorithm choice for all-reduce, reduce-scatter and all-gather: the candidate plan with the
// smallest alpha-beta closed form (estimate_collective_time), and that closed form (contracts in
// kernels/README.md, "auto").
#include <algorithm>
#include <vector>

#include "collectives/collective_algorithm.h"
#include "tpusim/kernels/twisted_rings.h"

namespace tpusim::kernels {

namespace {

// One participating axis as the estimate sees it: `length` members `stride` chips apart, closing a ring over
// the wraparound or not (the same rule as the planner's GroupAxis).
struct EstimateAxis {
  int axis = 0;
  int length = 1;
  int stride = 1;
  bool wraps = false;
};

std::vector<EstimateAxis> estimate_axes(const Topology& topo, const ir::CollectiveGroup& group) {
  std::vector<EstimateAxis> axes;
  for (int a = 0; a < topo.axes(); ++a) {
    const auto u = static_cast<std::size_t>(a);
    const auto size = static_cast<int>(group.size[u]), stride = static_cast<int>(group.stride[u]);
    if (size <= 1) continue;
    axes.push_back({a, size, stride, size * stride == topo.shape()[u] && closes_ring(topo, group, a)});
  }
  return axes;
}

// Adds `bytes` to the member links a send of every member of `axis` at member offset `offset` crosses
// (plus[j]: member j -> j + 1, minus[j]: j + 1 -> j; on a ring link N - 1 closes it), only for the members
// that send it (chain sends); returns the most member hops one of them takes. Routes are the network's DOR
// routes in group space: the shorter way round a ring (a tie the + way), straight along a line.
int add_axis_send(const EstimateAxis& axis, int offset, const CollectiveSend& send, int cut, std::vector<double>& plus,
                  std::vector<double>& minus) {
  const int n = axis.length;
  int longest = 0;
  for (int m = 0; m < n; ++m) {
    if (send.chain.axis == axis.axis && !chain_sends(send.chain, chain_position(m, cut, n, offset), n)) continue;
    const int dest = ((m + offset) % n + n) % n;
    if (dest == m) continue;
    int forward = 0, backward = 0;
    if (axis.wraps) {
      const int f = (dest - m + n) % n;
      if (f <= n - f) {
        forward = f;
      } else {
        backward = n - f;
      }
    } else if (dest > m) {
      forward = dest - m;
    } else {
      backward = m - dest;
    }
    for (int h = 0; h < forward; ++h) plus[static_cast<std::size_t>((m + h) % n)] += static_cast<double>(send.bytes);
    for (int h = 1; h <= backward; ++h) {
      minus[static_cast<std::size_t>(((m - h) % n + n) % n)] += static_cast<double>(send.bytes);
    }
    longest = std::max(longest, forward + backward);
  }
  return longest;
}

}  // namespace

Seconds estimate_collective_time(const Topology& topo, const CollectivePlan& plan, const ir::CollectiveGroup& group) {
  const std::vector<EstimateAxis> axes = estimate_axes(topo, group);
  const double b = topo.link_bandwidth().value();
  const double hop = topo.hop_latency().value();
  const double dcn = topo.chips_per_host() > 0 ? topo.dcn_bandwidth_per_chip().value() : 0.0;
  double total = 0;
  std::vector<std::vector<double>> plus(axes.size()), minus(axes.size());
  for (const CollectiveStep& step : plan.steps) {
    for (std::size_t i = 0; i < axes.size(); ++i) {
      plus[i].assign(static_cast<std::size_t>(axes[i].length), 0.0);
      minus[i].assign(static_cast<std::size_t>(axes[i].length), 0.0);
    }
    double hops = 0, dcn_bytes = 0;
    for (const CollectiveSend& send : step.sends) {
      if (send.bytes == 0) continue;
      if (send.pod_offset != 0) {
        dcn_bytes += static_cast<double>(send.bytes);
        continue;
      }
      // DOR takes the axes one after the other, and every chip of the group sends the same offsets, so each
      // axis's links carry the one-axis pattern of the send's offset on that axis.
      double send_hops = 0;
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const int offset = send.offset[static_cast<std::size_t>(axes[i].axis)];
        if (offset % axes[i].length == 0) continue;
        send_hops += add_axis_send(axes[i], offset, send, plan.cut[static_cast<std::size_t>(axes[i].axis)], plus[i],
                                   minus[i]) *
                     axes[i].stride;
      }
      hops = std::max(hops, send_hops);
    }
    // A group `stride` chips apart shares each link with its stride - 1 interleaved lanes.
    double worst = 0;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const double most = std::max(*std::max_element(plus[i].begin(), plus[i].end()),
                                   *std::max_element(minus[i].begin(), minus[i].end()));
      worst = std::max(worst, most * axes[i].stride);
    }
    total += (b > 0 ? worst / b : 0) + hops * hop + (dcn > 0 ? dcn_bytes / dcn : 0);
  }
  return Seconds(total);
}

// Choice: how much smaller a later candidate's estimate must be to replace an earlier one (0.1%).
constexpr double kMinGain = 1e-3;

CollectivePlan detail::plan_automatic(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip,
                                      DType dtype, const ir::CollectiveGroup& group) {
  // The candidates, in the order ties go: the bidirectional ring (embedded in any line the group has), the
  // same with every line planned as a line, the unidirectional ring, halving-doubling where the lengths allow.
  // Not direct: measurement C1 (collectives.h) shows the hardware following the ring where direct's closed
  // form is the smaller (it leaves out what each of a direct step's P - 1 sends costs the DMA engines).
  const std::array<int, kMaxAxes> none{-1, -1, -1};
  std::array<int, kMaxAxes> lines = none;
  bool any_line = false;
  for (const EstimateAxis& a : estimate_axes(topo, group)) {
    if (!a.wraps && a.length >= 3 && a.length <= kMaxLineLength) {
      lines[static_cast<std::size_t>(a.axis)] = a.length - 1;  // "cut" after the last member: no link there
      any_line = true;
    }
  }
  struct Candidate {
    CollectiveAlgorithm algorithm;
    std::array<int, kMaxAxes> cut;
  };
  std::vector<Candidate> candidates{{CollectiveAlgorithm::ring_bidirectional, none}};
  if (any_line) candidates.push_back({CollectiveAlgorithm::ring_bidirectional, lines});
  candidates.push_back({CollectiveAlgorithm::ring_unidirectional, none});
  candidates.push_back({CollectiveAlgorithm::halving_doubling, none});

  CollectivePlan best;
  bool have = false;
  for (const Candidate& c : candidates) {
    if (c.algorithm == CollectiveAlgorithm::halving_doubling) {
      bool powers = true;
      for (const EstimateAxis& a : estimate_axes(topo, group)) powers = powers && (a.length & (a.length - 1)) == 0;
      if (!powers) continue;
    }
    CollectivePlan plan = plan_collective_cut(topo, kind, bytes_per_chip, dtype, group, c.algorithm, c.cut);
    plan.estimate = estimate_collective_time(topo, plan, group);
    // A later candidate wins only by kMinGain: closer estimates differ by the padding of whole elements (a few
    // bytes per sub-buffer), not by the algorithm, and the earlier candidate is the simpler plan.
    if (!have || plan.estimate.value() < (1 - kMinGain) * best.estimate.value()) {
      best = std::move(plan);
      have = true;
    }
  }
  return best;
}

}  // namespace tpusim::kernels
