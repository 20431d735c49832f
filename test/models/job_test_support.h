#pragma once
// Set-up shared by the job timeline tests (job_timeline_test.cpp, job_slowdown_test.cpp): costs given by hand,
// a v4 cube job, and the sum of the parts a job's wall time splits into.
#include "tpusim/models/job.h"

namespace tpusim::models::jobtest {

// A 1 s step, a 10 s checkpoint write and a 20 s restore.
inline JobCosts round_costs() {
  JobCosts c;
  c.step = Seconds(1);
  c.checkpoint_write = Seconds(10);
  c.checkpoint_restore = Seconds(20);
  return c;
}

// The useful time and every loss: a job's wall time, to rounding.
inline double sum_of_parts(const JobResult& r) {
  const JobLosses& l = r.losses;
  return r.useful.value() + l.checkpoint.value() + l.lost_work.value() + l.detection.value() + l.repair.value() +
         l.restart.value() + l.reconfiguration.value() + l.restore.value() + l.slowdown.value();
}

// 1000 steps on a v4 cube, a checkpoint every 100, heartbeats every 5 s, a 30 s timeout, a 600 s restart and
// a 3600 s repair.
inline constexpr const char* kCubeJob = R"(
name: job-test
pod: v4-4x4x4
workload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}
job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s}
)";

// Two cables of a v4 2x2x1 under reroute, at 10.5 s and 60.5 s, that together split the pod (1000 steps, a
// checkpoint every 100; the timeline and slowdown tests both run it).
inline constexpr const char* kSplitPodJob =
    "name: job-test\npod: v4-2x2x1\nworkload: {model: mlp-quickstart, batch: 64, checkpoint: {every_steps: 100}}\n"
    "job: {steps: 1000, heartbeat: 5 s, timeout: 30 s, restart: 600 s, repair: 3600 s, recovery: reroute}\n"
    "faults:\n  - {at: 10.5 s, kind: link_down, target: {chip: [0, 0, 0], dir: x+}}\n"
    "  - {at: 60.5 s, kind: link_down, target: {chip: [0, 1, 0], dir: x+}}\n";

}  // namespace tpusim::models::jobtest
