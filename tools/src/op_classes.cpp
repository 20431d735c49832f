#include "tools/src/op_classes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

namespace tpusim::tools {
namespace {

std::uint8_t tier_of(ir::UnitKind u) { return ir::unit_info(u).time_rank; }

}  // namespace

double hbm_bytes_of(const ir::Instruction& ins) {
  if (ins.streams_hbm()) return static_cast<double>(ins.stream.hbm_read + ins.stream.hbm_written);
  const auto in_hbm = [](ir::Memory m) { return m == ir::Memory::hbm ? 1.0 : 0.0; };
  const auto bytes = static_cast<double>(ins.bytes);
  switch (ins.kind) {
    case ir::OpKind::host:
    case ir::OpKind::send:
    case ir::OpKind::recv: return bytes;
    case ir::OpKind::dma: return bytes * (in_hbm(ins.memory.src) + in_hbm(ins.memory.dst));
    case ir::OpKind::gather:
    case ir::OpKind::scatter: {
      const auto bags = static_cast<double>(static_cast<std::uint64_t>(
          static_cast<double>(ins.shape.k) * static_cast<double>(ins.shape.n) * dtype_bytes(ins.dtype)));
      if (ins.kind == ir::OpKind::gather) return bytes * in_hbm(ins.memory.src) + bags * in_hbm(ins.memory.dst);
      return bags * in_hbm(ins.memory.src) + 2 * bytes * in_hbm(ins.memory.dst);
    }
    default: return 0;
  }
}

std::string op_of_label(const std::string& label) {
  // Leading segments that are a name and an index ("layer12", "stage0", "block3", "top2") lose the index; the
  // first other segment ends that, so "layer0.fwd.norm1" keeps its norm1 apart from norm2.
  std::string out;
  std::size_t begin = 0;
  bool leading = true;
  while (begin <= label.size()) {
    const std::size_t dot = std::min(label.find('.', begin), label.size());
    std::string segment = label.substr(begin, dot - begin);
    if (leading) {
      std::size_t digits = segment.size();
      while (digits > 0 && std::isdigit(static_cast<unsigned char>(segment[digits - 1]))) --digits;
      const bool indexed = digits > 0 && digits < segment.size() &&
                           std::isalpha(static_cast<unsigned char>(segment[digits - 1]));
      if (indexed) segment = segment.substr(0, digits) + "*";
      else leading = false;
    }
    if (!out.empty() || begin > 0) out += '.';
    out += segment;
    if (dot == label.size()) break;
    begin = dot + 1;
  }
  return out;
}

OpClassRecorder::OpClassRecorder(const ir::ProgramSet& programs, std::uint32_t chips)
    : programs_(programs),
      role_chip_(programs.programs.size(), -1),
      role_weight_(programs.programs.size(), 0.0),
      spans_(programs.programs.size()),
      op_of_label_(programs.programs.size()),
      ops_(programs.programs.size()) {
  for (std::uint32_t c = 0; c < chips; ++c) {
    const std::size_t role = programs.role_of_chip.empty() ? 0 : programs.role_of_chip[c];
    if (role >= role_chip_.size()) continue;
    if (role_chip_[role] < 0) role_chip_[role] = c;
    role_weight_[role] += 1.0 / std::max<std::uint32_t>(1, chips);
  }
  for (std::size_t role = 0; role < programs.programs.size(); ++role) {
    if (role_chip_[role] < 0) continue;
    const ir::Program& p = programs.programs[role];
    std::map<std::string, std::uint32_t> index;
    for (const std::string& label : p.labels()) {
      const auto [it, added] = index.emplace(op_of_label(label), static_cast<std::uint32_t>(ops_[role].size()));
      if (added) {
        OpTime op;
        op.name = it->first;
        ops_[role].push_back(std::move(op));
      }
      op_of_label_[role].push_back(it->second);
    }
  }
}

void OpClassRecorder::record(const models::TraceSpan& span) {
  const std::size_t role = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[span.chip];
  if (role >= role_chip_.size() || role_chip_[role] != static_cast<std::int64_t>(span.chip)) return;
  const std::uint8_t tier = tier_of(span.unit);
  if (tier == 0) return;
  const ir::Instruction& ins = programs_.programs[role][span.instruction];
  const std::uint8_t kind =
      ins.kind == ir::OpKind::collective ? static_cast<std::uint8_t>(ins.comm.collective) : kNoCollective;
  const std::uint32_t op = op_of_label_[role][ins.label];
  OpTime& o = ops_[role][op];
  if (o.unit.empty()) o.unit = std::string(ir::unit_name(span.unit));
  if (ins.kind == ir::OpKind::host && !o.host_op) o.host_op = ins.host.op;
  o.instructions += 1;
  o.flops += ins.flops.hardware;
  o.hbm_bytes += hbm_bytes_of(ins);
  if (ins.kind == ir::OpKind::dma || ins.kind == ir::OpKind::collective || ins.kind == ir::OpKind::send ||
      ins.kind == ir::OpKind::recv) {
    o.moved_bytes += static_cast<double>(ins.bytes);
  }
  spans_[role].push_back(
      Span{span.start.value(), span.end.value(), tier, static_cast<std::uint8_t>(ins.op_class), kind, op});
}

std::vector<OpClassTime> OpClassRecorder::finish(double step_time, double* idle_s,
                                                  std::vector<std::pair<std::string, double>>* exposed,
                                                  std::vector<OpTime>* ops) const {
  std::map<std::string, OpTime> by_name;  // ops merged over roles, weighted like the times
  constexpr std::size_t kKinds = 8;  // CollectiveKind values (5 today), with room
  std::array<double, ir::kOpClasses> time{}, busy{}, count{};
  std::array<double, kKinds> kind_time{};
  std::array<bool, kKinds> kind_ran{};
  double idle = 0;
  for (std::size_t role = 0; role < spans_.size(); ++role) {
    const double weight = role_weight_[role];
    if (weight <= 0) continue;
    const std::vector<Span>& spans = spans_[role];
    std::vector<double> op_time(ops_[role].size(), 0.0), op_active(ops_[role].size(), 0.0);
    // Sweep over start (+1) and end (-1) events; between events the in-flight set is constant.
    struct Event {
      double t;
      int delta;
      std::uint8_t tier, op_class, collective;
      std::uint32_t op;
    };
    std::vector<Event> events;
    events.reserve(2 * spans.size());
    for (const Span& s : spans) {
      busy[s.op_class] += (s.end - s.start) * weight;
      count[s.op_class] += weight;
      if (s.collective < kKinds) kind_ran[s.collective] = true;
      if (s.end <= s.start) continue;
      events.push_back({s.start, +1, s.tier, s.op_class, s.collective, s.op});
      events.push_back({s.end, -1, s.tier, s.op_class, s.collective, s.op});
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
    std::array<std::array<int, ir::kOpClasses>, ir::kTimeRanks> live{};  // [tier][class] in flight
    std::array<int, kKinds> live_kind{};                    // collectives in flight by kind
    std::vector<int> live_op(ops_[role].size(), 0);         // instructions in flight by op, any tier
    std::array<std::vector<std::uint32_t>, ir::kTimeRanks> live_ops;     // [tier] each one's op
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
          for (std::uint32_t op : live_ops[tier]) op_time[op] += dt / n;
          if (tier == tier_of(ir::UnitKind::ici)) {
            for (std::size_t k = 0; k < kKinds; ++k) kind_time[k] += dt * weight * live_kind[k] / n;
          }
          covered += dt;
          break;
        }
        for (std::size_t op = 0; op < live_op.size(); ++op) {
          if (live_op[op] > 0) op_active[op] += dt;
        }
      }
      for (; i < events.size() && events[i].t == t; ++i) {
        live[events[i].tier][events[i].op_class] += events[i].delta;
        if (events[i].collective < kKinds) live_kind[events[i].collective] += events[i].delta;
        live_op[events[i].op] += events[i].delta;
        std::vector<std::uint32_t>& at_tier = live_ops[events[i].tier];
        if (events[i].delta > 0) {
          at_tier.push_back(events[i].op);
        } else {
          at_tier.erase(std::find(at_tier.begin(), at_tier.end(), events[i].op));
        }
      }
      last = t;
    }
    idle += std::max(0.0, step_time - covered) * weight;
    for (std::size_t op = 0; op < ops_[role].size(); ++op) {
      const OpTime& o = ops_[role][op];
      if (o.instructions == 0) continue;
      OpTime fresh;
      fresh.name = o.name;
      fresh.unit = o.unit;
      OpTime& merged = by_name.try_emplace(o.name, std::move(fresh)).first->second;
      if (!merged.host_op) merged.host_op = o.host_op;
      merged.instructions += o.instructions * weight;
      merged.time_s += op_time[op] * weight;
      merged.active_s += op_active[op] * weight;
      merged.flops += o.flops * weight;
      merged.hbm_bytes += o.hbm_bytes * weight;
      merged.moved_bytes += o.moved_bytes * weight;
    }
  }
  std::vector<OpClassTime> out;
  for (std::size_t c = 0; c < ir::kOpClasses; ++c) {
    if (count[c] == 0) continue;
    out.push_back(OpClassTime{std::string(ir::op_class_name(static_cast<ir::OpClass>(c))), time[c], busy[c],
                              static_cast<std::uint64_t>(count[c] + 0.5)});
  }
  if (idle_s != nullptr) *idle_s = idle;
  if (ops != nullptr) {
    ops->clear();
    for (auto& [name, o] : by_name) ops->push_back(std::move(o));
    std::stable_sort(ops->begin(), ops->end(), [](const OpTime& a, const OpTime& b) { return a.time_s > b.time_s; });
  }
  if (exposed != nullptr) {
    exposed->clear();
    for (std::size_t k = 0; k < kKinds; ++k) {
      if (kind_ran[k]) exposed->emplace_back(std::string(collective_name(static_cast<CollectiveKind>(k))), kind_time[k]);
    }
  }
  return out;
}

}  // namespace tpusim::tools
