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
// (chunk k leaves hop h at (k + h - 1) x ceil(C/R) + (h - 1) x L, counting from 1).
//
// All per-chunk activity lives in a local time-ordered queue; the owner exposes one kernel event for it.
//
// Trains: a transfer started on channels that carry nothing else (no other transfer on them, none in service)
// is not cut into events at all: its delivery and statistics have closed forms (link_chunk_train.h), and it holds
// one event, its delivery. When another transfer enters one of its channels, or a cut() crosses it, it is
// expanded: its chunks are run alone from its start up to now with the very handlers below (alone, they touch
// only its own channels), which leaves exactly the chunks delivered, in service, queued and between channels,
// and their pending events, that running it chunk by chunk from the start would have left.
//
// Ties: events at one tick run in the order (tick, the tick of the action that scheduled the event, the tick of
// the action that scheduled that one, the start order of the transfer whose action it was, scheduling order).
// The key depends only on the chain of actions behind an event, which for a train is its own, so its events
// expand with the keys they would have had chunk by chunk. Plain scheduling order (the rule before trains)
// compares the whole chain back to where it parts; the two differ only where two transfers' chains tie on
// both ticks and part further back (10 of 2,000 random workloads of net_link_chunk_train_test.cpp; none of the
// 34 bundled scenarios run with chunked links, all but the three 175B pod steps: bench/README.md).
#include "link_chunked.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "link_chunk_train.h"

namespace tpusim::models::net {
namespace {

constexpr std::uint32_t kNoNode = 0xffffffffU;
constexpr std::uint64_t kCutStart = 0;  // a cut transfer's start order: its chunks' (from 1) are all older

class ChunkedLinkModel final : public LinkModel {
 public:
  ChunkedLinkModel(std::vector<Channel> channels, std::uint64_t chunk_bytes, ChunkedOptions options)
      : channels_(std::move(channels)),
        chunk_(chunk_bytes),
        trains_(options.trains),
        ports_(channels_.size()),
        stats_(channels_.size()) {
    if (chunk_ == 0) throw std::invalid_argument("chunked link model: fidelity.link_chunk must be positive");
  }

  const char* name() const override { return "chunked"; }

  void start(Tick now, TransferId id, const std::uint32_t* path, std::uint32_t hops, std::uint64_t bytes) override {
    now_ = std::max(now_, now);
    for (std::uint32_t h = 0; h < hops; ++h) {  // a train on one of its channels runs chunk by chunk from now
      if (ports_[path[h]].train != kNoNode) expand(ports_[path[h]].train);
    }
    if (id >= transfers_.size()) transfers_.resize(static_cast<std::size_t>(id) + 1);
    Transfer& t = transfers_[id];
    t.path = path;
    t.hops = hops;
    t.bytes = bytes;
    t.start = ++counters_.starts;
    t.t0 = now;
    bool alone = trains_ && bytes > 0;
    for (std::uint32_t h = 0; h < hops; ++h) {  // a channel listed twice is not alone either
      Port& p = ports_[path[h]];
      alone = alone && p.users == 0 && p.serving == kNoNode;
      ++p.users;
    }
    std::optional<chunk_train::End> end;
    if (alone) end = chunk_train::end_of(channels_, shape(t));
    restart(id);
    if (!end) {
      cur_ = Cause{now, now, t.start};
      inject(now, id);
      return;
    }
    t.train = true;
    for (std::uint32_t h = 0; h < hops; ++h) ports_[path[h]].train = id;
    // The key its last chunk's delivery would have: scheduled by its service's end, which its start scheduled.
    events_.push(Event{end->delivered, Cause{end->served, end->service_start, t.start}, t.start, counters_.seq++,
                       Kind::train, id});
  }

  void advance(Tick now, std::vector<TransferId>& delivered) override {
    now_ = std::max(now_, now);
    while (!events_.empty() && events_.top().time <= now) {
      const Event e = events_.top();
      events_.pop();
      dispatch(e, &delivered);
    }
  }

  // A cut transfer's chunks still queued are dropped now; those in service or between channels when their
  // event comes (their start order is older than the transfer's).
  std::vector<Cut> cut(Tick now, const std::vector<std::uint32_t>& dead_channels) override {
    now_ = std::max(now_, now);
    const auto crosses = [&](const Transfer& t) {
      for (std::uint32_t h = 0; h < t.hops; ++h) {
        if (std::find(dead_channels.begin(), dead_channels.end(), t.path[h]) != dead_channels.end()) return true;
      }
      return false;
    };
    for (TransferId id = 0; id < transfers_.size(); ++id) {
      if (transfers_[id].train && crosses(transfers_[id])) expand(id);
    }
    std::vector<Cut> out;
    for (TransferId id = 0; id < transfers_.size(); ++id) {
      Transfer& t = transfers_[id];
      if (t.chunks_left == 0 || !crosses(t)) continue;
      out.push_back(Cut{id, t.bytes, t.delivered});
      t.chunks_left = 0;
      t.remaining = 0;
      t.start = kCutStart;
      release(t);
    }
    if (out.empty()) return out;
    for (std::uint32_t c = 0; c < ports_.size(); ++c) {  // unlink the dropped chunks from every FIFO
      Port& p = ports_[c];
      std::uint32_t head = kNoNode, tail = kNoNode;
      for (std::uint32_t n = p.head; n != kNoNode;) {
        const std::uint32_t next = nodes_[n].next;
        if (dead(n)) {
          free_node(n);
        } else {
          nodes_[n].next = kNoNode;
          if (tail == kNoNode) {
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

  Tick next_event() override {
    while (!events_.empty() && stale(events_.top())) events_.pop();
    return events_.empty() ? kNever : events_.top().time;
  }

  // Trains add what the chunk-by-chunk model would have counted by the last tick the model was brought to.
  std::vector<ChannelStats> stats(Tick /*now*/) const override {
    std::vector<ChannelStats> out = stats_;
    for (const Transfer& t : transfers_) {
      if (t.train) chunk_train::add_stats(channels_, shape(t), now_, out);
    }
    return out;
  }

 private:
  enum class Kind : std::uint8_t { served, arrive, deliver, train };
  // What schedules events now: the tick of the action (an event, or start() for a transfer's first chunk), the
  // tick of the action that scheduled that one (start(): its own), and the start order of the action's transfer.
  struct Cause {
    Tick at = 0;
    Tick before = 0;
    std::uint64_t start = 0;
  };
  struct Event {
    Tick time;
    Cause cause;          // cur_ when it was scheduled
    std::uint64_t start;  // its chunk's transfer's start order (a train event: the train's)
    std::uint64_t seq;    // scheduling order: among events of one cause's transfer, the order they were scheduled in
    Kind kind;
    std::uint32_t index;  // channel (served), chunk node (arrive, deliver) or transfer (train)
    bool operator>(const Event& o) const {
      return std::tie(time, cause.at, cause.before, cause.start, seq) >
             std::tie(o.time, o.cause.at, o.cause.before, o.cause.start, o.seq);
    }
  };
  using Heap = std::priority_queue<Event, std::vector<Event>, std::greater<>>;
  struct Transfer {
    const std::uint32_t* path = nullptr;
    std::uint32_t hops = 0;
    std::uint64_t remaining = 0;      // bytes not yet injected
    std::uint64_t chunks_left = 0;    // chunks not yet delivered
    std::uint64_t bytes = 0;          // the transfer's size
    std::uint64_t delivered = 0;      // bytes of its chunks delivered (a train's: counted when it is expanded)
    std::uint64_t start = kCutStart;  // its start order; kCutStart once cut: its chunks of older starts are dropped
    Tick t0 = 0;                      // when it started
    bool train = false;               // timed in closed form, its chunks not yet made
  };
  struct Node {  // one chunk in flight
    TransferId transfer = 0;
    std::uint32_t hop = 0;
    std::uint32_t bytes = 0;
    std::uint32_t next = kNoNode;  // next in the channel's FIFO, or in the free list
    Tick arrival = 0;
    std::uint64_t start = 0;  // its transfer's start order when it was injected
  };
  struct Port {  // a channel's FIFO; `serving` is the chunk in service
    std::uint32_t head = kNoNode, tail = kNoNode, serving = kNoNode;
    std::uint32_t users = 0;        // transfers in flight whose path lists the channel (once per listing)
    std::uint32_t train = kNoNode;  // the train alone on it, if any
  };
  struct Counters {
    std::uint64_t seq = 0;
    std::uint64_t starts = kCutStart;
  };

  [[nodiscard]] chunk_train::Shape shape(const Transfer& t) const {
    return chunk_train::Shape{t.path, t.hops, t.bytes, chunk_, t.t0};
  }
  [[nodiscard]] std::uint64_t chunks_of(std::uint64_t bytes) const {
    return bytes == 0 ? 1 : (bytes + chunk_ - 1) / chunk_;
  }
  [[nodiscard]] bool dead(std::uint32_t n) const { return nodes_[n].start != transfers_[nodes_[n].transfer].start; }
  [[nodiscard]] bool stale(const Event& e) const {
    return e.kind == Kind::train && !(transfers_[e.index].train && transfers_[e.index].start == e.start);
  }

  void restart(TransferId id) {
    Transfer& t = transfers_[id];
    t.delivered = 0;
    t.remaining = t.bytes;
    t.chunks_left = chunks_of(t.bytes);
  }

  void release(const Transfer& t) {
    for (std::uint32_t h = 0; h < t.hops; ++h) --ports_[t.path[h]].users;
  }

  // Runs train `id` chunk by chunk from its start, alone, up to the tick the model stands at, then keeps its
  // pending events with the others.
  void expand(TransferId id) {
    Transfer& t = transfers_[id];
    t.train = false;
    for (std::uint32_t h = 0; h < t.hops; ++h) ports_[t.path[h]].train = kNoNode;
    restart(id);
    heap_ = &replay_;
    cur_ = Cause{t.t0, t.t0, t.start};
    inject(t.t0, id);
    while (!replay_.empty() && replay_.top().time <= now_) {
      const Event e = replay_.top();
      replay_.pop();
      dispatch(e, nullptr);  // its delivery is later than now_, or its train event would have run
    }
    for (; !replay_.empty(); replay_.pop()) events_.push(replay_.top());
    heap_ = &events_;
  }

  void dispatch(const Event& e, std::vector<TransferId>* delivered) {
    cur_ = Cause{e.time, e.cause.at, e.start};
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
        Transfer& t = transfers_[id];
        t.delivered += bytes;
        if (--t.chunks_left == 0) {
          release(t);
          if (delivered == nullptr) throw std::logic_error("chunked link model: a train delivered while expanded");
          delivered->push_back(id);
        }
        break;
      }
      case Kind::train: {
        if (stale(e)) break;
        Transfer& t = transfers_[e.index];
        t.train = false;
        for (std::uint32_t h = 0; h < t.hops; ++h) ports_[t.path[h]].train = kNoNode;
        chunk_train::add_stats(channels_, shape(t), kNever, stats_);
        t.delivered = t.bytes;
        t.chunks_left = 0;
        t.remaining = 0;
        release(t);
        delivered->push_back(e.index);
        break;
      }
    }
  }

  void schedule(Tick time, Kind kind, std::uint32_t index, std::uint64_t start) {
    heap_->push(Event{time, cur_, start, counters_.seq++, kind, index});
  }

  std::uint32_t new_node() {
    if (free_ != kNoNode) {
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
    nodes_[n] = Node{id, 0, static_cast<std::uint32_t>(bytes), kNoNode, now, t.start};
    arrive(now, n);
  }

  void arrive(Tick now, std::uint32_t n) {
    Node& node = nodes_[n];
    node.arrival = now;
    node.next = kNoNode;
    const std::uint32_t c = transfers_[node.transfer].path[node.hop];
    Port& p = ports_[c];
    if (p.tail == kNoNode) {
      p.head = n;
    } else {
      nodes_[p.tail].next = n;
    }
    p.tail = n;
    if (p.serving == kNoNode) serve_next(now, c);
  }

  void serve_next(Tick now, std::uint32_t c) {
    Port& p = ports_[c];
    const std::uint32_t n = p.head;
    if (n == kNoNode) return;
    p.head = nodes_[n].next;
    if (p.head == kNoNode) p.tail = kNoNode;
    p.serving = n;
    const Node& node = nodes_[n];
    const Tick service = ceil_ticks(static_cast<double>(node.bytes) / channels_[c].bytes_per_tick);
    ChannelStats& s = stats_[c];
    s.bytes += node.bytes;
    s.busy += service;
    s.queueing += now - node.arrival;
    ++s.chunks;
    schedule(now + service, Kind::served, c, node.start);
  }

  void on_served(Tick now, std::uint32_t c) {
    Port& p = ports_[c];
    const std::uint32_t n = p.serving;
    p.serving = kNoNode;
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
      schedule(next_at, Kind::arrive, n, node.start);
    } else {
      schedule(next_at, Kind::deliver, n, node.start);
    }
    // After `node` is last used: inject() may grow nodes_. It also restarts the channel when idle.
    if (first_hop && transfers_[id].remaining > 0) inject(now, id);
    if (ports_[c].serving == kNoNode) serve_next(now, c);
  }

  std::vector<Channel> channels_;
  std::uint64_t chunk_;
  bool trains_;
  std::vector<Port> ports_;
  std::vector<ChannelStats> stats_;
  std::vector<Transfer> transfers_;
  std::vector<Node> nodes_;
  std::uint32_t free_ = kNoNode;
  Heap events_;
  Heap replay_;            // a train's own events while it is expanded
  Heap* heap_ = &events_;  // where schedule() puts events
  Counters counters_;
  Tick now_ = 0;  // the latest tick the owner brought the model to (advance, start, cut)
  Cause cur_;     // what is scheduling events now
};

}  // namespace

std::unique_ptr<LinkModel> make_chunked_link_model(std::vector<Channel> channels, std::uint64_t chunk_bytes,
                                                   ChunkedOptions options) {
  return std::make_unique<ChunkedLinkModel>(std::move(channels), chunk_bytes, options);
}

std::unique_ptr<LinkModel> make_chunked_link_model(std::vector<Channel> channels, std::uint64_t chunk_bytes) {
  return make_chunked_link_model(std::move(channels), chunk_bytes, ChunkedOptions{});
}

}  // namespace tpusim::models::net
