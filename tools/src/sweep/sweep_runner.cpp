#include "tools/src/sweep/sweep_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/src/does_not_fit.h"
#include "tools/src/output_folder.h"
#include "tpusim/core/interrupt.h"

namespace tpusim::tools {
namespace fs = std::filesystem;

std::string point_dir_name(std::size_t index) { return fmt::format("{:05d}", index); }

fs::path failure_file(const fs::path& points_dir, std::size_t index) {
  return points_dir / (point_dir_name(index) + ".failed.json");
}

std::optional<PointFailure> read_failure(const fs::path& points_dir, std::size_t index) {
  std::ifstream in(failure_file(points_dir, index));
  if (!in) return std::nullopt;
  // A record cut short (a crash, a kill -9 or a full disk while it was written) records nothing: the point is
  // pending again.
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("exit_code") || !j["exit_code"].is_number_integer()) return std::nullopt;
  return PointFailure{j["exit_code"].get<int>(), j.value("error", std::string())};
}

bool has_failure_record(const fs::path& points_dir, std::size_t index) {
  return read_failure(points_dir, index).has_value();
}

bool is_broken_failure_record(const fs::path& points_dir, std::size_t index) {
  std::error_code ec;
  return fs::exists(failure_file(points_dir, index), ec) && !has_failure_record(points_dir, index);
}

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
}

Progress::Progress(std::string name, std::size_t total, std::ostream& out, bool interactive)
    : name_(std::move(name)),
      total_(total),
      out_(out),
      interactive_(interactive),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void Progress::update(std::size_t finished, std::size_t failed, std::size_t unfit) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::size_t decile = total_ > 0 ? finished * 10 / total_ : 10;
  const bool last = finished == total_;
  if (!interactive_ && !last && decile == last_decile_ && now - last_print_ < std::chrono::seconds(30)) return;
  last_decile_ = decile;
  last_print_ = now;
  std::string line = fmt::format("tpusim sweep {}: {}/{} points", name_, finished, total_);
  if (unfit > 0) line += fmt::format(", {} do not fit in HBM", unfit);  // results, as the final line says
  if (failed > 0) line += fmt::format(", {} failed", failed);
  line += fmt::format(", {} elapsed", format_duration(elapsed));
  // Points finish at the rate seen so far, with every worker busy.
  if (!last && finished > 0) line += fmt::format(", ETA {}", format_duration(elapsed / finished * (total_ - finished)));
  out_ << (interactive_ ? "\r\033[K" : "") << line << (interactive_ && !last ? "" : "\n") << std::flush;
}

namespace {

pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "cannot start a point's process");
  if (pid != 0) return pid;
  // Die with the sweep: a point must never outlive the process that would record it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// The run's own message: the first line of its log that says "error" or that the simulation failed, else its
// last non-empty line but the closing "no output was written" (which says only that the point failed).
std::string error_from_log(const fs::path& log) {
  std::ifstream in(log);
  std::string line, first_error, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.find("no output was written") == std::string::npos) last = line;
    const bool says = line.find("error") != std::string::npos || line.find("simulation failed") != std::string::npos;
    if (first_error.empty() && says) first_error = line;
  }
  std::string e = first_error.empty() ? last : first_error;
  if (e.size() > 400) e = e.substr(0, 397) + "...";
  return e;
}

// Returns the error recorded.
std::string record_failure(const fs::path& points_dir, const PointTask& t, int exit_code, const fs::path& log) {
  std::string error = error_from_log(log);
  if (error.empty()) error = exit_code >= 128 ? fmt::format("killed by signal {}", exit_code - 128) : "no message";
  const nlohmann::ordered_json j{{"exit_code", exit_code}, {"error", error}};
  write_file_atomically(failure_file(points_dir, t.index), [&](std::ostream& o) { o << j.dump(2) << "\n"; });
  return error;
}

// Staging folders a killed run left behind for this point (the run writes .NNNNN.partial-PID and renames it).
void remove_stale_staging(const fs::path& points_dir, std::size_t index) {
  const std::string prefix = "." + point_dir_name(index) + ".partial-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(points_dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(e.path(), ec);
  }
}

}  // namespace

RunSummary run_points(const std::vector<PointTask>& tasks, int jobs, const fs::path& points_dir, Progress& progress) {
  RunSummary summary;
  std::map<pid_t, const PointTask*> running;
  std::size_t next = 0;
  bool forwarded = false;
  if (!tasks.empty()) progress.update(0, 0);
  while ((next < tasks.size() && !interrupt_requested()) || !running.empty()) {
    if (interrupt_requested() && !forwarded) {
      // Points stop cleanly on SIGTERM (their staged output removed). A Ctrl-C on a terminal reaches them
      // directly; a SIGTERM sent to this process alone (a scheduler cancelling the job) does not.
      for (const auto& [pid, task] : running) kill(pid, SIGTERM);
      forwarded = true;
    }
    while (next < tasks.size() && running.size() < static_cast<std::size_t>(jobs) && !interrupt_requested()) {
      const PointTask& t = tasks[next++];
      std::error_code ec;
      fs::remove(failure_file(points_dir, t.index), ec);
      remove_stale_staging(points_dir, t.index);
      const fs::path log = points_dir / (point_dir_name(t.index) + ".log");
      record_written(log, true);  // tpusim's while the point writes it; its size is listed when it ends
      running[spawn(t.argv, log)] = &t;
    }
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0 && errno == EINTR) continue;  // a signal (handlers do not restart wait): the loop head looks
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    const PointTask& t = *it->second;
    running.erase(it);
    record_written(points_dir / (point_dir_name(t.index) + ".log"));
    const bool complete = code == 0 && fs::exists(t.dir / "summary.json");
    if (!complete && interrupt_requested()) {
      // Stopped by the interrupt, not failed: it stays pending, so that a rerun runs it.
      remove_stale_staging(points_dir, t.index);
      continue;
    }
    ++summary.finished;
    if (!complete) {
      const std::string error =
          record_failure(points_dir, t, code == 0 ? 1 : code, points_dir / (point_dir_name(t.index) + ".log"));
      // A step that does not fit in HBM is the point's result (sweep_table.cpp), not a failure.
      ++(does_not_fit(error) ? summary.unfit : summary.failed);
    }
    progress.update(summary.finished, summary.failed, summary.unfit);
  }
  summary.interrupted = interrupt_signal();
  return summary;
}

}  // namespace tpusim::tools
