#pragma once
// The chunked link model's closed forms for a train: a transfer whose channels
// carry nothing else, so that its chunks follow the max-plus recursion of a
// tandem of FIFO servers with a source window of one chunk:
//   d[k][h] = max(d[k][h-1] + L[h-1], d[k-1][h]) + s[h]     (d[k][-1] + L[-1]
//   read as d[k-1][0], d[-1][h] = t0)
// where d[k][h] is when chunk k leaves hop h, s[h] = ceil(chunk / rate[h]) and
// L[h] the hop's latency. For the full chunks the recursion has the closed form
//   d[k][h] = t0 + P[h] + k x M[h],   P[h] = sum(L[i], i < h) + sum(s[i], i <=
//   h),   M[h] = max(s[i], i <= h)
// (chunk k waits at hop h for k x (M[h] - M[h-1]) ticks: the queue grows only
// behind a hop slower than all before it); the last chunk, which may be
// shorter, is stepped through the recursion hop by hop. So a train costs
// O(hops) to time and to count its statistics, whatever its number of chunks.
#include <cstdint>
#include <optional>
#include <vector>

#include "link_model.h"

namespace tpusim::models::net::chunk_train {

struct Shape {
  const std::uint32_t *path = nullptr;
  std::uint32_t hops = 0;
  std::uint64_t bytes = 0;  // > 0
  std::uint64_t chunk = 0;  // > 0
  Tick t0 = 0;              // when the transfer started
};

// The last chunk's leaving its last channel: when it is delivered (served + the
// channel's latency), when it was served and when its service began.
struct End {
  Tick delivered = 0;
  Tick served = 0;
  Tick service_start = 0;
};

// The train's end, or nothing when a chunk takes no tick on some channel of the path: zero-tick services make events
// of one tick whose order the closed forms do not follow, so such transfers run chunk by chunk.
[[nodiscard]] std::optional<End> end_of(const std::vector<Channel>& channels, const Shape& shape);

// Adds to `stats` what the chunk-by-chunk model has counted once every service
// starting at or before `upto` has started: bytes, busy and chunks of those
// services, and their queueing.
void add_stats(const std::vector<Channel> &channels, const Shape &shape, Tick upto, std::vector<ChannelStats> &stats);

}  // namespace tpusim::models::net::chunk_train
