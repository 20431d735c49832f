#include <algorithm>
#include "tools/src/report.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "tools/src/readable.h"
#include "tpusim/core/version.h"

namespace tpusim::tools {
namespace {

using json = nlohmann::ordered_json;

json scalar_json(const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  if (!v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-')) {
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (*end == '\0') return n;
  }
  if (v.size() >= 2 && v.front() == '[' && v.back() == ']') {
    json arr = json::array();
    std::string inner = v.substr(1, v.size() - 2);
    std::size_t start = 0;
    while (start < inner.size()) {
      const auto comma = inner.find(',', start);
      std::string item = inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      arr.push_back(scalar_json(item));  // numbers stay numbers, choice names stay names
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return arr;
  }
  return v;
}

json spread_json(const Spread& s) { return json{{"mean", s.mean}, {"min", s.min}, {"max", s.max}}; }

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

constexpr std::size_t kTopOpsInSummary = 20;  // summary.json's top_ops; ops.csv has them all
constexpr std::size_t kTopOpsOnStdout = 10;

nlohmann::ordered_json op_json(const RunReport& r, const OpTime& o) {
  return nlohmann::ordered_json{{"op", o.name},
                                {"unit", o.unit},
                                {"instructions", o.instructions},
                                {"time_s", o.time_s},
                                {"share", ratio(o.time_s, r.figures.step_time_s)},
                                {"active_s", o.active_s},
                                {"flops", o.flops},
                                {"hbm_bytes", o.hbm_bytes},
                                {"moved_bytes", o.moved_bytes},
                                {"flops_per_s", ratio(o.flops, o.active_s)},
                                {"hbm_bytes_per_s", ratio(o.hbm_bytes, o.active_s)},
                                {"bound_by", op_bound_by(r, o)}};
}

// Four significant digits: enough to read, few enough to scan a column (readable.h).
std::string short_time(double s) { return readable(s, Quantity::seconds); }
std::string bytes_text(double b) { return readable(b, Quantity::bytes); }

}  // namespace

json nest_rendered(const std::vector<std::pair<std::string, std::string>>& flat) {
  json root = json::object();
  for (const auto& [key, value] : flat) {
    json* node = &root;
    std::size_t start = 0;
    while (true) {
      const auto dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (dot == std::string::npos) {
        (*node)[part] = scalar_json(value);
        break;
      }
      node = &(*node)[part];
      start = dot + 1;
    }
  }
  return root;
}

json summary_json(const Scenario& scenario, const RunReport& r) {
  json j;
  j["format"] = "tpusim-summary";
  j["schema_version"] = 2;
  j["tpusim_version"] = std::string(version());
  j["seed"] = scenario.seed;
  j["status"] = "complete";
  j["scenario"] = nest_rendered(render_scenario(scenario));

  const double step = r.figures.step_time_s;
  json m;
  m["step_time_s"] = step;
  m["model_flops"] = r.figures.model_flops;
  m["hardware_flops"] = r.figures.hardware_flops;
  m["peak_flops_per_s"] = r.figures.peak_flops_per_s;
  m["mfu"] = ratio(r.figures.model_flops, step * r.figures.peak_flops_per_s);
  m["hfu"] = ratio(r.figures.hardware_flops, step * r.figures.peak_flops_per_s);
  m["chips"] = r.figures.chips;
  if (r.figures.examples_per_step > 0) m["examples_per_s"] = ratio(r.figures.examples_per_step, step);
  if (r.figures.tokens_per_step > 0) m["tokens_per_s"] = ratio(r.figures.tokens_per_step, step);
  if (r.figures.step == StepKind::prefill) m["time_to_first_token_s"] = step;
  if (r.figures.step == StepKind::decode) m["time_per_output_token_s"] = step;
  j["metrics"] = m;
  if (r.memory.plan) {
    json cats = json::object();
    for (const auto& [name, b] : r.memory.plan->categories()) cats[name] = b.count();
    j["memory"] = json{{"capacity_bytes", r.memory.plan->capacity.count()},
                       {"total_bytes", r.memory.plan->total().count()},
                       {"categories", cats}};
    // Host memory, when a remat policy offloads activations there (absent otherwise).
    if (r.memory.plan->host_offload.count() > 0) {
      j["memory"]["host_offload_bytes"] = r.memory.plan->host_offload.count();
      j["memory"]["host_capacity_bytes"] = r.memory.plan->host_capacity.count();
    }
    if (r.memory.in_use) {
      const MemoryInUse& u = *r.memory.in_use;
      json slices = json::array();
      for (double b : u.slice_peak_bytes) slices.push_back(std::llround(b));
      j["memory"]["in_use"] = json{{"chip", u.chip},
                                   {"peak_bytes", std::llround(u.peak_bytes)},
                                   {"peak_at_s", u.peak_at_s},
                                   {"slice_s", u.slice_s},
                                   {"slice_peak_bytes", slices}};
      // Pipelines: the stage above is the fullest; every stage's peak (its first chip's) beside it.
      if (!r.memory.in_use_by_stage.empty()) {
        j["memory"]["in_use"]["stage"] = u.program;
        json stages = json::array();
        for (const MemoryInUse& s : r.memory.in_use_by_stage) {
          stages.push_back(json{{"stage", s.program},
                                {"chip", s.chip},
                                {"peak_bytes", std::llround(s.peak_bytes)},
                                {"peak_at_s", s.peak_at_s}});
        }
        j["memory"]["in_use_by_stage"] = stages;
      }
    }
  }
  json classes = json::object();
  for (const auto& c : r.time.op_classes) {
    classes[c.name] = json{{"time_s", c.time_s},
                           {"share", ratio(c.time_s, step)},
                           {"busy_s", c.busy_s},
                           {"instructions", c.instructions}};
  }
  classes["idle_s"] = r.time.op_idle_s;
  j["op_classes"] = classes;
  json top = json::array();
  for (std::size_t i = 0; i < r.time.ops.size() && i < kTopOpsInSummary; ++i) top.push_back(op_json(r, r.time.ops[i]));
  j["top_ops"] = top;
  if (!r.time.exposed_collectives_s.empty()) {
    json exposed = json::object();
    for (const auto& [kind, t] : r.time.exposed_collectives_s) exposed[kind + "_s"] = t;
    j["exposed_communication"] = exposed;
  }
  if (r.chip_rows.size() > 1) j["chip_spread"] = chip_spread_json(r);  // simulation_report.h

  json b = json::object();
  for (const auto& [k, v] : r.time.breakdown_s) b[k + "_s"] = v;
  j["breakdown"] = b;

  json units = json::object();
  for (const auto& u : r.units) {
    json stalled_by = json::object();
    for (const auto& [reason, v] : u.stalled_by_s) stalled_by[reason] = v;
    units[u.name] = json{{"busy_s", spread_json(u.busy_s)},
                         {"utilization", spread_json(u.utilization)},
                         {"bytes", u.bytes},
                         {"instructions", u.instructions},
                         {"stalled_s", u.stalled_s},
                         {"stalled_by_s", stalled_by},
                         {"queue_slots_s", u.queue_slots_s},
                         {"idle_s", u.idle_s}};
    if (u.name == "mxu") {
      units[u.name]["per_array_utilization"] =
          json{{"min", r.mxu_array_utilization.min}, {"max", r.mxu_array_utilization.max}};
    }
  }
  j["units"] = units;
  if (!r.block_stats.empty()) {
    json blocks = json::object();
    for (const BlockStatRow& b : r.block_stats) {
      blocks[b.block][b.key] =
          json{{"total", b.total}, {"mean", b.per_chip.mean}, {"min", b.per_chip.min}, {"max", b.per_chip.max}};
    }
    j["blocks"] = blocks;
  }
  j["bytes"] = json{{"hbm_read", r.hbm_bytes_read}, {"hbm_written", r.hbm_bytes_written}};
  j["program"] = json{{"programs", r.programs}, {"instructions", r.instructions}};
  const NetworkReport& net = r.network;
  double link_bytes = 0;
  for (const auto& l : net.links) link_bytes += l.bytes;
  j["links"] = json{{"model", net.link_model},
                    {"count", net.links.size()},
                    {"bytes", link_bytes},
                    {"utilization", json{{"mean", net.link_utilization.mean}, {"max", net.link_utilization.max}}}};
  if (net.dcn_nics > 0) {
    j["links"]["dcn"] = json{{"nics", net.dcn_nics},
                             {"bytes", net.dcn_bytes},
                             {"utilization",
                              json{{"mean", net.dcn_utilization.mean}, {"max", net.dcn_utilization.max}}}};
    if (net.dcn_uplinks > 0) {
      j["links"]["dcn"]["uplinks"] =
          json{{"count", net.dcn_uplinks},
               {"utilization", json{{"mean", net.dcn_uplink_utilization.mean},
                                    {"max", net.dcn_uplink_utilization.max}}}};
    }
  }
  json colls = json::array();
  for (const auto& c : r.network.collectives) {
    colls.push_back(json{{"program", c.program},
                         {"instruction", c.instruction},
                         {"op", c.op},
                         {"algorithm", c.algorithm},
                         {"participants", c.participants},
                         {"steps", c.steps},
                         {"bytes_per_chip", c.bytes_per_chip},
                         {"time_s", c.time_s},
                         {"ideal_time_s", c.ideal_s},
                         {"efficiency", ratio(c.ideal_s, c.time_s)},
                         {"algorithm_bandwidth_bytes_per_s", c.algorithm_bandwidth},
                         {"bus_bandwidth_bytes_per_s", c.bus_bandwidth}});
  }
  j["collectives"] = colls;
  j["faults"] = json{{"timeline", json::array()}};
  j["notes"] = r.notes;
  return j;
}

std::string op_bound_by(const RunReport& r, const OpTime& op) {
  if (op.unit == "mxu") {
    const double per_chip_peak =
        ratio(r.figures.peak_flops_per_s, static_cast<double>(std::max<long long>(1, r.figures.chips)));
    const double mxu = ratio(op.flops, per_chip_peak), hbm = ratio(op.hbm_bytes, r.time.hbm_bandwidth);
    // Neither the MXU at peak nor HBM at its bandwidth takes half the op's time: start-up, fill and drain,
    // step overheads or waiting on another unit do.
    if (std::max(mxu, hbm) < 0.5 * op.active_s) return "latency";
    return mxu >= hbm ? "mxu" : "hbm";
  }
  if (op.unit == "vpu") return ratio(op.hbm_bytes, r.time.hbm_bandwidth) >= 0.5 * op.active_s ? "hbm" : "vpu";
  return op.unit;
}

void write_ops_csv(const RunReport& r, std::ostream& out) {
  out << "op,unit,instructions,time_s,share,active_s,flops,hbm_bytes,moved_bytes,flops_per_s,hbm_bytes_per_s,bound_by\n";
  for (const OpTime& o : r.time.ops) {
    out << fmt::format("{},{},{:.6g},{:.9g},{:.6f},{:.9g},{:.17g},{:.17g},{:.17g},{:.9g},{:.9g},{}\n", o.name, o.unit,
                       o.instructions, o.time_s, ratio(o.time_s, r.figures.step_time_s), o.active_s, o.flops,
                       o.hbm_bytes, o.moved_bytes, ratio(o.flops, o.active_s), ratio(o.hbm_bytes, o.active_s),
                       op_bound_by(r, o));
  }
}

void write_chips_csv(const RunReport& r, std::ostream& out) {
  std::vector<std::string> unit_names, categories;
  if (!r.chip_rows.empty()) {
    for (const auto& [k, v] : r.chip_rows.front().busy_s) unit_names.push_back(k);
    for (const auto& kv : r.chip_rows.front().breakdown_s) categories.push_back(kv.first);
  }
  out << "chip,finish_s";
  for (const auto& u : unit_names) out << "," << u << "_busy_s," << u << "_utilization";
  for (const auto& c : categories) out << "," << c << "_s";
  out << "\n";
  for (const auto& row : r.chip_rows) {
    out << row.chip << "," << fmt::format("{:.9g}", row.finish_s);
    for (const auto& u : unit_names) {
      out << "," << fmt::format("{:.9g}", row.busy_s.at(u)) << "," << fmt::format("{:.6f}", row.utilization.at(u));
    }
    for (const auto& kv : row.breakdown_s) out << "," << fmt::format("{:.9g}", kv.second);
    out << "\n";
  }
}

void write_links_csv(const RunReport& r, std::ostream& out) {
  out << "link,src_chip,dst_chip,axis,direction,kind,bytes,busy_s,utilization,queueing_s\n";
  for (const auto& l : r.network.links) {
    out << fmt::format("{},{},{},{},{},{},{:.0f},{:.9g},{:.6f},{:.9g}\n", l.link, l.src, l.dst, l.axis, l.direction,
                       l.kind, l.bytes, l.busy_s, l.utilization, l.queueing_s);
  }
}

void print_table(const Scenario& s, const RunReport& r, std::ostream& out) {
  const double step = r.figures.step_time_s;
  out << fmt::format("tpusim {} | scenario {} | {} on {} ({} chip{})\n", version(), s.name,
                     s.workload.program.empty() ? s.workload.model.name : s.workload.program, s.pod.name,
                     r.figures.chips, r.figures.chips == 1 ? "" : "s");
  if (!r.mesh.empty()) out << fmt::format("  {:<22}{}\n", "mesh", r.mesh);
  if (!r.sharding.empty()) out << fmt::format("  {:<22}{}\n", "sharding", r.sharding);
  out << fmt::format("  {:<22}{}\n", "step time", short_time(step));
  out << fmt::format("  {:<22}{} ({} executed)\n", "model FLOPs", readable(r.figures.model_flops, Quantity::flops),
                     readable(r.figures.hardware_flops, Quantity::flops));
  out << fmt::format("  {:<22}{:.1f}%   (peak {})\n", "MFU",
                     100 * ratio(r.figures.model_flops, step * r.figures.peak_flops_per_s),
                     readable(r.figures.peak_flops_per_s, Quantity::flops_per_s));
  // A decode step's examples are its tokens (one per sequence); a prefill's are its prompts.
  if (r.figures.examples_per_step > 0 && r.figures.step != StepKind::decode) {
    out << fmt::format("  {:<22}{}\n", r.figures.step == StepKind::prefill ? "prompts/s" : "examples/s",
                       readable(ratio(r.figures.examples_per_step, step), Quantity::count));
  }
  if (r.figures.tokens_per_step > 0) {
    out << fmt::format("  {:<22}{}\n", "tokens/s", readable(ratio(r.figures.tokens_per_step, step), Quantity::count));
  }
  if (r.figures.step == StepKind::prefill) out << fmt::format("  {:<22}{}\n", "time to first token", short_time(step));
  if (r.figures.step == StepKind::decode) out << fmt::format("  {:<22}{}\n", "time per output token", short_time(step));
  out << fmt::format("  {:<22}{} read, {} written\n", "HBM traffic", bytes_text(static_cast<double>(r.hbm_bytes_read)),
                     bytes_text(static_cast<double>(r.hbm_bytes_written)));
  if (r.memory.plan) {
    std::string parts;
    for (const auto& [name, b] : r.memory.plan->categories()) {
      if (b.count() > 0) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name, bytes_text(b.as_double()));
    }
    out << fmt::format("  {:<22}{} of {} per chip ({})\n", "HBM plan", bytes_text(r.memory.plan->total().as_double()),
                       bytes_text(r.memory.plan->capacity.as_double()), parts);
    if (r.memory.in_use) {
      const std::string stage =
          r.memory.in_use_by_stage.empty()
              ? std::string()
              : fmt::format(" (stage {}, the fullest of {})", r.memory.in_use->program,
                            r.memory.in_use_by_stage.size());
      out << fmt::format("  {:<22}peak {} at {} on chip {}{}, as the step ran\n", "HBM in use",
                         bytes_text(r.memory.in_use->peak_bytes), short_time(r.memory.in_use->peak_at_s),
                         r.memory.in_use->chip, stage);
      if (!r.memory.in_use_by_stage.empty()) {
        std::string peaks;
        for (const MemoryInUse& s : r.memory.in_use_by_stage) {
          peaks += fmt::format("{}stage {} {}", peaks.empty() ? "" : ", ", s.program, bytes_text(s.peak_bytes));
        }
        out << fmt::format("  {:<22}{} (each stage's first chip)\n", "HBM in use by stage", peaks);
      }
    }
    if (r.memory.plan->host_offload.count() > 0) {
      out << fmt::format("  {:<22}{} of {} per chip (activations offloaded by the remat policy)\n", "host memory",
                         bytes_text(r.memory.plan->host_offload.as_double()),
                         bytes_text(r.memory.plan->host_capacity.as_double()));
    }
  }
  const auto shown = [](const UnitReport& u) { return u.listed_when_unused || u.instructions > 0; };
  std::size_t name_w = 6;
  for (const auto& u : r.units) {
    if (shown(u)) name_w = std::max(name_w, u.name.size());
  }
  out << fmt::format("\n  {:<{}} busy (mean)   utilization mean/min/max     stalled   (mostly on)\n", "unit", name_w);
  for (const auto& u : r.units) {
    if (!shown(u)) continue;
    std::string on;
    double most = 0;
    for (const auto& [reason, v] : u.stalled_by_s) {
      if (v > most) {
        most = v;
        on = reason;
      }
    }
    out << fmt::format("  {:<{}} {:>11}   {:5.1f}% / {:5.1f}% / {:5.1f}%   {:>11}   {}\n", u.name, name_w,
                       short_time(u.busy_s.mean), 100 * u.utilization.mean, 100 * u.utilization.min,
                       100 * u.utilization.max, short_time(u.stalled_s), on);
  }
  if (r.mxu_array_utilization.max > 0) {
    out << fmt::format("  MXU arrays: utilization min {:.1f}%, max {:.1f}% (single arrays, over all chips)\n",
                       100 * r.mxu_array_utilization.min, 100 * r.mxu_array_utilization.max);
  }
  for (const BlockStatRow& b : r.block_stats) {
    out << fmt::format("  {}.{}: {:.6g} over all chips, {:.6g} per chip (min {:.6g}, max {:.6g})\n", b.block, b.key,
                       b.total, b.per_chip.mean, b.per_chip.min, b.per_chip.max);
  }
  if (!r.network.links.empty()) {
    const NetworkReport& net = r.network;
    out << fmt::format("\n  ICI links ({}, {} directed): utilization mean {:.1f}%, max {:.1f}%\n", net.link_model,
                       net.links.size(), 100 * net.link_utilization.mean, 100 * net.link_utilization.max);
  }
  if (r.network.dcn_nics > 0) {
    out << fmt::format("  DCN ({} host NICs): {} sent, utilization mean {:.1f}%, max {:.1f}%\n", r.network.dcn_nics,
                       bytes_text(r.network.dcn_bytes), 100 * r.network.dcn_utilization.mean,
                       100 * r.network.dcn_utilization.max);
    if (r.network.dcn_uplinks > 0) {
      out << fmt::format("  DCN fabric ({} slice uplinks): utilization mean {:.1f}%, max {:.1f}%\n",
                         r.network.dcn_uplinks, 100 * r.network.dcn_uplink_utilization.mean,
                         100 * r.network.dcn_uplink_utilization.max);
    }
  }
  if (!r.network.collectives.empty()) {
    // One line per distinct (kind, algorithm, group size, bytes), in order of first appearance: a sharded model
    // runs the same collective once per layer. summary.json keeps every instance.
    struct Line {
      const CollectiveRow* first;
      int count = 0;
      double time_s = 0, ideal_s = 0, bus_bandwidth = 0;  // sums
    };
    std::vector<Line> lines;
    for (const auto& c : r.network.collectives) {
      auto same = [&](const Line& l) {
        return l.first->op == c.op && l.first->algorithm == c.algorithm && l.first->participants == c.participants &&
               l.first->bytes_per_chip == c.bytes_per_chip;
      };
      auto it = std::find_if(lines.begin(), lines.end(), same);
      if (it == lines.end()) it = lines.insert(lines.end(), Line{&c});
      ++it->count;
      it->time_s += c.time_s;
      it->ideal_s += c.ideal_s;
      it->bus_bandwidth += c.bus_bandwidth;
    }
    out << "\n  collective       algorithm            chips    size/chip  count   time (mean)       ideal   bus bw (mean)\n";
    for (const auto& l : lines) {
      const double n = l.count;
      out << fmt::format("  {:<16} {:<19} {:>6} {:>12} {:>6} {:>13} {:>11}   {}\n", l.first->op, l.first->algorithm,
                         l.first->participants, bytes_text(l.first->bytes_per_chip), l.count,
                         short_time(l.time_s / n), short_time(l.ideal_s / n),
                         readable(l.bus_bandwidth / n, Quantity::bytes_per_s));
    }
  }
  if (!r.time.exposed_collectives_s.empty()) {
    out << "\n  exposed communication by collective\n";
    for (const auto& [kind, t] : r.time.exposed_collectives_s) {
      out << fmt::format("  {:<16}{:>11}  {:5.1f}%\n", kind, short_time(t), 100 * ratio(t, step));
    }
  }
  if (!r.time.op_classes.empty()) {
    out << "\n  by op class (time attributed, see docs/summary-format.md)\n";
    for (const auto& c : r.time.op_classes) {
      out << fmt::format("  {:<16}{:>11}  {:5.1f}%\n", c.name, short_time(c.time_s), 100 * ratio(c.time_s, step));
    }
  }
  if (!r.time.ops.empty()) {
    out << fmt::format("\n  top ops by time (of {}; all in ops.csv)\n", r.time.ops.size());
    out << fmt::format("  {:<34} {:>5} {:>10} {:>6} {:>13} {:>11}  {}\n", "op", "unit", "time", "share", "FLOP/s",
                       "HBM", "bound by");
    for (std::size_t i = 0; i < r.time.ops.size() && i < kTopOpsOnStdout; ++i) {
      const OpTime& o = r.time.ops[i];
      out << fmt::format("  {:<34} {:>5} {:>10} {:5.1f}% {:>13} {:>11}  {}\n", o.name.substr(0, 34), o.unit,
                         short_time(o.time_s), 100 * ratio(o.time_s, step),
                         o.flops > 0 ? readable(ratio(o.flops, o.active_s), Quantity::flops_per_s) : "-",
                         o.hbm_bytes > 0 ? readable(ratio(o.hbm_bytes, o.active_s), Quantity::bytes_per_s) : "-",
                         op_bound_by(r, o));
    }
  }
  out << "\n  where the time went (mean over chips)\n";
  for (const auto& [k, v] : r.time.breakdown_s) {
    out << fmt::format("  {:<14}{:>11}  {:5.1f}%\n", k, short_time(v), 100 * ratio(v, step));
  }
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
}

}  // namespace tpusim::tools
