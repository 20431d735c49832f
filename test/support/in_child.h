#pragma once
// Runs a computation in a forked child process and returns its result to the parent. A SystemC kernel runs
// once per process, so a test that compares two simulations runs one of them here (before its own).
// T must be trivially copyable (it crosses a pipe as bytes). Returns `failed` when the child throws or dies.
// TPUSIM_NO_FORK=1 runs `f` in place instead, for a debugger (the caller's own simulation then fails).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <type_traits>

namespace tpusim::testing {

template <class T>
T in_child(const std::function<T()>& f, T failed) {
  static_assert(std::is_trivially_copyable_v<T>, "the result crosses a pipe as bytes");
  if (std::getenv("TPUSIM_NO_FORK") != nullptr) return f();
  int fds[2];
  if (pipe(fds) != 0) return failed;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    T v = failed;
    try {
      v = f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child failed: %s\n", e.what());
    }
    const ssize_t written = write(fds[1], &v, sizeof v);
    _exit(written == static_cast<ssize_t>(sizeof v) ? 0 : 1);
  }
  close(fds[1]);
  T v = failed;
  if (read(fds[0], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = failed;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return v;
}

}  // namespace tpusim::testing
