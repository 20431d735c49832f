#include "tools/src/sweep/sweep_table.h"

#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "tools/src/does_not_fit.h"
#include "tools/src/sweep/sweep_runner.h"
#include "tpusim/core/diagnostics.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::optional<std::size_t> SweepTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return i;
  }
  return std::nullopt;
}

std::vector<RunRecord> read_runs(const Expansion& ex, const fs::path& points_dir) {
  std::vector<RunRecord> out;
  for (const auto& r : ex.runs) {
    RunRecord rec;
    rec.run = &r;
    const fs::path summary = points_dir / point_dir_name(r.index) / "summary.json";
    if (fs::exists(summary)) {
      std::ifstream in(summary);
      rec.summary = json::parse(in, nullptr, false);
      rec.ok = rec.summary.is_object();
      rec.status = rec.ok ? "ok" : "failed (unreadable summary.json)";
    } else if (const auto f = read_failure(points_dir, r.index)) {
      rec.status = does_not_fit(f->error) ? std::string(kDoesNotFitStatus) : fmt::format("failed (exit {})", f->exit_code);
      rec.error = f->error;
    } else {
      rec.status = "not run";
    }
    out.push_back(std::move(rec));
  }
  return out;
}

namespace {

// The names a row's expressions see: axis paths and zipped groups' labels, derived paths, then what `extra`
// adds (metrics and earlier columns).
std::map<std::string, Value> row_names(const SweepPlan& plan, const Config& c) {
  std::map<std::string, Value> env;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    const Axis& a = plan.axes[i];
    for (std::size_t j = 0; j < a.paths.size(); ++j) env[a.paths[j]] = value_from_text(a.values[c.choice[i]][j]);
    if (a.paths.size() > 1) env[a.name] = Value::of_text(a.label(c.choice[i]));
  }
  for (std::size_t d = 0; d < plan.derived.size(); ++d) env[plan.derived[d].path] = value_from_text(c.derived_values[d]);
  return env;
}

// Evaluates the computed columns of one row given its metric values; fills `dims` when given.
std::vector<std::optional<double>> eval_columns(const SweepPlan& plan, const Config& c,
                                                const std::vector<std::optional<double>>& metrics,
                                                std::vector<UnitDim>* dims) {
  std::map<std::string, Value> env = row_names(plan, c);
  const auto& defs = sweep_metrics();
  for (std::size_t m = 0; m < defs.size(); ++m) {
    if (metrics[m]) env[defs[m].name] = Value::number(*metrics[m], defs[m].dim);
  }
  std::vector<std::optional<double>> out;
  for (const auto& col : plan.columns) {
    const Value v = col.expr.eval([&](const std::string& n) -> std::optional<Value> {
      const auto it = env.find(n);
      if (it == env.end()) return std::nullopt;
      return it->second;
    });
    if (v.kind == Value::Kind::text) throw ExprError("a column must be a number, found text", 0);
    env[col.name] = v;
    out.push_back(v.si);
    if (dims) dims->push_back(v.dim);
  }
  return out;
}

std::vector<UnitDim> column_dims(const SweepPlan& plan, const Expansion& ex) {
  std::vector<UnitDim> dims;
  if (plan.columns.empty() || ex.configs.empty()) return dims;
  std::vector<std::optional<double>> stand_in(sweep_metrics().size(), 1.0);
  (void)eval_columns(plan, ex.configs.front(), stand_in, &dims);
  return dims;
}

std::string csv_text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += "\"\"";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string cell(const std::optional<double>& v, const std::string& format) {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string();
}

}  // namespace

void check_columns(const SweepPlan& plan, const Expansion& ex) {
  try {
    (void)column_dims(plan, ex);
  } catch (const ExprError& e) {
    // Which column: evaluate one at a time for the location.
    Diagnostics d;
    for (std::size_t i = 0; i < plan.columns.size(); ++i) {
      SweepPlan one = plan;
      one.columns.resize(i + 1);
      try {
        (void)column_dims(one, ex);
      } catch (const ExprError& inner) {
        SourceLoc loc = plan.columns[i].loc;
        if (loc.line > 0) loc.column += static_cast<int>(inner.column());
        d.error(loc, "columns." + plan.columns[i].name, inner.what(),
                "an expression of axes, derived values, metrics and earlier columns",
                fmt::format("'{}'", plan.columns[i].expr.text()));
        break;
      }
    }
    if (d.empty()) d.error(SourceLoc{plan.file.string(), 0, 0}, "columns", e.what());
    d.throw_if_any();
  }
}

SweepTable build_table(const SweepPlan& plan, const Expansion& ex, const std::vector<RunRecord>& runs) {
  SweepTable t;
  for (const auto& m : sweep_metrics()) t.columns.push_back({m.name, m.dim, m.better, m.format, m.description});
  const std::vector<UnitDim> dims = column_dims(plan, ex);
  for (std::size_t i = 0; i < plan.columns.size(); ++i) {
    t.columns.push_back({plan.columns[i].name, dims[i], plan.columns[i].better, "{:.9g}", plan.columns[i].expr.text()});
  }
  std::vector<std::vector<const RunRecord*>> by_config(ex.configs.size());
  for (const auto& r : runs) by_config[r.run->config].push_back(&r);
  for (const auto& c : ex.configs) {
    TableRow row;
    row.config = &c;
    const auto& members = by_config[c.index];
    row.runs = members.size();
    const RunRecord* first_failure = nullptr;
    std::size_t not_run = 0;
    std::vector<std::vector<double>> samples(t.columns.size());
    std::size_t unfit = 0;
    for (const RunRecord* r : members) {
      if (!r->ok) {
        if (r->status == "not run") ++not_run;
        else if (r->status == kDoesNotFitStatus) ++unfit;
        else if (first_failure == nullptr) first_failure = r;
        continue;
      }
      ++row.runs_ok;
      if (row.first_ok == nullptr) row.first_ok = r;
      std::vector<std::optional<double>> metrics;
      for (const auto& m : sweep_metrics()) metrics.push_back(m.extract(r->summary));
      std::vector<std::optional<double>> computed;
      try {
        computed = eval_columns(plan, c, metrics, nullptr);
      } catch (const ExprError&) {
        computed.assign(plan.columns.size(), std::nullopt);  // e.g. a metric this run does not report
      }
      metrics.insert(metrics.end(), computed.begin(), computed.end());
      for (std::size_t k = 0; k < metrics.size(); ++k) {
        if (metrics[k]) samples[k].push_back(*metrics[k]);
      }
    }
    for (std::size_t k = 0; k < t.columns.size(); ++k) {
      const auto& s = samples[k];
      // A column is reported only when every ok run has it: a mean over some seeds would mislead.
      if (s.empty() || s.size() != row.runs_ok) {
        row.mean.emplace_back();
        row.spread.emplace_back();
        continue;
      }
      // Shifted by the first sample, so that equal samples give exactly their value and a spread of 0.
      double sum = 0;
      for (double v : s) sum += v - s.front();
      const double shift = sum / static_cast<double>(s.size());
      const double mean = s.front() + shift;
      double sq = 0;
      for (double v : s) sq += (v - s.front() - shift) * (v - s.front() - shift);
      row.mean.emplace_back(mean);
      row.spread.emplace_back(s.size() > 1 ? std::sqrt(sq / static_cast<double>(s.size() - 1)) : 0.0);
    }
    if (row.runs_ok == row.runs) {
      row.status = "ok";
    } else if (plan.seeds.empty()) {
      row.status = members.front()->status;
      row.error = members.front()->error;
    } else if (unfit == row.runs) {
      row.status = std::string(kDoesNotFitStatus);  // every seed's: the memory plan does not depend on the seed
      row.error = members.front()->error;
    } else if (first_failure != nullptr) {
      row.status = fmt::format("failed ({} of {} runs)", row.runs - row.runs_ok - not_run, row.runs);
      row.error = first_failure->error;
    } else {
      row.status = fmt::format("not run ({} of {} runs)", not_run, row.runs);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

void write_table_csv(const SweepPlan& plan, const SweepTable& table, std::ostream& out) {
  const bool seeds = !plan.seeds.empty();
  out << "point";
  for (const auto& a : plan.axes) {
    for (const auto& p : a.paths) out << "," << p;
  }
  for (const auto& d : plan.derived) out << "," << d.path;
  out << ",status";
  if (seeds) out << ",runs_ok";
  for (const auto& c : table.columns) out << "," << c.name;
  if (seeds) {
    for (const auto& c : table.columns) out << "," << c.name << "_sd";
  }
  out << ",error\n";
  for (const auto& r : table.rows) {
    out << r.config->index;
    for (std::size_t i = 0; i < plan.axes.size(); ++i) {
      for (const auto& v : plan.axes[i].values[r.config->choice[i]]) out << "," << csv_text(v);
    }
    for (const auto& v : r.config->derived_values) out << "," << csv_text(v);
    out << "," << r.status;
    if (seeds) out << "," << r.runs_ok;
    for (std::size_t k = 0; k < table.columns.size(); ++k) out << "," << cell(r.mean[k], table.columns[k].format);
    if (seeds) {
      for (std::size_t k = 0; k < table.columns.size(); ++k) out << "," << cell(r.spread[k], "{:.6g}");
    }
    out << "," << (r.error.empty() ? std::string() : csv_text(r.error)) << "\n";
  }
}

void write_runs_csv(const SweepPlan& plan, const Expansion& ex, const std::vector<RunRecord>& runs, std::ostream& out) {
  out << "run,point,seed";
  for (const auto& a : plan.axes) {
    for (const auto& p : a.paths) out << "," << p;
  }
  out << ",status";
  for (const auto& m : sweep_metrics()) out << "," << m.name;
  out << ",error\n";
  for (const auto& r : runs) {
    const Config& c = ex.configs[r.run->config];
    out << r.run->index << "," << c.index << "," << (r.run->seed ? std::to_string(*r.run->seed) : std::string());
    for (std::size_t i = 0; i < plan.axes.size(); ++i) {
      for (const auto& v : plan.axes[i].values[c.choice[i]]) out << "," << csv_text(v);
    }
    out << "," << r.status;
    for (const auto& m : sweep_metrics()) out << "," << (r.ok ? cell(m.extract(r.summary), m.format) : std::string());
    out << "," << (r.error.empty() ? std::string() : csv_text(r.error)) << "\n";
  }
}

json table_json(const SweepPlan& plan, const SweepTable& table) {
  auto better = [](Better b) { return b == Better::lower ? "lower" : b == Better::higher ? "higher" : "neither"; };
  json axes = json::array();
  for (const auto& a : plan.axes) axes.push_back({{"name", a.name}, {"paths", a.paths}});
  json derived = json::array();
  for (const auto& d : plan.derived) derived.push_back({{"path", d.path}, {"expression", d.expr.text()}});
  json columns = json::array();
  for (const auto& c : table.columns) {
    columns.push_back({{"name", c.name}, {"unit", unit_dim_label(c.dim)}, {"better", better(c.better)},
                       {"description", c.description}});
  }
  json rows = json::array();
  for (const auto& r : table.rows) {
    json values = json::object();
    for (std::size_t i = 0; i < plan.axes.size(); ++i) {
      for (std::size_t j = 0; j < plan.axes[i].paths.size(); ++j) {
        values[plan.axes[i].paths[j]] = plan.axes[i].values[r.config->choice[i]][j];
      }
    }
    for (std::size_t d = 0; d < plan.derived.size(); ++d) values[plan.derived[d].path] = r.config->derived_values[d];
    json mean = json::object(), spread = json::object();
    for (std::size_t k = 0; k < table.columns.size(); ++k) {
      mean[table.columns[k].name] = r.mean[k] ? json(*r.mean[k]) : json(nullptr);
      spread[table.columns[k].name] = r.spread[k] ? json(*r.spread[k]) : json(nullptr);
    }
    json row{{"point", r.config->index}, {"values", values}, {"status", r.status}};
    row["error"] = r.error.empty() ? json(nullptr) : json(r.error);
    row["runs"] = r.runs;
    row["runs_ok"] = r.runs_ok;
    row["metrics"] = mean;
    if (!plan.seeds.empty()) row["spread"] = spread;
    rows.push_back(std::move(row));
  }
  return json{{"format", "tpusim-sweep-table"}, {"version", 1},      {"sweep", plan.name},
              {"axes", axes},                   {"derived", derived}, {"seeds", plan.seeds},
              {"columns", columns},             {"rows", rows}};
}

}  // namespace tpusim::tools
