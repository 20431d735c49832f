// Sweep throughput: runs `tpusim sweep SWEEP` from scratch R times with 1 worker and R times with N workers
// and prints the median points per hour of each, and the speed-up. Every point is a `tpusim run` process, so
// this measures the simulation, the process start and the sweep's own bookkeeping together.
//   bench_sweep [SWEEP [N [R]]]     defaults: mxu-hbm-v4, every core, 3
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace {

// The number of points of the sweep, from `--emit-commands` (one line per point).
int count_points(const std::string& sweep, const fs::path& dir) {
  const fs::path list = dir / "commands.txt";
  const std::string cmd = fmt::format("{} sweep {} --emit-commands -o {} > {}", TPUSIM_BIN, sweep,
                                      (dir / "count").string(), list.string());
  if (std::system(cmd.c_str()) != 0) return -1;
  std::ifstream in(list);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  fs::remove_all(dir / "count");
  return n;
}

// Wall seconds of one complete sweep into a fresh folder.
double run_once(const std::string& sweep, int workers, const fs::path& out) {
  fs::remove_all(out);
  const std::string cmd =
      fmt::format("{} sweep {} -j {} -o {} >/dev/null 2>&1", TPUSIM_BIN, sweep, workers, out.string());
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fs::remove_all(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string sweep = argc > 1 ? argv[1] : "mxu-hbm-v4";
  const int n = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tpusim-bench-sweep-{}", getpid());
  fs::create_directories(dir);
  const int points = count_points(sweep, dir);
  if (points <= 0) {
    std::fprintf(stderr, "bench_sweep: cannot expand sweep '%s'\n", sweep.c_str());
    return 1;
  }
  fmt::print("sweep {}: {} points, {} runs per case\n", sweep, points, repeats);
  double per_hour_1 = 0;
  for (const int workers : {1, n}) {
    std::vector<double> walls;
    for (int r = 0; r < repeats; ++r) {
      const double s = run_once(sweep, workers, dir / "out");
      if (s < 0) {
        std::fprintf(stderr, "bench_sweep: the sweep failed\n");
        fs::remove_all(dir);
        return 1;
      }
      walls.push_back(s);
    }
    const double wall = median(walls);
    const double per_hour = points / wall * 3600;
    if (workers == 1) per_hour_1 = per_hour;
    fmt::print("  {} worker{}: median {:.2f} s wall, {:.0f} points/hour{}\n", workers, workers == 1 ? " " : "s",
               wall, per_hour, workers == 1 ? "" : fmt::format(" ({:.2f}x one worker)", per_hour / per_hour_1));
    if (n == 1) break;
  }
  fs::remove_all(dir);
  return 0;
}
