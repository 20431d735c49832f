// The job timeline as a Chrome trace (contract in job_run.h, write_job_trace).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/job_run.h"

namespace tpusim::tools {
namespace {

using json = nlohmann::ordered_json;
constexpr double kUs = 1e6;  // trace timestamps are microseconds
constexpr int kJobPid = 0;
constexpr int kFaultPid = 1;

// The tracks of one process, each split into lanes so that the spans of a lane nest or follow each other.
// Spans and instants are collected, then written in order of start (at one start instants first, then the
// longer span first): each goes
// on the first lane of its track on which it nests in or follows what is open there, a new lane ("lost work 2")
// when none takes it.
class Tracks {
 public:
  Tracks(json& events, int pid) : events_(events), pid_(pid) {}

  void span(const std::string& track, const std::string& name, const std::string& cat, double start, double end,
            json args = json::object()) {
    json e{{"ph", "X"}, {"cat", cat}, {"pid", pid_}, {"name", name}, {"ts", start * kUs}, {"dur", (end - start) * kUs}};
    if (!args.empty()) e["args"] = std::move(args);
    pending_.push_back(Pending{track, start, end, std::move(e)});
  }
  void instant(const std::string& track, const std::string& name, const std::string& cat, double at, json args) {
    pending_.push_back(Pending{track, at, at,
                               json{{"ph", "i"}, {"s", "t"}, {"cat", cat}, {"pid", pid_}, {"name", name},
                                    {"ts", at * kUs}, {"args", std::move(args)}}});
  }
  // Writes what was collected: the tracks' names (in order of first use), then the events.
  void write() {
    std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
      if (a.start != b.start) return a.start < b.start;
      const bool a_instant = a.end == a.start, b_instant = b.end == b.start;
      if (a_instant != b_instant) return a_instant;  // the fault, then the spans it starts
      return a.end > b.end;
    });
    json placed = json::array();
    for (Pending& p : pending_) {
      p.event["tid"] = lane_for(p.track, p.start, p.end);
      placed.push_back(std::move(p.event));
    }
    for (json& e : placed) events_.push_back(std::move(e));
    pending_.clear();
  }

 private:
  struct Pending {
    std::string track;
    double start = 0, end = 0;
    json event;
  };
  struct Lane {
    int tid = 0;
    std::vector<double> open;  // ends of the spans open on it, innermost last
  };
  int lane_for(const std::string& track, double start, double end) {
    std::vector<Lane>& lanes = tracks_[track];
    for (Lane& lane : lanes) {
      while (!lane.open.empty() && lane.open.back() <= start) lane.open.pop_back();
      if (lane.open.empty() || end <= lane.open.back()) {
        lane.open.push_back(end);
        return lane.tid;
      }
    }
    lanes.push_back(Lane{next_tid_++, {end}});
    const std::string name = lanes.size() == 1 ? track : fmt::format("{} {}", track, lanes.size());
    events_.push_back(json{{"ph", "M"}, {"pid", pid_}, {"tid", lanes.back().tid}, {"name", "thread_name"},
                           {"args", {{"name", name}}}});
    return lanes.back().tid;
  }

  json& events_;
  int pid_;
  int next_tid_ = 0;
  std::vector<Pending> pending_;
  std::map<std::string, std::vector<Lane>> tracks_;
};

void name_process(json& events, int pid, const std::string& name) {
  events.push_back(json{{"ph", "M"}, {"pid", pid}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", name}}}});
}

}  // namespace

void write_job_trace(const Scenario& s, const models::JobOutcome& job, std::ostream& out) {
  const models::JobResult& r = job.result;
  json events = json::array();
  name_process(events, kJobPid, s.name + " job");
  Tracks work(events, kJobPid);
  json job_args{{"steps_done", r.steps_done}, {"goodput", r.goodput}, {"checkpoints", r.checkpoints}};
  if (r.checkpoints > static_cast<std::int64_t>(r.checkpoint_writes.size())) {
    job_args["checkpoint_writes_not_shown"] = r.checkpoints - static_cast<std::int64_t>(r.checkpoint_writes.size());
  }
  work.span("job", r.failed ? "job (failed)" : "job", "job", 0.0, r.wall.value(), std::move(job_args));
  // Every checkpoint write kept, then per fault its lost work and the job's downtime after the detection.
  const double write = job.costs.checkpoint_write.value();
  for (const Seconds start : r.checkpoint_writes) {
    work.span("checkpoints", "checkpoint write", "checkpoint", start.value(), start.value() + write);
  }
  for (const models::FaultEvent& e : r.events) {
    const double at = e.fault.spec.at.value();
    const json cause{{"fault", std::string(fault_kind_name(e.fault.spec.kind)) + " " + e.fault.target()}};
    if (e.lost_work.value() > 0) {
      work.span("lost work", "lost work", "lost_work", at - e.lost_work.value(), at, cause);
    }
    const double down_from = e.detected.value(), down_to = e.resumed.value();
    if (down_to <= down_from) continue;
    json args = cause;
    args["downtime_s"] = e.downtime.value();
    args["lost_work_s"] = e.lost_work.value();
    work.span("recovery", "recovery: " + e.recovery, "recovery", down_from, down_to, std::move(args));
    double t = down_from;
    for (const auto& [part, length] : {std::pair<const char*, Seconds>{"repair", e.stages.repair},
                                       {"restart", e.stages.restart},
                                       {"reconfiguration", e.stages.reconfiguration},
                                       {"restore", e.stages.restore}}) {
      const double end = std::min(t + length.value(), down_to);  // a restore a fault interrupted ends there
      if (end > t) work.span("recovery", part, "recovery", t, end, cause);
      t = end;
    }
  }
  work.write();
  // The faults in a process of their own, one track per failed component: seconds-long detections beside the
  // hours of the job, which the job's tracks do not crowd.
  if (!r.events.empty()) name_process(events, kFaultPid, s.name + " faults");
  Tracks faults(events, kFaultPid);
  for (const models::FaultEvent& e : r.events) {
    const std::string kind(fault_kind_name(e.fault.spec.kind));
    const std::string target = e.fault.target();
    const double at = e.fault.spec.at.value();
    faults.instant(target, kind + " " + target, "fault", at,
                   json{{"step", e.step}, {"drawn", e.fault.drawn}, {"recovery", e.recovery}});
    if (e.detected.value() > at) faults.span(target, "detection", "fault", at, e.detected.value());
  }
  faults.write();
  out << json{{"displayTimeUnit", "ms"}, {"traceEvents", events}}.dump() << "\n";
}

}  // namespace tpusim::tools
