// The traces `tpusim run --trace` writes (issue 22): every trace file of a run is read back and held to the
// Chrome trace-event format as Perfetto reads it: the fields each event needs, slices on a thread that nest or
// follow each other, a name for every process and thread used, flow events bound to slices.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;
using tpusim::test::Outcome;
using tpusim::test::slurp;

// Timestamps are microseconds written from doubles: 1 ns covers their rounding.
constexpr double kSlackUs = 1e-3;

struct Slice {
  double ts = 0, end = 0;
  std::string name;
};

// What is wrong with one trace document, one line per problem (empty: it is well formed).
std::vector<std::string> trace_problems(const json& doc) {
  std::vector<std::string> problems;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return {"no traceEvents array"};
  }
  const std::set<std::string> phases{"X", "M", "i", "s", "f", "C"};
  std::set<long long> process_named, counted;
  std::set<std::pair<long long, long long>> thread_named, used;
  std::map<std::pair<long long, long long>, std::vector<Slice>> slices;
  struct Flow {
    std::string ph;
    long long pid, tid;
    double ts;
  };
  std::map<std::string, std::vector<Flow>> flows;  // by id
  std::size_t index = 0;
  for (const json& e : doc["traceEvents"]) {
    const std::string at = "event " + std::to_string(index++) + " " + e.dump().substr(0, 160);
    bool complete = true;
    for (const char* key : {"name", "ph", "pid", "tid"}) {
      if (!e.contains(key)) {
        problems.push_back(at + ": no " + key);
        complete = false;
      }
    }
    if (!complete) continue;
    if (!e["name"].is_string() || !e["ph"].is_string() || !e["pid"].is_number_integer() ||
        !e["tid"].is_number_integer()) {
      problems.push_back(at + ": name and ph must be strings, pid and tid integers");
      continue;
    }
    const std::string ph = e["ph"];
    const long long pid = e["pid"], tid = e["tid"];
    if (phases.count(ph) == 0) {
      problems.push_back(at + ": ph '" + ph + "' is not one of X, M, i, s, f, C");
      continue;
    }
    if (ph != "M" && !(e.contains("cat") && e["cat"].is_string())) {
      problems.push_back(at + ": no cat (every event but metadata carries a category)");
    }
    if (ph == "M") {
      const std::string name = e["name"];
      if (!e.contains("args") || !e["args"].contains("name") || !e["args"]["name"].is_string()) {
        problems.push_back(at + ": metadata without args.name");
      } else if (name == "process_name") {
        process_named.insert(pid);
      } else if (name == "thread_name") {
        thread_named.insert({pid, tid});
      }
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number() || !std::isfinite(e["ts"].get<double>())) {
      problems.push_back(at + ": no finite ts");
      continue;
    }
    if (ph == "C") {
      // A counter: its series in args, each a finite number >= 0, on a named process (no thread of its own).
      bool ok = e.contains("args") && e["args"].is_object() && !e["args"].empty();
      if (ok) {
        for (const auto& [series, value] : e["args"].items()) {
          if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) ok = false;
        }
      }
      if (!ok) problems.push_back(at + ": a counter needs args of finite numbers >= 0");
      counted.insert(pid);
      continue;
    }
    used.insert({pid, tid});
    const double ts = e["ts"];
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || !(e["dur"].get<double>() >= 0)) {
        problems.push_back(at + ": an X event needs dur >= 0");
        continue;
      }
      slices[{pid, tid}].push_back(Slice{ts, ts + e["dur"].get<double>(), e["name"]});
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e.contains("cat")) {
        problems.push_back(at + ": a flow event needs id and cat");
        continue;
      }
      if (ph == "f" && e.value("bp", "") != "e") {
        problems.push_back(at + ": a flow's end must bind to its slice (bp e)");
      }
      flows[e["id"].dump()].push_back(Flow{ph, pid, tid, ts});
    }
  }
  std::set<long long> unnamed;
  for (const long long pid : counted) {
    if (process_named.count(pid) == 0 && unnamed.insert(pid).second) {
      problems.push_back("pid " + std::to_string(pid) + " has no process_name");
    }
  }
  for (const auto& key : used) {
    if (process_named.count(key.first) == 0 && unnamed.insert(key.first).second) {
      problems.push_back("pid " + std::to_string(key.first) + " has no process_name");
    }
    if (thread_named.count(key) == 0) {
      problems.push_back("pid " + std::to_string(key.first) + " tid " + std::to_string(key.second) +
                         " has no thread_name");
    }
  }
  // Slices of one thread nest or follow each other: a slice starting inside another ends inside it.
  for (auto& [key, list] : slices) {
    std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;  // at one start, the longer one encloses
    });
    std::vector<const Slice*> open;
    for (const Slice& s : list) {
      while (!open.empty() && open.back()->end <= s.ts + kSlackUs) open.pop_back();
      if (!open.empty() && s.end > open.back()->end + kSlackUs) {
        problems.push_back("pid " + std::to_string(key.first) + " tid " + std::to_string(key.second) + ": '" +
                           s.name + "' [" + std::to_string(s.ts) + ", " + std::to_string(s.end) +
                           "] overlaps '" + open.back()->name + "' [" + std::to_string(open.back()->ts) + ", " +
                           std::to_string(open.back()->end) + "] partly");
        if (problems.size() > 50) return problems;
        continue;
      }
      open.push_back(&s);
    }
  }
  // Each flow starts once, ends at least once, and each of its points lies in a slice of its thread.
  const auto in_a_slice = [&](const Flow& f) {
    const auto it = slices.find({f.pid, f.tid});
    if (it == slices.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const Slice& s) { return s.ts <= f.ts + kSlackUs && f.ts <= s.end + kSlackUs; });
  };
  for (const auto& [id, points] : flows) {
    const auto starts = std::count_if(points.begin(), points.end(), [](const Flow& f) { return f.ph == "s"; });
    if (starts != 1 || points.size() < 2) {
      problems.push_back("flow " + id + ": " + std::to_string(starts) + " starts and " +
                         std::to_string(points.size() - static_cast<std::size_t>(starts)) +
                         " ends (expected one start and at least one end)");
    }
    for (const Flow& f : points) {
      if (!in_a_slice(f)) problems.push_back("flow " + id + ": its " + f.ph + " is in no slice of its thread");
    }
  }
  return problems;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

class TraceCli : public tpusim::test::CliTest {
 protected:
  // `tpusim run SCENARIO --trace ARGS -o DIR/NAME`, expected to succeed: every trace file it wrote, parsed.
  std::map<std::string, json> traces(const std::string& scenario, const std::string& args, const std::string& name) {
    const fs::path out = dir_ / name;
    const Outcome o = tpusim("run " + scenario + " --trace " + args + " -o " + out.string());
    EXPECT_EQ(o.exit_code, 0) << o.err;
    std::map<std::string, json> docs;
    if (!fs::is_directory(out)) return docs;
    for (const auto& entry : fs::directory_iterator(out)) {
      const std::string file = entry.path().filename().string();
      if (file.find("trace") == std::string::npos || entry.path().extension() != ".json") continue;
      docs[file] = json::parse(slurp(entry.path()));
    }
    return docs;
  }
};

}  // namespace

TEST(TraceFormat, TheValidatorFindsWhatIsWrong) {
  // Well formed: named process and thread, two nested slices and one after them.
  const json good = json::parse(R"({"traceEvents":[
    {"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"chip 0"}},
    {"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"core 0 mxu"}},
    {"name":"a","ph":"X","cat":"mxu","pid":0,"tid":1,"ts":0,"dur":10},
    {"name":"b","ph":"X","cat":"mxu","pid":0,"tid":1,"ts":2,"dur":8},
    {"name":"c","ph":"X","cat":"mxu","pid":0,"tid":1,"ts":10,"dur":1},
    {"name":"i","ph":"i","s":"t","cat":"fault","pid":0,"tid":1,"ts":10},
    {"name":"c","ph":"s","cat":"x","id":1,"pid":0,"tid":1,"ts":10},
    {"name":"c","ph":"f","bp":"e","cat":"x","id":1,"pid":0,"tid":1,"ts":2}]})");
  EXPECT_EQ(joined(trace_problems(good)), "");
  // Partial overlap, a thread without a name, a negative duration, an unknown phase, a missing ts, a slice
  // without a category.
  const json bad = json::parse(R"({"traceEvents":[
    {"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"chip 0"}},
    {"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"core 0 mxu"}},
    {"name":"a","ph":"X","pid":0,"tid":1,"ts":0,"dur":10},
    {"name":"b","ph":"X","pid":0,"tid":1,"ts":5,"dur":10},
    {"name":"c","ph":"X","pid":0,"tid":2,"ts":0,"dur":-1},
    {"name":"d","ph":"B","pid":0,"tid":1,"ts":0},
    {"name":"e","ph":"i","pid":0,"tid":1},
    {"name":"f","ph":"X","pid":0,"tid":3,"ts":0,"dur":1},
    {"name":"g","ph":"s","cat":"x","id":7,"pid":0,"tid":1,"ts":50},
    {"name":"HBM bandwidth","ph":"C","pid":0,"tid":0,"ts":1,"args":{"GB/s":-2}},
    {"name":"HBM bandwidth","ph":"C","pid":9,"tid":0,"ts":1,"args":{"GB/s":2}}]})");
  const std::string found = joined(trace_problems(bad));
  EXPECT_NE(found.find("'b' [5.000000, 15.000000] overlaps 'a' [0.000000, 10.000000] partly"), std::string::npos)
      << found;
  EXPECT_NE(found.find("an X event needs dur >= 0"), std::string::npos) << found;
  EXPECT_NE(found.find("ph 'B' is not one of"), std::string::npos) << found;
  EXPECT_NE(found.find("no finite ts"), std::string::npos) << found;
  EXPECT_NE(found.find("pid 0 tid 3 has no thread_name"), std::string::npos) << found;
  EXPECT_NE(found.find("flow 7: 1 starts and 0 ends"), std::string::npos) << found;
  EXPECT_NE(found.find("flow 7: its s is in no slice of its thread"), std::string::npos) << found;
  EXPECT_NE(found.find("a counter needs args of finite numbers >= 0"), std::string::npos) << found;
  EXPECT_NE(found.find("pid 9 has no process_name"), std::string::npos) << found;
  EXPECT_NE(found.find(R"({"dur":10,"name":"a","ph":"X","pid":0,"tid":1,"ts":0}: no cat)"), std::string::npos)
      << found;
}

TEST_F(TraceCli, CounterTracksCarryEveryTracedByteOfHbmAndIci) {
  // Each chip's HBM and ICI counters are piecewise constant (GB/s from each sample to the next); their
  // integrals over the step are the bytes of the slices they sum: every slice's args.hbm_bytes, and every
  // collective's or send's args.bytes. 1e-9 relative: the rates are summed and differenced in doubles.
  const auto docs = traces("gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.model.layers=2", "--trace-chips 0-1", "counters");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  const json& doc = docs.at("trace.json");
  std::map<std::pair<long long, std::string>, std::vector<std::pair<double, double>>> samples;  // (pid, name)
  std::map<std::pair<long long, std::string>, double> expected;
  for (const json& e : doc["traceEvents"]) {
    const long long pid = e["pid"];
    if (e["ph"] == "C" && e["args"].contains("GB/s")) {  // the rates (not "HBM in use", in GB)
      EXPECT_EQ(e["cat"], "counter");
      samples[{pid, e["name"]}].emplace_back(e["ts"].get<double>(), e["args"]["GB/s"].get<double>());
    } else if (e["ph"] == "X" && e.contains("args")) {
      if (e["args"].contains("hbm_bytes")) expected[{pid, "HBM bandwidth"}] += e["args"]["hbm_bytes"].get<double>();
      if ((e["cat"] == "ici") && e["args"].contains("bytes")) {
        expected[{pid, "ICI bandwidth"}] += e["args"]["bytes"].get<double>();
      }
    }
  }
  for (const long long pid : {0LL, 1LL}) {
    for (const char* name : {"HBM bandwidth", "ICI bandwidth"}) {
      const auto& list = samples[{pid, name}];
      ASSERT_GT(list.size(), 2u) << pid << " " << name;
      double bytes = 0;
      for (std::size_t i = 0; i + 1 < list.size(); ++i) {
        EXPECT_LT(list[i].first, list[i + 1].first) << "one sample per time";
        bytes += list[i].second * 1e9 * (list[i + 1].first - list[i].first) * 1e-6;
      }
      EXPECT_EQ(list.back().second, 0) << "every rate ends";
      const double want = expected[{pid, name}];
      ASSERT_GT(want, 0) << pid << " " << name;
      EXPECT_NEAR(bytes, want, want * 1e-9) << pid << " " << name;
    }
  }
}

TEST_F(TraceCli, HbmInUseRisesToTheSummarysPeakOnTheFirstChipAndEndsAtThePersistentBytes) {
  // The first chip's "HBM in use" counter (GB): the weights, gradients and optimizer state held from the start,
  // the activations on top; its highest sample is summary.json's memory.in_use.peak_bytes, and it ends with every
  // activation freed. Chip 1 is traced but carries no such counter (the first chip's only). On this FSDP x tensor
  // slice the peak is the plan's total (1.909 GB): the weights' all-gathers run ahead of the matmuls that read
  // them, and the plan counts their outputs from where they may start (it counted them from the gather, 1.806 GB,
  // below what the run held).
  const auto docs = traces("gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.model.layers=2", "--trace-chips 0-1",
                           "in-use");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  const json summary = json::parse(slurp(dir_ / "in-use" / "summary.json"));
  const json& memory = summary["memory"];
  const json& cats = memory["categories"];
  const double persistent = cats["weights"].get<double>() + cats["gradients"].get<double>() +
                            cats["optimizer_state"].get<double>() + cats["kv_cache"].get<double>();
  std::map<long long, std::vector<double>> in_use;  // GB by pid, in time order
  for (const json& e : docs.at("trace.json")["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "HBM in use") in_use[e["pid"].get<long long>()].push_back(e["args"]["GB"]);
  }
  ASSERT_EQ(in_use.size(), 1u);
  ASSERT_EQ(in_use.count(0), 1u);
  const std::vector<double>& gb = in_use[0];
  ASSERT_GT(gb.size(), 10u);
  const double peak = memory["in_use"]["peak_bytes"].get<double>();
  EXPECT_NEAR(*std::max_element(gb.begin(), gb.end()) * 1e9, peak, 1.0);
  EXPECT_GT(peak, persistent + cats["activations"].get<double>() / 2);
  EXPECT_EQ(peak, memory["total_bytes"].get<double>());
  for (double v : gb) EXPECT_GE(v * 1e9, persistent - 1.0);
  EXPECT_NEAR(gb.back() * 1e9, persistent, 1.0);
}

TEST_F(TraceCli, AShardedStepsTraceIsWellFormed) {
  const auto docs = traces("gpt3-1.3b-fsdp-tensor-v4-2x2x1", "--trace-chips 0-3", "sharded");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  for (const auto& [file, doc] : docs) EXPECT_EQ(joined(trace_problems(doc)), "") << file;
}

TEST_F(TraceCli, AJobWithAFaultWritesWellFormedTraces) {
  const auto docs = traces("link-failure-v4-4x4x4", "", "job");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  ASSERT_EQ(docs.count("job-trace.json"), 1u);
  for (const auto& [file, doc] : docs) EXPECT_EQ(joined(trace_problems(doc)), "") << file;
}

// A year of random chip failures (about 400) and a checkpoint every 40,000 steps: tens of thousands of
// checkpoint writes, and faults that land while the job is down for a restart, whose spans start inside the
// restart and take a second recovery track rather than overlap it.
TEST_F(TraceCli, AYearLongJobsTraceIsWellFormed) {
  const auto docs = traces("checkpoint-goodput-v4", "", "year");
  ASSERT_EQ(docs.count("job-trace.json"), 1u);
  EXPECT_EQ(joined(trace_problems(docs.at("job-trace.json"))), "");
  std::set<std::string> tracks;
  for (const json& e : docs.at("job-trace.json")["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0) tracks.insert(e["args"]["name"]);
  }
  EXPECT_EQ(tracks.count("checkpoints"), 1u);
  EXPECT_EQ(tracks.count("lost work"), 1u);
  EXPECT_EQ(tracks.count("recovery"), 1u);
}

// The instruction slices of a trace (those with args.instruction), by chip.
std::map<long long, std::vector<json>> instruction_slices(const json& doc) {
  std::map<long long, std::vector<json>> by_chip;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e.contains("args") && e["args"].contains("instruction")) by_chip[e["pid"]].push_back(e);
  }
  return by_chip;
}

TEST_F(TraceCli, EachChipHasAStepSpanAndOneSpanPerLayerAndPhase) {
  const auto docs = traces("gpt3-1.3b-fsdp-tensor-v4-2x2x1", "--trace-chips 0-3", "layers");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  const json& doc = docs.at("trace.json");
  const auto slices = instruction_slices(doc);
  ASSERT_EQ(slices.size(), 4u);
  std::map<long long, std::map<long long, std::string>> tracks;  // pid -> tid -> name
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks[e["pid"]][e["tid"]] = e["args"]["name"];
  }
  for (const auto& [chip, list] : slices) {
    // From the instructions' labels: each (block, phase) one's first start and last end, and the step's.
    std::map<std::string, std::pair<double, double>> expected;
    double first = 1e300, last = -1;
    for (const json& s : list) {
      const std::string name = s["name"];
      const double ts = s["ts"], end = ts + s["dur"].get<double>();
      first = std::min(first, ts);
      last = std::max(last, end);
      const auto dot = name.find('.');
      if (dot == std::string::npos) continue;
      const std::string phase = name.substr(dot + 1, name.find('.', dot + 1) - dot - 1);
      if (phase != "fwd" && phase != "bwd" && phase != "remat") continue;
      const std::string key = name.substr(0, dot) + "." + phase;
      auto [it, added] = expected.emplace(key, std::make_pair(ts, end));
      it->second = {std::min(it->second.first, ts), std::max(it->second.second, end)};
    }
    // 24 layers, each with its forward, backward and recomputation; the head's and embedding's fwd and bwd.
    ASSERT_EQ(expected.size(), 24u * 3 + 4) << "chip " << chip;
    EXPECT_EQ(expected.count("layer23.remat"), 1u);
    std::map<std::string, std::pair<double, double>> found;
    int steps = 0;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"] != chip) continue;
      const std::string track = tracks[chip][e["tid"]];
      const double ts = e["ts"], end = ts + e["dur"].get<double>();
      if (e.value("cat", "") == "step") {
        ++steps;
        EXPECT_EQ(track, "step");
        EXPECT_NEAR(ts, first, kSlackUs);
        EXPECT_NEAR(end, last, kSlackUs);
        EXPECT_EQ(e["args"]["instructions"], list.size());
        EXPECT_EQ(e["args"]["not_traced"], 0);
      } else if (e.value("cat", "") == "layer") {
        const std::string name = e["name"];
        EXPECT_TRUE(found.emplace(name, std::make_pair(ts, end)).second) << name << " twice on chip " << chip;
        const std::string phase = name.substr(name.find('.') + 1);
        EXPECT_EQ(track.rfind("layers " + phase, 0), 0u) << name << " on " << track;
      }
    }
    EXPECT_EQ(steps, 1);
    ASSERT_EQ(found.size(), expected.size());
    for (const auto& [name, extent] : expected) {
      ASSERT_EQ(found.count(name), 1u) << name;
      EXPECT_NEAR(found[name].first, extent.first, kSlackUs) << name;
      EXPECT_NEAR(found[name].second, extent.second, kSlackUs) << name;
    }
  }
}

TEST_F(TraceCli, FlowsTieEachCollectiveFromItsEarliestChipToTheOthers) {
  const auto docs = traces("gpt3-1.3b-fsdp-tensor-v4-2x2x1", "--trace-chips 0-3", "flows");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  const json& doc = docs.at("trace.json");
  // Every ICI slice of this run is a collective (no sends): by instruction index, each chip's slice.
  std::map<long long, std::vector<json>> collectives;
  for (const auto& [chip, list] : instruction_slices(doc)) {
    for (const json& s : list) {
      if (s["cat"] == "ici") collectives[s["args"]["instruction"]].push_back(s);
    }
  }
  ASSERT_GT(collectives.size(), 100u);
  std::map<long long, std::vector<json>> flows_of;  // instruction -> its flow events
  std::map<long long, std::vector<json>> by_id;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") {
      flows_of[e["args"]["instruction"]].push_back(e);
      by_id[e["id"]].push_back(e);
    }
  }
  for (const auto& [id, points] : by_id) {
    ASSERT_EQ(points.size(), 2u) << "flow " << id;
    EXPECT_EQ(points[0]["ph"], "s");
    EXPECT_EQ(points[1]["ph"], "f");
  }
  EXPECT_EQ(flows_of.size(), collectives.size());
  const auto inside = [](const json& point, const json& slice) {
    const double ts = point["ts"], start = slice["ts"], end = start + slice["dur"].get<double>();
    return point["pid"] == slice["pid"] && point["tid"] == slice["tid"] && start - kSlackUs <= ts &&
           ts <= end + kSlackUs;
  };
  for (const auto& [instruction, list] : collectives) {
    ASSERT_EQ(list.size(), 4u) << "instruction " << instruction;
    const auto earliest = std::min_element(list.begin(), list.end(), [](const json& a, const json& b) {
      return std::make_pair(a["ts"].get<double>(), a["pid"].get<long long>()) <
             std::make_pair(b["ts"].get<double>(), b["pid"].get<long long>());
    });
    const std::vector<json>& flows = flows_of[instruction];
    ASSERT_EQ(flows.size(), 6u) << "instruction " << instruction;  // three chips, a start and an end each
    std::set<long long> reached;
    for (const json& f : flows) {
      if (f["ph"] == "s") {
        EXPECT_TRUE(inside(f, *earliest)) << f.dump();
      } else {
        const auto to = std::find_if(list.begin(), list.end(), [&](const json& s) { return inside(f, s); });
        ASSERT_NE(to, list.end()) << f.dump();
        EXPECT_NE((*to)["pid"], (*earliest)["pid"]);
        reached.insert((*to)["pid"].get<long long>());
      }
    }
    EXPECT_EQ(reached.size(), 3u) << "instruction " << instruction;
  }
}

TEST_F(TraceCli, ChipsBeyondThePodAreRefusedBeforeAnythingRuns) {
  // A 64-chip pod: chip 99 would leave trace.json empty.
  Outcome o = tpusim("run link-failure-v4-4x4x4 --trace --trace-chips 0-3,99 -o " + (dir_ / "a").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--trace-chips: error: --trace-chips: chip 99 is not in the pod\n"
                       "    expected: chip ids from 0 to 63 (the pod has 64 chips)\n"
                       "    found:    99"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "a"));
  o = tpusim("run link-failure-v4-4x4x4 --trace --trace-chips 64-70 -o " + (dir_ / "b").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("range 64-70 is not in the pod"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "b"));
  // A range ending beyond the pod keeps its chips in the pod: the default 0-3 on one chip traces chip 0.
  const auto docs = traces("quickstart", "", "one");
  ASSERT_EQ(docs.count("trace.json"), 1u);
  std::set<long long> pids;
  for (const json& e : docs.at("trace.json")["traceEvents"]) pids.insert(e["pid"].get<long long>());
  EXPECT_EQ(pids, (std::set<long long>{0}));
  const auto tail = traces("link-failure-v4-4x4x4", "--trace-chips 62-70", "tail");
  ASSERT_EQ(tail.count("trace.json"), 1u);
  pids.clear();
  for (const json& e : tail.at("trace.json")["traceEvents"]) pids.insert(e["pid"].get<long long>());
  EXPECT_EQ(pids, (std::set<long long>{62, 63}));
}

// job-trace.json of a small job with one chip failure restarted from its checkpoint, walked against
// summary.json: every checkpoint write (each checkpoint_write_s long, the job's 100 steps of step_time_s
// apart, adding up to losses_s.checkpoint), the lost work from the end of the last write before the fault
// to the fault, the downtime from the detection to the resumption holding repair, restart and restore one
// after the other (losses_s of each), and on the faults process the fault and its detection; the file is
// well formed (every event but metadata with a category, slices nested per track).
TEST_F(TraceCli, TheJobTraceSpansEveryCheckpointWriteTheLostWorkAndTheRestartAsSummaryJsonHasThem) {
  const fs::path scenario = dir_ / "ckpt.yaml";
  {
    std::ofstream out(scenario);
    out << R"(name: ckpt
pod: v5e-2x2
workload: {model: mlp-small, batch: 64, step: train, checkpoint: {every_steps: 100}}
job: {steps: 100000, recovery: checkpoint_restart, restart: 2 s, repair: 10 s}
faults:
  - {at: 0.5 s, kind: chip_down, target: [1, 1]}
)";
  }
  const auto docs = traces(scenario.string(), "", "ckpt");
  ASSERT_EQ(docs.count("job-trace.json"), 1u);
  const json& doc = docs.at("job-trace.json");
  EXPECT_EQ(joined(trace_problems(doc)), "");
  const json summary = json::parse(slurp(dir_ / "ckpt" / "summary.json"));
  const json& job = summary["job"];
  const json& fault = summary["faults"]["timeline"].at(0);
  const double step = summary["metrics"]["step_time_s"].get<double>();
  const double write = job["checkpoint_write_s"].get<double>();
  const double at = fault["at_s"].get<double>(), detected = fault["detected_s"].get<double>();
  const double resumed = fault["resumed_s"].get<double>();
  ASSERT_EQ(fault["recovery"], "checkpoint_restart");

  std::map<std::pair<long long, std::string>, long long> tids;  // (pid, track) -> tid
  std::map<long long, std::string> processes;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "thread_name") tids[{e["pid"].get<long long>(), e["args"]["name"].get<std::string>()}] = e["tid"];
    if (e["name"] == "process_name") processes[e["pid"].get<long long>()] = e["args"]["name"];
  }
  EXPECT_EQ(processes, (std::map<long long, std::string>{{0, "ckpt job"}, {1, "ckpt faults"}}));
  // (start, duration) in seconds of the slices on a track, in file order.
  const auto spans = [&](long long pid, const std::string& track) {
    std::vector<std::tuple<std::string, double, double>> out;
    const auto it = tids.find({pid, track});
    if (it == tids.end()) return out;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] == "M" || e["pid"] != pid || e["tid"] != it->second) continue;
      out.emplace_back(e["name"].get<std::string>(), e["ts"].get<double>() / 1e6,
                       e.contains("dur") ? e["dur"].get<double>() / 1e6 : 0.0);
    }
    return out;
  };
  constexpr double kSlack = 1e-9;  // seconds: a microsecond timestamp's rounding
  const auto job_span = spans(0, "job");
  ASSERT_EQ(job_span.size(), 1u);
  EXPECT_NEAR(std::get<2>(job_span[0]), job["wall_s"].get<double>(), kSlack);

  // Checkpoint writes: 100 steps, a write, 100 steps, ...; after the restart again from the resumption.
  const auto writes = spans(0, "checkpoints");
  ASSERT_EQ(static_cast<long long>(writes.size()), job["checkpoints"].get<long long>());
  ASSERT_GT(writes.size(), 2u);
  double sum = 0, t = 0, last_before_fault = 0;
  bool restarted = false;
  for (const auto& [name, start, dur] : writes) {
    EXPECT_EQ(name, "checkpoint write");
    EXPECT_NEAR(dur, write, kSlack);
    sum += dur;
    if (!restarted && start > at) {
      restarted = true;
      t = resumed;
    }
    EXPECT_NEAR(start, t + 100 * step, kSlack) << "write " << sum / write;
    t = start + dur;
    if (!restarted) last_before_fault = t;
  }
  EXPECT_TRUE(restarted);
  EXPECT_NEAR(sum, job["losses_s"]["checkpoint"].get<double>(), 1e-6);

  // The lost work: from the end of the last write before the fault to the fault.
  const auto lost = spans(0, "lost work");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_NEAR(std::get<1>(lost[0]), last_before_fault, kSlack);
  EXPECT_NEAR(std::get<1>(lost[0]) + std::get<2>(lost[0]), at, kSlack);
  EXPECT_NEAR(std::get<2>(lost[0]), job["losses_s"]["lost_work"].get<double>(), kSlack);
  EXPECT_NEAR(std::get<2>(lost[0]), fault["lost_work_s"].get<double>(), kSlack);

  // The downtime after the detection, and its parts in turn (no reconfiguration: 0 s is left out).
  const auto recovery = spans(0, "recovery");
  ASSERT_EQ(recovery.size(), 4u);
  EXPECT_EQ(std::get<0>(recovery[0]), "recovery: checkpoint_restart");
  EXPECT_NEAR(std::get<1>(recovery[0]), detected, kSlack);
  EXPECT_NEAR(std::get<2>(recovery[0]), resumed - detected, kSlack);
  const std::vector<std::pair<std::string, double>> parts{
      {"repair", job["losses_s"]["repair"].get<double>()},
      {"restart", job["losses_s"]["restart"].get<double>()},
      {"restore", job["losses_s"]["restore"].get<double>()}};
  EXPECT_DOUBLE_EQ(parts[0].second, 10.0);
  EXPECT_DOUBLE_EQ(parts[1].second, 2.0);
  EXPECT_DOUBLE_EQ(parts[2].second, job["checkpoint_restore_s"].get<double>());
  t = detected;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(std::get<0>(recovery[i + 1]), parts[i].first);
    EXPECT_NEAR(std::get<1>(recovery[i + 1]), t, kSlack) << parts[i].first;
    EXPECT_NEAR(std::get<2>(recovery[i + 1]), parts[i].second, kSlack) << parts[i].first;
    t += parts[i].second;
  }
  EXPECT_NEAR(t, resumed, kSlack);

  // The faults process: the chip's track with the fault and its detection (heartbeat 5 s, timeout 30 s).
  const auto chip = spans(1, "[1,1]");
  ASSERT_EQ(chip.size(), 2u);
  EXPECT_EQ(std::get<0>(chip[0]), "chip_down [1,1]");
  EXPECT_NEAR(std::get<1>(chip[0]), at, kSlack);
  EXPECT_EQ(std::get<0>(chip[1]), "detection");
  EXPECT_NEAR(std::get<1>(chip[1]), at, kSlack);
  EXPECT_NEAR(std::get<2>(chip[1]), job["losses_s"]["detection"].get<double>(), kSlack);
  EXPECT_DOUBLE_EQ(detected, 30.0);
}
