#pragma once
// The pipe between tpusim and a child process it forked (a job's fault steps: child_process.h; a mirrored
// run: mirrored_step.h), and the fork itself. Both ends retry when a signal interrupts them (the interrupt
// handlers are installed without SA_RESTART, core/interrupt.h).
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace tpusim::tools {

// fork(), with the child tied to this process: it gets SIGKILL when this process dies, however it dies (a
// kill -9 included), so no child goes on as an orphan to write outputs after its parent was stopped. A parent
// that died before the child was tied (the race) is noticed at once and the child exits. Returns what fork()
// returns; stdio is flushed first, so nothing buffered is written twice.
[[nodiscard]] pid_t fork_tied_child();

// Writes all of `size` bytes; false if the pipe fails.
[[nodiscard]] bool write_all(int fd, const void* data, std::size_t size);
// Reads the pipe to its end. A SIGINT or SIGTERM recorded meanwhile is sent on to `child` once: a signal sent
// to this process alone (kill PID, not the process group as Ctrl-C does) stops the child's work too, instead
// of waiting for it.
[[nodiscard]] std::string read_from_child(int fd, pid_t child);

}  // namespace tpusim::tools
