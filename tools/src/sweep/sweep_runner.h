#pragma once
// Runs sweep points as child processes (`tpusim run ... -o points/NNNNN`), a few at a time, with a progress
// line and an ETA on stderr. A point that fails leaves points/NNNNN.failed.json ({exit_code, error}: the
// error is the run's own message from its log) and the others go on. Children die with the sweep
// (PR_SET_PDEATHSIG), so a sweep killed with kill -9 leaves only whole points behind: a point folder appears
// only when its run completed (the run stages and renames), and a rerun runs just the missing ones.
#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tpusim::tools {

struct PointTask {
  std::size_t index = 0;
  std::vector<std::string> argv;
  std::filesystem::path dir;  // points/NNNNN
};

[[nodiscard]] std::string point_dir_name(std::size_t index);  // "00042"
[[nodiscard]] std::filesystem::path failure_file(const std::filesystem::path& points_dir, std::size_t index);

// A recorded failure of a point, if any.
struct PointFailure {
  int exit_code = 0;
  std::string error;
};
// A record cut short (empty, or not the JSON tpusim writes) is none.
[[nodiscard]] std::optional<PointFailure> read_failure(const std::filesystem::path& points_dir, std::size_t index);
[[nodiscard]] bool has_failure_record(const std::filesystem::path& points_dir, std::size_t index);
// A failure record file that is there but cut short: it does not block a resume.
[[nodiscard]] bool is_broken_failure_record(const std::filesystem::path& points_dir, std::size_t index);

// Prints "NAME: 12/40 points, 1 failed, 1m03s elapsed, ETA 2m27s": rewritten in place on a terminal; in a log,
// one line per tenth of the work (and at least every 30 s) so that a cluster job's output stays short.
class Progress {
 public:
  Progress(std::string name, std::size_t total, std::ostream& out, bool interactive);
  // `failed`: points that failed; `unfit`: points whose step does not fit in HBM (a result, not a failure).
  void update(std::size_t finished, std::size_t failed, std::size_t unfit = 0);

 private:
  std::string name_;
  std::size_t total_;
  std::ostream& out_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  std::size_t last_decile_ = 0;
};

// "45s", "1m05s", "2h03m".
[[nodiscard]] std::string format_duration(double seconds);

struct RunSummary {
  std::size_t finished = 0;
  std::size_t failed = 0;  // not counting unfit ones
  std::size_t unfit = 0;   // the step does not fit in HBM: the point's result (does_not_fit.h)
  int interrupted = 0;  // the signal (SIGINT, SIGTERM) that stopped the run early; 0 when every task ran
};

// Runs the tasks, at most `jobs` at once; returns when all have finished, or, after a Ctrl-C or SIGTERM
// (core/interrupt.h), once the running ones have stopped: they get SIGTERM, start nothing new, and a point
// stopped that way is not recorded as failed (a rerun runs it).
RunSummary run_points(const std::vector<PointTask>& tasks, int jobs, const std::filesystem::path& points_dir,
                      Progress& progress);

}  // namespace tpusim::tools
