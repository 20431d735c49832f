// The job timeline as a Chrome trace (contract in job_run.h, write_job_trace).
#include <map>

#include <nlohmann/json.hpp>

#include "tools/src/job_run.h"

namespace tpusim::tools {

void write_job_trace(const Scenario& s, const models::JobOutcome& job, std::ostream& out) {
  using json = nlohmann::ordered_json;
  const models::JobResult& r = job.result;
  constexpr double kUs = 1e6;  // trace timestamps are microseconds
  json events = json::array();
  const auto thread_name = [&](int tid, const std::string& name) {
    events.push_back(json{{"ph", "M"}, {"pid", 0}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
  };
  events.push_back(json{{"ph", "M"}, {"pid", 0}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", s.name + " job"}}}});
  thread_name(0, "job");
  events.push_back(json{{"ph", "X"}, {"pid", 0}, {"tid", 0}, {"name", r.failed ? "job (failed)" : "job"},
                        {"ts", 0.0}, {"dur", r.wall.value() * kUs},
                        {"args", {{"steps_done", r.steps_done}, {"goodput", r.goodput}}}});
  std::map<std::string, int> tracks;  // component -> tid, in order of first failure
  for (const models::FaultEvent& e : r.events) {
    const std::string kind(fault_kind_name(e.fault.spec.kind));
    const std::string target = e.fault.target();
    auto [it, added] = tracks.emplace(target, static_cast<int>(tracks.size()) + 1);
    if (added) thread_name(it->second, target);
    const int tid = it->second;
    const double at = e.fault.spec.at.value();
    events.push_back(json{{"ph", "i"}, {"s", "t"}, {"pid", 0}, {"tid", tid}, {"name", kind + " " + target},
                          {"ts", at * kUs},
                          {"args", {{"step", e.step}, {"drawn", e.fault.drawn}, {"recovery", e.recovery}}}});
    if (e.detected.value() > at) {
      events.push_back(json{{"ph", "X"}, {"pid", 0}, {"tid", tid}, {"name", "detection"}, {"ts", at * kUs},
                            {"dur", (e.detected.value() - at) * kUs}});
    }
    if (e.resumed.value() > e.detected.value()) {
      events.push_back(json{{"ph", "X"}, {"pid", 0}, {"tid", tid}, {"name", "recovery: " + e.recovery},
                            {"ts", e.detected.value() * kUs}, {"dur", (e.resumed.value() - e.detected.value()) * kUs},
                            {"args", {{"downtime_s", e.downtime.value()}, {"lost_work_s", e.lost_work.value()}}}});
    }
  }
  out << json{{"displayTimeUnit", "ms"}, {"traceEvents", events}}.dump() << "\n";
}

}  // namespace tpusim::tools
