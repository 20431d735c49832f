// The flow link model (fidelity.links = flow).
//
// Every transfer is one flow over all channels of its path at once. Flow rates are max-min fair (progressive
// filling: repeatedly find the channel with the smallest fair share capacity_left / unfrozen_flows, fix that
// share for its unfrozen flows, and subtract it along their paths; an aggregate's hop counts with its weight,
// see start_aggregate). Rates are recomputed whenever a flow starts
// or drains, but only for the flows connected to the change through shared channels (a ring collective on a
// torus is thousands of independent one-hop components, so one change costs O(component), not O(flows)).
// A flow drains its bytes at its current rate; it is delivered sum(latency over its path) after it has
// drained (the tail's propagation). Alone on idle channels: t0 + sum(latency) + ceil(bytes / min(rate)).
//
// Rate changes at one tick are batched: starts and drains only mark channels dirty; rates are settled once
// before time moves on (next_event() and advance() settle).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "link_model.h"

namespace tpusim::models::net {
namespace {

// A floor on a flow's rate (bytes per tick) against rounding leaving a bottleneck channel at zero capacity.
constexpr double kMinRate = 1e-12;

class FlowLinkModel final : public LinkModel {
 public:
  explicit FlowLinkModel(std::vector<Channel> channels)
      : channels_(std::move(channels)), ports_(channels_.size()), fill_(channels_.size()) {}

  const char* name() const override { return "flow"; }

  void start(Tick now, TransferId id, const std::uint32_t* path, std::uint32_t hops, std::uint64_t bytes) override {
    Tick latency = 0;
    for (std::uint32_t h = 0; h < hops; ++h) latency += channels_[path[h]].latency;
    begin(now, id, path, hops, bytes, latency);
  }

  // Weighted max-min: hop h takes weight hop_bytes[h] / bytes of each channel's fair share (a channel listed k
  // times holds the flow k times in its list). The unweighted flows above are the case weight 1.
  void start_aggregate(Tick now, TransferId id, const std::uint32_t* path, const std::uint64_t* hop_bytes,
                       std::uint32_t hops, std::uint64_t bytes, Tick latency) override {
    begin(now, id, path, hops, bytes, latency, hop_bytes);
  }

  void advance(Tick now, std::vector<TransferId>& delivered) override {
    settle();
    while (!events_.empty() && events_.top().time <= now) {
      const Tick t = events_.top().time;
      while (!events_.empty() && events_.top().time == t) {
        const Event e = events_.top();
        events_.pop();
        Flow& f = flows_[e.id];
        if (e.kind == Kind::drained) {
          drain(t, e.id);
          if (f.latency == 0) {
            delivered.push_back(e.id);
          } else {
            schedule(t + f.latency, Kind::deliver, e.id);
          }
        } else {
          delivered.push_back(e.id);
        }
      }
      now_ = t;
      settle();
    }
    now_ = std::max(now_, now);
  }

  std::vector<Cut> cut(Tick now, const std::vector<std::uint32_t>& dead) override {
    if (now > now_) {
      settle();
      now_ = now;
    }
    settle();  // every flow's rate is current
    std::vector<TransferId> hit;
    for (const std::uint32_t c : dead) {
      for (const TransferId id : ports_[c].flows) {
        if (std::find(hit.begin(), hit.end(), id) == hit.end()) hit.push_back(id);
      }
    }
    std::sort(hit.begin(), hit.end());
    std::vector<Cut> out;
    for (const TransferId id : hit) {
      Flow& f = flows_[id];
      const double left = std::max(0.0, f.remaining - f.rate * static_cast<double>(now_ - f.last));
      const auto bytes = static_cast<std::uint64_t>(f.bytes);
      const std::uint64_t delivered = std::min(bytes, static_cast<std::uint64_t>(std::floor(f.bytes - left)));
      drain(now_, id);
      // Its channels carried only the delivered bytes (begin() counted them all); an aggregate's hop h the
      // same share of its hop_bytes[h].
      for (std::uint32_t h = 0; h < f.hops; ++h) {
        const std::uint64_t hop = f.hop_bytes == nullptr ? bytes : f.hop_bytes[h];
        ports_[f.path[h]].bytes -= hop - delivered_share(hop, delivered, bytes);
      }
      events_.erase(id);
      out.push_back(Cut{id, bytes, delivered});
    }
    return out;
  }

  Tick next_event() override {
    settle();
    return events_.empty() ? kNever : events_.top().time;
  }

  std::vector<ChannelStats> stats(Tick now) const override {
    std::vector<ChannelStats> s(ports_.size());
    for (std::size_t c = 0; c < s.size(); ++c) {
      const Port& p = ports_[c];
      s[c].bytes = p.bytes;
      s[c].busy = p.busy + (p.flows.empty() ? 0 : now - p.busy_since);
    }
    return s;
  }

 private:
  enum class Kind : std::uint8_t { drained, deliver };
  struct Event {
    Tick time;
    std::uint64_t seq;  // ties in scheduling order: deterministic
    Kind kind;
    TransferId id;
    bool before(const Event& o) const { return time != o.time ? time < o.time : seq < o.seq; }
  };
  // A binary min-heap of events holding at most one event per flow: scheduling a flow again replaces its
  // pending event in place (a rate change), so no superseded entries pile up and none is popped only to be
  // skipped. (time, seq) is a strict order, so events come out in the same order as from any priority queue.
  class EventHeap {
   public:
    bool empty() const { return heap_.empty(); }
    const Event& top() const { return heap_.front(); }
    void set(const Event& e) {
      if (e.id >= pos_.size()) pos_.resize(static_cast<std::size_t>(e.id) + 1, kAbsent);
      std::size_t i = pos_[e.id];
      if (i == kAbsent) {
        i = heap_.size();
        heap_.push_back(e);
      } else {
        heap_[i] = e;
      }
      place(i);
    }
    void erase(TransferId id) {
      if (id >= pos_.size() || pos_[id] == kAbsent) return;
      const std::size_t i = pos_[id];
      pos_[id] = kAbsent;
      const Event last = heap_.back();
      heap_.pop_back();
      if (i == heap_.size()) return;
      heap_[i] = last;
      place(i);
    }
    void pop() {
      pos_[heap_.front().id] = kAbsent;
      const Event last = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
      heap_[0] = last;
      place(0);
    }

   private:
    static constexpr std::size_t kAbsent = ~std::size_t{0};
    void place(std::size_t i) {
      const Event e = heap_[i];
      while (i > 0 && e.before(heap_[(i - 1) / 2])) {  // sift up
        heap_[i] = heap_[(i - 1) / 2];
        pos_[heap_[i].id] = i;
        i = (i - 1) / 2;
      }
      for (;;) {  // sift down
        std::size_t c = 2 * i + 1;
        if (c >= heap_.size()) break;
        if (c + 1 < heap_.size() && heap_[c + 1].before(heap_[c])) ++c;
        if (!heap_[c].before(e)) break;
        heap_[i] = heap_[c];
        pos_[heap_[i].id] = i;
        i = c;
      }
      heap_[i] = e;
      pos_[e.id] = i;
    }
    std::vector<Event> heap_;
    std::vector<std::size_t> pos_;  // index in heap_ per flow id, or kAbsent
  };
  struct Flow {
    const std::uint32_t* path = nullptr;
    std::uint32_t hops = 0;
    const std::uint64_t* hop_bytes = nullptr;  // aggregates: bytes per hop (weight hop_bytes[h] / bytes)
    double bytes = 0;
    bool active = false;     // draining (holds bandwidth on its channels)
    double remaining = 0;    // bytes at `last`
    double rate = 0;         // bytes per tick (0 until the first settle)
    double previous = 0;     // settle scratch: the rate before this settle
    Tick last = 0;
    Tick latency = 0;        // sum over the path (an aggregate's: the latency its owner gave)
  };
  // Epochs of the last settle that found a flow in its component and that froze its rate (compact: the walk and
  // the filling test them once per hop of a component).
  struct FlowMarks {
    std::uint32_t found = 0;
    std::uint32_t frozen = 0;
  };
  // A channel as starts and drains see it (its statistics beside its flows: one cache line per hop), and its
  // progressive filling scratch in a separate, compact array (a settle walks tens of thousands of channels).
  struct Port {
    std::vector<TransferId> flows;  // active flows through the channel
    Tick busy_since = 0;
    Tick busy = 0;                  // closed busy intervals
    std::uint64_t bytes = 0;        // carried (counted at the start; a cut takes back what was not delivered)
    bool dirty = false;
  };
  struct Fill {
    double left = 0;                // capacity not yet handed out
    double demand = 0;              // the unfrozen flows' summed weights
    std::uint32_t mark = 0;         // epoch of the last settle that visited it
    std::uint32_t unfrozen = 0;     // unfrozen flows through the channel
  };

  void begin(Tick now, TransferId id, const std::uint32_t* path, std::uint32_t hops, std::uint64_t bytes,
             Tick latency, const std::uint64_t* hop_bytes = nullptr) {
    if (now > now_) {  // the owner skipped advance(now): settle earlier changes at their own time first
      settle();
      now_ = now;
    }
    if (id >= flows_.size()) {
      flows_.resize(static_cast<std::size_t>(id) + 1);
      marks_.resize(flows_.size());
    }
    Flow& f = flows_[id];
    f = Flow{};  // ids are reused; a delivered transfer has no event left in the queue
    f.path = path;
    f.hops = hops;
    f.hop_bytes = hop_bytes;
    f.bytes = static_cast<double>(bytes);
    f.remaining = static_cast<double>(bytes);
    f.last = now;
    f.latency = latency;
    if (bytes == 0) {
      schedule(now + f.latency, Kind::deliver, id);
      return;
    }
    f.active = true;
    for (std::uint32_t h = 0; h < hops; ++h) {
      const std::uint32_t c = path[h];
      Port& p = ports_[c];
      if (p.flows.empty()) p.busy_since = now;
      p.flows.push_back(id);
      p.bytes += hop_bytes == nullptr ? bytes : hop_bytes[h];
      mark_dirty(c);
    }
  }

  static std::uint64_t delivered_share(std::uint64_t hop, std::uint64_t delivered, std::uint64_t bytes) {
    return bytes == 0 ? hop : static_cast<std::uint64_t>(std::floor(static_cast<double>(hop) *
                                                                    (static_cast<double>(delivered) / bytes)));
  }

  static double weight(const Flow& f, std::uint32_t h) {
    return f.hop_bytes == nullptr ? 1.0 : static_cast<double>(f.hop_bytes[h]) / f.bytes;
  }

  void schedule(Tick time, Kind kind, TransferId id) {
    events_.set(Event{time, seq_++, kind, id});
  }

  void mark_dirty(std::uint32_t c) {
    if (!ports_[c].dirty) {
      ports_[c].dirty = true;
      dirty_.push_back(c);
    }
  }

  void drain(Tick now, TransferId id) {
    Flow& f = flows_[id];
    f.active = false;
    f.remaining = 0;
    for (std::uint32_t h = 0; h < f.hops; ++h) {
      const std::uint32_t c = f.path[h];
      Port& p = ports_[c];
      const auto it = std::find(p.flows.begin(), p.flows.end(), id);
      *it = p.flows.back();
      p.flows.pop_back();
      if (p.flows.empty()) p.busy += now - p.busy_since;
      mark_dirty(c);
    }
  }

  // Recomputes the rates of every flow connected to a dirty channel, at time now_.
  void settle() {
    if (dirty_.empty()) return;
    ++epoch_;
    comp_channels_.clear();
    comp_flows_.clear();
    for (std::uint32_t c : dirty_) {
      ports_[c].dirty = false;
      visit_channel(c);
    }
    dirty_.clear();
    // One walk finds the component and sets up the filling from scratch: a channel's scratch when it is first
    // reached, a flow's weights added to its channels' demand when it is first reached (so each channel sums its
    // flows in the order the walk finds them, hop by hop, as a separate pass over the flows would). A flow keeps
    // its old rate in `previous` until the new one is known.
    for (std::size_t i = 0; i < comp_channels_.size(); ++i) {
      for (TransferId id : ports_[comp_channels_[i]].flows) {
        if (marks_[id].found == epoch_) continue;
        marks_[id].found = epoch_;
        comp_flows_.push_back(id);
        Flow& f = flows_[id];
        f.previous = f.rate;
        for (std::uint32_t h = 0; h < f.hops; ++h) {
          visit_channel(f.path[h]);
          fill_[f.path[h]].demand += weight(f, h);
        }
      }
    }
    std::size_t frozen = 0;
    bool first_round = true;
    while (frozen < comp_flows_.size()) {
      // Channels whose flows are all frozen drop out of the rounds (the order of the rest kept, so the
      // subtractions below run in the same order and the rates come out bit for bit the same).
      double share = std::numeric_limits<double>::infinity();
      std::size_t kept = 0;
      for (std::uint32_t c : comp_channels_) {
        const Fill& p = fill_[c];
        if (p.unfrozen == 0) continue;
        comp_channels_[kept++] = c;
        share = std::min(share, p.left / p.demand);
      }
      comp_channels_.resize(kept);
      // Freeze the flows of every channel at the bottleneck share (relative slack for rounding).
      const double limit = share * (1 + 1e-12);
      if (first_round && one_round(limit)) {
        for (TransferId id : comp_flows_) flows_[id].rate = std::max(share, kMinRate);
        break;
      }
      first_round = false;
      for (std::uint32_t c : comp_channels_) {
        const Fill& p = fill_[c];
        if (p.unfrozen == 0 || p.left / p.demand > limit) continue;
        for (TransferId id : ports_[c].flows) {
          if (marks_[id].frozen == epoch_) continue;
          marks_[id].frozen = epoch_;
          Flow& f = flows_[id];
          f.rate = std::max(share, kMinRate);
          ++frozen;
          for (std::uint32_t h = 0; h < f.hops; ++h) {
            Fill& q = fill_[f.path[h]];
            const double w = weight(f, h);
            q.left = std::max(0.0, q.left - w * share);
            q.demand -= w;
            --q.unfrozen;
          }
        }
      }
    }
    // A flow whose rate came out unchanged keeps its pending drain event (its remaining bytes stay counted
    // from `last`); the others are brought to now_ at their old rate and rescheduled. In a pod-wide component
    // most flows keep their rate, so this saves most of the event-queue traffic.
    for (TransferId id : comp_flows_) {
      Flow& f = flows_[id];
      if (f.rate == f.previous) continue;
      f.remaining = std::max(0.0, f.remaining - f.previous * static_cast<double>(now_ - f.last));
      f.last = now_;
      schedule(now_ + ceil_ticks(f.remaining / f.rate), Kind::drained, id);
    }
  }

  // Whether the first filling round freezes every flow of the component: each passes a channel at the bottleneck
  // share. Then the round's subtractions along every flow's path decide nothing and are skipped (most settles of
  // a pod-wide component end in one round). Otherwise the marks are taken back and the round runs in full.
  bool one_round(double limit) {
    std::size_t frozen = 0;
    for (std::uint32_t c : comp_channels_) {
      const Fill& p = fill_[c];
      if (p.left / p.demand > limit) continue;
      for (TransferId id : ports_[c].flows) {
        if (marks_[id].frozen == epoch_) continue;
        marks_[id].frozen = epoch_;
        if (++frozen == comp_flows_.size()) return true;
      }
    }
    for (TransferId id : comp_flows_) marks_[id].frozen = 0;
    return false;
  }

  void visit_channel(std::uint32_t c) {
    Fill& p = fill_[c];
    if (p.mark == epoch_) return;
    p.mark = epoch_;
    p.left = channels_[c].bytes_per_tick;
    p.unfrozen = static_cast<std::uint32_t>(ports_[c].flows.size());
    p.demand = 0;
    comp_channels_.push_back(c);
  }

  std::vector<Channel> channels_;
  std::vector<Port> ports_;
  std::vector<Fill> fill_;
  std::vector<Flow> flows_;
  std::vector<FlowMarks> marks_;  // per flow, beside flows_: what a settle's walk and filling test for every hop
  std::vector<std::uint32_t> dirty_;
  std::vector<std::uint32_t> comp_channels_;
  std::vector<TransferId> comp_flows_;
  EventHeap events_;
  std::uint64_t seq_ = 0;
  std::uint32_t epoch_ = 0;
  Tick now_ = 0;
};

}  // namespace

void LinkModel::start_aggregate(Tick /*now*/, TransferId /*transfer*/, const std::uint32_t* /*path*/,
                                const std::uint64_t* /*hop_bytes*/, std::uint32_t /*hops*/, std::uint64_t /*bytes*/,
                                Tick /*latency*/) {
  throw std::logic_error(std::string("the ") + name() + " link model runs no aggregate transfers (flow links only)");
}

std::unique_ptr<LinkModel> make_flow_link_model(std::vector<Channel> channels) {
  return std::make_unique<FlowLinkModel>(std::move(channels));
}

std::unique_ptr<LinkModel> make_link_model(const FidelitySpec& fidelity, std::vector<Channel> channels) {
  if (fidelity.links == LinkFidelity::flow) return make_flow_link_model(std::move(channels));
  return make_chunked_link_model(std::move(channels), fidelity.link_chunk.count());
}

}  // namespace tpusim::models::net
