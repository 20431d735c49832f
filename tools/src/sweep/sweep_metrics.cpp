#include "tools/src/sweep/sweep_metrics.h"

namespace tpusim::tools {
namespace {

using json = nlohmann::ordered_json;

std::optional<double> at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* key : path) {
    if (!p->is_object() || !p->contains(key)) return std::nullopt;
    p = &(*p)[key];
  }
  if (!p->is_number()) return std::nullopt;
  return p->get<double>();
}

std::optional<double> step(const json& s) { return at(s, {"metrics", "step_time_s"}); }
// A job's figure, empty for a job that failed (job.recovery fail: it stopped at a fault with steps_done short of
// its steps). Its useful / wall time covers only the part it ran, so it would rank a job that never finished
// above the jobs that did (a fail-policy job stopped halfway read goodput 82.9% beside 8.2% for one that
// restarted and finished).
std::optional<double> finished_job(const json& s, const char* key) {
  const auto job = s.find("job");
  if (job != s.end() && job->is_object()) {
    const auto failed = job->find("failed");
    if (failed != job->end() && failed->is_boolean() && failed->get<bool>()) return std::nullopt;
  }
  return at(s, {"job", key});
}
std::optional<double> hbm_bytes(const json& s) {
  const auto r = at(s, {"bytes", "hbm_read"});
  const auto w = at(s, {"bytes", "hbm_written"});
  if (!r || !w) return std::nullopt;
  return *r + *w;
}
// A rate over the step; 0 when the step took no time (as the table always printed).
std::optional<double> per_step(std::optional<double> amount, const json& s) {
  const auto t = step(s);
  if (!amount || !t) return std::nullopt;
  return *t > 0 ? *amount / *t : 0.0;
}

}  // namespace

const std::vector<MetricDef>& sweep_metrics() {
  // The first nine are table.csv's historical columns, in their order; new metrics go at the end.
  static const std::vector<MetricDef> kMetrics{
      {"step_time_s", dim::seconds, Better::lower, "{:.9g}", "step time", step},
      {"mfu", dim::none, Better::higher, "{:.6f}", "model FLOPs utilization",
       [](const json& s) { return at(s, {"metrics", "mfu"}); }},
      {"hfu", dim::none, Better::higher, "{:.6f}", "hardware FLOPs utilization",
       [](const json& s) { return at(s, {"metrics", "hfu"}); }},
      {"model_flops", dim::flops, Better::neither, "{:.9g}", "model FLOPs per step",
       [](const json& s) { return at(s, {"metrics", "model_flops"}); }},
      {"hbm_bytes", dim::bytes, Better::lower, "{:.0f}", "HBM bytes read and written", hbm_bytes},
      {"arithmetic_intensity", dim::flops_per_byte, Better::neither, "{:.6g}", "model FLOPs per HBM byte",
       [](const json& s) -> std::optional<double> {
         const auto f = at(s, {"metrics", "model_flops"});
         const auto b = hbm_bytes(s);
         if (!f || !b) return std::nullopt;
         return *b > 0 ? *f / *b : 0.0;
       }},
      {"achieved_flops_per_s", dim::flops_per_second, Better::higher, "{:.6g}", "achieved model FLOP/s",
       [](const json& s) { return per_step(at(s, {"metrics", "model_flops"}), s); }},
      {"achieved_hbm_bytes_per_s", dim::bytes_per_second, Better::neither, "{:.6g}", "achieved HBM bandwidth",
       [](const json& s) { return per_step(hbm_bytes(s), s); }},
      {"examples_per_s", dim::per_second, Better::higher, "{:.6g}", "examples per second",
       [](const json& s) -> std::optional<double> { return at(s, {"metrics", "examples_per_s"}).value_or(0.0); }},
      {"chips", dim::none, Better::lower, "{:.0f}", "chips", [](const json& s) { return at(s, {"metrics", "chips"}); }},
      {"ici_utilization", dim::none, Better::neither, "{:.6f}", "mean ICI link utilization",
       [](const json& s) -> std::optional<double> { return at(s, {"links", "utilization", "mean"}).value_or(0.0); }},
      // Jobs (docs/faults.md): absent from runs without a job.
      {"goodput", dim::none, Better::higher, "{:.6f}", "job goodput (useful / wall time)",
       [](const json& s) { return finished_job(s, "goodput"); }},
      {"job_wall_s", dim::seconds, Better::lower, "{:.9g}", "job wall time",
       [](const json& s) { return finished_job(s, "wall_s"); }},
      // Transformers (docs/summary-format.md): tokens/s for every step kind, the latencies of prefill and decode
      // steps only; empty where the run does not report them.
      {"tokens_per_s", dim::per_second, Better::higher, "{:.6g}", "tokens per second",
       [](const json& s) { return at(s, {"metrics", "tokens_per_s"}); }},
      {"time_to_first_token_s", dim::seconds, Better::lower, "{:.9g}", "time to first token (prefill)",
       [](const json& s) { return at(s, {"metrics", "time_to_first_token_s"}); }},
      {"time_per_output_token_s", dim::seconds, Better::lower, "{:.9g}", "time per output token (decode)",
       [](const json& s) { return at(s, {"metrics", "time_per_output_token_s"}); }},
      // Whole models (docs/summary-format.md, "memory"): the plan before simulation and the peak as scheduled.
      {"hbm_plan_bytes", dim::bytes, Better::lower, "{:.0f}", "HBM plan per chip",
       [](const json& s) { return at(s, {"memory", "total_bytes"}); }},
      {"hbm_in_use_peak_bytes", dim::bytes, Better::lower, "{:.0f}",
       "peak HBM in use as scheduled (first chip of the fullest stage)",
       [](const json& s) { return at(s, {"memory", "in_use", "peak_bytes"}); }},
  };
  return kMetrics;
}

const MetricDef* find_metric(const std::string& name) {
  for (const auto& m : sweep_metrics()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> out;
  for (const auto& m : sweep_metrics()) out.push_back(m.name);
  return out;
}

std::string unit_suffix(const UnitDim& d) { return d.none() ? std::string() : " (" + unit_dim_label(d) + ")"; }

}  // namespace tpusim::tools
