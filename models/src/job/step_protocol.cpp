// A StepReport between processes (contract in tpusim/models/job_steps.h): "TPSR", the version, then the
// fields in their order, each number as its 8 (a span's ids as 4 and 1) native bytes, the mirroring note as its
// length and bytes: both ends are the same binary on the same machine.
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "tpusim/models/job_steps.h"

namespace tpusim::models {
namespace {

constexpr char kMagic[4] = {'T', 'P', 'S', 'R'};
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kSpanBytes = 4 + 1 + 1 + 4 + 8 + 8;

class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof v);
  }
  void raw(const char* p, std::size_t n) { out_.append(p, n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  [[nodiscard]] bool get(T& v) {
    if (in_.size() - at_ < sizeof v) return false;
    std::memcpy(&v, in_.data() + at_, sizeof v);
    at_ += sizeof v;
    return true;
  }
  [[nodiscard]] std::size_t left() const { return in_.size() - at_; }
  [[nodiscard]] bool starts_with(const char* p, std::size_t n) {
    if (left() < n || std::memcmp(in_.data() + at_, p, n) != 0) return false;
    at_ += n;
    return true;
  }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
};

// The report's numbers after the link utilizations, in their order on the wire.
template <class Report, class F>
void for_each_number(Report& r, F&& f) {
  for (auto* v :
       {&r.transfers_cut, &r.in_flight_bytes, &r.delivered_bytes, &r.retransmitted_bytes, &r.lost_bytes,
        &r.resent_done_s, &r.dropped_transfers, &r.dropped_bytes, &r.progress.instructions, &r.progress.completed,
        &r.progress.last_completion_s, &r.cost.wall_s, &r.cost.chips_simulated, &r.cost.chips_mirrored}) {
    f(*v);
  }
}

}  // namespace

std::string encode_step_report(const StepReport& r) {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.put(kVersion);
  w.put(r.step_time_s);
  w.put(static_cast<std::uint64_t>(r.link_utilization.size()));
  for (const double u : r.link_utilization) w.put(u);
  for_each_number(r, [&w](double v) { w.put(v); });
  w.put(static_cast<std::uint8_t>(r.progress.stopped));
  w.put(static_cast<std::uint8_t>(r.traced));
  w.put(static_cast<std::uint64_t>(r.cost.mirroring.size()));
  w.raw(r.cost.mirroring.data(), r.cost.mirroring.size());
  w.put(static_cast<std::uint64_t>(r.spans.size()));
  for (const TraceSpan& s : r.spans) {
    w.put(s.chip);
    w.put(s.core);
    w.put(static_cast<std::uint8_t>(s.unit));
    w.put(s.instruction);
    w.put(s.start.value());
    w.put(s.end.value());
  }
  return w.take();
}

std::optional<StepReport> decode_step_report(std::string_view bytes, std::string& why) {
  Reader in(bytes);
  StepReport r;
  std::uint32_t version = 0;
  if (!in.starts_with(kMagic, sizeof kMagic)) {
    why = "not a step report (no TPSR at its start)";
    return std::nullopt;
  }
  if (!in.get(version) || version != kVersion) {
    why = fmt::format("a step report of version {}, expected {}", version, kVersion);
    return std::nullopt;
  }
  const auto short_message = [&why](const char* where) {
    why = fmt::format("the step report ends early, in {}", where);
    return std::nullopt;
  };
  std::uint64_t links = 0;
  if (!in.get(r.step_time_s) || !in.get(links)) return short_message("its head");
  if (links > in.left() / sizeof(double)) return short_message("the link utilizations");
  r.link_utilization.resize(links);
  for (double& u : r.link_utilization) (void)in.get(u);
  bool whole = true;
  for_each_number(r, [&](double& v) { whole = whole && in.get(v); });
  std::uint8_t stopped = 0, traced = 0;
  std::uint64_t note = 0, spans = 0;
  if (!whole || !in.get(stopped) || !in.get(traced) || !in.get(note)) return short_message("the fault's numbers");
  if (note > in.left()) return short_message("the mirroring note");
  r.cost.mirroring.resize(note);
  for (char& c : r.cost.mirroring) (void)in.get(c);
  if (!in.get(spans)) return short_message("the span count");
  if (stopped > 1 || traced > 1) {
    why = "a step report with a flag other than 0 or 1";
    return std::nullopt;
  }
  r.progress.stopped = stopped != 0;
  r.traced = traced != 0;
  if (spans > in.left() / kSpanBytes) return short_message("the spans");
  r.spans.resize(spans);
  for (TraceSpan& s : r.spans) {
    std::uint8_t unit = 0;
    double start = 0, end = 0;
    (void)(in.get(s.chip) && in.get(s.core) && in.get(unit) && in.get(s.instruction) && in.get(start) &&
           in.get(end));
    if (unit >= ir::unit_kind_count()) {
      why = fmt::format("a span of unit {}, expected below {}", unit, ir::unit_kind_count());
      return std::nullopt;
    }
    s.unit = static_cast<ir::UnitKind>(unit);
    s.start = Seconds(start);
    s.end = Seconds(end);
  }
  if (in.left() != 0) {
    why = fmt::format("{} bytes after the step report's end", in.left());
    return std::nullopt;
  }
  return r;
}

}  // namespace tpusim::models
