#pragma once
// The variation point for ICI (and DCN) link timing: one small interface, one .cpp per variant
// (link_chunked.cpp, link_flow.cpp), chosen by make_link_model() from fidelity.links.
//
// A link model moves transfers over paths of channels. A channel is one direction of one physical resource
// with a rate and a latency: a directed ICI link (rate = chip.ici.link_bandwidth x chip.ici.link_efficiency,
// latency = chip.ici.hop_latency; link utilization is reported against link_bandwidth, so a saturated link shows
// the efficiency), or one direction of a host's DCN NIC. Optical ICI links are channels like electrical
// ones (the OCS holds a circuit; it adds no switching delay).
//
// Contract shared by the variants:
// - The model has no SystemC process. Its owner calls advance(now) with non-decreasing `now`, then start()s
//   new transfers at `now`, and schedules its one kernel event at next_event().
// - A transfer of B bytes over a path of H channels started alone at t0 on idle channels is delivered at
//     flow:    t0 + sum(latency) + ceil(B / min(rate))
//     chunked: t0 + sum(latency) + sum over chunks of ceil(chunk / rate) on the slowest channel
//              + (H - 1) x ceil(C / rate) of pipeline fill, C = min(chunk, B), for equal-rate channels
//   (times in integer picosecond ticks; see each variant for the exact form under contention).
// - Zero-byte transfers are delivered after the path latency alone.
// - Stats per channel: bytes carried, busy ticks (time the channel was moving data), and (chunked only)
//   queueing ticks summed over chunks and the chunk count.
#include <cstdint>
#include <memory>
#include <vector>

#include "../ticks.h"
#include "tpusim/core/scenario.h"

namespace tpusim::models::net {

struct Channel {
  double bytes_per_tick = 0;  // > 0
  Tick latency = 0;           // added after the channel has carried a byte (propagation + switching)
};

struct ChannelStats {
  std::uint64_t bytes = 0;
  Tick busy = 0;
  Tick queueing = 0;         // chunked: sum over chunks of (service start - arrival at the channel)
  std::uint64_t chunks = 0;  // chunked: chunks served
};

using TransferId = std::uint32_t;

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  [[nodiscard]] virtual const char* name() const = 0;

  // Starts `transfer` of `bytes` at `now` along `path` (`hops` >= 1 channel indices). The path must stay valid
  // until the transfer is delivered; `transfer` must not be in flight already.
  virtual void start(Tick now, TransferId transfer, const std::uint32_t* path, std::uint32_t hops,
                     std::uint64_t bytes) = 0;

  // Starts aggregate `transfer` (fidelity.collectives = aggregate: a run of a ring collective's steps for one
  // group as one flow). Hop h of `path` carries hop_bytes[h] (<= bytes, > 0) while the transfer progresses
  // through `bytes`: it counts with weight hop_bytes[h] / bytes in its channel's max-min fair share (weighted
  // progressive filling; a channel may be listed several times), so alone it drains in
  // max over channels of (its hop_bytes summed) / rate. It is delivered `latency` after it has drained (not
  // the path's latency: the owner states the fixed costs). Only the flow model runs aggregates; the default
  // throws std::logic_error.
  virtual void start_aggregate(Tick now, TransferId transfer, const std::uint32_t* path,
                               const std::uint64_t* hop_bytes, std::uint32_t hops, std::uint64_t bytes, Tick latency);

  // Processes every event up to and including `now`; appends the transfers delivered by then to `delivered`
  // in delivery order (ties: each variant orders them deterministically, as its file says).
  virtual void advance(Tick now, std::vector<TransferId>& delivered) = 0;

  // Cuts channels `dead` at `now` (a link_down landing inside the step): every transfer still moving bytes over
  // one of them is removed from the model (its pending events dropped, its other channels freed) and
  // returned with the bytes delivered to its destination so far (flow: drained; chunked: chunks delivered).
  // Transfers that have put all their bytes through and only wait for their tail's latency are left to
  // deliver. The ids returned are free in the model: the owner may start() them again. An aggregate is cut
  // like any transfer, in its progress through `bytes`: each hop h is left with the same share of its
  // hop_bytes[h] (rounded down) counted as carried; the owner starts the rest again (start_aggregate).
  struct Cut {
    TransferId transfer = 0;
    std::uint64_t bytes = 0;      // the transfer's size (an aggregate's: the `bytes` it progresses through)
    std::uint64_t delivered = 0;  // of which had reached the destination at `now`
  };
  virtual std::vector<Cut> cut(Tick now, const std::vector<std::uint32_t>& dead) = 0;

  // The tick of the next internal event; kNever when nothing is in flight. Not const: a model may settle
  // changes batched at the current tick first (the flow model recomputes rates here).
  [[nodiscard]] virtual Tick next_event() = 0;

  // Statistics up to `now` (the end of the run); closes open busy intervals.
  [[nodiscard]] virtual std::vector<ChannelStats> stats(Tick now) const = 0;
};

// Chunked: transfers are cut into chunks of `chunk_bytes`; each channel serves chunks one at a time, FIFO.
[[nodiscard]] std::unique_ptr<LinkModel> make_chunked_link_model(std::vector<Channel> channels,
                                                                 std::uint64_t chunk_bytes);
// Flow: every transfer is one flow; rates are max-min fair over the channels, recomputed on each start/end.
[[nodiscard]] std::unique_ptr<LinkModel> make_flow_link_model(std::vector<Channel> channels);

// The composition root for link models (explicit, no static registration).
[[nodiscard]] std::unique_ptr<LinkModel> make_link_model(const FidelitySpec& fidelity, std::vector<Channel> channels);

}  // namespace tpusim::models::net
