#pragma once
// Child processes of the tpusim binary (a SystemC kernel runs once per process, so `sweep` and `calibrate` run
// each simulation as its own `tpusim run`).
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tpusim::tools {

// Starts argv[0] (an executable path) with `argv` in a child process whose stdout and stderr go to `log`
// (created or truncated); returns the child's pid. A child that cannot exec exits with 127.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

// The exit code of a child reaped with `status` (from wait/waitpid): its exit status, or 128 when a signal
// ended it.
[[nodiscard]] int exit_code_of(int status);

// spawn_logged() and wait for the child; returns exit_code_of() its status.
int run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

}  // namespace tpusim::tools
