#pragma once
// A shared-bandwidth resource (HBM, a PCIe direction, CMEM) at flow level (DESIGN.md: never per byte).
// Transfers belong to a class, the engine (DMA descriptor queue) that issued them, given by the top byte of
// their tag (TransferEngine::owner_of). The classes with work split the rate equally (processor sharing
// between queues); inside a class the transfers are served one after the other in issue order, as a DMA
// engine works through its descriptors, so a prefetch issued behind the transfer a compute unit waits for
// does not slow it down. Every arrival or departure re-divides the rate. How many transfers are outstanding
// is set by the engines feeding it (chip.dma.outstanding per queue).
//
// A transfer may be capped at a fraction of the rate (HBM: a transfer striped over fewer channels than the
// chip has, hbm_channel_share in timing.h). The rate is then divided max-min fairly: a class may use at most
// the sum of its transfers' caps, and what a class cannot use goes to the others; inside a class the rate
// goes to the transfers in issue order, each up to its cap (so a queue of small transfers keeps several
// moving, each on its own channels). Uncapped transfers (cap 1) give exactly the scheme above.
//
// The server has no SystemC process: its owner advances it to the current time at every activation and asks
// for next_completion() to schedule its single wake-up event.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ticks.h"

namespace tpusim::models {

// Read/write turnaround (HBM): while the flows being served include both reads and writes, the server runs at
// rate x (1 - turnaround), the share of time a DRAM bus loses switching direction (write-to-read and
// read-to-write gaps) when the two streams interleave. A single-direction stream, however long, runs at the
// full rate (bandwidth x efficiency for HBM). A copy (HBM -> HBM) reads and writes by itself, so it pays the
// turnaround alone.
enum class FlowDirection : std::uint8_t { read, write, copy };

class BandwidthServer {
 public:
  // `bytes_per_second` is the usable rate (peak x efficiency); 0 means the path does not exist. `turnaround`
  // in [0, 1) is the fraction lost while reads and writes are both served.
  explicit BandwidthServer(double bytes_per_second, double turnaround = 0.0);

  // Starts serving `bytes` (> 0) for the transfer tagged `tag`; `order` ranks it within its class (the
  // engine's issue order: a transfer whose latency expired first is still served after older ones). The
  // server must have been advanced to `now`.
  void add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order = 0,
           FlowDirection direction = FlowDirection::read, double cap = 1.0);

  // Serves everything up to `now` and calls done(tag) for each transfer that has finished, in arrival order.
  template <class Done>
  void advance(Tick now, Done&& done);

  // The tick at which the next transfer finishes if nothing arrives meanwhile; kNever when idle.
  [[nodiscard]] Tick next_completion() const;

  [[nodiscard]] bool active() const { return !flows_.empty(); }
  [[nodiscard]] Tick busy_ticks() const { return busy_; }
  [[nodiscard]] double bytes_accepted() const { return accepted_; }

 private:
  struct Flow {
    std::uint32_t tag;
    double remaining;  // bytes
    std::uint64_t order;
    FlowDirection direction;
    double cap;  // at most this fraction of the rate
  };
  [[nodiscard]] static std::uint8_t class_of(std::uint32_t tag) { return static_cast<std::uint8_t>(tag >> 24); }
  // Sets rates_[i], each flow's bytes per tick now (see the class comment), less the turnaround when the
  // flows moving data include reads and writes. The rates depend only on the set of flows (their classes,
  // orders, caps and directions, not their remaining bytes), so they are computed again only after the set
  // changed (an add or a completion): most activations of a chip leave a memory's flows as they were.
  void allocate() const;

  double rate_;  // bytes per tick
  double turnaround_;
  std::vector<Flow> flows_;  // in arrival order
  struct Class {  // the flows of one class: scratch_[begin, end), in issue order
    std::size_t begin, end;
    double demand;  // sum of their caps (fractions of the rate)
  };
  // Scratch space of allocate(), kept to avoid allocating on every activation.
  mutable std::vector<double> rates_;
  mutable std::vector<std::size_t> scratch_;
  mutable std::vector<Class> classes_;
  mutable std::vector<std::size_t> by_demand_;
  mutable bool allocated_ = false;  // rates_ holds the rates of the current flows_
  Tick last_ = 0;
  Tick busy_ = 0;
  double accepted_ = 0;
};

template <class Done>
void BandwidthServer::advance(Tick now, Done&& done) {
  if (flows_.empty() || now <= last_) {
    last_ = std::max(last_, now);
    return;
  }
  allocate();
  const auto dt = static_cast<double>(now - last_);
  busy_ += now - last_;
  last_ = now;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    Flow f = flows_[i];
    f.remaining -= rates_[i] * dt;
    // Completion times are rounded up to whole ticks, so a finished flow is at or just below zero; half a
    // tick of service absorbs the floating-point error.
    if (rates_[i] > 0 && f.remaining <= rates_[i] * 0.5) {
      done(f.tag);
    } else {
      flows_[kept++] = f;
    }
  }
  if (kept != flows_.size()) {
    flows_.resize(kept);
    allocated_ = false;
  }
}

}  // namespace tpusim::models
