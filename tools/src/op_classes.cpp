#include "tools/src/op_classes.h"

#include <algorithm>
#include <array>

namespace tpusim::tools {
namespace {

std::uint8_t tier_of(ir::UnitKind u) {
  switch (u) {
    case ir::UnitKind::mxu:
    case ir::UnitKind::vpu:
    case ir::UnitKind::sparsecore: return 1;
    case ir::UnitKind::ici: return 2;
    case ir::UnitKind::dma: return 3;
    case ir::UnitKind::host: return 4;
    case ir::UnitKind::sync: return 0;
  }
  return 0;
}

}  // namespace

OpClassRecorder::OpClassRecorder(const ir::ProgramSet& programs, std::uint32_t chips)
    : programs_(programs),
      role_chip_(programs.programs.size(), -1),
      role_weight_(programs.programs.size(), 0.0),
      spans_(programs.programs.size()) {
  for (std::uint32_t c = 0; c < chips; ++c) {
    const std::size_t role = programs.role_of_chip.empty() ? 0 : programs.role_of_chip[c];
    if (role >= role_chip_.size()) continue;
    if (role_chip_[role] < 0) role_chip_[role] = c;
    role_weight_[role] += 1.0 / std::max<std::uint32_t>(1, chips);
  }
}

void OpClassRecorder::record(const models::TraceSpan& span) {
  const std::size_t role = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[span.chip];
  if (role >= role_chip_.size() || role_chip_[role] != static_cast<std::int64_t>(span.chip)) return;
  const std::uint8_t tier = tier_of(span.unit);
  if (tier == 0) return;
  const ir::Instruction& ins = programs_.programs[role][span.instruction];
  const std::uint8_t kind =
      ins.kind == ir::OpKind::collective ? static_cast<std::uint8_t>(ins.collective) : kNoCollective;
  spans_[role].push_back(
      Span{span.start.value(), span.end.value(), tier, static_cast<std::uint8_t>(ins.op_class), kind});
}

std::vector<OpClassTime> OpClassRecorder::finish(double step_time, double* idle_s,
                                                  std::vector<std::pair<std::string, double>>* exposed) const {
  constexpr std::size_t kKinds = 8;  // CollectiveKind values (5 today), with room
  std::array<double, ir::kOpClasses> time{}, busy{}, count{};
  std::array<double, kKinds> kind_time{};
  std::array<bool, kKinds> kind_ran{};
  double idle = 0;
  for (std::size_t role = 0; role < spans_.size(); ++role) {
    const double weight = role_weight_[role];
    if (weight <= 0) continue;
    const std::vector<Span>& spans = spans_[role];
    // Sweep over start (+1) and end (-1) events; between events the in-flight set is constant.
    struct Event {
      double t;
      int delta;
      std::uint8_t tier, op_class, collective;
    };
    std::vector<Event> events;
    events.reserve(2 * spans.size());
    for (const Span& s : spans) {
      busy[s.op_class] += (s.end - s.start) * weight;
      count[s.op_class] += weight;
      if (s.collective < kKinds) kind_ran[s.collective] = true;
      if (s.end <= s.start) continue;
      events.push_back({s.start, +1, s.tier, s.op_class, s.collective});
      events.push_back({s.end, -1, s.tier, s.op_class, s.collective});
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
    std::array<std::array<int, ir::kOpClasses>, 5> live{};  // [tier][class] instructions in flight
    std::array<int, kKinds> live_kind{};                    // collectives in flight by kind
    double last = 0;
    double covered = 0;
    for (std::size_t i = 0; i < events.size();) {
      const double t = events[i].t;
      const double dt = t - last;
      if (dt > 0) {
        for (std::size_t tier = 1; tier < live.size(); ++tier) {
          int n = 0;
          for (int c : live[tier]) n += c;
          if (n == 0) continue;
          for (std::size_t c = 0; c < ir::kOpClasses; ++c) time[c] += dt * weight * live[tier][c] / n;
          if (tier == tier_of(ir::UnitKind::ici)) {
            for (std::size_t k = 0; k < kKinds; ++k) kind_time[k] += dt * weight * live_kind[k] / n;
          }
          covered += dt;
          break;
        }
      }
      for (; i < events.size() && events[i].t == t; ++i) {
        live[events[i].tier][events[i].op_class] += events[i].delta;
        if (events[i].collective < kKinds) live_kind[events[i].collective] += events[i].delta;
      }
      last = t;
    }
    idle += std::max(0.0, step_time - covered) * weight;
  }
  std::vector<OpClassTime> out;
  for (std::size_t c = 0; c < ir::kOpClasses; ++c) {
    if (count[c] == 0) continue;
    out.push_back(OpClassTime{std::string(ir::op_class_name(static_cast<ir::OpClass>(c))), time[c], busy[c],
                              static_cast<std::uint64_t>(count[c] + 0.5)});
  }
  if (idle_s != nullptr) *idle_s = idle;
  if (exposed != nullptr) {
    exposed->clear();
    for (std::size_t k = 0; k < kKinds; ++k) {
      if (kind_ran[k]) exposed->emplace_back(std::string(collective_name(static_cast<CollectiveKind>(k))), kind_time[k]);
    }
  }
  return out;
}

}  // namespace tpusim::tools
