#include "transfer_engine.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::models {

TransferEngine::TransferEngine(int window, std::uint8_t id) : ring_(static_cast<std::size_t>(window)), id_(id) {
  if (window < 1) throw std::invalid_argument("transfer engine window must be at least 1");
}

void TransferEngine::issue(Tick now, std::uint32_t instr, BandwidthServer& path, Tick latency, double bytes,
                           FlowDirection direction, double cap) {
  if (full()) throw std::logic_error("transfer engine issued beyond its window");
  const std::size_t index = (head_ + count_) % ring_.size();
  ring_[index] = Slot{instr, Phase::latency, now, now + latency, bytes, &path, issued_++, direction, cap};
  ++count_;
  start_ready(now);
}

void TransferEngine::start_ready(Tick now) {
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t index = (head_ + i) % ring_.size();
    Slot& s = ring_[index];
    if (s.phase != Phase::latency || s.ready > now) continue;
    if (s.bytes <= 0) {
      s.phase = Phase::done;
      continue;
    }
    s.phase = Phase::transfer;
    s.path->add(now, (static_cast<std::uint32_t>(id_) << 24) | static_cast<std::uint32_t>(index), s.bytes, s.order, s.direction,
                 s.cap);
  }
}

void TransferEngine::on_done(std::uint32_t tag) { ring_[tag & 0xffffffu].phase = Phase::done; }

Tick TransferEngine::next_event() const {
  Tick next = kNever;
  for (std::size_t i = 0; i < count_; ++i) {
    const Slot& s = ring_[(head_ + i) % ring_.size()];
    if (s.phase == Phase::latency) next = std::min(next, s.ready);
  }
  return next;
}

DmaEngine::DmaEngine(int queues, int window) {
  if (queues < 1 || queues > 128) throw std::invalid_argument("DMA engine needs 1 to 128 descriptor queues");
  queues_.reserve(static_cast<std::size_t>(queues));
  for (int q = 0; q < queues; ++q) queues_.emplace_back(window, static_cast<std::uint8_t>(q));
}

bool DmaEngine::busy() const {
  return std::any_of(queues_.begin(), queues_.end(), [](const TransferEngine& q) { return q.busy(); });
}

void DmaEngine::start_ready(Tick now) {
  for (TransferEngine& q : queues_) q.start_ready(now);
}

Tick DmaEngine::next_event() const {
  Tick next = kNever;
  for (const TransferEngine& q : queues_) next = std::min(next, q.next_event());
  return next;
}

}  // namespace tpusim::models
