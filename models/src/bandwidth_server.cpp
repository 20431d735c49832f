#include "bandwidth_server.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

BandwidthServer::BandwidthServer(double bytes_per_second) : rate_(bytes_per_second / kTicksPerSecond) {}

void BandwidthServer::add(Tick now, std::uint32_t tag, double bytes) {
  if (rate_ <= 0) throw std::logic_error("transfer on a path without bandwidth");
  if (now != last_ && !flows_.empty()) throw std::logic_error("bandwidth server not advanced before add");
  last_ = now;
  flows_.push_back(Flow{tag, bytes});
  accepted_ += bytes;
}

Tick BandwidthServer::next_completion() const {
  if (flows_.empty()) return kNever;
  double least = flows_.front().remaining;
  for (const Flow& f : flows_) least = std::min(least, f.remaining);
  const double share = rate_ / static_cast<double>(flows_.size());
  return last_ + std::max<Tick>(1, ceil_ticks(least / share));
}

}  // namespace tpusim::models
