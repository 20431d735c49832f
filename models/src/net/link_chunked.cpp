// The chunked link model (fidelity.links = chunked).
//
// A transfer is cut into chunks of `chunk_bytes` (the last one may be shorter). Each channel serves one
// chunk at a time, first come first served, taking ceil(chunk / rate) ticks; a served chunk reaches the next
// channel of its path `latency` ticks later (store-and-forward per chunk, so a transfer is pipelined across
// hops: chunk i can be on hop 2 while chunk i+1 is on hop 1). After its last channel, a chunk is delivered
// `latency` ticks later, and the transfer is delivered with its last chunk.
//
// Back-pressure is modelled at injection only: a transfer puts its next chunk into its first channel's queue
// when the previous one has finished service there (a source window of one chunk), so transfers entering
// through the same channel interleave chunk by chunk and share it equally. Queues at later hops are
// unbounded (assumption: ICI router buffers are not published; credit stalls between hops are ignored).
//
// Exact time of a transfer alone, bytes = n x C, H hops of equal rate R and latency L:
//   T = H x L + (n + H - 1) x ceil(C / R)
// (chunk k leaves hop h at (k + h) x ceil(C/R) + (h - 1) x L, counting from 1).
//
// All per-chunk activity lives in a local time-ordered queue; the owner exposes one kernel event for it.
#include <algorithm>
#include <queue>
#include <stdexcept>

#include "link_model.h"

namespace tpusim::models::net {
namespace {

constexpr std::uint32_t kNone = 0xffffffffU;

class ChunkedLinkModel final : public LinkModel {
 public:
  ChunkedLinkModel(std::vector<Channel> channels, std::uint64_t chunk_bytes)
      : channels_(std::move(channels)), chunk_(chunk_bytes), ports_(channels_.size()), stats_(channels_.size()) {
    if (chunk_ == 0) throw std::invalid_argument("chunked link model: fidelity.link_chunk must be positive");
  }

  const char* name() const override { return "chunked"; }

  void start(Tick now, TransferId id, const std::uint32_t* path, std::uint32_t hops, std::uint64_t bytes) override {
    if (id >= transfers_.size()) transfers_.resize(static_cast<std::size_t>(id) + 1);
    Transfer& t = transfers_[id];
    t.path = path;
    t.hops = hops;
    t.bytes = bytes;
    t.delivered = 0;
    t.remaining = bytes;
    t.chunks_left = bytes == 0 ? 1 : (bytes + chunk_ - 1) / chunk_;
    inject(now, id);
  }

  void advance(Tick now, std::vector<TransferId>& delivered) override {
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

  // A cut transfer's chunks still queued are dropped now; those in service or between channels when their
  // event comes (their generation is older than the transfer's).
  std::vector<Cut> cut(Tick /*now*/, const std::vector<std::uint32_t>& dead_channels) override {
    std::vector<Cut> out;
    for (TransferId id = 0; id < transfers_.size(); ++id) {
      Transfer& t = transfers_[id];
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
      Port& p = ports_[c];
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
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Transfer {
    const std::uint32_t* path = nullptr;
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
    Transfer& t = transfers_[id];
    const std::uint64_t bytes = std::min(t.remaining, chunk_);
    t.remaining -= bytes;
    const std::uint32_t n = new_node();
    nodes_[n] = Node{id, 0, static_cast<std::uint32_t>(bytes), kNone, now, t.generation};
    arrive(now, n);
  }

  void arrive(Tick now, std::uint32_t n) {
    Node& node = nodes_[n];
    node.arrival = now;
    node.next = kNone;
    const std::uint32_t c = transfers_[node.transfer].path[node.hop];
    Port& p = ports_[c];
    if (p.tail == kNone) {
      p.head = n;
    } else {
      nodes_[p.tail].next = n;
    }
    p.tail = n;
    if (p.serving == kNone) serve_next(now, c);
  }

  void serve_next(Tick now, std::uint32_t c) {
    Port& p = ports_[c];
    const std::uint32_t n = p.head;
    if (n == kNone) return;
    p.head = nodes_[n].next;
    if (p.head == kNone) p.tail = kNone;
    p.serving = n;
    const Node& node = nodes_[n];
    const Tick service = ceil_ticks(static_cast<double>(node.bytes) / channels_[c].bytes_per_tick);
    ChannelStats& s = stats_[c];
    s.bytes += node.bytes;
    s.busy += service;
    s.queueing += now - node.arrival;
    ++s.chunks;
    schedule(now + service, Kind::served, c);
  }

  void on_served(Tick now, std::uint32_t c) {
    Port& p = ports_[c];
    const std::uint32_t n = p.serving;
    p.serving = kNone;
    if (dead(n)) {  // a cut transfer's chunk: the channel served it for nothing
      free_node(n);
      serve_next(now, c);
      return;
    }
    Node& node = nodes_[n];
    const TransferId id = node.transfer;
    const bool first_hop = node.hop == 0;
    const Tick next_at = now + channels_[c].latency;
    if (node.hop + 1 < transfers_[id].hops) {
      ++node.hop;
      schedule(next_at, Kind::arrive, n);
    } else {
      schedule(next_at, Kind::deliver, n);
    }
    // After `node` is last used: inject() may grow nodes_. It also restarts the channel when idle.
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

}  // namespace

std::unique_ptr<LinkModel> make_chunked_link_model(std::vector<Channel> channels, std::uint64_t chunk_bytes) {
  return std::make_unique<ChunkedLinkModel>(std::move(channels), chunk_bytes);
}

}  // namespace tpusim::models::net
