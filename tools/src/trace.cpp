#include "tools/src/trace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/charts/plot_axis.h"
#include "tools/src/charts/svg.h"
#include "tools/src/op_classes.h"

namespace tpusim::tools {

std::set<std::uint32_t> parse_chip_list(const std::string& text, std::size_t pod_chips, Diagnostics& diags) {
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
    if (lo >= pod_chips) {
      // Nothing of it would be traced: an empty trace.json, silently, is a wrong answer.
      diags.error(SourceLoc{"--trace-chips", 0, 0}, "--trace-chips",
                  fmt::format("{} {} is not in the pod", dash == std::string::npos ? "chip" : "range", item),
                  fmt::format("chip ids from 0 to {} (the pod has {} chips)", pod_chips - 1, pod_chips), item);
      return {};
    }
    hi = std::min<unsigned long>(hi, pod_chips - 1);  // a range keeps the pod's chips within it ("0-3" on one chip)
    for (unsigned long c = lo; c <= hi; ++c) chips.insert(static_cast<std::uint32_t>(c));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return chips;
}

namespace {

using json = nlohmann::ordered_json;

// The phases a label's second part names, each with a track of its own per chip ("layers fwd", ...): a layer's
// recomputation runs inside the backward pass, so the phases' spans overlap in time.
constexpr std::array<const char*, 3> kPhases = {"fwd", "bwd", "remat"};
constexpr int kStepTrack = 3000;        // tid of a chip's "step" track
constexpr int kBlockTrackBase = 3100;   // + 100 x phase + lane: its "layers <phase>" tracks
constexpr int kFlowIdBase = 1;

// "layer3.fwd.qkv" -> ("layer3", 0); labels without a phase as their second part (or none): nothing.
std::optional<std::pair<std::string, int>> block_of(const std::string& label) {
  const auto dot = label.find('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const auto next = label.find('.', dot + 1);
  const std::string phase = label.substr(dot + 1, next == std::string::npos ? std::string::npos : next - dot - 1);
  for (std::size_t p = 0; p < kPhases.size(); ++p) {
    if (phase == kPhases[p]) return std::make_pair(label.substr(0, dot), static_cast<int>(p));
  }
  return std::nullopt;
}

void name_thread(json& events, std::uint32_t pid, int tid, const std::string& name) {
  events.push_back(
      json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", json{{"name", name}}}});
}

}  // namespace

namespace {

// A timeline lane per TensorCore and unit kind: the built-in kinds core by core, the added kinds (one queue per
// chip) after every core's.
int lane_id(int core, ir::UnitKind unit) {
  const int u = static_cast<int>(unit);
  return u < ir::kBuiltInUnitKinds ? core * ir::kBuiltInUnitKinds + u : 256 * ir::kBuiltInUnitKinds + u;
}

const char* unit_color(ir::UnitKind unit) {
  static constexpr const char* kBuiltIn[ir::kBuiltInUnitKinds] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
                                                                  "#8c564b", "#7f7f7f", "#e377c2"};
  const int u = static_cast<int>(unit);
  return u < ir::kBuiltInUnitKinds ? kBuiltIn[u] : "#17becf";
}

// The bytes an instruction sends over ICI: a collective's or a send's payload.
double ici_bytes_of(const ir::Instruction& ins) {
  const bool network = ins.kind == ir::OpKind::collective || ins.kind == ir::OpKind::send;
  return network ? static_cast<double>(ins.bytes) : 0;
}

// One counter track per chip (Chrome "C" events, in GB/s for a rate or GB for bytes held, per `unit`): the
// running sum of the changes at each time it changes.
void add_counter(json& events, const std::string& name, const char* unit,
                 std::map<std::uint32_t, std::vector<std::pair<double, double>>>& changes) {
  for (auto& [chip, list] : changes) {
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double sum = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      sum += list[i].second;
      if (i + 1 < list.size() && list[i + 1].first == list[i].first) continue;  // one value per time
      // What started and ended cancels to rounding: below a byte (per second) is 0.
      const double value = sum < 1 ? 0.0 : sum / 1e9;
      events.push_back(json{{"name", name}, {"cat", "counter"}, {"ph", "C"}, {"pid", chip}, {"tid", 0},
                            {"ts", list[i].first * 1e6}, {"args", json{{unit, value}}}});
    }
  }
}

}  // namespace

void TraceRecorder::add_step_and_blocks(
    json_events& events, const std::map<std::uint32_t, std::pair<double, double>>& step_extent,
    const std::map<std::uint32_t, std::size_t>& traced_on,
    const std::map<std::tuple<std::uint32_t, int, std::string>, BlockSpan>& blocks) const {
  for (const auto& [chip, extent] : step_extent) {
    name_thread(events, chip, kStepTrack, "step");
    const std::size_t traced = traced_on.at(chip);
    const std::size_t not_traced = dropped_on_.count(chip) != 0 ? dropped_on_.at(chip) : 0;
    events.push_back(json{{"name", "step"}, {"cat", "step"}, {"ph", "X"}, {"pid", chip}, {"tid", kStepTrack},
                          {"ts", extent.first * 1e6}, {"dur", (extent.second - extent.first) * 1e6},
                          {"args", json{{"instructions", traced}, {"not_traced", not_traced}}}});
  }
  // Per chip and phase, in order of start: each span takes the first lane free at its start, so spans on a lane
  // follow each other (a layer's forward can start before the one before it ends: its weights' all-gather).
  std::map<std::pair<std::uint32_t, int>, std::vector<std::pair<const std::string*, const BlockSpan*>>> by_phase;
  for (const auto& [key, span] : blocks) {
    by_phase[{std::get<0>(key), std::get<1>(key)}].emplace_back(&std::get<2>(key), &span);
  }
  for (auto& [key, list] : by_phase) {
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.second->start != b.second->start ? a.second->start < b.second->start : a.second->end > b.second->end;
    });
    std::vector<double> lane_end;
    for (const auto& [name, span] : list) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > span->start) ++lane;
      const int tid = kBlockTrackBase + 100 * key.second + static_cast<int>(lane);
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        name_thread(events, key.first, tid,
                    fmt::format("layers {}{}", kPhases[static_cast<std::size_t>(key.second)],
                                lane == 0 ? std::string() : fmt::format(" {}", lane + 1)));
      }
      lane_end[lane] = span->end;
      events.push_back(json{{"name", fmt::format("{}.{}", *name, kPhases[static_cast<std::size_t>(key.second)])},
                            {"cat", "layer"}, {"ph", "X"}, {"pid", key.first}, {"tid", tid},
                            {"ts", span->start * 1e6}, {"dur", (span->end - span->start) * 1e6},
                            {"args", json{{"instructions", span->instructions}}}});
    }
  }
}

void TraceRecorder::add_collective_flows(json_events& events,
                                         const CollectiveSlices& collectives) {
  // A flow from the chip that started the collective first to each other chip's slice of it, bound to the slices
  // at their middles (an end's "bp": "e" binds it to the slice around it, not the next one).
  int id = kFlowIdBase;
  for (const auto& [key, placed] : collectives) {
    const std::uint32_t instruction = key.first;
    if (placed.size() < 2) continue;
    std::vector<PlacedSlice> order = placed;
    std::stable_sort(order.begin(), order.end(), [](const PlacedSlice& a, const PlacedSlice& b) {
      return a.start != b.start ? a.start < b.start : a.chip < b.chip;
    });
    const PlacedSlice& from = order.front();
    const std::string name = from.label.empty() ? "collective" : from.label;
    for (std::size_t i = 1; i < order.size(); ++i, ++id) {
      const PlacedSlice& to = order[i];
      events.push_back(json{{"name", name}, {"cat", "collective"}, {"ph", "s"}, {"id", id}, {"pid", from.chip},
                            {"tid", from.tid}, {"ts", (from.start + from.end) / 2 * 1e6},
                            {"args", json{{"instruction", instruction}}}});
      events.push_back(json{{"name", name}, {"cat", "collective"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                            {"pid", to.chip}, {"tid", to.tid}, {"ts", (to.start + to.end) / 2 * 1e6},
                            {"args", json{{"instruction", instruction}}}});
    }
  }
}

TraceRecorder::TraceRecorder(std::set<std::uint32_t> chips, std::size_t limit)
    : chips_(std::move(chips)), per_chip_(std::max<std::size_t>(1, limit / std::max<std::size_t>(1, chips_.size()))) {}

void TraceRecorder::set_hbm_in_use(
    std::vector<std::pair<std::uint32_t, std::vector<std::pair<double, double>>>> per_chip) {
  hbm_in_use_.clear();
  for (auto& [chip, changes] : per_chip) {
    if (chips_.count(chip) != 0 && !changes.empty()) hbm_in_use_[chip] = std::move(changes);
  }
}

void TraceRecorder::record(const models::TraceSpan& span) {
  if (chips_.count(span.chip) == 0) return;
  std::size_t& kept = kept_[span.chip];
  if (kept >= per_chip_) {
    ++dropped_;
    ++dropped_on_[span.chip];
    return;
  }
  ++kept;
  spans_.push_back(span);
}

void TraceRecorder::write(const ir::ProgramSet& programs, std::ostream& out, const std::vector<TraceMark>& marks,
                          const std::string& written_by) const {
  auto tid_of = [](const models::TraceSpan& s) { return lane_id(s.core, s.unit); };
  std::vector<models::TraceSpan> spans = spans_;
  std::stable_sort(spans.begin(), spans.end(), [&](const auto& a, const auto& b) {
    if (a.chip != b.chip) return a.chip < b.chip;
    if (a.start != b.start) return a.start < b.start;
    if (tid_of(a) != tid_of(b)) return tid_of(a) < tid_of(b);
    return a.instruction < b.instruction;
  });
  json events = json::array();
  std::set<std::pair<std::uint32_t, int>> named;
  // Where each collective's slice went, by instruction index and label (the chips' programs may differ): flows
  // tie its chips' slices together below.
  std::map<std::pair<std::uint32_t, std::string>, std::vector<PlacedSlice>> collectives;
  // Per chip the step's extent and each (block, phase)'s, from the labels ("layer3.fwd.qkv").
  std::map<std::uint32_t, std::pair<double, double>> step_extent;
  std::map<std::uint32_t, std::size_t> traced_on;
  std::map<std::tuple<std::uint32_t, int, std::string>, BlockSpan> blocks;
  // Several collectives (and sends) are in flight at once on a chip's ICI unit: each gets the first ICI lane
  // free at its start, a track of its own ("ici 1", "ici 2", ...), so overlapping spans never share a track.
  constexpr int kIciLaneBase = 1000;
  std::map<std::uint32_t, std::vector<double>> ici_lane_end;  // per chip: when each lane frees
  // Counter tracks: per chip, each instruction's HBM bytes and ICI bytes spread evenly over its slice, as
  // (time, change of the rate in B/s) pairs summed below.
  std::map<std::uint32_t, std::vector<std::pair<double, double>>> hbm_rate, ici_rate;
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
    const std::string& label = prog.label_of(ins);
    const double start = s.start.value(), end = s.end.value();
    if (ins.kind == ir::OpKind::collective) {
      collectives[{s.instruction, label}].push_back(PlacedSlice{s.chip, tid, start, end, label});
    }
    auto [extent, first] = step_extent.emplace(s.chip, std::make_pair(start, end));
    if (!first) extent->second = {std::min(extent->second.first, start), std::max(extent->second.second, end)};
    ++traced_on[s.chip];
    if (const auto block = block_of(label)) {
      BlockSpan& b = blocks[{s.chip, block->second, block->first}];
      b.start = b.instructions == 0 ? start : std::min(b.start, start);
      b.end = b.instructions == 0 ? end : std::max(b.end, end);
      ++b.instructions;
    }
    if (end > start) {
      const double hbm = hbm_bytes_of(ins), ici = ici_bytes_of(ins);
      if (hbm > 0) {
        hbm_rate[s.chip].emplace_back(start, hbm / (end - start));
        hbm_rate[s.chip].emplace_back(end, -hbm / (end - start));
      }
      if (ici > 0) {
        ici_rate[s.chip].emplace_back(start, ici / (end - start));
        ici_rate[s.chip].emplace_back(end, -ici / (end - start));
      }
    }
    json args{{"instruction", s.instruction}};
    if (ins.kind == ir::OpKind::matmul) args["mkn"] = fmt::format("{}x{}x{}", ins.shape.m, ins.shape.k, ins.shape.n);
    if (ins.bytes > 0) args["bytes"] = ins.bytes;
    if (ins.kind == ir::OpKind::matmul && ins.shape.batch > 1) args["batch"] = ins.shape.batch;
    if (const double hbm = hbm_bytes_of(ins); hbm > 0) args["hbm_bytes"] = static_cast<std::uint64_t>(hbm);
    if (ins.op_class != ir::OpClass::other) args["class"] = std::string(ir::op_class_name(ins.op_class));
    events.push_back(json{{"name", label.empty() ? std::string(ir::op_name(ins.kind)) : label},
                          {"cat", std::string(ir::unit_name(s.unit))},
                          {"ph", "X"},
                          {"pid", s.chip},
                          {"tid", tid},
                          {"ts", s.start.value() * 1e6},
                          {"dur", (s.end - s.start).value() * 1e6},
                          {"args", args}});
  }
  add_counter(events, "HBM bandwidth", "GB/s", hbm_rate);
  add_counter(events, "ICI bandwidth", "GB/s", ici_rate);
  if (!hbm_in_use_.empty()) {
    auto in_use = hbm_in_use_;  // add_counter sorts each chip's changes in place
    add_counter(events, "HBM in use", "GB", in_use);
  }
  add_step_and_blocks(events, step_extent, traced_on, blocks);
  add_collective_flows(events, collectives);
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
    const int tid = lane_id(s.core, s.unit);
    lanes[tid].emplace_back(s.start.value(), s.end.value());
    lane_of[tid] = {s.core, s.unit};
    t_end = std::max(t_end, s.end.value());
  }
  const double height = kTop + kLane * static_cast<double>(lanes.size()) + 60;
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     kLeft + kPlotWidth + 60, height)
      << "\n";
  out << fmt::format(R"(<text x="10" y="18" font-size="14">{}</text>)", svg_escape(title)) << "\n";
  if (lanes.empty() || t_end <= 0) {
    out << R"(<text x="10" y="40">no instructions were traced</text></svg>)" << "\n";
    return;
  }
  const double scale = kPlotWidth / t_end;
  // The time axis in round steps of the step's unit, its grid behind the lanes.
  const double axis_y = kTop + kLane * static_cast<double>(lanes.size()) + 14;
  for (double t : nice_ticks(0, t_end, Quantity::seconds, false, 8)) {
    if (t > t_end * (1 + 1e-9)) break;
    out << fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#ccc"/>)"
                       R"(<text x="{0:.1f}" y="{3:.1f}" text-anchor="middle">{4}</text>)",
                       kLeft + t * scale, kTop - 2, axis_y - 10, axis_y, readable(t, Quantity::seconds))
        << "\n";
  }
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
                         unit_color(unit))
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
  // A colour legend naming each unit drawn.
  std::set<ir::UnitKind> units;
  for (const auto& lane : lane_of) units.insert(lane.second.second);
  double lx = 10;
  for (ir::UnitKind u : units) {
    out << fmt::format(R"(<g class="legend-entry"><rect x="{:.0f}" y="{:.1f}" width="12" height="12" fill="{}"/><text x="{:.0f}" y="{:.1f}">{}</text></g>)",
                       lx, axis_y + 12, unit_color(u), lx + 16, axis_y + 22, ir::unit_name(u))
        << "\n";
    lx += 24 + 7.0 * static_cast<double>(std::string(ir::unit_name(u)).size());
  }
  out << "</svg>\n";
}

}  // namespace tpusim::tools
