#include "tools/src/compare.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/readable.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/core/utf8.h"
#include "tpusim/core/version.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::ordered_json;

// The summary.json schema this tpusim writes and reads (docs/summary-format.md).
constexpr int kSummarySchema = 2;
// Relative differences up to this are shown as ~0 in the table (the files keep them): far below what four
// digits show, and above the rounding of sums of doubles (about 1e-16 per term).
constexpr double kRoundingNoise = 1e-9;

// An input compare will not read: bad input, exit 2. what() starts with the path.
class CompareRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Run {
  std::string label;  // the argument as given
  fs::path file;      // its summary.json
  json summary;
};

// "line L, column C" of byte `at` of `text` (nlohmann reports a byte offset).
std::string position(const std::string& text, std::size_t at) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i + 1 < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

Run load_run(const std::string& arg) {
  Run run{arg, fs::path(arg), {}};
  std::error_code ec;
  if (fs::is_directory(run.file, ec)) {
    run.file /= "summary.json";
    if (!fs::exists(run.file, ec)) {
      throw CompareRefused(fmt::format("{}: no summary.json in this folder (expected the output folder of a "
                                       "`tpusim run`, or its summary.json)", arg));
    }
  } else if (!fs::exists(run.file, ec)) {
    throw CompareRefused(fmt::format("{}: no such file or folder", arg));
  }
  std::ifstream in(run.file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw CompareRefused(fmt::format("{}: cannot be read", run.file.string()));
  const std::string body = text.str();
  try {
    run.summary = json::parse(body);
  } catch (const json::parse_error& e) {
    throw CompareRefused(fmt::format("{}:{}: not a tpusim summary: expected JSON, found malformed text",
                                     run.file.string(), position(body, e.byte)));
  }
  const auto found = [&](const char* key) {
    return run.summary.is_object() && run.summary.contains(key) ? run.summary[key].dump() : std::string("nothing");
  };
  if (!run.summary.is_object() || run.summary.value("format", json()) != "tpusim-summary") {
    throw CompareRefused(fmt::format("{}: key 'format': not a tpusim summary: expected \"tpusim-summary\", found {}",
                                     run.file.string(), found("format")));
  }
  if (run.summary.value("schema_version", json()) != kSummarySchema) {
    throw CompareRefused(fmt::format("{}: key 'schema_version': a summary of another format version: expected {}, "
                                     "found {} (written by tpusim {}; compare runs of this release)",
                                     run.file.string(), kSummarySchema, found("schema_version"),
                                     run.summary.value("tpusim_version", std::string("?"))));
  }
  return run;
}

using Values = std::vector<std::pair<std::string, double>>;  // dotted key -> number, in the file's order

// The numbers under `j`, as dotted keys below `prefix` (arrays and text left out).
void numbers(const json& j, const std::string& prefix, Values& out) {
  if (j.is_number()) {
    out.emplace_back(prefix, j.get<double>());
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) numbers(v, prefix + "." + k, out);
  }
}

// What compare shows of one run, section by section (see compare.h).
std::vector<std::pair<std::string, Values>> sections(const json& s) {
  std::vector<std::pair<std::string, Values>> out;
  const auto section = [&](const char* name) -> Values& { return out.emplace_back(name, Values{}).second; };
  for (const char* name : {"metrics", "breakdown", "memory"}) {
    Values& v = section(name);
    if (s.contains(name)) numbers(s[name], name, v);
  }
  Values& classes = section("op_classes");
  if (s.contains("op_classes")) {
    for (const auto& [k, v] : s["op_classes"].items()) {
      if (v.is_object() && v.contains("time_s")) {
        classes.emplace_back("op_classes." + k + ".time_s", v["time_s"].get<double>());
      }
      if (v.is_number()) classes.emplace_back("op_classes." + k, v.get<double>());
    }
  }
  Values& exposed = section("exposed_communication");
  if (s.contains("exposed_communication")) numbers(s["exposed_communication"], "exposed_communication", exposed);
  // Collectives per kind: a sharded model runs each once per layer; the sums say what the kind cost in all.
  Values& colls = section("collectives");
  if (s.contains("collectives")) {
    std::vector<std::string> kinds;
    std::map<std::string, std::array<double, 3>> sums;  // count, time, bytes per chip
    for (const auto& c : s["collectives"]) {
      const std::string op = c.value("op", std::string("?"));
      if (sums.find(op) == sums.end()) kinds.push_back(op);
      auto& sum = sums[op];
      sum[0] += 1;
      sum[1] += c.value("time_s", 0.0);
      sum[2] += c.value("bytes_per_chip", 0.0);
    }
    for (const auto& k : kinds) {
      colls.emplace_back("collectives." + k + ".count", sums[k][0]);
      colls.emplace_back("collectives." + k + ".time_s", sums[k][1]);
      colls.emplace_back("collectives." + k + ".bytes_per_chip", sums[k][2]);
    }
  }
  for (const char* name : {"links", "job"}) {
    Values& v = section(name);
    if (s.contains(name)) numbers(s[name], name, v);
  }
  return out;
}

struct Row {
  std::string key;
  Quantity quantity = Quantity::count;
  std::vector<std::optional<double>> values;  // per run; nullopt: the run does not report it
};

// The rows of all runs: per section, every key any run reports, in order of first appearance.
std::vector<std::pair<std::string, std::vector<Row>>> rows_of(const std::vector<Run>& runs) {
  std::vector<std::vector<std::pair<std::string, Values>>> per_run;
  for (const auto& r : runs) per_run.push_back(sections(r.summary));
  std::vector<std::pair<std::string, std::vector<Row>>> out;
  for (std::size_t sec = 0; sec < per_run.front().size(); ++sec) {
    std::vector<Row> rows;
    for (std::size_t run = 0; run < runs.size(); ++run) {
      for (const auto& entry : per_run[run][sec].second) {  // no structured binding: the lambda captures the key
        const std::string& key = entry.first;
        const auto& value = entry.second;
        auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.key == key; });
        if (it == rows.end()) {
          it = rows.insert(rows.end(), Row{key, quantity_of_key(key), std::vector<std::optional<double>>(runs.size())});
        }
        it->values[run] = value;
      }
    }
    if (!rows.empty()) out.emplace_back(per_run.front()[sec].first, std::move(rows));
  }
  return out;
}

// The resolved scenario fields whose values differ between the runs ("-" where a run has none).
std::vector<std::pair<std::string, std::vector<std::string>>> scenario_differences(const std::vector<Run>& runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> all;
  std::function<void(const json&, const std::string&, std::size_t)> walk = [&](const json& j, const std::string& key,
                                                                              std::size_t run) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) walk(v, key.empty() ? k : key + "." + k, run);
      return;
    }
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.first == key; });
    if (it == all.end()) it = all.insert(all.end(), {key, std::vector<std::string>(runs.size(), "-")});
    it->second[run] = j.is_string() ? j.get<std::string>() : j.dump();
  };
  for (std::size_t run = 0; run < runs.size(); ++run) {
    walk(runs[run].summary.value("scenario", json::object()), "", run);
    // The seed and the release belong to what made the numbers too.
    walk(json{{"seed", runs[run].summary.value("seed", json())}}, "", run);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (auto& e : all) {
    if (std::adjacent_find(e.second.begin(), e.second.end(), std::not_equal_to<>()) != e.second.end()) {
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::optional<double> delta(const Row& r, std::size_t run) {
  if (!r.values[0] || !r.values[run]) return std::nullopt;
  return *r.values[run] - *r.values[0];
}

std::optional<double> delta_pct(const Row& r, std::size_t run) {
  const auto d = delta(r, run);
  if (!d || *r.values[0] == 0) return std::nullopt;
  return 100 * *d / std::fabs(*r.values[0]);
}

const char* unit_name(Quantity q) {
  switch (q) {
    case Quantity::seconds: return "s";
    case Quantity::bytes: return "B";
    case Quantity::flops: return "FLOP";
    case Quantity::flops_per_s: return "FLOP/s";
    case Quantity::bytes_per_s: return "B/s";
    case Quantity::per_s: return "1/s";
    case Quantity::count:
    case Quantity::fraction: return "1";
  }
  return "1";
}

std::string pct_text(std::optional<double> p) {
  if (!p) return "-";
  // Three significant digits, written out above 1000% as the values are (+14000%, not +1.4e+04%).
  return std::fabs(*p) >= 1000 ? fmt::format("{:+.0f}%", *p) : fmt::format("{:+.3g}%", *p);
}

void print_aligned(const std::vector<std::vector<std::string>>& lines, std::ostream& out) {
  std::vector<std::size_t> width;
  for (const auto& l : lines) {
    width.resize(std::max(width.size(), l.size()));
    for (std::size_t c = 0; c < l.size(); ++c) width[c] = std::max(width[c], l[c].size());
  }
  for (const auto& l : lines) {
    std::string text = "  ";
    for (std::size_t c = 0; c < l.size(); ++c) {
      // The first column (names) reads left-aligned, the numbers right-aligned.
      text += c == 0 ? fmt::format("{:<{}}", l[c], width[c]) : fmt::format("  {:>{}}", l[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  }
}

void print_table(const std::vector<Run>& runs,
                 const std::vector<std::pair<std::string, std::vector<std::string>>>& differences,
                 const std::vector<std::pair<std::string, std::vector<Row>>>& rows, std::ostream& out) {
  out << fmt::format("tpusim compare: {} runs, differences against run 1\n", runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << fmt::format("  run {}  {}  ({}, seed {})\n", i + 1, runs[i].label,
                       runs[i].summary.value(json::json_pointer("/scenario/name"), std::string("?")),
                       runs[i].summary.value("seed", json()).dump());
  }
  // A job that failed (job.recovery fail) has a goodput and a wall time of the part it ran: said before its
  // numbers are set against a finished job's, where a job stopped halfway reads a goodput ten times better.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const json& job = runs[i].summary.value("job", json::object());
    if (!job.is_object() || !job.value("failed", false)) continue;
    out << fmt::format("  run {}'s job failed with {} of {} steps done: its goodput and wall time are of the part "
                       "it ran\n",
                       i + 1, job.value("steps_done", json()).dump(), job.value("steps", json()).dump());
  }
  std::vector<std::string> head{""};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    head.push_back(fmt::format("run {}", i + 1));
    if (i > 0) {
      head.emplace_back("delta");
      head.emplace_back("%");
    }
  }
  out << "\n";
  if (differences.empty()) {
    out << "  scenario: the same in every run\n";
  } else {
    std::vector<std::vector<std::string>> lines{{"scenario fields that differ"}};
    for (std::size_t i = 0; i < runs.size(); ++i) lines[0].push_back(fmt::format("run {}", i + 1));
    for (const auto& [key, values] : differences) {
      lines.push_back({"  " + key});
      for (const auto& v : values) lines.back().push_back(v);
    }
    print_aligned(lines, out);
  }
  std::vector<std::vector<std::string>> lines{head};
  for (const auto& [section, list] : rows) {
    lines.push_back({section});
    for (const Row& r : list) {
      std::vector<std::string> line{"  " + r.key.substr(section.size() + 1)};
      for (std::size_t i = 0; i < runs.size(); ++i) {
        line.push_back(r.values[i] ? readable(*r.values[i], r.quantity) : "-");
        if (i == 0) continue;
        const auto d = delta(r, i);
        // A difference in the last bits of a double (times summed in another order) is not a change.
        const double scale = d ? std::max(std::fabs(*r.values[0]), std::fabs(*r.values[i])) : 0.0;
        if (d && *d != 0 && std::fabs(*d) <= kRoundingNoise * scale) {
          line.emplace_back("~0");
          line.emplace_back("~0%");
          continue;
        }
        line.push_back(d ? readable_delta(*d, r.quantity) : "-");
        line.push_back(pct_text(delta_pct(r, i)));
      }
      lines.push_back(std::move(line));
    }
  }
  out << "\n";
  print_aligned(lines, out);
}

std::string cell(std::optional<double> v) { return v ? fmt::format("{}", *v) : std::string(); }

void write_csv(const std::vector<Run>& runs, const std::vector<std::pair<std::string, std::vector<Row>>>& rows,
               std::ostream& out) {
  out << "metric,unit";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << fmt::format(",run{}", i + 1);
    if (i > 0) out << fmt::format(",run{0}_delta,run{0}_delta_pct", i + 1);
  }
  out << "\n";
  for (const auto& section : rows) {
    for (const Row& r : section.second) {
      out << r.key << "," << unit_name(r.quantity);
      for (std::size_t i = 0; i < runs.size(); ++i) {
        out << "," << cell(r.values[i]);
        if (i > 0) out << "," << cell(delta(r, i)) << "," << cell(delta_pct(r, i));
      }
      out << "\n";
    }
  }
}

json to_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json compare_json(const std::vector<Run>& runs,
                  const std::vector<std::pair<std::string, std::vector<std::string>>>& differences,
                  const std::vector<std::pair<std::string, std::vector<Row>>>& rows) {
  json j;
  j["format"] = "tpusim-compare";
  j["format_version"] = 1;
  j["tpusim_version"] = std::string(version());
  j["runs"] = json::array();
  for (const auto& r : runs) {
    j["runs"].push_back(json{{"path", r.label},
                             {"scenario", r.summary.value(json::json_pointer("/scenario/name"), std::string())},
                             {"seed", r.summary.value("seed", json())}});
  }
  json diff = json::object();
  for (const auto& [key, values] : differences) diff[key] = values;
  j["scenario_differences"] = diff;
  j["rows"] = json::array();
  for (const auto& section : rows) {
    for (const Row& r : section.second) {
      json values = json::array(), d = json::array(), p = json::array();
      for (std::size_t i = 0; i < runs.size(); ++i) {
        values.push_back(to_json(r.values[i]));
        d.push_back(to_json(delta(r, i)));
        p.push_back(to_json(delta_pct(r, i)));
      }
      j["rows"].push_back(json{{"metric", r.key},
                               {"unit", unit_name(r.quantity)},
                               {"values", values},
                               {"delta", d},
                               {"delta_pct", p}});
    }
  }
  return j;
}

// compare.json records each run's path as given, and JSON text is UTF-8: a path that is not is refused (as a
// configuration file that is not UTF-8 is), not written as something else.
void check_utf8_paths(const std::vector<Run>& runs) {
  for (const auto& r : runs) {
    const std::size_t bad = first_invalid_utf8(r.label);
    if (bad == std::string::npos) continue;
    throw CompareRefused(fmt::format("{}: the path is not valid UTF-8: expected UTF-8 text, found the byte 0x{:02X} "
                                     "at byte {}; compare.json records each run's path as JSON text, which is "
                                     "UTF-8, so rename it, or compare without -o",
                                     escape_invalid_utf8(r.label), static_cast<unsigned char>(r.label[bad]),
                                     bad + 1));
  }
}

// The output folder must not be, or hold, a run being compared: replacing it would delete that run.
void check_not_an_input(const fs::path& out, const std::vector<Run>& runs) {
  for (const auto& r : runs) {
    const fs::path folder = fs::weakly_canonical(fs::absolute(r.file)).parent_path();
    const fs::path rel = folder.lexically_relative(out);
    if (!rel.empty() && *rel.begin() != "..") {
      throw OutputRefused(fmt::format("{}: holds the run {} being compared; choose another output folder",
                                      out.string(), r.label));
    }
  }
}

}  // namespace

int compare_command(const CompareArgs& args) {
  try {
    if (args.runs.size() < 2) {
      std::cerr << fmt::format("tpusim compare: expected two or more runs (output folders or summary.json files), "
                               "found {}\n", args.runs.size());
      return 2;
    }
    std::vector<Run> runs;
    for (const auto& a : args.runs) runs.push_back(load_run(a));
    fs::path out;
    if (!args.out_dir.empty()) {
      check_utf8_paths(runs);
      out = check_output_folder(args.out_dir, "compare");
      check_not_an_input(out, runs);
    }
    const auto differences = scenario_differences(runs);
    const auto rows = rows_of(runs);
    if (!args.out_dir.empty()) {
      OutputFolder folder(args.out_dir, "compare");
      write_file(folder.file("compare.csv"), [&](std::ostream& f) { write_csv(runs, rows, f); });
      write_file(folder.file("compare.json"),
                 [&](std::ostream& f) { f << compare_json(runs, differences, rows).dump(2) << "\n"; });
      folder.commit();
    }
    print_table(runs, differences, rows, std::cout);
    if (!args.out_dir.empty()) std::cout << fmt::format("\n  wrote {}: compare.csv, compare.json\n", args.out_dir);
    return 0;
  } catch (const CompareRefused& e) {
    std::cerr << "tpusim compare: " << e.what() << "\n";
    return 2;
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim compare: " << e.what() << "\n";
    return 2;
  } catch (const Interrupted& e) {
    std::cerr << "tpusim compare: " << e.what() << "; nothing was written\n";
    return e.exit_code();
  } catch (const std::runtime_error& e) {
    std::cerr << "tpusim compare: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tpusim::tools
