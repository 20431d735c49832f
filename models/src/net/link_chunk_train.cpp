#include "link_chunk_train.h"

#include <algorithm>

namespace tpusim::models::net::chunk_train {
namespace {

// The same expression as the chunk-by-chunk model's service time, so both round alike.
Tick service_of(const Channel& c, std::uint64_t bytes) {
  return ceil_ticks(static_cast<double>(static_cast<std::uint32_t>(bytes)) / c.bytes_per_tick);
}

struct Hop {
  Tick service = 0;       // s[h], a full chunk's
  Tick last_service = 0;  // the last chunk's
  Tick first_start = 0;   // when chunk 0 begins service here: t0 + P[h] - s[h]
  Tick max_service = 0;   // M[h]
  Tick growth = 0;        // M[h] - M[h-1] (0 at hop 0): how much longer each full chunk waits than the one before
  Tick last_arrival = 0;  // when the last chunk reaches the channel
  Tick last_start = 0;    // and begins its service
};

// Steps the last chunk through the recursion, with the full chunks in closed form; visit(h, hop) for each hop.
template <class Visit>
void walk(const std::vector<Channel>& channels, const Shape& shape, Visit visit) {
  const std::uint64_t n = (shape.bytes + shape.chunk - 1) / shape.chunk;
  const std::uint64_t last = shape.bytes - (n - 1) * shape.chunk;
  Tick p = 0, m = 0, last_left = 0, latency_before = 0;
  for (std::uint32_t h = 0; h < shape.hops; ++h) {
    const Channel& c = channels[shape.path[h]];
    Hop hop;
    hop.service = service_of(c, shape.chunk);
    hop.last_service = service_of(c, last);
    const Tick m_before = m;
    m = std::max(m, hop.service);
    p += (h == 0 ? 0 : latency_before) + hop.service;
    hop.first_start = shape.t0 + p - hop.service;
    hop.max_service = m;
    hop.growth = h == 0 ? 0 : m - m_before;
    // Chunk n-2 leaves this hop at t0 + P + (n - 2) M; the last chunk follows it (at hop 0 it is injected then).
    const Tick before_left = n >= 2 ? shape.t0 + p + (n - 2) * m : 0;
    if (h == 0) {
      hop.last_arrival = n >= 2 ? before_left : shape.t0;
    } else {
      hop.last_arrival = last_left + latency_before;
    }
    hop.last_start = std::max(hop.last_arrival, before_left);
    last_left = hop.last_start + hop.last_service;
    latency_before = c.latency;
    visit(h, hop);
  }
}

}  // namespace

std::optional<End> end_of(const std::vector<Channel>& channels, const Shape& shape) {
  End end;
  bool takes_time = true;
  walk(channels, shape, [&](std::uint32_t h, const Hop& hop) {
    takes_time = takes_time && hop.service > 0 && hop.last_service > 0;
    if (h + 1 != shape.hops) return;
    end.service_start = hop.last_start;
    end.served = hop.last_start + hop.last_service;
    end.delivered = end.served + channels[shape.path[h]].latency;
  });
  if (!takes_time) return std::nullopt;
  return end;
}

void add_stats(const std::vector<Channel>& channels, const Shape& shape, Tick upto, std::vector<ChannelStats>& stats) {
  const std::uint64_t n = (shape.bytes + shape.chunk - 1) / shape.chunk;
  const std::uint64_t last = shape.bytes - (n - 1) * shape.chunk;
  walk(channels, shape, [&](std::uint32_t h, const Hop& hop) {
    ChannelStats& s = stats[shape.path[h]];
    std::uint64_t full = 0;  // of the n - 1 full chunks, those begun by `upto`
    if (n >= 2 && upto >= hop.first_start) {
      full = std::min<std::uint64_t>(n - 1, (upto - hop.first_start) / hop.max_service + 1);
    }
    s.bytes += full * shape.chunk;
    s.busy += full * hop.service;
    s.chunks += full;
    s.queueing += hop.growth * (full * (full - 1) / 2);  // sum of k x growth over k < full (0 when full = 0)
    if (hop.last_start <= upto) {
      s.bytes += last;
      s.busy += hop.last_service;
      ++s.chunks;
      s.queueing += hop.last_start - hop.last_arrival;
    }
  });
}

}  // namespace tpusim::models::net::chunk_train
