// The chunked link model's trains (link_chunked.cpp, link_chunk_train.h)
// against the same model run chunk by chunk: seeded random workloads over a
// small graph of channels with different rates and latencies (random paths,
// start times on a coarse grid so that ticks tie, sizes from 0 to many chunks,
// overlapping transfers, transfers started at a delivery's tick, cuts),
// compared on every delivery's tick and order, every cut()'s result and the
// per-channel statistics sampled along the way. No SystemC.
//
// The model before trains ordered events of one tick by scheduling order alone;
// it is kept here (SchedulingOrderModel, verbatim but for its name) to measure
// how often the tie rule the trains need (link_chunked.cpp, "Ties") gives other
// results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iostream>
#include <queue>
#include <random>
#include <sstream>
#include <string>

#include "net/link_chunked.h"

namespace tpusim::models::net {
namespace {

constexpr std::uint32_t kNone = 0xffffffffU;

class SchedulingOrderModel final : public LinkModel {
 public:
  SchedulingOrderModel(std::vector<Channel> channels, std::uint64_t chunk_bytes)
      : channels_(std::move(channels)), chunk_(chunk_bytes), ports_(channels_.size()), stats_(channels_.size()) {
    if (chunk_ == 0) throw std::invalid_argument("chunked link model: fidelity.link_chunk must be positive");
  }

  const char *name() const override { return "chunked, scheduling order"; }

  void start(Tick now, TransferId id, const std::uint32_t *path, std::uint32_t hops, std::uint64_t bytes) override {
    if (id >= transfers_.size()) transfers_.resize(static_cast<std::size_t>(id) + 1);
    Transfer &t = transfers_[id];
    t.path = path;
    t.hops = hops;
    t.bytes = bytes;
    t.delivered = 0;
    t.remaining = bytes;
    t.chunks_left = bytes == 0 ? 1 : (bytes + chunk_ - 1) / chunk_;
    inject(now, id);
  }

  void advance(Tick now, std::vector<TransferId> &delivered) override {
    while (!events_.empty() && events_.top().time <= now) {
      const Event e = events_.top();
      events_.pop();
      switch (e.kind) {
        case Kind::served: on_served(e.time, e.index); break;
        case Kind::arrive:
          if (dead(e.index)) {
            free_node(e.index);
          } else {
            arrive(e.time, e.index);
          }
          break;
        case Kind::deliver: {
          const TransferId id = nodes_[e.index].transfer;
          const bool gone = dead(e.index);
          const std::uint32_t bytes = nodes_[e.index].bytes;
          free_node(e.index);
          if (gone) break;
          transfers_[id].delivered += bytes;
          if (--transfers_[id].chunks_left == 0) delivered.push_back(id);
          break;
        }
      }
    }
  }

  // A cut transfer's chunks still queued are dropped now; those in service or
  // between channels when their event comes (their generation is older than the
  // transfer's).
  std::vector<Cut> cut(Tick /*now*/, const std::vector<std::uint32_t> &dead_channels) override {
    std::vector<Cut> out;
    for (TransferId id = 0; id < transfers_.size(); ++id) {
      Transfer &t = transfers_[id];
      if (t.chunks_left == 0) continue;
      bool crosses = false;
      for (std::uint32_t h = 0; h < t.hops && !crosses; ++h) {
        crosses = std::find(dead_channels.begin(), dead_channels.end(), t.path[h]) != dead_channels.end();
      }
      if (!crosses) continue;
      out.push_back(Cut{id, t.bytes, t.delivered});
      t.chunks_left = 0;
      t.remaining = 0;
      ++t.generation;
    }
    if (out.empty()) return out;
    for (std::uint32_t c = 0; c < ports_.size(); ++c) {  // unlink the dropped chunks from every FIFO
      Port &p = ports_[c];
      std::uint32_t head = kNone, tail = kNone;
      for (std::uint32_t n = p.head; n != kNone;) {
        const std::uint32_t next = nodes_[n].next;
        if (dead(n)) {
          free_node(n);
        } else {
          nodes_[n].next = kNone;
          if (tail == kNone) {
            head = n;
          } else {
            nodes_[tail].next = n;
          }
          tail = n;
        }
        n = next;
      }
      p.head = head;
      p.tail = tail;
    }
    return out;
  }

  Tick next_event() override { return events_.empty() ? kNever : events_.top().time; }

  std::vector<ChannelStats> stats(Tick /*now*/) const override { return stats_; }

 private:
  enum class Kind : std::uint8_t { served, arrive, deliver };
  struct Event {
    Tick time;
    std::uint64_t seq;  // ties in scheduling order: deterministic
    Kind kind;
    std::uint32_t index;  // channel (served) or chunk node (arrive, deliver)
    bool operator>(const Event &o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Transfer {
    const std::uint32_t *path = nullptr;
    std::uint32_t hops = 0;
    std::uint64_t remaining = 0;    // bytes not yet injected
    std::uint64_t chunks_left = 0;  // chunks not yet delivered
    std::uint64_t bytes = 0;        // the transfer's size
    std::uint64_t delivered = 0;    // bytes of its chunks delivered
    std::uint32_t generation = 0;   // bumped when it is cut: its chunks of older generations are dropped
  };
  struct Node {  // one chunk in flight
    TransferId transfer = 0;
    std::uint32_t hop = 0;
    std::uint32_t bytes = 0;
    std::uint32_t next = kNone;  // next in the channel's FIFO, or in the free list
    Tick arrival = 0;
    std::uint32_t generation = 0;  // its transfer's when it was injected
  };
  struct Port {  // a channel's FIFO; `serving` is the chunk in service
    std::uint32_t head = kNone, tail = kNone, serving = kNone;
  };

  [[nodiscard]] bool dead(std::uint32_t n) const {
    return nodes_[n].generation != transfers_[nodes_[n].transfer].generation;
  }

  void schedule(Tick time, Kind kind, std::uint32_t index) { events_.push(Event{time, seq_++, kind, index}); }

  std::uint32_t new_node() {
    if (free_ != kNone) {
      const std::uint32_t n = free_;
      free_ = nodes_[n].next;
      return n;
    }
    nodes_.emplace_back();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  void free_node(std::uint32_t n) {
    nodes_[n].next = free_;
    free_ = n;
  }

  // Puts the transfer's next chunk into its first channel's queue.
  void inject(Tick now, TransferId id) {
    Transfer &t = transfers_[id];
    const std::uint64_t bytes = std::min(t.remaining, chunk_);
    t.remaining -= bytes;
    const std::uint32_t n = new_node();
    nodes_[n] = Node{id, 0, static_cast<std::uint32_t>(bytes), kNone, now, t.generation};
    arrive(now, n);
  }

  void arrive(Tick now, std::uint32_t n) {
    Node &node = nodes_[n];
    node.arrival = now;
    node.next = kNone;
    const std::uint32_t c = transfers_[node.transfer].path[node.hop];
    Port &p = ports_[c];
    if (p.tail == kNone) {
      p.head = n;
    } else {
      nodes_[p.tail].next = n;
    }
    p.tail = n;
    if (p.serving == kNone) serve_next(now, c);
  }

  void serve_next(Tick now, std::uint32_t c) {
    Port &p = ports_[c];
    const std::uint32_t n = p.head;
    if (n == kNone) return;
    p.head = nodes_[n].next;
    if (p.head == kNone) p.tail = kNone;
    p.serving = n;
    const Node &node = nodes_[n];
    const Tick service = ceil_ticks(static_cast<double>(node.bytes) / channels_[c].bytes_per_tick);
    ChannelStats &s = stats_[c];
    s.bytes += node.bytes;
    s.busy += service;
    s.queueing += now - node.arrival;
    ++s.chunks;
    schedule(now + service, Kind::served, c);
  }

  void on_served(Tick now, std::uint32_t c) {
    Port &p = ports_[c];
    const std::uint32_t n = p.serving;
    p.serving = kNone;
    if (dead(n)) {  // a cut transfer's chunk: the channel served it for nothing
      free_node(n);
      serve_next(now, c);
      return;
    }
    Node &node = nodes_[n];
    const TransferId id = node.transfer;
    const bool first_hop = node.hop == 0;
    const Tick next_at = now + channels_[c].latency;
    if (node.hop + 1 < transfers_[id].hops) {
      ++node.hop;
      schedule(next_at, Kind::arrive, n);
    } else {
      schedule(next_at, Kind::deliver, n);
    }
    // After `node` is last used: inject() may grow nodes_. It also restarts the
    // channel when idle.
    if (first_hop && transfers_[id].remaining > 0) inject(now, id);
    if (ports_[c].serving == kNone) serve_next(now, c);
  }

  std::vector<Channel> channels_;
  std::uint64_t chunk_;
  std::vector<Port> ports_;
  std::vector<ChannelStats> stats_;
  std::vector<Transfer> transfers_;
  std::vector<Node> nodes_;
  std::uint32_t free_ = kNone;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
};

// One random workload: channels, the transfers started at given ticks, the
// cuts.
struct Workload {
  struct Start {
    Tick at = 0;
    std::vector<std::uint32_t> path;
    std::uint64_t bytes = 0;
  };
  struct CutAt {
    Tick at = 0;
    std::vector<std::uint32_t> dead;
  };
  std::vector<Channel> channels;
  std::uint64_t chunk = 1000;
  std::vector<Start> starts;  // by tick
  std::vector<CutAt> cuts;    // by tick
  std::vector<Tick> probes;   // ticks at which to read the statistics, by tick
  std::uint32_t seed = 0;     // for the transfers started at a delivery's tick
  bool reactions = true;      // whether a delivery may start transfers at its tick
};

// Rates and latencies that make service times of whole ticks and of fractions,
// so that events tie often.
std::vector<std::uint32_t> random_path(std::mt19937 &rng, std::uint32_t channels) {
  std::vector<std::uint32_t> all(channels);
  for (std::uint32_t c = 0; c < channels; ++c) all[c] = c;
  std::shuffle(all.begin(), all.end(), rng);
  const std::uint32_t hops = 1 + rng() % std::min<std::uint32_t>(4, channels);
  std::vector<std::uint32_t> path(all.begin(), all.begin() + hops);
  if (rng() % 20 == 0) path.push_back(path.front());  // a channel listed twice
  return path;
}

std::uint64_t random_bytes(std::mt19937 &rng, std::uint64_t chunk) {
  switch (rng() % 6) {
    case 0: return rng() % 8 == 0 ? 0 : 1 + rng() % chunk;           // at most one chunk
    case 1: return chunk * (1 + rng() % 40);                         // whole chunks
    case 2: return chunk * (rng() % 200) + 1 + rng() % (chunk - 1);  // a shorter last chunk
    default: return 1 + rng() % (chunk * 30);
  }
}

Workload random_workload(std::uint32_t seed) {
  std::mt19937 rng(seed);
  Workload w;
  w.seed = seed;
  w.chunk = rng() % 4 == 0 ? 64 : 1000;
  const double rates[] = {10, 20, 25, 40, 50, 8, 12.5, 7, 3};
  const Tick latencies[] = {0, 1, 10, 20, 50, 100, 300, 1000};
  const std::uint32_t channels = 2 + rng() % 7;
  for (std::uint32_t c = 0; c < channels; ++c) {
    w.channels.push_back(Channel{rates[rng() % 9] * (w.chunk == 64 ? 0.064 : 1.0), latencies[rng() % 8]});
  }
  const std::uint32_t transfers = 1 + rng() % 24;
  const Tick grid = rng() % 2 == 0 ? 10 : 1;
  for (std::uint32_t i = 0; i < transfers; ++i) {
    w.starts.push_back(Workload::Start{grid * (rng() % (rng() % 2 == 0 ? 50 : 2000)), random_path(rng, channels),
                                       random_bytes(rng, w.chunk)});
  }
  std::stable_sort(w.starts.begin(), w.starts.end(), [](const auto &a, const auto &b) { return a.at < b.at; });
  const std::uint32_t cuts = rng() % 3 == 0 ? 1 + rng() % 3 : 0;
  for (std::uint32_t i = 0; i < cuts; ++i) {
    Workload::CutAt c{grid * (rng() % 4000), {static_cast<std::uint32_t>(rng() % channels)}};
    if (rng() % 2 == 0) c.dead.push_back(static_cast<std::uint32_t>(rng() % channels));
    w.cuts.push_back(c);
  }
  std::stable_sort(w.cuts.begin(), w.cuts.end(), [](const auto &a, const auto &b) { return a.at < b.at; });
  for (std::uint32_t i = rng() % 6; i > 0; --i)
    w.probes.push_back(rng() % 2 == 0 ? grid * (rng() % 4000) : rng() % 400000);
  std::sort(w.probes.begin(), w.probes.end());
  return w;
}

void log_stats(std::ostringstream &log, const std::vector<ChannelStats> &stats) {
  for (const ChannelStats &s : stats)
    log << " [" << s.bytes << ' ' << s.busy << ' ' << s.queueing << ' ' << s.chunks << ']';
  log << '\n';
}

// Drives `m` as the transport does (advance to the next tick of anything, then
// start and cut at it) and returns a log of everything it answered. `advances`
// counts the ticks it was brought to.
std::string drive(LinkModel &m, const Workload &w, std::size_t *advances = nullptr) {
  std::ostringstream log;
  std::mt19937 react(w.seed ^ 0x9e3779b9U);
  std::deque<std::vector<std::uint32_t>> paths;  // every path stays valid to the end
  std::vector<TransferId> free_ids;
  TransferId next_id = 0;
  const auto launch = [&](Tick at, const std::vector<std::uint32_t> &path, std::uint64_t bytes) {
    TransferId id = next_id;
    if (!free_ids.empty() && react() % 2 == 0) {  // ids are reused, as the transport does
      id = free_ids.back();
      free_ids.pop_back();
    } else {
      ++next_id;
    }
    paths.push_back(path);
    m.start(at, id, paths.back().data(), static_cast<std::uint32_t>(path.size()), bytes);
    log << "s " << at << ' ' << id << '\n';
  };
  std::size_t si = 0, ci = 0, pi = 0, steps = 0;
  std::vector<TransferId> done;
  Tick last = 0;
  for (;;) {
    Tick t = m.next_event();
    if (si < w.starts.size()) t = std::min(t, w.starts[si].at);
    if (ci < w.cuts.size()) t = std::min(t, w.cuts[ci].at);
    if (pi < w.probes.size()) t = std::min(t, w.probes[pi]);
    if (t == kNever) break;
    m.advance(t, done);
    ++steps;
    last = t;
    const bool acted = !done.empty();
    std::uint32_t reactions = 0;
    for (const TransferId id : done) {
      log << "d " << t << ' ' << id << '\n';
      free_ids.push_back(id);
      if (w.reactions && react() % 4 == 0) ++reactions;
    }
    done.clear();
    for (; reactions > 0; --reactions) {
      launch(t, random_path(react, static_cast<std::uint32_t>(w.channels.size())), random_bytes(react, w.chunk));
    }
    for (; si < w.starts.size() && w.starts[si].at == t; ++si) launch(t, w.starts[si].path, w.starts[si].bytes);
    for (; ci < w.cuts.size() && w.cuts[ci].at == t; ++ci) {
      for (const LinkModel::Cut &c : m.cut(t, w.cuts[ci].dead)) {
        log << "c " << t << ' ' << c.transfer << ' ' << c.bytes << ' ' << c.delivered << '\n';
        free_ids.push_back(c.transfer);
      }
    }
    bool probe = false;
    for (; pi < w.probes.size() && w.probes[pi] == t; ++pi) probe = true;
    if (probe || (acted && react() % 3 == 0)) {  // the ticks read are the same for every model that agrees
      log << "stats " << t;
      log_stats(log, m.stats(t));
    }
  }
  log << "end " << last;
  log_stats(log, m.stats(last));
  if (advances != nullptr) *advances = steps;
  return log.str();
}

std::string run(const Workload &w, bool trains) {
  auto m = make_chunked_link_model(w.channels, w.chunk, ChunkedOptions{trains});
  return drive(*m, w);
}

TEST(ChunkTrains, EqualTheModelRunChunkByChunkOnRandomWorkloads) {
  for (std::uint32_t seed = 1; seed <= 4000; ++seed) {
    const Workload w = random_workload(seed);
    const std::string reference = run(w, false);
    ASSERT_EQ(run(w, true), reference) << "seed " << seed;
  }
}

// The case trains are for: a transfer alone on its path costs one event
// whatever its size.
TEST(ChunkTrains, ATransferAloneOnItsPathIsOneEventWhateverItsSize) {
  Workload w;
  w.chunk = 1 << 20;
  w.channels = {Channel{0.05, 1'000'000}, Channel{0.025, 500'000}, Channel{0.05, 1'000'000}};
  w.starts.push_back(Workload::Start{0, {0, 1, 2}, std::uint64_t{1} << 30});
  w.reactions = false;
  std::size_t advances = 0;
  auto m = make_chunked_link_model(w.channels, w.chunk, ChunkedOptions{});
  const std::string log = drive(*m, w, &advances);
  EXPECT_EQ(advances, 2U);  // the start and the delivery
  EXPECT_EQ(log, run(w, false));
}

// Where the tie rule the trains need gives other results than scheduling order alone (link_chunked.cpp, "Ties"):
// counted, not asserted equal. 10 of these 2,000 differ with libstdc++'s shuffle; the bound leaves room for
// another standard library's.
TEST(ChunkTrains, TheTieRuleRarelyDiffersFromSchedulingOrderOnRandomWorkloads) {
  int differ = 0;
  const int workloads = 2000;
  for (std::uint32_t seed = 1; seed <= static_cast<std::uint32_t>(workloads); ++seed) {
    const Workload w = random_workload(seed);
    SchedulingOrderModel old(w.channels, w.chunk);
    if (drive(old, w) != run(w, false)) ++differ;
  }
  std::cout << differ << " of " << workloads << " random workloads differ from scheduling order\n";
  EXPECT_LE(differ, 30);
}

}  // namespace
}  // namespace tpusim::models::net
