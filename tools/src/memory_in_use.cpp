#include "tools/src/memory_in_use.h"

#include <algorithm>
#include <cmath>

namespace tpusim::tools {

MemoryInUseRecorder::MemoryInUseRecorder(const ir::ProgramSet& programs, std::uint32_t program,
                                         const kernels::MemoryTimeline& timeline)
    : timeline_(timeline),
      program_(program),
      extent_(timeline.uses.size(), {0.0, 0.0}),
      seen_(timeline.uses.size(), false) {
  if (!programs.role_of_chip.empty()) {
    const auto first = std::find(programs.role_of_chip.begin(), programs.role_of_chip.end(), program);
    chip_ = static_cast<std::uint32_t>(first - programs.role_of_chip.begin());
  }
  use_of_.assign(program < programs.programs.size() ? programs.programs[program].size() : 0, -1);
  for (std::size_t u = 0; u < timeline.uses.size(); ++u) {
    for (const std::uint32_t i : timeline.uses[u].instructions) {
      if (i < use_of_.size()) use_of_[i] = static_cast<std::int32_t>(u);
    }
  }
}

void MemoryInUseRecorder::record(const models::TraceSpan& span) {
  if (span.chip != chip_ || span.instruction >= use_of_.size() || use_of_[span.instruction] < 0) return;
  const auto u = static_cast<std::size_t>(use_of_[span.instruction]);
  std::pair<double, double>& e = extent_[u];
  if (!seen_[u]) {
    e = {span.start.value(), span.end.value()};
    seen_[u] = true;
    return;
  }
  e.first = std::min(e.first, span.start.value());
  e.second = std::max(e.second, span.end.value());
}

MemoryInUse MemoryInUseRecorder::finish(double step_time) const {
  MemoryInUse m;
  m.program = program_;
  m.chip = chip_;
  // (time, order, bytes): order 0 frees before 1 allocations at the same time; stable in graph order otherwise.
  struct Change {
    double time;
    int order;
    double bytes;
  };
  std::vector<Change> changes;
  for (std::size_t u = 0; u < timeline_.uses.size(); ++u) {
    if (!seen_[u]) continue;
    const kernels::ActivationUse& use = timeline_.uses[u];
    if (use.allocated > 0) changes.push_back(Change{extent_[u].first, 1, use.allocated});
    if (use.freed > 0) changes.push_back(Change{extent_[u].second, 0, -use.freed});
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  });
  const double persistent = timeline_.persistent.as_double();
  m.changes.emplace_back(0.0, persistent);
  m.slice_s = step_time / MemoryInUse::kSlices;
  m.slice_peak_bytes.assign(MemoryInUse::kSlices, persistent);
  m.peak_bytes = persistent;
  double held = persistent;
  // The slice a time falls in (the step's end in the last one).
  const auto slice_of = [&](double t) {
    if (m.slice_s <= 0) return 0;
    return std::clamp(static_cast<int>(std::floor(t / m.slice_s)), 0, MemoryInUse::kSlices - 1);
  };
  int slice = 0;
  for (const Change& c : changes) {
    // What was held up to this change is held through every slice until it.
    const int at = slice_of(c.time);
    for (int s = slice + 1; s <= at; ++s) m.slice_peak_bytes[static_cast<std::size_t>(s)] = held;
    slice = std::max(slice, at);
    held += c.bytes;
    m.changes.emplace_back(c.time, c.bytes);
    double& peak = m.slice_peak_bytes[static_cast<std::size_t>(at)];
    peak = std::max(peak, held);
    if (held > m.peak_bytes) {
      m.peak_bytes = held;
      m.peak_at_s = c.time;
    }
  }
  for (int s = slice + 1; s < MemoryInUse::kSlices; ++s) m.slice_peak_bytes[static_cast<std::size_t>(s)] = held;
  return m;
}

}  // namespace tpusim::tools
