#pragma once
// An in-order transfer engine: the chip's DMA engine, and (with a window of one) the host interface.
//
// It starts its queue's transfers in program order, keeps at most `window` of them issued and not retired
// (chip.dma.outstanding descriptors), and retires them in issue order: a transfer that finishes before an
// older one waits for it. Retiring in order keeps the queue's completion count a prefix count, which the
// chip's dependency scheme relies on; the cost is that a dependent of a short transfer can see it late when
// it overtook a long one (rare in tiled programs, whose transfers are similar in size).
//
// A transfer first waits out its path's latency, then joins the path's BandwidthServer. Like the server,
// the engine has no process of its own; the chip advances it and schedules next_event().
#include <cstdint>
#include <vector>

#include "bandwidth_server.h"
#include "ticks.h"

namespace tpusim::models {

class TransferEngine {
 public:
  // `id` goes into the top byte of the tags this engine gives its servers (see owner_of()).
  TransferEngine(int window, std::uint8_t id);

  [[nodiscard]] bool full() const { return count_ == ring_.size(); }
  [[nodiscard]] bool busy() const { return count_ > 0; }

  // Issues a transfer of `bytes` over `path` after `latency`, using at most `cap` of the path's rate (see
  // BandwidthServer). Zero bytes finish after the latency alone.
  void issue(Tick now, std::uint32_t instr, BandwidthServer& path, Tick latency, double bytes,
             FlowDirection direction = FlowDirection::read, double cap = 1.0);

  // Hands transfers whose latency has expired by `now` to their path (already advanced to `now`).
  void start_ready(Tick now);

  // Called (through the owner) when a path finishes the transfer with `tag`.
  void on_done(std::uint32_t tag);

  // Retires finished transfers from the head, in issue order; calls retire(instr, issued_at) for each.
  // Returns whether any retired.
  template <class Retire>
  bool retire(Retire&& retire);

  // The earliest tick at which a latency expires; kNever if none is pending.
  [[nodiscard]] Tick next_event() const;

  void account(Tick now) { busy_.advance(now, busy()); }
  [[nodiscard]] Tick busy_ticks() const { return busy_.total(); }

  [[nodiscard]] static std::uint8_t owner_of(std::uint32_t tag) { return static_cast<std::uint8_t>(tag >> 24); }

 private:
  enum class Phase : std::uint8_t { latency, transfer, done };
  struct Slot {
    std::uint32_t instr = 0;
    Phase phase = Phase::done;
    Tick issued = 0;
    Tick ready = 0;
    double bytes = 0;
    BandwidthServer* path = nullptr;
    std::uint64_t order = 0;  // issue order, which the path serves the queue's transfers in
    FlowDirection direction = FlowDirection::read;
    double cap = 1.0;
  };

  std::vector<Slot> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::uint64_t issued_ = 0;
  std::uint8_t id_;
  BusyTime busy_;
};

// The chip's DMA engine: one descriptor queue (a TransferEngine with ids 0, 1, ...) per TensorCore, each
// keeping chip.dma.outstanding transfers in flight and retiring in its own issue order. The queues share
// the paths (HBM, CMEM, PCIe), which split their bandwidth between the queues with work.
class DmaEngine {
 public:
  DmaEngine(int queues, int window);

  [[nodiscard]] bool full(int queue) const { return queues_[static_cast<std::size_t>(queue)].full(); }
  [[nodiscard]] bool busy() const;
  [[nodiscard]] bool busy(int queue) const { return queues_[static_cast<std::size_t>(queue)].busy(); }
  void issue(Tick now, int queue, std::uint32_t instr, BandwidthServer& path, Tick latency, double bytes,
             FlowDirection direction = FlowDirection::read, double cap = 1.0) {
    queues_[static_cast<std::size_t>(queue)].issue(now, instr, path, latency, bytes, direction, cap);
  }
  void start_ready(Tick now);
  // For a tag of one of this engine's queues (owner_of(tag) < queue count).
  void on_done(std::uint32_t tag) { queues_[TransferEngine::owner_of(tag)].on_done(tag); }
  template <class Retire>
  bool retire(Retire&& retire) {
    bool any = false;
    for (TransferEngine& q : queues_) any = q.retire(retire) || any;
    return any;
  }
  [[nodiscard]] Tick next_event() const;
  // Busy while any queue has a transfer issued and not retired.
  void account(Tick now) { busy_.advance(now, busy()); }
  [[nodiscard]] Tick busy_ticks() const { return busy_.total(); }
  [[nodiscard]] int queues() const { return static_cast<int>(queues_.size()); }

 private:
  std::vector<TransferEngine> queues_;
  BusyTime busy_;
};

template <class Retire>
bool TransferEngine::retire(Retire&& retire) {
  bool any = false;
  while (count_ > 0 && ring_[head_].phase == Phase::done) {
    retire(ring_[head_].instr, ring_[head_].issued);
    head_ = (head_ + 1) % ring_.size();
    --count_;
    any = true;
  }
  return any;
}

}  // namespace tpusim::models
