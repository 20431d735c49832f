#include "tools/src/calibration_set.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tpusim/core/data_paths.h"
#include "tpusim/core/units.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

namespace {

constexpr MetricInfo kMetrics[] = {
    {Metric::step_time, "step_time", Dimension::seconds},
    {Metric::collective_time, "collective_time", Dimension::seconds},
    {Metric::gathered_bandwidth, "gathered_bandwidth", Dimension::bytes_per_second},
    {Metric::mfu, "mfu", std::nullopt},
    {Metric::flops_per_chip, "flops_per_chip", Dimension::flops_per_second},
};

// "56.0%" or "0.56" as a fraction; nullopt for anything else.
std::optional<double> parse_fraction(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::optional<double> v = parse_decimal(percent ? text.substr(0, text.size() - 1) : text);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return percent ? *v / 100 : *v;
}

}  // namespace

std::vector<CalibrationPoint> load_calibration(const std::string& name_or_path, std::string& set_name) {
  Diagnostics diags;
  const auto file =
      resolve_data_file("calibration", name_or_path, {}, SourceLoc{"(command line)", 0, 0}, "calibration set", diags);
  diags.throw_if_any();
  const ConfigNode root = load_yaml_file(*file, diags);
  diags.throw_if_any();
  const auto check_keys = [&](const ConfigNode& map, const std::string& path, const std::vector<std::string>& known) {
    for (const auto& e : map.entries()) {
      if (std::find(known.begin(), known.end(), e.key) == known.end()) {
        diags.error(e.key_loc, path + e.key, fmt::format("unknown key '{}'", e.key), "a known key", e.key,
                    suggestion(e.key, known));
      }
    }
  };
  const auto text = [&](const ConfigNode& map, const std::string& path, const std::string& key,
                        bool required) -> std::string {
    const ConfigNode* n = map.find(key);
    if (n == nullptr) {
      if (required) diags.error(map.loc(), path + key, "missing required key", "a text value", "nothing");
      return {};
    }
    if (!n->is_scalar()) {
      diags.error(n->loc(), path + key, "wrong type", "a text value", n->describe());
      return {};
    }
    return n->scalar();
  };
  if (!root.is_map()) {
    diags.error(SourceLoc{file->string(), 1, 1}, "", "wrong type", "a calibration map (name, entries)",
                root.describe());
    diags.throw_if_any();
  }
  check_keys(root, "", {"name", "entries"});
  set_name = text(root, "", "name", true);
  std::vector<CalibrationPoint> points;
  const ConfigNode* entries = root.find("entries");
  if (entries == nullptr || !entries->is_seq() || entries->items().empty()) {
    diags.error(entries ? entries->loc() : root.loc(), "entries", entries ? "wrong type" : "missing required key",
                "a non-empty list of entries", entries ? entries->describe() : "nothing");
    diags.throw_if_any();
  }
  std::vector<std::string> metric_names;
  for (const MetricInfo& m : kMetrics) metric_names.emplace_back(m.name);
  const auto metric_of = [&](const ConfigNode& at, const std::string& path,
                             const std::string& name) -> const MetricInfo* {
    for (const MetricInfo& m : kMetrics) {
      if (name == m.name) return &m;
    }
    diags.error(at.loc(), path, fmt::format("unknown metric '{}'", name),
                fmt::format("one of {}", fmt::join(metric_names, ", ")),
                name, suggestion(name, metric_names));
    return nullptr;
  };
  for (std::size_t e = 0; e < entries->items().size(); ++e) {
    const ConfigNode& entry = entries->items()[e];
    const std::string ep = fmt::format("entries[{}].", e);
    if (!entry.is_map()) {
      diags.error(entry.loc(), ep, "wrong type", "an entry map (id, title, scenario, metric, points)",
                  entry.describe());
      continue;
    }
    check_keys(entry, ep, {"id", "title", "source", "scenario", "metric", "plot", "points"});
    CalibrationPoint base;
    base.id = text(entry, ep, "id", true);
    base.source = text(entry, ep, "source", false);
    (void)text(entry, ep, "title", false);
    const std::string scenario = text(entry, ep, "scenario", true);
    if (!scenario.empty()) {
      // A path (it ends in .yaml), relative to the calibration file.
      if (auto p = resolve_data_file("scenarios", scenario, file->parent_path(), entry.find("scenario")->loc(),
                                     ep + "scenario", diags)) {
        base.scenario = *p;
      }
    }
    // The entry's metric is the default of its points; a point may name its own, or be a ratio of two others.
    const std::string metric = text(entry, ep, "metric", false);
    if (!metric.empty()) base.metric = metric_of(*entry.find("metric"), ep + "metric", metric);
    const std::string plot = text(entry, ep, "plot", false);
    base.plot = plot == "true";
    if (!plot.empty() && plot != "true" && plot != "false") {
      diags.error(entry.find("plot")->loc(), ep + "plot", "wrong value", "true or false", plot);
    }
    if (base.plot && (base.metric == nullptr || base.metric->metric != Metric::gathered_bandwidth)) {
      diags.error(entry.find("plot")->loc(), ep + "plot", "plots are drawn against the gathered size",
                  "plot only with metric gathered_bandwidth", base.metric != nullptr ? base.metric->name : "no metric");
    }
    const ConfigNode* list = entry.find("points");
    if (list == nullptr || !list->is_seq() || list->items().empty()) {
      diags.error(list ? list->loc() : entry.loc(), ep + "points", list ? "wrong type" : "missing required key",
                  "a non-empty list of points", list ? list->describe() : "nothing");
      continue;
    }
    const std::size_t first = points.size();  // this entry's points start here
    std::vector<std::pair<std::size_t, const ConfigNode*>> ratios;  // resolved once the entry's labels are known
    for (std::size_t i = 0; i < list->items().size(); ++i) {
      const ConfigNode& pt = list->items()[i];
      const std::string pp = fmt::format("{}points[{}].", ep, i);
      if (!pt.is_map()) {
        diags.error(pt.loc(), pp, "wrong type", "a point map (label, set, measured, within)", pt.describe());
        continue;
      }
      check_keys(pt, pp, {"label", "set", "metric", "ratio", "measured", "within"});
      CalibrationPoint p = base;
      p.loc = pt.loc();
      p.label = text(pt, pp, "label", true);
      const ConfigNode* ratio = pt.find("ratio");
      const std::string own_metric = text(pt, pp, "metric", false);
      if (ratio != nullptr) {
        if (pt.find("metric") != nullptr || pt.find("set") != nullptr) {
          diags.error(ratio->loc(), pp + "ratio", "a ratio point runs nothing: it divides two other points",
                      "ratio without metric or set", pt.find("metric") != nullptr ? "metric" : "set");
        }
        p.metric = &kRatio;
        ratios.emplace_back(points.size(), ratio);
      } else if (!own_metric.empty()) {
        p.metric = metric_of(*pt.find("metric"), pp + "metric", own_metric);
      } else if (p.metric == nullptr && metric.empty()) {
        diags.error(pt.loc(), pp + "metric", "no metric for the point",
                    fmt::format("a metric here or in the entry (one of {}), or a ratio", fmt::join(metric_names, ", ")),
                    "nothing");
      }
      if (const ConfigNode* set = pt.find("set")) {
        if (!set->is_map()) {
          diags.error(set->loc(), pp + "set", "wrong type", "a map from a field path to a value", set->describe());
        } else {
          for (const auto& kv : set->entries()) {
            p.overrides.push_back(kv.key + "=" + flow_text(kv.value));
            p.located.push_back(Override{p.overrides.back(), kv.key_loc, kv.value.loc(), kv.value});
          }
        }
      }
      p.measured_text = text(pt, pp, "measured", true);
      if (!p.measured_text.empty() && p.metric != nullptr) {
        if (is_fraction(p)) {
          const auto f = parse_fraction(p.measured_text);
          if (!f || *f <= 0) {
            diags.error(pt.find("measured")->loc(), pp + "measured", "wrong value",
                        fmt::format("a positive fraction such as 56.0% or 0.56 (metric {})", p.metric->name),
                        p.measured_text);
          } else {
            p.measured = *f;
          }
        } else {
          const Dimension dim = *p.metric->dimension;
          const auto q = parse_quantity(p.measured_text);
          if (!q || q->dimension != dim || q->si <= 0) {
            diags.error(pt.find("measured")->loc(), pp + "measured", "wrong value",
                        fmt::format("a positive {} such as {} (metric {})", dimension_name(dim), dimension_example(dim),
                                    p.metric->name),
                        p.measured_text);
          } else {
            p.measured = q->si;
          }
        }
      }
      p.bound.text = text(pt, pp, "within", true);
      const std::string& b = p.bound.text;
      char* end = nullptr;
      const std::string points_suffix = " points";
      bool ok = false;
      if (!b.empty() && b.front() == 'x') {
        p.bound.kind = BoundKind::factor;
        p.bound.value = std::strtod(b.c_str() + 1, &end);
        ok = end != b.c_str() + 1 && *end == '\0' && p.bound.value >= 1;
      } else if (!b.empty() && b.back() == '%') {
        p.bound.value = std::strtod(b.c_str(), &end) / 100.0;
        ok = end != b.c_str() && *end == '%' && end + 1 == b.c_str() + b.size() && p.bound.value > 0;
      } else if (b.size() > points_suffix.size() && b.compare(b.size() - points_suffix.size(), std::string::npos,
                                                              points_suffix) == 0) {
        p.bound.kind = BoundKind::points;
        p.bound.value = std::strtod(b.c_str(), &end) / 100.0;
        ok = end == b.c_str() + b.size() - points_suffix.size() && p.bound.value > 0;
      }
      if (!b.empty() && !ok) {
        diags.error(pt.find("within")->loc(), pp + "within", "wrong value",
                    "a relative error such as 10%, a factor such as x1.5, or for a fraction points such as 5 points",
                    b);
      } else if (ok && p.bound.kind == BoundKind::points && p.metric != nullptr && !is_fraction(p)) {
        diags.error(pt.find("within")->loc(), pp + "within", "a bound in points applies to fractions",
                    fmt::format("a relative error such as 10% or a factor such as x1.5 (metric {})", p.metric->name),
                    b);
      }
      points.push_back(std::move(p));
    }
    // A ratio names two points of its entry, by label, that read the same metric.
    for (const auto& [index, node] : ratios) {
      const std::string rp = fmt::format("{}points[{}].ratio", ep, index - first);
      std::vector<std::string> labels;
      for (std::size_t i = first; i < points.size(); ++i) {
        if (!points[i].ratio && points[i].metric != &kRatio) labels.push_back(points[i].label);
      }
      if (!node->is_seq() || node->items().size() != 2 || !node->items()[0].is_scalar() ||
          !node->items()[1].is_scalar()) {
        diags.error(node->loc(), rp, "wrong type", "[numerator label, denominator label]", node->describe());
        continue;
      }
      std::array<std::size_t, 2> of{};
      bool found = true;
      for (std::size_t k = 0; k < 2; ++k) {
        const ConfigNode& item = node->items()[k];
        const auto it = std::find(labels.begin(), labels.end(), item.scalar());
        if (it == labels.end()) {
          diags.error(item.loc(), rp, "no such point in the entry", "the label of another point of the entry",
                      item.scalar(), suggestion(item.scalar(), labels));
          found = false;
          continue;
        }
        for (std::size_t i = first; i < points.size(); ++i) {
          if (points[i].label == *it && points[i].metric != &kRatio) of[k] = i;
        }
      }
      if (!found) continue;
      const MetricInfo* a = points[of[0]].metric;
      const MetricInfo* b = points[of[1]].metric;
      if (a != nullptr && b != nullptr && a != b) {
        diags.error(node->loc(), rp, "a ratio of two different metrics", "two points of one metric",
                    fmt::format("{} / {}", a->name, b->name));
        continue;
      }
      points[index].ratio = of;
    }
  }
  diags.throw_if_any();
  return points;
}

}  // namespace tpusim::tools
