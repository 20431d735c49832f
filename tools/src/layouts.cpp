#include "tools/src/layouts.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/study_plan.h"
#include "tools/src/sweep/sweep_runner.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/sharding.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

namespace {

struct Layout {
  std::vector<std::pair<std::string, int>> axes;
  std::vector<std::pair<std::string, std::string>> knobs;  // the workload fields searched with the mesh
  std::string dropped;  // why it was not run (empty: run)
  double step_time_s = 0;
  double mfu = 0;
  double hbm_bytes = 0;  // the memory plan's total per chip
  bool ran = false;
  [[nodiscard]] std::string mesh() const {
    std::vector<std::string> parts;
    for (const auto& [n, s] : axes) parts.push_back(fmt::format("{}: {}", n, s));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  // The mesh and, when fields are searched with it, their values ("{fsdp: 4} remat=full").
  [[nodiscard]] std::string label() const {
    std::string out = mesh();
    for (const auto& [field, value] : knobs) out += fmt::format(" {}={}", field, value);
    return out;
  }
};

// The workload fields `layouts` can search jointly with the mesh, with the values asked for.
using Knobs = std::vector<std::pair<std::string, std::string>>;

// Every combination of the values given (one empty combination when none is).
std::vector<Knobs> combinations(const LayoutsArgs& args) {
  std::vector<Knobs> out{{}};
  for (const auto& [field, values] : {std::pair<std::string, const std::vector<std::string>*>{"microbatches", &args.microbatches},
                                      {"remat", &args.remat},
                                      {"overlap", &args.overlap}}) {
    if (values->empty()) continue;
    std::vector<Knobs> next;
    for (const Knobs& k : out) {
      for (const std::string& v : *values) {
        Knobs more = k;
        more.emplace_back(field, v);
        next.push_back(std::move(more));
      }
    }
    out = std::move(next);
  }
  return out;
}

// A value listed twice for one field (it would run every mesh twice), or an empty one.
std::string listed_badly(const LayoutsArgs& args) {
  for (const auto& [flag, values] : {std::pair<std::string, const std::vector<std::string>*>{"--microbatches", &args.microbatches},
                                     {"--remat", &args.remat},
                                     {"--overlap", &args.overlap},
                                     {"--axes", &args.axes}}) {
    for (std::size_t i = 0; i < values->size(); ++i) {
      if ((*values)[i].empty()) return fmt::format("{}: an empty value", flag);
      for (std::size_t j = 0; j < i; ++j) {
        if ((*values)[i] == (*values)[j]) return fmt::format("{}: '{}' listed twice", flag, (*values)[i]);
      }
    }
  }
  return "";
}

// Every ordered factorization of `n` over `names`.
void factor(int n, const std::vector<std::string>& names, std::size_t i, std::vector<std::pair<std::string, int>>& cur,
            std::vector<Layout>& out) {
  if (i + 1 == names.size()) {
    cur.emplace_back(names[i], n);
    out.push_back(Layout{cur, {}, "", 0, 0, 0, false});
    cur.pop_back();
    return;
  }
  for (int d = 1; d <= n; ++d) {
    if (n % d != 0) continue;
    cur.emplace_back(names[i], d);
    factor(n / d, names, i + 1, cur, out);
    cur.pop_back();
  }
}

// The catalogue's axes the layout search takes for some workload (core/mesh_spec.h), in their search order.
std::vector<const MeshAxisInfo*> search_axes() {
  std::vector<const MeshAxisInfo*> axes;
  for (const MeshAxisInfo& a : known_mesh_axes()) {
    if (a.searched != MeshAxisInfo::Searched::never) axes.push_back(&a);
  }
  std::stable_sort(axes.begin(), axes.end(),
                   [](const MeshAxisInfo* a, const MeshAxisInfo* b) { return a->search_order < b->search_order; });
  return axes;
}

}  // namespace

std::string layout_axis_names() {
  std::vector<std::string> names;
  for (const MeshAxisInfo* a : search_axes()) names.push_back(a->name);
  return fmt::format("{}", fmt::join(names, ", "));
}

int layouts_command(const LayoutsArgs& args, const std::string& self_exe) {
  if (const std::string bad = listed_badly(args); !bad.empty()) {
    std::cerr << "tpusim layouts: " << bad << "; nothing was run\n";
    return 2;
  }
  // One scenario per combination of the searched fields, each read by the parser (a bad value is its error,
  // with its did-you-mean).
  const std::vector<Knobs> combos = combinations(args);
  std::vector<Scenario> scenarios;
  for (const Knobs& k : combos) {
    std::vector<std::string> overrides = args.overrides;
    for (const auto& [field, value] : k) overrides.push_back(fmt::format("workload.{}={}", field, value));
    try {
      scenarios.push_back(load_scenario(args.scenario, overrides));
    } catch (const ConfigError& e) {
      // A searched value's error names the flag it came from, not a --set the user never passed.
      std::vector<Diagnostic> diags = e.diagnostics();
      for (Diagnostic& d : diags) {
        for (const auto& [field, value] : k) {
          if (d.loc.file == fmt::format("--set workload.{}={}", field, value)) {
            d.loc.file = fmt::format("--{} {}", field, value);
          }
        }
      }
      std::cerr << ConfigError(diags).what() << "\n";
      return 2;
    }
  }
  const Scenario& s = scenarios.front();
  if (s.workload.model.kind != ModelKind::transformer && s.workload.model.kind != ModelKind::resnet) {
    std::cerr << "tpusim layouts: the layout search applies to whole models (transformer, resnet); nothing was run\n";
    return 2;
  }
  if (s.workload.step != StepKind::train && (!args.microbatches.empty() || !args.remat.empty())) {
    std::cerr << "tpusim layouts: --microbatches and --remat apply to training steps; this scenario's step is not "
                 "a training step; nothing was run\n";
    return 2;
  }
  // The axes searched for this workload (the catalogue's `searched`, core/mesh_spec.h), in their search order;
  // an axis with `variant_of` (tensor_sequence) is tried on each mesh of that axis rather than as a factor.
  const auto& t = s.workload.model.transformer;
  const bool transformer = s.workload.model.kind == ModelKind::transformer;
  const bool whole_sequences = transformer && t.architecture != Architecture::encoder_decoder &&
                               (s.workload.step == StepKind::train || s.workload.step == StepKind::forward);
  const auto searched = [&](MeshAxisInfo::Searched w) {
    switch (w) {
      case MeshAxisInfo::Searched::never: return false;
      case MeshAxisInfo::Searched::always: return true;
      case MeshAxisInfo::Searched::transformer: return transformer;
      case MeshAxisInfo::Searched::moe: return transformer && t.moe.experts > 0;
      case MeshAxisInfo::Searched::whole_sequences: return whole_sequences;
    }
    return false;
  };
  std::vector<const MeshAxisInfo*> axes = search_axes();
  axes.erase(std::remove_if(axes.begin(), axes.end(), [&](const MeshAxisInfo* a) { return !searched(a->searched); }),
             axes.end());
  std::vector<std::string> names;       // the factors
  std::vector<std::string> searchable;  // what --axes may name
  std::vector<const MeshAxisInfo*> variants;
  for (const MeshAxisInfo* a : axes) {
    searchable.push_back(a->name);
    if (a->variant_of.empty()) {
      names.push_back(a->name);
    } else {
      variants.push_back(a);
    }
  }
  const auto given = [&](const std::string& a) {
    return args.axes.empty() || std::find(args.axes.begin(), args.axes.end(), a) != args.axes.end();
  };
  if (!args.axes.empty()) {
    for (const std::string& a : args.axes) {
      if (std::find(searchable.begin(), searchable.end(), a) != searchable.end()) continue;
      const auto& known = known_mesh_axis_names();
      if (std::find(known.begin(), known.end(), a) != known.end()) {
        std::cerr << fmt::format("tpusim layouts: --axes: '{}' does not apply to this workload; its axes are {}; "
                                 "nothing was run\n",
                                 a, fmt::join(searchable, ", "));
      } else {
        std::cerr << fmt::format("tpusim layouts: --axes: unknown axis '{}' ({}); nothing was run\n", a,
                                 suggestion(a, searchable));
      }
      return 2;
    }
  }
  // A variant named without its axis takes the axis's place among the factors (its meshes carry its name); named
  // with it, each mesh of the axis is tried again under the variant.
  std::vector<const MeshAxisInfo*> renamed, tried_beside;
  for (const MeshAxisInfo* v : variants) {
    if (!given(v->name)) continue;
    (given(v->variant_of) ? tried_beside : renamed).push_back(v);
  }
  std::vector<std::string> kept;
  for (const std::string& n : names) {
    const bool stands_in =
        std::any_of(renamed.begin(), renamed.end(), [&](const auto* v) { return v->variant_of == n; });
    if (given(n) || stands_in) kept.push_back(n);
  }
  names = kept;
  const auto named_above_one = [](const std::string& n) {
    const MeshAxisInfo* a = find_mesh_axis(n);
    return a != nullptr && a->named_above_one;
  };
  std::vector<Layout> meshes;
  std::vector<std::pair<std::string, int>> cur;
  factor(static_cast<int>(s.pod.chip_count()), names, 0, cur, meshes);
  for (Layout& l : meshes) {
    for (auto& a : l.axes) {
      for (const MeshAxisInfo* v : renamed) {
        if (a.first == v->variant_of) a.first = v->name;
      }
    }
    const auto unnamed = [&](const auto& a) { return named_above_one(a.first) && a.second == 1 && l.axes.size() > 1; };
    l.axes.erase(std::remove_if(l.axes.begin(), l.axes.end(), unnamed), l.axes.end());
  }
  // Each mesh with a variant's axis again with the variant on it (tensor_sequence: Megatron sequence
  // parallelism on the tensor axis).
  for (const MeshAxisInfo* v : tried_beside) {
    const std::size_t dense = meshes.size();
    for (std::size_t i = 0; i < dense; ++i) {
      Layout sp = meshes[i];
      for (auto& [name, size] : sp.axes) {
        if (name != v->variant_of || size < 2) continue;
        name = v->name;
        meshes.push_back(sp);
      }
    }
  }
  // Every mesh with every combination of the searched fields, the mesh varying slowest.
  std::vector<Layout> layouts;
  std::vector<std::size_t> scenario_of;  // the combination's scenario
  for (const Layout& m : meshes) {
    for (std::size_t c = 0; c < combos.size(); ++c) {
      Layout l = m;
      l.knobs = combos[c];
      layouts.push_back(l);
      scenario_of.push_back(c);
    }
  }

  // Drop before running what cannot be lowered or does not fit.
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    Layout& l = layouts[i];
    const Scenario& sc = scenarios[scenario_of[i]];
    WorkloadSpec w = sc.workload;
    w.mesh.axes.clear();
    for (const auto& [n, size] : l.axes) w.mesh.axes.push_back(MeshAxisSpec{n, size, w.mesh.loc});
    try {
      const auto plan = kernels::plan_memory(w, sc.chip, sc.pod);
      if (plan && !plan->fits()) {
        l.dropped = fmt::format("needs {} per chip", format_bytes_approx(plan->total()));
      }
    } catch (const ConfigError& e) {
      l.dropped = e.diagnostics().front().message;
    }
  }
  // Updated in place, under the rules of every output folder (output_folder.h): new, or one tpusim wrote.
  fs::path out;
  try {
    out = check_output_folder(args.out_dir.empty() ? default_output_dir(s.name + "-layouts") : fs::path(args.out_dir),
                              "layouts");
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim layouts: " << e.what() << "\n";
    return 2;
  }
  const fs::path points = out / "points";
  // The folder's plan (study_plan.h): a folder is reused only by the same search (scenario, options, meshes) over
  // the same base; another's points would be taken for this one's.
  nlohmann::ordered_json point_list = nlohmann::ordered_json::array();
  for (const Layout& l : layouts) {
    std::vector<std::string> o;
    for (const auto& [field, value] : l.knobs) o.push_back(fmt::format("workload.{}={}", field, value));
    o.push_back("workload.mesh=" + l.mesh());
    point_list.push_back(o);
  }
  ResolvedFingerprint base;
  for (const Scenario& sc : scenarios) base.add(sc);
  const nlohmann::ordered_json plan_doc{{"scenario", args.scenario}, {"set", args.overrides},
                                        {"axes", args.axes},         {"microbatches", args.microbatches},
                                        {"remat", args.remat},       {"overlap", args.overlap},
                                        {"points", point_list},      {"base", base.str()}};
  const fs::path plan_file = out / "plan.json";
  std::error_code ec;
  if (fs::exists(plan_file)) {
    std::ifstream in(plan_file);
    if (const auto differs = plan_difference(nlohmann::ordered_json::parse(in, nullptr, false), plan_doc)) {
      std::cerr << plan_refusal("layouts", out, *differs) << "\ntpusim layouts: nothing was run\n";
      return 2;
    }
  } else if (fs::is_directory(points) && !fs::is_empty(points, ec)) {
    std::cerr << fmt::format("tpusim layouts: {} holds a layout search without a plan.json (an older tpusim wrote "
                             "it), whose points cannot be told from this one's; choose another -o, or remove {}\n"
                             "tpusim layouts: nothing was run\n",
                             out.string(), out.string());
    return 2;
  }
  (void)claim_output_folder(out, "layouts");
  std::optional<PointsLock> lock;  // every point, until the table is written
  try {
    lock.emplace(out, PointsLock::every);
  } catch (const OutputRefused& e) {
    std::cerr << "tpusim layouts: " << e.what() << "\n";
    return 2;
  }
  if (!fs::exists(plan_file)) {
    write_file_atomically(plan_file, [&](std::ostream& f) { f << plan_doc.dump(2) << "\n"; });
  }
  fs::create_directories(points);
  std::vector<PointTask> tasks;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    if (!layouts[i].dropped.empty()) continue;
    PointTask t;
    t.index = i;
    t.dir = points / point_dir_name(i);
    t.argv = {self_exe};
    t.argv.insert(t.argv.end(), args.limits.flags.begin(), args.limits.flags.end());
    t.argv.insert(t.argv.end(), {"run", args.scenario});
    for (const std::string& o : args.overrides) t.argv.insert(t.argv.end(), {"--set", o});
    for (const auto& [field, value] : layouts[i].knobs) {
      t.argv.insert(t.argv.end(), {"--set", fmt::format("workload.{}={}", field, value)});
    }
    t.argv.insert(t.argv.end(), {"--set", "workload.mesh=" + layouts[i].mesh(), "-q", "-o", t.dir.string()});
    tasks.push_back(t);  // always run (the folder holds this search's points, plan.json says, perhaps not all)
  }
  const int jobs = args.jobs > 0 ? args.jobs : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  Progress progress(s.name + " layouts", tasks.size(), std::cerr, isatty(STDERR_FILENO) != 0);
  if (const RunSummary run = run_points(tasks, jobs, points, progress); run.interrupted != 0) {
    std::cerr << fmt::format("tpusim layouts: {}; no table was written\n", Interrupted(run.interrupted).what());
    return 128 + run.interrupted;
  }
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    Layout& l = layouts[i];
    if (!l.dropped.empty()) continue;
    const fs::path summary = points / point_dir_name(i) / "summary.json";
    if (!fs::exists(summary)) {
      const auto f = read_failure(points, i);
      l.dropped = f ? "run failed: " + f->error : "run failed";
      continue;
    }
    std::ifstream in(summary);
    const auto j = nlohmann::json::parse(in);
    l.step_time_s = j["metrics"]["step_time_s"];
    l.mfu = j["metrics"]["mfu"];
    l.hbm_bytes = j["memory"]["total_bytes"];
    l.ran = true;
  }
  std::stable_sort(layouts.begin(), layouts.end(), [](const Layout& a, const Layout& b) {
    if (a.ran != b.ran) return a.ran;
    if (!a.ran) return false;
    return a.step_time_s != b.step_time_s ? a.step_time_s < b.step_time_s : a.hbm_bytes < b.hbm_bytes;
  });
  std::ostringstream csv;
  std::string knob_columns;
  for (const auto& [field, value] : combos.front()) knob_columns += field + ",";
  csv << "rank,mesh," << knob_columns << "step_time_s,mfu,hbm_per_chip_bytes,dropped\n";
  auto knob_cells = [](const Layout& l) {
    std::string out;
    for (const auto& [field, value] : l.knobs) out += value + ",";
    return out;
  };
  const auto ran = std::count_if(layouts.begin(), layouts.end(), [](const Layout& l) { return l.ran; });
  if (combos.size() == 1) {
    std::cout << fmt::format("{}: {} meshes of {} chips, {} ran\n", s.name, layouts.size(), s.pod.chip_count(), ran);
  } else {
    std::cout << fmt::format("{}: {} meshes of {} chips x {} combinations of {}: {} layouts, {} ran\n", s.name,
                             meshes.size(), s.pod.chip_count(), combos.size(), knob_columns.substr(0, knob_columns.size() - 1),
                             layouts.size(), ran);
  }
  int rank = 0;
  for (const Layout& l : layouts) {
    if (l.ran) {
      ++rank;
      std::cout << fmt::format("  {:>3}  {:<52} {:>10}  MFU {:5.1f}%  HBM {}\n", rank, l.label(), format_time(Seconds(l.step_time_s)),
                               100 * l.mfu, format_bytes_approx(Bytes(static_cast<std::uint64_t>(l.hbm_bytes))));
      csv << fmt::format("{},\"{}\",{}{},{},{},\n", rank, l.mesh(), knob_cells(l), l.step_time_s, l.mfu, l.hbm_bytes);
    } else {
      std::cout << fmt::format("    -  {:<52} dropped: {}\n", l.label(), l.dropped);
      csv << fmt::format(",\"{}\",{},,,\"{}\"\n", l.mesh(), knob_cells(l), l.dropped);
    }
  }
  try {
    write_file_atomically(out / "layouts.csv", [&](std::ostream& f) { f << csv.str(); });
    compact_manifest(out);  // the points' logs were listed as they finished, in any order
  } catch (const std::exception& e) {
    std::cerr << "tpusim layouts: cannot write " << (out / "layouts.csv").string() << ": " << e.what() << "\n";
    return 1;
  }
  return rank > 0 ? 0 : 1;
}

}  // namespace tpusim::tools
