#include "tensor_core.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tpusim/models/systolic_reference.h"

namespace tpusim::models {

std::int64_t MxuPipeline::issue_cycle(Tick now, Hertz clock) {
  if (inflight_.empty()) {
    epoch_ = now;
    last_end_ = 0;
    vmem_free_ = 0;
    std::fill(arrays_.begin(), arrays_.end(), MxuArrayState{});
    return 0;
  }
  // Rounded up to the next whole cycle of the run.
  const double cycles = static_cast<double>(now - epoch_) * clock.value() / kTicksPerSecond;
  return static_cast<std::int64_t>(std::ceil(cycles - 1e-9));
}

std::string MxuTimer::unsupported(const MatmulShape& s) const {
  if (fidelity_ != MxuFidelity::cycle) return {};
  if (mxu_.dataflow != MxuDataflow::weight_stationary) {
    return "fidelity.mxu: cycle has a cycle reference for the weight_stationary dataflow only";
  }
  const double pe_cycles = static_cast<double>(dataflow_.bf16_cycles(mxu_, s)) * mxu_.rows * mxu_.cols * mxu_.per_core;
  if (pe_cycles > kCycleReferencePeCycleLimit) {
    return fmt::format(
        "fidelity.mxu: cycle: matmul {}x{}x{} needs {:.3g} processing-element cycles in the cycle reference, above "
        "the limit of {:.3g}; use fidelity.mxu: fast for this workload, or smaller shapes",
        s.m, s.k, s.n, pe_cycles, kCycleReferencePeCycleLimit);
  }
  return {};
}

std::int64_t MxuTimer::schedule(const MatmulShape& s, DType dtype, std::int64_t issue, MxuPipeline& pipe) const {
  std::vector<MxuArrayState>& arrays = pipe.arrays();
  // The step overhead between back-to-back instructions: arrays with earlier work in this run stream later.
  for (MxuArrayState& a : arrays) {
    if (a.stream_free > 0) a.stream_free += gap_cycles_;
  }
  if (mxu_dtype_rate(mxu_, dtype) != 1.0) {
    const std::int64_t start =
        std::max(issue, pipe.last_end_cycle() > 0 ? pipe.last_end_cycle() + gap_cycles_ : 0);
    const std::int64_t end = start + matmul_cycles(dataflow_, mxu_, s, dtype);
    std::fill(arrays.begin(), arrays.end(), MxuArrayState{end, end});
    return end;
  }
  if (fidelity_ == MxuFidelity::fast) return dataflow_.schedule(mxu_, s, issue, arrays);
  // Timing only: the reference needs operands, and zeros exercise the same schedule.
  const std::vector<std::int64_t> a(static_cast<std::size_t>(s.m * s.k), 0);
  const std::vector<std::int64_t> b(static_cast<std::size_t>(s.k * s.n), 0);
  return run_weight_stationary_reference(mxu_, s, a, b, issue, arrays).cycles;
}

std::int64_t MxuPipeline::stream_vmem(std::int64_t issue, std::int64_t cycles) {
  vmem_free_ = std::max(issue, vmem_free_) + cycles;
  return vmem_free_;
}

void MxuPipeline::push(Tick now, std::uint32_t instr, std::int64_t end_cycle, Hertz clock, Tick not_before) {
  // In-order completion, whatever the dataflow's arithmetic says about arrays the instruction left idle.
  last_end_ = std::max(last_end_, end_cycle);
  Tick end = std::max({now, epoch_ + cycles_to_ticks(last_end_, clock), not_before});
  if (!inflight_.empty()) end = std::max(end, inflight_.back().end);
  inflight_.push_back(InFlight{instr, now, end});
  ++executed_;
}

Tick ResultPops::reserve(Tick earliest, Tick duration) {
  if (duration == 0) return earliest;
  const Tick start = pending_.empty() ? earliest : std::max(earliest, pending_.back().end);
  total_ += duration;
  if (!pending_.empty() && pending_.back().end == start) {
    pending_.back().end += duration;
  } else {
    pending_.push_back(Interval{start, start + duration});
  }
  return pending_.back().end;
}

void ResultPops::retire(Tick now) {
  while (!pending_.empty() && pending_.front().end <= now) pending_.pop_front();
}

Tick ResultPops::reserved_within(Tick from, Tick to) const {
  Tick total = 0;
  for (const Interval& i : pending_) {
    if (i.start >= to) break;
    if (i.end > from) total += std::min(i.end, to) - std::max(i.start, from);
  }
  return total;
}

Tick ResultPops::next_boundary(Tick now) const {
  if (pending_.empty()) return kNever;
  return pending_.front().start > now ? pending_.front().start : pending_.front().end;
}

bool Vmem::allocate(std::uint64_t bytes) {
  if (bytes > capacity_ - used_) return false;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return true;
}

bool Vmem::release(std::uint64_t bytes) {
  if (bytes > used_) {
    used_ = 0;
    return false;
  }
  used_ -= bytes;
  return true;
}

}  // namespace tpusim::models
