// Reading a sweep file into a SweepPlan (load_sweep_plan, sweep_axes.h): every key of the file checked against
// what it may hold, each problem at its line, all of them reported together.
#include <algorithm>

#include <fmt/format.h>

#include "tools/src/sweep/sweep_axes.h"
#include "tools/src/sweep/sweep_metrics.h"
#include "tpusim/core/data_paths.h"

namespace tpusim::tools {
namespace fs = std::filesystem;
namespace {

// A list's items, or the node itself: keys that take one entry or a list of them.
std::vector<const ConfigNode*> items_of(const ConfigNode& n) {
  std::vector<const ConfigNode*> items;
  if (n.is_seq()) {
    for (const auto& i : n.items()) items.push_back(&i);
  } else {
    items.push_back(&n);
  }
  return items;
}

class PlanReader {
 public:
  PlanReader(const fs::path& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  SweepPlan read(const ConfigNode& root) {
    SweepPlan plan;
    plan.file = file_;
    if (!root.is_map()) {
      diags_.error(SourceLoc{file_.string(), 1, 1}, "", "wrong type", "a sweep map (name, scenario, grid)",
                   root.describe());
      return plan;
    }
    const std::vector<std::string> known{"name", "description", "scenario", "grid", "derive", "filter",
                                         "seeds",  "columns",     "analysis"};
    for (const auto& e : root.entries()) {
      if (std::find(known.begin(), known.end(), e.key) == known.end()) {
        diags_.error(e.key_loc, e.key, fmt::format("unknown key '{}'", e.key), "a known key", e.key,
                     suggestion(e.key, known));
      }
    }
    plan.name = text(root, "name", true);
    plan.description = text(root, "description", false);
    const std::string scenario = text(root, "scenario", true);
    if (!scenario.empty()) {
      if (auto p = resolve_data_file("scenarios", scenario, file_.parent_path(), root.find("scenario")->loc(),
                                     "scenario", diags_)) {
        plan.scenario = *p;
      }
    }
    read_grid(root, plan);
    if (const ConfigNode* d = root.find("derive")) read_derived(*d, plan);
    if (const ConfigNode* f = root.find("filter")) read_filters(*f, plan);
    if (const ConfigNode* s = root.find("seeds")) read_seeds(*s, plan);
    check_point_count(root, plan);
    if (const ConfigNode* c = root.find("columns")) read_columns(*c, plan);
    if (const ConfigNode* a = root.find("analysis")) read_analyses(*a, plan);
    return plan;
  }

 private:
  std::string text(const ConfigNode& map, const std::string& key, bool required) {
    const ConfigNode* n = map.find(key);
    if (n == nullptr) {
      if (required) diags_.error(map.loc(), key, "missing required key", "a text value", "nothing");
      return {};
    }
    if (!n->is_scalar()) {
      diags_.error(n->loc(), key, "wrong type", "a text value", n->describe());
      return {};
    }
    return n->scalar();
  }

  static bool is_axis_path(const SweepPlan& plan, const std::string& path) {
    for (const auto& a : plan.axes) {
      if (a.name == path || std::find(a.paths.begin(), a.paths.end(), path) != a.paths.end()) return true;
    }
    return false;
  }

  std::optional<Expression> expression(const ConfigNode& n, const std::string& key) {
    if (!n.is_scalar() || n.scalar().empty()) {
      diags_.error(n.loc(), key, "wrong type", "an expression, e.g. 2 FLOP * chip.clock", n.describe());
      return std::nullopt;
    }
    try {
      return Expression::parse(n.scalar());
    } catch (const ExprError& e) {
      diags_.error(at_column(n.loc(), e.column()), key, fmt::format("bad expression: {}", e.what()),
                   "an expression, e.g. 2 FLOP * chip.clock", fmt::format("'{}'", n.scalar()));
      return std::nullopt;
    }
  }

  // The values of one path: a list of values and ranges, or a single value or range.
  bool read_values(const ConfigNode& n, const std::string& key, std::vector<std::string>& values,
                   std::vector<SourceLoc>& locs) {
    auto add = [&](const ConfigNode& item) {
      if (item.is_scalar()) {
        try {
          if (auto range = expand_range(item.scalar())) {
            for (auto& v : *range) {
              values.push_back(std::move(v));
              locs.push_back(item.loc());
            }
            return;
          }
        } catch (const ExprError& e) {
          diags_.error(item.loc(), key, fmt::format("bad range: {}", e.what()),
                       "A .. B step S, A .. B x F, A .. B points N or A .. B log points N",
                       fmt::format("'{}'", item.scalar()));
          return;
        }
      }
      values.push_back(flow_text(item));
      locs.push_back(item.loc());
    };
    const std::size_t errors = diags_.size();
    if (n.is_seq()) {
      for (const auto& item : n.items()) add(item);
    } else if (n.is_scalar()) {
      add(n);
    }
    if (diags_.size() != errors) return false;  // a bad range, said once
    if (values.empty()) {
      diags_.error(n.loc(), key, "wrong type", "a list of values, a value, or a range such as 1 TB/s .. 4 TB/s x 2",
                   n.describe());
      return false;
    }
    return true;
  }

  // Counted before anything is expanded: a few long axes multiply to billions of runs (and past 64 bits).
  void check_point_count(const ConfigNode& root, const SweepPlan& plan) {
    double runs = static_cast<double>(std::max<std::size_t>(1, plan.seeds.size()));
    for (const Axis& a : plan.axes) runs *= static_cast<double>(std::max<std::size_t>(1, a.values.size()));
    if (runs <= static_cast<double>(kMaxSweepPoints)) return;
    const ConfigNode* grid = root.find("grid");
    diags_.error(grid != nullptr ? grid->loc() : root.loc(), "grid", "too many points",
                 fmt::format("at most {} points (the product of the axis lengths and the seeds)", kMaxSweepPoints),
                 fmt::format("{:.0f} points", runs), "split the sweep into several files");
  }

  // Two axes setting one path would each claim a value for every point while only the later one is run (and the
  // table would show both). A zipped group cannot name a path twice: the YAML reader refuses the repeated key.
  bool set_by_an_earlier_axis(const SweepPlan& plan, const std::string& path, const SourceLoc& at,
                              const std::string& key) {
    for (const Axis& a : plan.axes) {
      if (std::find(a.paths.begin(), a.paths.end(), path) == a.paths.end()) continue;
      const std::string by = a.name == path ? "an earlier axis" : fmt::format("the zipped group {}", a.name);
      diags_.error(at, key, fmt::format("{} is already set by {}", path, by), "each field path on one axis only",
                   fmt::format("{} again", path), "zip the values into one axis, or drop one of the two");
      return true;
    }
    return false;
  }

  void read_grid(const ConfigNode& root, SweepPlan& plan) {
    const ConfigNode* grid = root.find("grid");
    if (grid == nullptr || !grid->is_map() || grid->entries().empty()) {
      diags_.error(grid ? grid->loc() : root.loc(), "grid", grid ? "wrong type" : "missing required key",
                   "a map from a field path (or a zipped group's label) to values", grid ? grid->describe() : "nothing");
      return;
    }
    for (const auto& e : grid->entries()) {
      Axis axis;
      axis.name = e.key;
      if (e.value.is_map()) {  // a zipped group: every path has as many values, the i-th go together
        std::size_t count = 0;
        for (const auto& z : e.value.entries()) {
          std::vector<std::string> vals;
          std::vector<SourceLoc> locs;
          const std::string key = "grid." + e.key + "." + z.key;
          if (!read_values(z.value, key, vals, locs)) continue;
          if (!axis.paths.empty() && vals.size() != count) {
            diags_.error(z.value.loc(), key, "zipped lists differ in length",
                         fmt::format("{} values, as {} has", count, axis.paths.front()),
                         fmt::format("{} values", vals.size()));
            continue;
          }
          if (set_by_an_earlier_axis(plan, z.key, z.key_loc, key)) continue;
          count = vals.size();
          axis.paths.push_back(z.key);
          if (axis.values.empty()) {
            axis.values.resize(count);
            axis.locs.resize(count);
          }
          for (std::size_t i = 0; i < count; ++i) {
            axis.values[i].push_back(vals[i]);
            axis.locs[i].push_back(locs[i]);
          }
        }
        if (axis.paths.empty()) {
          diags_.error(e.value.loc(), "grid." + e.key, "an empty zipped group", "field paths with lists of values",
                       "nothing");
          continue;
        }
      } else {
        std::vector<std::string> vals;
        std::vector<SourceLoc> locs;
        if (!read_values(e.value, "grid." + e.key, vals, locs)) continue;
        if (set_by_an_earlier_axis(plan, e.key, e.key_loc, "grid." + e.key)) continue;
        axis.paths.push_back(e.key);
        for (std::size_t i = 0; i < vals.size(); ++i) {
          axis.values.push_back({vals[i]});
          axis.locs.push_back({locs[i]});
        }
      }
      plan.axes.push_back(std::move(axis));
    }
  }

  void read_derived(const ConfigNode& n, SweepPlan& plan) {
    if (!n.is_map()) {
      diags_.error(n.loc(), "derive", "wrong type", "a map from a field path to an expression", n.describe());
      return;
    }
    for (const auto& e : n.entries()) {
      if (is_axis_path(plan, e.key)) {
        diags_.error(e.key_loc, "derive." + e.key, "a derived field is also an axis", "a field no axis sets", e.key);
        continue;
      }
      if (auto ex = expression(e.value, "derive." + e.key)) plan.derived.push_back({e.key, *ex, e.value.loc()});
    }
  }

  void read_filters(const ConfigNode& n, SweepPlan& plan) {
    const std::vector<const ConfigNode*> items = items_of(n);
    for (const ConfigNode* i : items) {
      if (auto ex = expression(*i, "filter")) plan.filters.push_back({*ex, i->loc()});
    }
  }

  void read_seeds(const ConfigNode& n, SweepPlan& plan) {
    std::vector<std::string> vals;
    std::vector<SourceLoc> locs;
    // A single whole number N means seeds 1..N.
    if (n.is_scalar() && n.scalar().find("..") == std::string::npos) {
      char* end = nullptr;
      const long long count = std::strtoll(n.scalar().c_str(), &end, 10);
      if (*end != '\0' || count < 1 || count > 100000) {
        diags_.error(n.loc(), "seeds", "bad seed count", "a whole number >= 1, a list of seeds or a range",
                     fmt::format("'{}'", n.scalar()));
        return;
      }
      for (long long s = 1; s <= count; ++s) plan.seeds.push_back(s);
      return;
    }
    if (!read_values(n, "seeds", vals, locs)) return;
    for (std::size_t i = 0; i < vals.size(); ++i) {
      char* end = nullptr;
      const long long s = std::strtoll(vals[i].c_str(), &end, 10);
      if (*end != '\0' || s < 0) {
        diags_.error(locs[i], "seeds", "bad seed", "a whole number >= 0", fmt::format("'{}'", vals[i]));
        continue;
      }
      if (std::find(plan.seeds.begin(), plan.seeds.end(), s) != plan.seeds.end()) {
        diags_.error(locs[i], "seeds", "repeated seed", "each seed once", fmt::format("'{}'", vals[i]));
        continue;
      }
      plan.seeds.push_back(s);
    }
  }

  void read_columns(const ConfigNode& n, SweepPlan& plan) {
    if (!n.is_map()) {
      diags_.error(n.loc(), "columns", "wrong type", "a map from a column name to an expression", n.describe());
      return;
    }
    for (const auto& e : n.entries()) {
      if (find_metric(e.key) != nullptr || is_axis_path(plan, e.key)) {
        diags_.error(e.key_loc, "columns." + e.key, "a column cannot take the name of a metric or an axis", "a new name",
                     e.key);
        continue;
      }
      const std::string key = "columns." + e.key;
      if (!e.value.is_map()) {
        if (auto ex = expression(e.value, key)) plan.columns.push_back({e.key, *ex, e.value.loc(), Better::neither});
        continue;
      }
      // {expr: EXPRESSION, better: higher | lower | neither}
      for (const auto& f : e.value.entries()) {
        if (f.key != "expr" && f.key != "better") {
          diags_.error(f.key_loc, key + "." + f.key, fmt::format("unknown key '{}'", f.key), "expr or better", f.key,
                       suggestion(f.key, {"expr", "better"}));
        }
      }
      const ConfigNode* expr = e.value.find("expr");
      if (expr == nullptr) {
        diags_.error(e.value.loc(), key, "a column's map needs its expression", "{expr: EXPRESSION, better: higher}",
                     e.value.describe());
        continue;
      }
      Better better = Better::neither;
      if (const ConfigNode* b = e.value.find("better")) {
        const std::vector<std::string> choices{"higher", "lower", "neither"};
        const std::string v = b->is_scalar() ? b->scalar() : "";
        if (v == "higher") {
          better = Better::higher;
        } else if (v == "lower") {
          better = Better::lower;
        } else if (v != "neither") {
          diags_.error(b->loc(), key + ".better", "invalid value", "higher, lower or neither", b->describe(),
                       suggestion(v, choices));
          continue;
        }
      }
      if (auto ex = expression(*expr, key + ".expr")) plan.columns.push_back({e.key, *ex, expr->loc(), better});
    }
  }

  // Which way a metric or computed column is better (Better::neither when unknown).
  static Better direction_of(const std::string& name, const SweepPlan& plan) {
    if (const auto* m = find_metric(name)) return m->better;
    for (const auto& c : plan.columns) {
      if (c.name == name) return c.better;
    }
    return Better::neither;
  }

  // A metric or computed column for a Pareto axis or a heatmap colour; nullopt (reported) when unknown.
  bool check_quantity(const ConfigNode& at, const std::string& key, const std::string& name, const SweepPlan& plan) {
    std::vector<std::string> known = metric_names();
    for (const auto& c : plan.columns) known.push_back(c.name);
    if (std::find(known.begin(), known.end(), name) != known.end()) return true;
    diags_.error(at.loc(), key, fmt::format("unknown metric '{}'", name), "a metric or a column of this sweep", name,
                 suggestion(name, known));
    return false;
  }

  void read_analyses(const ConfigNode& n, SweepPlan& plan) {
    const std::vector<const ConfigNode*> items = items_of(n);
    const std::vector<std::string> kinds{"none", "roofline", "heatmap", "pareto", "line"};
    for (const ConfigNode* item : items) {
      std::string kind;
      const ConfigNode* body = nullptr;
      if (item->is_scalar()) {
        kind = item->scalar();
      } else if (item->is_map() && item->entries().size() == 1) {
        kind = item->entries().front().key;
        body = &item->entries().front().value;
      } else {
        diags_.error(item->loc(), "analysis", "wrong type", "roofline, or heatmap: {x, y, metric}, or pareto: {x, y}, or line: {metric}",
                     item->describe());
        continue;
      }
      if (kind == "none") continue;
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
        diags_.error(item->loc(), "analysis", fmt::format("unknown analysis '{}'", kind), "none, roofline, heatmap, pareto or line",
                     kind, suggestion(kind, kinds));
        continue;
      }
      AnalysisSpec a;
      if (kind == "roofline") {
        a.kind = AnalysisKind::roofline;
        a.file = "roofline";
        plan.analyses.push_back(a);
        continue;
      }
      const std::string key = "analysis." + kind;
      if (body == nullptr || !body->is_map()) {
        diags_.error(item->loc(), key, "wrong type",
                     kind == "heatmap" ? "a map {x, y, metric}" : kind == "line" ? "a map {metric}" : "a map {x, y}",
                     body ? body->describe() : "nothing");
        continue;
      }
      const std::vector<std::string> keys = kind == "heatmap" ? std::vector<std::string>{"x", "y", "metric", "name"}
                                            : kind == "line"  ? std::vector<std::string>{"metric", "name"}
                                                              : std::vector<std::string>{"x", "y", "name"};
      for (const auto& e : body->entries()) {
        if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) {
          diags_.error(e.key_loc, key + "." + e.key, fmt::format("unknown key '{}'", e.key), "a known key", e.key,
                       suggestion(e.key, keys));
        }
      }
      if (kind != "line") {
        a.x = text(*body, "x", true);
        a.y = text(*body, "y", true);
      }
      if (kind == "line") {
        a.kind = AnalysisKind::line;
        a.metric = text(*body, "metric", true);
        if (!a.metric.empty()) check_quantity(*body, key + ".metric", a.metric, plan);
        a.file = "line_" + a.metric;
      } else if (kind == "heatmap") {
        a.kind = AnalysisKind::heatmap;
        a.metric = text(*body, "metric", false);
        if (a.metric.empty()) a.metric = "step_time_s";
        std::vector<std::string> axes;
        for (const auto& ax : plan.axes) axes.push_back(ax.name);
        for (const std::string* v : {&a.x, &a.y}) {
          if (v->empty() || std::find(axes.begin(), axes.end(), *v) != axes.end()) continue;
          diags_.error(body->loc(), key, fmt::format("unknown axis '{}'", *v), "an axis of the grid", *v,
                       suggestion(*v, axes));
        }
        if (!a.x.empty() && a.x == a.y) diags_.error(body->loc(), key, "x and y are the same axis", "two axes", a.x);
        check_quantity(*body, key + ".metric", a.metric, plan);
        a.file = "heatmap_" + a.metric;
      } else {
        a.kind = AnalysisKind::pareto;
        for (std::string* v : {&a.x, &a.y}) {
          std::string bare = *v;
          if (bare.rfind("min ", 0) == 0 || bare.rfind("max ", 0) == 0) bare = trim_spaces(bare.substr(4));
          if (bare.empty() || !check_quantity(*body, key, bare, plan)) continue;
          // A front needs each objective's direction: the metric's or column's own, or min / max.
          if (bare == *v && direction_of(bare, plan) == Better::neither) {
            diags_.error(body->loc(), key, fmt::format("'{}' has no better direction", bare),
                         fmt::format("'min {0}' or 'max {0}'{1}", bare,
                                     find_metric(bare) == nullptr ? ", or the column declared as {expr: ..., better: higher}"
                                                                  : ""),
                         fmt::format("'{}'", bare));
          }
        }
        auto bare = [](const std::string& s) {
          return s.rfind("min ", 0) == 0 || s.rfind("max ", 0) == 0 ? trim_spaces(s.substr(4)) : s;
        };
        a.file = "pareto_" + bare(a.x) + "_" + bare(a.y);
      }
      if (const ConfigNode* name = body->find("name"); name != nullptr && name->is_scalar()) a.file = name->scalar();
      plan.analyses.push_back(a);
    }
  }

  fs::path file_;
  Diagnostics& diags_;
};

}  // namespace

SweepPlan load_sweep_plan(const std::string& name_or_path) {
  Diagnostics diags;
  const auto file = resolve_data_file("sweeps", name_or_path, {}, SourceLoc{"(command line)", 0, 0}, "sweep", diags);
  diags.throw_if_any();
  const ConfigNode root = load_yaml_file(*file, diags);
  diags.throw_if_any();
  PlanReader reader(*file, diags);
  SweepPlan plan = reader.read(root);
  diags.throw_if_any();
  return plan;
}

}  // namespace tpusim::tools
