#pragma once
// Helpers shared by the memory-hierarchy tests (memory_*_test.cpp): the hand-built instructions of
// test_chips.h and a way to compare two simulations (a SystemC kernel runs once per process, so the second
// runs in a forked child).
#include <cstdint>

#include "support/in_child.h"
#include "test_chips.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models::memtest {

using testing::dma;
using testing::matmul;
using testing::single;

// What the comparison needs from the other run.
struct ChildResult {
  double step_time = -1;
  std::uint64_t hbm_read = 0;
};

// Simulates in a forked child and returns its step time and HBM reads. Call before this process's own
// simulate().
inline ChildResult simulate_in_child(const Scenario& s, const ir::ProgramSet& programs) {
  return tpusim::testing::in_child<ChildResult>(
      [&] {
        const SimResult r = simulate(s, programs, {});
        return ChildResult{r.step_time.value(), r.traffic.hbm_read.count()};
      },
      ChildResult{});
}

}  // namespace tpusim::models::memtest
