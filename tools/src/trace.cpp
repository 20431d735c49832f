#include "tools/src/trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>

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
    : chips_(std::move(chips)), per_chip_(std::max<std::size_t>(1, limit / std::max<std::size_t>(1, chips_.size()))) {}

void TraceRecorder::record(const models::TraceSpan& span) {
  if (chips_.count(span.chip) == 0) return;
  std::size_t& kept = kept_[span.chip];
  if (kept >= per_chip_) {
    ++dropped_;
    return;
  }
  ++kept;
  spans_.push_back(span);
}

void TraceRecorder::write(const ir::ProgramSet& programs, std::ostream& out, const std::vector<TraceMark>& marks,
                          const std::string& written_by) const {
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
  // Several collectives (and sends) are in flight at once on a chip's ICI unit: each gets the first ICI lane
  // free at its start, a track of its own ("ici 1", "ici 2", ...), so overlapping spans never share a track.
  constexpr int kIciLaneBase = 1000;
  std::map<std::uint32_t, std::vector<double>> ici_lane_end;  // per chip: when each lane frees
  for (const auto& s : spans) {
    int tid = tid_of(s);
    int lane = 0;
    if (s.unit == ir::UnitKind::ici) {
      std::vector<double>& ends = ici_lane_end[s.chip];
      while (lane < static_cast<int>(ends.size()) && ends[static_cast<std::size_t>(lane)] > s.start.value()) ++lane;
      if (lane == static_cast<int>(ends.size())) ends.push_back(0);
      ends[static_cast<std::size_t>(lane)] = s.end.value();
      if (lane > 0) tid = kIciLaneBase + lane;
    }
    if (named.insert({s.chip, -1}).second) {
      events.push_back(json{{"name", "process_name"}, {"ph", "M"}, {"pid", s.chip}, {"tid", 0},
                            {"args", json{{"name", fmt::format("chip {}", s.chip)}}}});
    }
    if (named.insert({s.chip, tid}).second) {
      events.push_back(json{{"name", "thread_name"}, {"ph", "M"}, {"pid", s.chip}, {"tid", tid},
                            {"args", json{{"name", lane > 0 ? fmt::format("ici {}", lane)
                                                             : fmt::format("core {} {}", s.core, ir::unit_name(s.unit))}}}});
    }
    const ir::Program& prog = programs.program_for(s.chip);
    const ir::Instruction& ins = prog[s.instruction];
    json args{{"instruction", s.instruction}};
    if (ins.kind == ir::OpKind::matmul) args["mkn"] = fmt::format("{}x{}x{}", ins.m, ins.k, ins.n);
    if (ins.bytes > 0) args["bytes"] = ins.bytes;
    if (ins.kind == ir::OpKind::matmul && ins.batch > 1) args["batch"] = ins.batch;
    if (ins.streams_hbm()) args["hbm_bytes"] = ins.hbm_read + ins.hbm_written;
    if (ins.op_class != ir::OpClass::other) args["class"] = std::string(ir::op_class_name(ins.op_class));
    events.push_back(json{{"name", prog.label_of(ins).empty() ? std::string(ir::op_name(ins.kind)) : prog.label_of(ins)},
                          {"cat", std::string(ir::unit_name(s.unit))},
                          {"ph", "X"},
                          {"pid", s.chip},
                          {"tid", tid},
                          {"ts", s.start.value() * 1e6},
                          {"dur", (s.end - s.start).value() * 1e6},
                          {"args", args}});
  }
  std::map<std::pair<std::uint32_t, std::string>, int> mark_tracks;
  for (const TraceMark& m : marks) {
    if (named.insert({m.pid, -1}).second) {
      events.push_back(json{{"name", "process_name"}, {"ph", "M"}, {"pid", m.pid}, {"tid", 0},
                            {"args", json{{"name", m.process}}}});
    }
    const auto [it, added] =
        mark_tracks.emplace(std::make_pair(m.pid, m.track), kMarkTrackBase + static_cast<int>(mark_tracks.size()));
    if (added) {
      events.push_back(json{{"name", "thread_name"}, {"ph", "M"}, {"pid", m.pid}, {"tid", it->second},
                            {"args", json{{"name", m.track}}}});
    }
    json args = json::object();
    for (const auto& [key, value] : m.args) args[key] = value;
    json e{{"name", m.name}, {"cat", "fault"}, {"ph", m.instant ? "i" : "X"}, {"pid", m.pid}, {"tid", it->second},
           {"ts", m.start.value() * 1e6}};
    if (m.instant) e["s"] = "t";
    else e["dur"] = (m.end - m.start).value() * 1e6;
    e["args"] = args;
    events.push_back(std::move(e));
  }
  json doc{{"displayTimeUnit", "ns"}, {"traceEvents", events}};
  if (!written_by.empty()) doc["otherData"] = json{{"generator", written_by}};
  out << doc.dump() << "\n";
}

void TraceRecorder::write_timeline_svg(const std::string& title, std::ostream& out) const {
  constexpr double kLeft = 110, kPlotWidth = 1100, kLane = 22, kTop = 40;
  std::uint32_t chip = UINT32_MAX;
  double t_end = 0;
  for (const auto& s : spans_) chip = std::min(chip, s.chip);
  std::map<int, std::vector<std::pair<double, double>>> lanes;  // tid -> (start, end) in seconds
  std::map<int, std::pair<int, ir::UnitKind>> lane_of;
  for (const auto& s : spans_) {
    if (s.chip != chip) continue;
    const int tid = s.core * ir::kUnitKinds + static_cast<int>(s.unit);
    lanes[tid].emplace_back(s.start.value(), s.end.value());
    lane_of[tid] = {s.core, s.unit};
    t_end = std::max(t_end, s.end.value());
  }
  const double height = kTop + kLane * static_cast<double>(lanes.size()) + 40;
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     kLeft + kPlotWidth + 60, height)
      << "\n";
  out << fmt::format(R"(<text x="10" y="18" font-size="14">{}</text>)", title) << "\n";
  if (lanes.empty() || t_end <= 0) {
    out << R"(<text x="10" y="40">no instructions were traced</text></svg>)" << "\n";
    return;
  }
  const double scale = kPlotWidth / t_end;
  static constexpr const char* kUnitColor[ir::kUnitKinds] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                                             "#7f7f7f", "#e377c2"};
  int row = 0;
  for (auto& [tid, spans] : lanes) {
    const auto [core, lane_unit] = lane_of[tid];
    const ir::UnitKind unit = lane_unit;  // a plain variable: C++17 lambdas cannot capture structured bindings
    const double y = kTop + kLane * row++;
    out << fmt::format(R"(<text x="10" y="{:.1f}">chip {} core {} {}</text>)", y + 14, chip, core, ir::unit_name(unit))
        << "\n";
    std::sort(spans.begin(), spans.end());
    double bar_start = -1, bar_end = -1;
    auto flush = [&] {
      if (bar_start < 0) return;
      out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.0f}" fill="{}"/>)",
                         kLeft + bar_start * scale, y + 3, std::max(0.5, (bar_end - bar_start) * scale), kLane - 6,
                         kUnitColor[static_cast<int>(unit)])
          << "\n";
    };
    for (const auto& [start, end] : spans) {
      if (bar_start >= 0 && (start - bar_end) * scale < 0.5) {
        bar_end = std::max(bar_end, end);
        continue;
      }
      flush();
      bar_start = start;
      bar_end = end;
    }
    flush();
  }
  const double axis_y = kTop + kLane * row + 14;
  for (int i = 0; i <= 4; ++i) {
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", kLeft + kPlotWidth * i / 4,
                       axis_y, format_time(Seconds(std::stod(fmt::format("{:.3g}", t_end * i / 4)))))
        << "\n";
  }
  out << "</svg>\n";
}

}  // namespace tpusim::tools
