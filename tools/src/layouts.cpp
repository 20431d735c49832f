#include "tools/src/layouts.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/output_folder.h"
#include "tools/src/sweep_runner.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/interrupt.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/sharding.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

namespace {

struct Layout {
  std::vector<std::pair<std::string, int>> axes;
  std::string dropped;  // why it was not run (empty: run)
  double step_time_s = 0;
  double mfu = 0;
  bool ran = false;
  [[nodiscard]] std::string mesh() const {
    std::vector<std::string> parts;
    for (const auto& [n, s] : axes) parts.push_back(fmt::format("{}: {}", n, s));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
};

// Every ordered factorization of `n` over `names`.
void factor(int n, const std::vector<std::string>& names, std::size_t i, std::vector<std::pair<std::string, int>>& cur,
            std::vector<Layout>& out) {
  if (i + 1 == names.size()) {
    cur.emplace_back(names[i], n);
    out.push_back(Layout{cur, "", 0, 0, false});
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

}  // namespace

int layouts_command(const LayoutsArgs& args, const std::string& self_exe) {
  Scenario s;
  try {
    s = load_scenario(args.scenario, args.overrides);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (s.workload.model.kind != ModelKind::transformer && s.workload.model.kind != ModelKind::resnet) {
    std::cerr << "tpusim layouts: the layout search applies to whole models (transformer, resnet)\n";
    return 2;
  }
  std::vector<std::string> names{"data", "fsdp"};
  if (s.workload.model.kind == ModelKind::transformer) names.emplace_back("tensor");
  if (s.workload.model.kind == ModelKind::transformer && s.workload.model.transformer.moe.experts > 0) {
    names.emplace_back("expert");
  }
  // Sequence and context parallelism apply to training and forward steps of decoder-only or encoder-only
  // transformers: there a sequence axis (context parallelism) is one more factor, named only where it is
  // larger than 1.
  const auto& t = s.workload.model.transformer;
  const bool whole_sequences = s.workload.model.kind == ModelKind::transformer &&
                               t.architecture != Architecture::encoder_decoder &&
                               (s.workload.step == StepKind::train || s.workload.step == StepKind::forward);
  if (whole_sequences) names.emplace_back("sequence");
  std::vector<Layout> layouts;
  std::vector<std::pair<std::string, int>> cur;
  factor(static_cast<int>(s.pod.chip_count()), names, 0, cur, layouts);
  for (Layout& l : layouts) {
    l.axes.erase(std::remove_if(l.axes.begin(), l.axes.end(),
                                [](const auto& a) { return a.first == "sequence" && a.second == 1; }),
                 l.axes.end());
  }
  // Each mesh with a tensor axis again with Megatron sequence parallelism on it (tensor_sequence).
  if (whole_sequences) {
    const std::size_t dense = layouts.size();
    for (std::size_t i = 0; i < dense; ++i) {
      Layout sp = layouts[i];
      for (auto& [name, size] : sp.axes) {
        if (name != "tensor" || size < 2) continue;
        name = "tensor_sequence";
        layouts.push_back(sp);
      }
    }
  }

  // Drop before running what cannot be lowered or does not fit.
  for (Layout& l : layouts) {
    WorkloadSpec w = s.workload;
    w.mesh.axes.clear();
    for (const auto& [n, size] : l.axes) w.mesh.axes.push_back(MeshAxisSpec{n, size, w.mesh.loc});
    try {
      const auto plan = kernels::plan_memory(w, s.chip, s.pod);
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
  (void)claim_output_folder(out, "layouts");
  fs::create_directories(points);
  std::vector<PointTask> tasks;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    if (!layouts[i].dropped.empty()) continue;
    PointTask t;
    t.index = i;
    t.dir = points / point_dir_name(i);
    t.argv = {self_exe, "run", args.scenario};
    for (const std::string& o : args.overrides) t.argv.insert(t.argv.end(), {"--set", o});
    t.argv.insert(t.argv.end(), {"--set", "workload.mesh=" + layouts[i].mesh(), "-q", "-o", t.dir.string()});
    tasks.push_back(t);  // always run: a folder from another search (other overrides) must not be reused
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
    l.ran = true;
  }
  std::stable_sort(layouts.begin(), layouts.end(), [](const Layout& a, const Layout& b) {
    if (a.ran != b.ran) return a.ran;
    return a.ran && a.step_time_s < b.step_time_s;
  });
  std::ostringstream csv;
  csv << "rank,mesh,step_time_s,mfu,dropped\n";
  std::cout << fmt::format("{}: {} meshes of {} chips, {} ran\n", s.name, layouts.size(), s.pod.chip_count(),
                           std::count_if(layouts.begin(), layouts.end(), [](const Layout& l) { return l.ran; }));
  int rank = 0;
  for (const Layout& l : layouts) {
    if (l.ran) {
      ++rank;
      std::cout << fmt::format("  {:>3}  {:<52} {:>12.6g} s  MFU {:5.1f}%\n", rank, l.mesh(), l.step_time_s,
                               100 * l.mfu);
      csv << fmt::format("{},\"{}\",{},{},\n", rank, l.mesh(), l.step_time_s, l.mfu);
    } else {
      std::cout << fmt::format("    -  {:<52} dropped: {}\n", l.mesh(), l.dropped);
      csv << fmt::format(",\"{}\",,,\"{}\"\n", l.mesh(), l.dropped);
    }
  }
  try {
    write_file_atomically(out / "layouts.csv", [&](std::ostream& f) { f << csv.str(); });
  } catch (const std::exception& e) {
    std::cerr << "tpusim layouts: cannot write " << (out / "layouts.csv").string() << ": " << e.what() << "\n";
    return 1;
  }
  return rank > 0 ? 0 : 1;
}

}  // namespace tpusim::tools
