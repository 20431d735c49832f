#include "bandwidth_server.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

BandwidthServer::BandwidthServer(double bytes_per_second, double turnaround)
    : rate_(bytes_per_second / kTicksPerSecond), turnaround_(turnaround) {
  if (turnaround < 0 || turnaround >= 1) throw std::invalid_argument("turnaround must be in [0, 1)");
}

void BandwidthServer::add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order, FlowDirection direction,
                          double cap) {
  if (rate_ <= 0) throw std::logic_error("transfer on a path without bandwidth");
  if (now != last_ && !flows_.empty()) throw std::logic_error("bandwidth server not advanced before add");
  if (!(cap > 0 && cap <= 1)) throw std::invalid_argument("transfer cap must be in (0, 1]");
  last_ = now;
  flows_.push_back(Flow{tag, bytes, order, direction, cap});
  allocated_ = false;
  accepted_ += bytes;
}

void BandwidthServer::allocate() const {
  if (allocated_) return;
  allocated_ = true;
  const std::size_t n = flows_.size();
  rates_.assign(n, 0.0);
  if (n == 0) return;
  // Flows grouped by class, each class in issue order (ties by arrival).
  scratch_.resize(n);
  for (std::size_t i = 0; i < n; ++i) scratch_[i] = i;
  std::sort(scratch_.begin(), scratch_.end(), [this](std::size_t a, std::size_t b) {
    const auto ca = class_of(flows_[a].tag), cb = class_of(flows_[b].tag);
    if (ca != cb) return ca < cb;
    if (flows_[a].order != flows_[b].order) return flows_[a].order < flows_[b].order;
    return a < b;
  });
  std::vector<Class>& classes = classes_;
  classes.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = flows_[scratch_[i]];
    if (classes.empty() || class_of(flows_[scratch_[classes.back().begin]].tag) != class_of(f.tag)) {
      classes.push_back(Class{i, i, 0.0});
    }
    classes.back().end = i + 1;
    classes.back().demand += f.cap;
  }
  // Max-min fair split of `total` between classes, the least demanding satisfied first; when every class
  // can use an equal share, each gets exactly total / classes.
  const auto split = [&](double total) {
    std::fill(rates_.begin(), rates_.end(), 0.0);
    const double equal = total / static_cast<double>(classes.size());
    std::vector<std::size_t>& by_demand = by_demand_;
    by_demand.resize(classes.size());
    for (std::size_t c = 0; c < classes.size(); ++c) by_demand[c] = c;
    std::stable_sort(by_demand.begin(), by_demand.end(),
                     [&](std::size_t a, std::size_t b) { return classes[a].demand < classes[b].demand; });
    const bool uniform = classes[by_demand.front()].demand * total >= equal;
    double left = total;
    std::size_t waiting = classes.size();
    for (std::size_t c : by_demand) {
      double give = uniform ? equal : std::min(classes[c].demand * total, left / static_cast<double>(waiting));
      --waiting;
      left -= give;
      // Inside the class, in issue order, each flow up to its cap.
      for (std::size_t i = classes[c].begin; i < classes[c].end && give > 0; ++i) {
        const std::size_t f = scratch_[i];
        rates_[f] = std::min(flows_[f].cap * total, give);
        give -= rates_[f];
      }
    }
  };
  split(rate_);
  bool reads = false, writes = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (rates_[i] <= 0) continue;
    reads = reads || flows_[i].direction != FlowDirection::write;
    writes = writes || flows_[i].direction != FlowDirection::read;
  }
  if (reads && writes) split(rate_ * (1.0 - turnaround_));
}

Tick BandwidthServer::next_completion() const {
  if (flows_.empty()) return kNever;
  allocate();
  double least = -1;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    if (rates_[i] <= 0) continue;
    const double t = flows_[i].remaining / rates_[i];
    if (least < 0 || t < least) least = t;
  }
  return last_ + std::max<Tick>(1, ceil_ticks(least));
}

}  // namespace tpusim::models
