#pragma once
// How a memory shares its bandwidth between the transfers it serves: the variation point behind
// chip.<memory>.scheduler. One variant per file (scheduler_shared.cpp, scheduler_fifo.cpp), chosen by
// make_bandwidth_scheduler(). A scheduler has no process: its memory advances it to the current time and asks
// for its next completion (flow level, DESIGN.md: never per byte).
//
// Contract: add() a transfer of `bytes` > 0 under `tag` (its top byte is the engine that issued it; `order`
// ranks it within that engine) at `now`, after advancing to `now`; advance() serves everything up to `now`
// and reports each finished tag once; next_completion() is the tick the next transfer finishes if nothing
// arrives meanwhile (kNever when idle); busy_ticks() counts time with a transfer being served. A transfer may
// be capped at a fraction `cap` of the rate (HBM: striped over fewer channels than the chip has).
#include <cstdint>
#include <memory>

#include "memory/bandwidth_server.h"
#include "ticks.h"
#include "tpusim/core/chip_spec.h"

namespace tpusim::models {

class TagSink {
 public:
  virtual ~TagSink() = default;
  virtual void done(std::uint32_t tag) = 0;
};

class BandwidthScheduler {
 public:
  virtual ~BandwidthScheduler() = default;
  virtual void add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order, FlowDirection direction,
                   double cap) = 0;
  virtual void advance(Tick now, TagSink& sink) = 0;
  [[nodiscard]] virtual Tick next_completion() const = 0;
  [[nodiscard]] virtual Tick busy_ticks() const = 0;
};

// `bytes_per_second` is the usable rate; `turnaround` (shared only) the fraction lost while reads and writes
// are both served.
[[nodiscard]] std::unique_ptr<BandwidthScheduler> make_bandwidth_scheduler(MemoryScheduler kind,
                                                                           double bytes_per_second,
                                                                           double turnaround = 0.0);

}  // namespace tpusim::models
