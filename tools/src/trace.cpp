#include "tools/src/trace.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tpusim::tools {

std::set<std::uint32_t> parse_chip_list(const std::string& text, Diagnostics& diags) {
  std::set<std::uint32_t> chips;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto dash = item.find('-');
    char* end = nullptr;
    const unsigned long lo = std::strtoul(item.c_str(), &end, 10);
    unsigned long hi = lo;
    bool ok = end != item.c_str() && (dash == std::string::npos ? *end == '\0' : *end == '-');
    if (ok && dash != std::string::npos) {
      const std::string rest = item.substr(dash + 1);
      hi = std::strtoul(rest.c_str(), &end, 10);
      ok = end != rest.c_str() && *end == '\0' && hi >= lo && hi - lo < 100000;
    }
    if (!ok) {
      diags.error(SourceLoc{"--trace-chips", 0, 0}, "--trace-chips", "malformed chip list",
                  "chip ids and ranges, e.g. 0-3,8", item);
      return {};
    }
    for (unsigned long c = lo; c <= hi; ++c) chips.insert(static_cast<std::uint32_t>(c));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return chips;
}

TraceRecorder::TraceRecorder(std::set<std::uint32_t> chips, std::size_t limit)
    : chips_(std::move(chips)), limit_(limit) {}

void TraceRecorder::record(const models::TraceSpan& span) {
  if (chips_.count(span.chip) == 0) return;
  if (spans_.size() >= limit_) {
    ++dropped_;
    return;
  }
  spans_.push_back(span);
}

void TraceRecorder::write(const ir::ProgramSet& programs, std::ostream& out) const {
  using json = nlohmann::ordered_json;
  auto tid_of = [](const models::TraceSpan& s) { return s.core * ir::kUnitKinds + static_cast<int>(s.unit); };
  std::vector<models::TraceSpan> spans = spans_;
  std::stable_sort(spans.begin(), spans.end(), [&](const auto& a, const auto& b) {
    if (a.chip != b.chip) return a.chip < b.chip;
    if (a.start != b.start) return a.start < b.start;
    if (tid_of(a) != tid_of(b)) return tid_of(a) < tid_of(b);
    return a.instruction < b.instruction;
  });
  json events = json::array();
  std::set<std::pair<std::uint32_t, int>> named;
  for (const auto& s : spans) {
    const int tid = tid_of(s);
    if (named.insert({s.chip, -1}).second) {
      events.push_back(json{{"name", "process_name"}, {"ph", "M"}, {"pid", s.chip}, {"tid", 0},
                            {"args", json{{"name", fmt::format("chip {}", s.chip)}}}});
    }
    if (named.insert({s.chip, tid}).second) {
      events.push_back(json{{"name", "thread_name"}, {"ph", "M"}, {"pid", s.chip}, {"tid", tid},
                            {"args", json{{"name", fmt::format("core {} {}", s.core, ir::unit_name(s.unit))}}}});
    }
    const ir::Program& prog = programs.program_for(s.chip);
    const ir::Instruction& ins = prog[s.instruction];
    json args{{"instruction", s.instruction}};
    if (ins.kind == ir::OpKind::matmul) args["mkn"] = fmt::format("{}x{}x{}", ins.m, ins.k, ins.n);
    if (ins.bytes > 0) args["bytes"] = ins.bytes;
    events.push_back(json{{"name", prog.label_of(ins).empty() ? std::string(ir::op_name(ins.kind)) : prog.label_of(ins)},
                          {"cat", std::string(ir::unit_name(s.unit))},
                          {"ph", "X"},
                          {"pid", s.chip},
                          {"tid", tid},
                          {"ts", s.start.value() * 1e6},
                          {"dur", (s.end - s.start).value() * 1e6},
                          {"args", args}});
  }
  out << json{{"displayTimeUnit", "ns"}, {"traceEvents", events}}.dump() << "\n";
}

}  // namespace tpusim::tools
