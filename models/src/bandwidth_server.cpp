#include "bandwidth_server.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

BandwidthServer::BandwidthServer(double bytes_per_second) : rate_(bytes_per_second / kTicksPerSecond) {}

void BandwidthServer::add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order) {
  if (rate_ <= 0) throw std::logic_error("transfer on a path without bandwidth");
  if (now != last_ && !flows_.empty()) throw std::logic_error("bandwidth server not advanced before add");
  last_ = now;
  flows_.push_back(Flow{tag, bytes, order});
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

Tick BandwidthServer::next_completion() const {
  if (flows_.empty()) return kNever;
  const double share = rate_ / static_cast<double>(mark_served());
  double least = -1;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    if (served_[i] && (least < 0 || flows_[i].remaining < least)) least = flows_[i].remaining;
  }
  return last_ + std::max<Tick>(1, ceil_ticks(least / share));
}

}  // namespace tpusim::models
