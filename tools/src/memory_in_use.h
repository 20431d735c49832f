#pragma once
// HBM in use over the simulated step (summary.json's memory.in_use, the trace's "HBM in use" counter, the
// stdout line): a program's MemoryTimeline (kernels/memory_plan.h; one per pipeline stage) placed at the times the
// first chip running that program started and ended each op's instructions, from the simulation's trace callback
// (one call per completed instruction), so the models need no part of it.
#include <cstdint>
#include <utility>
#include <vector>

#include "tpusim/kernels/memory_plan.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::tools {

struct MemoryInUse {
  std::uint32_t program = 0;  // the pipeline stage (0 without a pipeline)
  std::uint32_t chip = 0;
  double peak_bytes = 0;  // the most held at once (persistent + live activations)
  double peak_at_s = 0;   // the first time it is held
  // The step cut into kSlices equal parts, the most held in each (so the peak is never smoothed away).
  static constexpr int kSlices = 100;
  double slice_s = 0;
  std::vector<double> slice_peak_bytes;
  // Every change: (time in s, bytes added or, negative, freed), the persistent bytes at 0 first; at one time the
  // frees come before the allocations, as an op's inputs are freed before its successor's outputs are allocated.
  std::vector<std::pair<double, double>> changes;
};

class MemoryInUseRecorder {
 public:
  // Follows `program`'s first chip (ProgramSet::role_of_chip; chip 0 when every chip runs program 0).
  MemoryInUseRecorder(const ir::ProgramSet& programs, std::uint32_t program, const kernels::MemoryTimeline& timeline);
  // Spans of other chips than chip() are ignored.
  void record(const models::TraceSpan& span);
  [[nodiscard]] std::uint32_t chip() const { return chip_; }
  // Over [0, step_time]. An op none of whose instructions was recorded (a step cut short) holds nothing.
  [[nodiscard]] MemoryInUse finish(double step_time) const;

 private:
  const kernels::MemoryTimeline& timeline_;
  std::uint32_t program_ = 0;
  std::uint32_t chip_ = 0;
  std::vector<std::int32_t> use_of_;               // instruction -> index into timeline_.uses, or -1
  std::vector<std::pair<double, double>> extent_;  // per use: earliest start, latest end recorded
  std::vector<bool> seen_;
};

}  // namespace tpusim::tools
