#pragma once
// The pipe between tpusim and a child process it forked (a job's fault steps: child_process.h; a mirrored
// run: mirrored_step.h). Both ends retry when a signal interrupts them (the interrupt handlers are installed
// without SA_RESTART, core/interrupt.h).
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace tpusim::tools {

// Writes all of `size` bytes; false if the pipe fails.
[[nodiscard]] bool write_all(int fd, const void* data, std::size_t size);
// Reads the pipe to its end. A SIGINT or SIGTERM recorded meanwhile is sent on to `child` once: a signal sent
// to this process alone (kill PID, not the process group as Ctrl-C does) stops the child's work too, instead
// of waiting for it.
[[nodiscard]] std::string read_from_child(int fd, pid_t child);

}  // namespace tpusim::tools
