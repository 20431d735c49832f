#include "mxu/mxu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include "block/counters.h"
#include "block/instruction_unit.h"
#include "block/registry.h"
#include "memory/fused_stream.h"
#include "memory/transfer.h"
#include "tpusim/models/systolic_reference.h"
#include "block/result_drain.h"

namespace tpusim::models {

std::int64_t MxuPipeline::issue_cycle(Tick now, Hertz clock) {
  if (count_ == 0) {
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

std::int64_t MxuPipeline::stream_vmem(std::int64_t issue, std::int64_t cycles) {
  vmem_free_ = std::max(issue, vmem_free_) + cycles;
  return vmem_free_;
}

void MxuPipeline::push(Tick now, std::uint32_t instr, std::int64_t end_cycle, Hertz clock, Tick not_before) {
  // In-order completion, whatever the dataflow's arithmetic says about arrays the instruction left idle.
  last_end_ = std::max(last_end_, end_cycle);
  Tick end = std::max({now, epoch_ + cycles_to_ticks(last_end_, clock), not_before});
  if (count_ > 0) end = std::max(end, inflight_[(head_ + count_ - 1) % kMxuInstructionsInFlight].end);
  if (count_ == kMxuInstructionsInFlight) throw std::logic_error("MXU pipeline issued beyond its depth");
  inflight_[(head_ + count_) % kMxuInstructionsInFlight] = InFlight{instr, now, end};
  ++count_;
}

Tick MxuPipeline::next_end_after(Tick now) const {
  for (std::size_t i = 0; i < count_; ++i) {
    const Tick end = inflight_[(head_ + i) % kMxuInstructionsInFlight].end;
    if (end > now) return end;  // ends are non-decreasing in issue order
  }
  return kNever;
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

namespace {

// A matmul lasts until its last output leaves the arrays, its VMEM operands have streamed
// (vmem_bound_cycles of matmul_vmem_bytes) and its last result has been popped by the draining unit (with a
// fused epilogue's VPU work, matmul_vpu_cycles). A fused matmul (kernels/program.h) starts its arrays after
// its exposed first load, streams its operands through the path "mxu -> hbm" meanwhile (memory/fused_stream.h),
// and completes at the later of its end plus its exposed last store and the end of its stream.
class Mxu final : public Block, public InstructionUnit {
 public:
  using Socket = tlm_utils::multi_passthrough_initiator_socket<Mxu, 32, tlm::tlm_base_protocol_types, 0,
                                                               sc_core::SC_ZERO_OR_MORE_BOUND>;
  sc_core::sc_port<ResultDrain, 1, sc_core::SC_ZERO_OR_MORE_BOUND> results;  // the path mxu -> vpu
  Socket memory;                                                              // the path mxu -> hbm

  Mxu(const sc_core::sc_module_name& name, const BlockBuild& b)
      : Block(name, BlockKind::mxu, b.block.name, b.instance),
        results("results"),
        memory("memory"),
        chip_(b.chip),
        gap_cycles_(static_cast<std::int64_t>(
            std::ceil(b.chip.spec.mxu.step_overhead.value() * b.chip.spec.clock.value() - 1e-9))),
        timer_(b.chip.dataflow, b.chip.spec.mxu, b.chip.mxu_fidelity, gap_cycles_),
        pipeline_(b.chip.spec.mxu.per_core),
        stream_(b.instance, 0),
        array_macs_(static_cast<std::size_t>(b.chip.spec.mxu.per_core), 0.0) {
    memory.register_nb_transport_bw(this, &Mxu::nb_transport_bw);
  }

  void connect(Block& to) override {
    if (auto* drain = dynamic_cast<ResultDrain*>(&to)) {
      results.bind(*drain);
    } else if (auto* target = dynamic_cast<MemoryTarget*>(&to); target != nullptr && target->memory() == ir::Memory::hbm) {
      memory.bind(target->target_socket());
    } else {
      Block::connect(to);
    }
  }

  // ---- InstructionUnit
  [[nodiscard]] bool can_start(int /*lane*/, Tick /*now*/) const override { return !pipeline_.full(); }
  void start(std::uint32_t instr, const ir::Instruction& ins, Tick now) override {
    const ChipSpec& spec = chip_.spec;
    const double useful = matmul_useful_macs(ins);
    const double rate = mxu_dtype_rate(spec.mxu, ins.dtype);  // MAC slots: counters.h, rated_macs
    rated_macs_ += useful / rate;
    const MatmulShape shape = matmul_timing_shape(spec.mxu, ins);  // batch > 1: the products side by side
    if (const std::string why = timer_.unsupported(shape); !why.empty()) chip_.fail(instr, why);
    // A batch's padding between products is not useful work.
    const double useful_share =
        ins.shape.batch > 1 ? useful / (static_cast<double>(shape.m) * static_cast<double>(shape.k) * shape.n) : 1.0;
    for (int a = 0; a < spec.mxu.per_core; ++a) {
      const double macs = matmul_array_macs(spec.mxu, shape, a);
      array_macs_[static_cast<std::size_t>(a)] += (ins.shape.batch > 1 ? macs * useful_share : macs) / rate;
    }
    const std::uint64_t vmem_bytes = matmul_vmem_bytes(spec.mxu, shape, ins.dtype);
    vmem_bytes_ += vmem_bytes;
    // fused: the arrays start after the exposed first load, and the operands stream meanwhile.
    Tick head = 0, tail = 0;
    if (ins.streams_hbm()) {
      if (memory.size() == 0) chip_.fail(instr, "a fused matmul streams from HBM, and chip.paths has no 'mxu -> hbm'");
      head = FusedStream::head_ticks(spec.hbm, ins);
      tail = FusedStream::tail_ticks(spec.hbm, ins);
      stream_.start(now, instr, ins, memory[0]);
    }
    const auto head_cycles =
        static_cast<std::int64_t>(std::ceil(static_cast<double>(head) * spec.clock.value() / kTicksPerSecond - 1e-9));
    const std::int64_t issue = pipeline_.issue_cycle(now, spec.clock) + head_cycles;
    std::int64_t compute_end = timer_.schedule(shape, ins.dtype, issue, pipeline_);
    // fused: the kernel's grid steps each pay the step overhead (chip.mxu.step_overhead) after the first, as
    // the tiled lowering's back-to-back matmuls do.
    if (ins.streams_hbm() && ins.stream.grid_steps > 1) {
      compute_end += (static_cast<std::int64_t>(ins.stream.grid_steps) - 1) * gap_cycles_;
    }
    // fused: at least the pipeline bound of its tiling (0 for a program that names no buffers).
    if (ins.streams_hbm()) {
      compute_end = std::max(compute_end, issue + FusedStream::pipeline_floor_cycles(spec, ins, compute_end - issue));
    }
    const std::int64_t vmem_end = pipeline_.stream_vmem(
        issue, vmem_bound_cycles(static_cast<double>(vmem_bytes), spec.vmem.bandwidth, spec.clock));
    // The draining unit pops the results (result_pop_cycles) from the first results on, after what it already
    // holds; the matmul completes no earlier than its last pop. Assumption: the first results come
    // mxu_first_result_cycles after the issue, as on idle arrays (behind a pipelined predecessor they come
    // later, but the predecessor's own pops, reserved first, then usually hold the VPU until then).
    Tick pops_end = 0;
    if (results.size() > 0) {
      const Tick first_results = now + head + cycles_to_ticks(mxu_first_result_cycles(spec.mxu, shape), spec.clock);
      pops_end = results->reserve_pops(first_results, cycles_to_ticks(matmul_vpu_cycles(spec.vpu, ins), spec.clock));
    }
    const std::int64_t end_cycle = std::max(compute_end, vmem_end);
    const Tick not_before = tail > 0 ? std::max(pops_end, pipeline_.tick_of(end_cycle, spec.clock) + tail) : pops_end;
    pipeline_.push(now, instr, end_cycle, spec.clock, not_before);
  }
  bool retire(Tick now, CompletionSink& sink) override {
    bool any = false;
    // fused: the oldest instruction completes once its HBM stream has too.
    while (pipeline_.busy() && pipeline_.finish() <= now && !(stream_.busy() && stream_.instr() == pipeline_.instr())) {
      const std::uint32_t instr = pipeline_.instr();
      const Tick started = pipeline_.started();
      pipeline_.finish_current();
      sink.complete(instr, started, now);
      any = true;
    }
    return any;
  }
  [[nodiscard]] bool busy(int /*lane*/, Tick /*now*/) const override { return pipeline_.busy(); }
  [[nodiscard]] bool full(int /*lane*/, Tick /*now*/) const override { return pipeline_.full(); }

  // ---- Block
  void account(Tick now) override { pipeline_.account(now); }
  // fused: an instruction past its end, waiting for its stream, wakes the chip through the HBM.
  [[nodiscard]] Tick next_event(Tick now) const override { return pipeline_.next_end_after(now); }
  // fused: waiting for a stream after the compute counts as a memory stall.
  [[nodiscard]] Activity activity(Tick /*now*/) const override {
    if (pipeline_.computing()) return Activity::compute;
    return stream_.was_busy() ? Activity::memory : Activity::idle;
  }
  void collect(ChipCounters& c) const override {
    UnitCounters& mxu = c.unit(HwUnit::mxu);
    mxu.busy += pipeline_.busy_ticks();
    mxu.bytes += vmem_bytes_;
    c.rated_macs += rated_macs_;
    c.array_macs.insert(c.array_macs.end(), array_macs_.begin(), array_macs_.end());
  }

 private:
  tlm::tlm_sync_enum nb_transport_bw(int /*socket*/, tlm::tlm_generic_payload& gp, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) {
    stream_.on_response(gp);
    return tlm::TLM_COMPLETED;
  }

  const ChipContext& chip_;
  std::int64_t gap_cycles_;  // chip.mxu.step_overhead in whole MXU cycles
  MxuTimer timer_;
  MxuPipeline pipeline_;
  FusedStream stream_;
  double rated_macs_ = 0;           // m x k x n / the dtype's rate, summed over the matmuls
  std::vector<double> array_macs_;  // rated MACs per array (matmul_array_macs / rate), summed over the matmuls
  std::uint64_t vmem_bytes_ = 0;    // operand bytes read from and written to VMEM (matmul_vmem_bytes)
};

}  // namespace

std::unique_ptr<Block> make_mxu_block(const BlockBuild& b) { return std::make_unique<Mxu>(b.block.name.c_str(), b); }

}  // namespace tpusim::models
