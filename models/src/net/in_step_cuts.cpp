#include "in_step_cuts.h"

#include <algorithm>

namespace tpusim::models::net {

InStepCuts::InStepCuts(const Topology& topo, const std::vector<TimedLinkFault>& timed, InFlightPolicy in_flight,
                       const std::vector<TimedChipFault>& timed_chips)
    : in_flight_(in_flight) {
  for (const TimedLinkFault& f : timed) {
    const Tick at = to_ticks(f.at);
    timed_.push_back(Cut{f.link, at, std::max(at, to_ticks(f.detected))});
  }
  for (const TimedChipFault& f : timed_chips) {
    const std::vector<LinkId> out = topo.out_links(f.chip);
    const Tick at = to_ticks(f.at);
    timed_.push_back(Cut{out.empty() ? LinkId(0) : out.front(), at, std::max(at, to_ticks(f.detected)),
                         static_cast<std::int64_t>(f.chip.value())});
  }
  if (!timed_chips.empty()) {
    dead_.assign(topo.chip_count(), false);
    dead_fault_.assign(topo.chip_count(), 0);
  }
  std::stable_sort(timed_.begin(), timed_.end(), [](const Cut& a, const Cut& b) { return a.at < b.at; });
  for (std::size_t k = 0; k < timed_.size(); ++k) {
    const Cut& f = timed_[k];
    if (f.chip >= 0) dead_fault_[static_cast<std::size_t>(f.chip)] = k;
    InStepFault st;
    st.link = f.link.value();
    st.chip = f.chip;
    st.at = to_seconds(f.at);
    st.detected = to_seconds(f.detected);
    stats_.push_back(st);
  }
}

Tick InStepCuts::next_action() const {
  const Tick fault = applied_ < timed_.size() ? timed_[applied_].at : kNever;
  const Tick detection =
      in_flight_ == InFlightPolicy::lose && detected_ < applied_ ? timed_[detected_].detected : kNever;
  return std::min({fault, detection, resends_.empty() ? kNever : resends_.front().at});
}

std::size_t InStepCuts::apply_next() {
  const std::size_t k = applied_++;
  const Cut& f = timed_[k];
  if (f.chip >= 0) dead_[static_cast<std::size_t>(f.chip)] = true;
  if (f.chip < 0 && in_flight_ != InFlightPolicy::lose) ++cables_failed_;
  return k;
}

void InStepCuts::cut_unseen(std::size_t k, const std::vector<std::uint32_t>& channels) {
  for (const std::uint32_t c : channels) unseen_.emplace_back(c, k);
}

std::optional<std::size_t> InStepCuts::unseen_on(const std::uint32_t* path, std::uint32_t hops) const {
  if (unseen_.empty()) return std::nullopt;  // every transfer's start asks: nothing to walk without a cut
  for (std::uint32_t h = 0; h < hops; ++h) {
    for (const auto& [channel, k] : unseen_) {
      if (channel == path[h]) return k;
    }
  }
  return std::nullopt;
}

bool InStepCuts::detection_due(Tick at) const {
  return in_flight_ == InFlightPolicy::lose && detected_ < applied_ && timed_[detected_].detected <= at;
}

std::size_t InStepCuts::detect_next() {
  const std::size_t k = detected_++;
  unseen_.erase(std::remove_if(unseen_.begin(), unseen_.end(), [&](const auto& u) { return u.second == k; }),
                unseen_.end());
  if (timed_[k].chip < 0) ++cables_failed_;
  return k;
}

std::optional<TransferId> InStepCuts::take_resend(Tick at) {
  if (resends_.empty() || resends_.front().at != at) return std::nullopt;
  const TransferId id = resends_.front().id;
  resends_.erase(resends_.begin());
  return id;
}

void InStepCuts::resend_at_detection(std::size_t k, TransferId id) {
  const Resend r{timed_[k].detected, id};
  resends_.insert(std::upper_bound(resends_.begin(), resends_.end(), r,
                                   [](const Resend& a, const Resend& b) { return a.at < b.at; }),
                  r);
  resending(k, id);
}

// The id is never delivered nor released (a few per stopped step).
void InStepCuts::drop(std::uint32_t src, std::uint32_t dst, std::uint64_t bytes) {
  const std::uint32_t chip = dead(src) ? src : dst;
  InStepFault& st = stats_[dead_fault_[chip]];
  ++st.transfers_dropped;
  st.dropped = Bytes(st.dropped.count() + bytes);
}

// The interconnect advances to each of the transport's next events, so a transfer delivered in this call
// arrived at `now`.
void InStepCuts::note_resent(const std::vector<TransferId>& delivered, std::size_t from, Tick now) {
  if (resent_.empty()) return;
  for (std::size_t i = from; i < delivered.size(); ++i) {
    const auto it =
        std::find_if(resent_.begin(), resent_.end(), [&](const auto& r) { return r.first == delivered[i]; });
    if (it == resent_.end()) continue;
    stats_[it->second].resent_done = std::max(stats_[it->second].resent_done, to_seconds(now));
    resent_.erase(it);
  }
}

}  // namespace tpusim::models::net
