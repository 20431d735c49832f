#pragma once
// Helpers shared by the memory-hierarchy tests (memory_*_test.cpp): hand-built instructions and a way to
// compare two simulations (a SystemC kernel runs once per process, so the second runs in a forked child).
#include <cstdint>
#include <utility>

#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"
// After the tpusim headers: <sys/wait.h> pulls in <signal.h>, whose si_value macro breaks core/units.h.
#include <sys/wait.h>
#include <unistd.h>

namespace tpusim::models::memtest {

inline ir::Instruction matmul(int core, std::int64_t m, std::int64_t k, std::int64_t n) {
  ir::Instruction i;
  i.kind = ir::OpKind::matmul;
  i.core = static_cast<std::uint8_t>(core);
  i.m = m;
  i.k = k;
  i.n = n;
  i.model_flops = i.hardware_flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  return i;
}

inline ir::Instruction dma(ir::Memory src, ir::Memory dst, std::uint64_t bytes, int core = 0) {
  ir::Instruction i;
  i.kind = ir::OpKind::dma;
  i.core = static_cast<std::uint8_t>(core);
  i.src = src;
  i.dst = dst;
  i.bytes = bytes;
  return i;
}

inline ir::ProgramSet single(ir::Program p) {
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

// What the comparison needs from the other run.
struct ChildResult {
  double step_time = -1;
  std::uint64_t hbm_read = 0;
};

// Simulates in a forked child and returns its step time and HBM reads. Call before this process's own
// simulate().
inline ChildResult simulate_in_child(const Scenario& s, const ir::ProgramSet& programs) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ChildResult out;
    try {
      const SimResult r = simulate(s, programs, {});
      out = ChildResult{r.step_time.value(), r.hbm_read.count()};
    } catch (...) {
    }
    const ssize_t written = write(fds[1], &out, sizeof out);
    _exit(written == sizeof out ? 0 : 1);
  }
  close(fds[1]);
  ChildResult out;
  if (read(fds[0], &out, sizeof out) != sizeof out) out = ChildResult{};
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

}  // namespace tpusim::models::memtest
