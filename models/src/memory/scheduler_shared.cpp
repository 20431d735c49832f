// shared: engines with work split the rate equally and each engine's transfers are served in issue order,
// max-min fair under caps, less the turnaround while reads and writes mix (BandwidthServer has the rules).
#include "memory/scheduler.h"

namespace tpusim::models {
namespace {

class SharedScheduler final : public BandwidthScheduler {
 public:
  SharedScheduler(double bytes_per_second, double turnaround) : server_(bytes_per_second, turnaround) {}

  void add(Tick now, std::uint32_t tag, double bytes, std::uint64_t order, FlowDirection direction,
           double cap) override {
    server_.add(now, tag, bytes, order, direction, cap);
  }
  void advance(Tick now, TagSink& sink) override {
    server_.advance(now, [&sink](std::uint32_t tag) { sink.done(tag); });
  }
  [[nodiscard]] Tick next_completion() const override { return server_.next_completion(); }
  [[nodiscard]] Tick busy_ticks() const override { return server_.busy_ticks(); }

 private:
  BandwidthServer server_;
};

}  // namespace

std::unique_ptr<BandwidthScheduler> make_shared_scheduler(double bytes_per_second, double turnaround) {
  return std::make_unique<SharedScheduler>(bytes_per_second, turnaround);
}

}  // namespace tpusim::models
