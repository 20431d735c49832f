// fifo: one transfer at a time, in arrival order, each at its cap of the whole rate (a memory controller that
// does not interleave requests). No turnaround: one direction is on the bus at a time. A transfer that
// finishes between two activations hands the rest of the interval to the next one.
#include <deque>
#include <stdexcept>

#include "memory/scheduler.h"

namespace tpusim::models {
namespace {

class FifoScheduler final : public BandwidthScheduler {
 public:
  explicit FifoScheduler(double bytes_per_second) : rate_(bytes_per_second / kTicksPerSecond) {}

  void add(Tick now, std::uint32_t tag, double bytes, std::uint64_t /*order*/, FlowDirection /*direction*/,
           double cap) override {
    if (rate_ <= 0) throw std::logic_error("transfer on a path without bandwidth");
    if (!(cap > 0 && cap <= 1)) throw std::invalid_argument("transfer cap must be in (0, 1]");
    if (queue_.empty()) last_ = now;
    queue_.push_back(Flow{tag, bytes, cap});
  }

  void advance(Tick now, TagSink& sink) override {
    if (queue_.empty() || now <= last_) {
      last_ = std::max(last_, now);
      return;
    }
    double available = static_cast<double>(now - last_);  // ticks of service to hand out
    busy_ += now - last_;
    last_ = now;
    while (!queue_.empty()) {
      Flow& head = queue_.front();
      const double rate = rate_ * head.cap;
      const double needed = head.remaining / rate;
      // Completion times are rounded up to whole ticks: half a tick of service absorbs the rounding.
      if (needed > available + 0.5) {
        head.remaining -= rate * available;
        break;
      }
      available = std::max(0.0, available - needed);
      const std::uint32_t tag = head.tag;
      queue_.pop_front();
      sink.done(tag);
    }
  }

  [[nodiscard]] Tick next_completion() const override {
    if (queue_.empty()) return kNever;
    const Flow& head = queue_.front();
    return last_ + std::max<Tick>(1, ceil_ticks(head.remaining / (rate_ * head.cap)));
  }
  [[nodiscard]] Tick busy_ticks() const override { return busy_; }

 private:
  struct Flow {
    std::uint32_t tag;
    double remaining;  // bytes
    double cap;
  };
  double rate_;  // bytes per tick
  std::deque<Flow> queue_;
  Tick last_ = 0;
  Tick busy_ = 0;
};

}  // namespace

std::unique_ptr<BandwidthScheduler> make_fifo_scheduler(double bytes_per_second) {
  return std::make_unique<FifoScheduler>(bytes_per_second);
}

}  // namespace tpusim::models
