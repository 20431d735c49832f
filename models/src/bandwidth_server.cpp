#include "bandwidth_server.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

BandwidthServer::BandwidthServer(double bytes_per_second, double turnaround)
    : rate_(bytes_per_second / kTicksPerSecond), turnaround_(turnaround) {
  if (turnaround < 0 || turnaround >= 1) throw std::invalid_argument("turnaround must be in [0, 1)");
}

void BandwidthServer::add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order, FlowDirection direction) {
  if (rate_ <= 0) throw std::logic_error("transfer on a path without bandwidth");
  if (now != last_ && !flows_.empty()) throw std::logic_error("bandwidth server not advanced before add");
  last_ = now;
  flows_.push_back(Flow{tag, bytes, order, direction});
  accepted_ += bytes;
}

std::size_t BandwidthServer::mark_served() const {
  served_.assign(flows_.size(), 0);
  std::size_t classes = 0;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    bool first = true;
    for (std::size_t j = 0; j < flows_.size() && first; ++j) {
      first = j == i || class_of(flows_[j].tag) != class_of(flows_[i].tag) || flows_[j].order > flows_[i].order ||
              (flows_[j].order == flows_[i].order && j > i);
    }
    served_[i] = first ? 1 : 0;
    classes += first ? 1 : 0;
  }
  return classes;
}

double BandwidthServer::share() const {
  const std::size_t classes = mark_served();
  bool reads = false, writes = false;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    if (!served_[i]) continue;
    reads = reads || flows_[i].direction == FlowDirection::read;
    writes = writes || flows_[i].direction == FlowDirection::write;
  }
  const double rate = reads && writes ? rate_ * (1.0 - turnaround_) : rate_;
  return rate / static_cast<double>(classes);
}

Tick BandwidthServer::next_completion() const {
  if (flows_.empty()) return kNever;
  const double share = this->share();
  double least = -1;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    if (served_[i] && (least < 0 || flows_[i].remaining < least)) least = flows_[i].remaining;
  }
  return last_ + std::max<Tick>(1, ceil_ticks(least / share));
}

}  // namespace tpusim::models
