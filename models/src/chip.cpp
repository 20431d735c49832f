#include "chip.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "net/interconnect.h"
#include "tpusim/models/errors.h"

namespace tpusim::models {
namespace {

// Engine ids (the top byte of path tags): the DMA descriptor queues take 0, 1, ... (one per TensorCore).
constexpr std::uint8_t kHostEngineId = 255;

bool touches(const ir::Instruction& ins, ir::Memory m) { return ins.src == m || ins.dst == m; }

}  // namespace

Chip::Chip(const sc_core::sc_module_name& name, std::uint32_t id, const ChipSpec& spec, const ProgramIndex& program,
           const MxuDataflowModel& dataflow, MxuFidelity mxu_fidelity, RunControl& control)
    : sc_core::sc_module(name),
      id_(id),
      spec_(spec),
      index_(program),
      program_(program.program()),
      dataflow_(dataflow),
      mxu_timer_(dataflow, spec.mxu, mxu_fidelity),
      control_(control),
      queues_(static_cast<std::size_t>(program.layout().count())),
      cores_(static_cast<std::size_t>(spec.tensorcores), TensorCore(spec.vmem.capacity.count(), spec.mxu.per_core)),
      hbm_(spec.hbm.bandwidth.value() * spec.hbm.efficiency),
      pcie_in_(spec.host.pcie_bandwidth.value()),
      pcie_out_(spec.host.pcie_bandwidth.value()),
      cmem_(spec.cmem.bandwidth.value()),
      vmem_copy_(spec.vmem.bandwidth.value()),
      dma_(spec.tensorcores, spec.dma.outstanding),
      host_(kHostTransfersInFlight, kHostEngineId),
      remaining_(program_.size()) {
  SC_METHOD(run);
  sensitive << wake_;
}

void Chip::run() {
  if (control_.failed()) return;
  try {
    activate(sc_core::sc_time_stamp().value());
  } catch (...) {
    control_.fail(std::current_exception());
  }
}

void Chip::activate(Tick now) {
  control_.on_activation(now);
  account(now);
  advance_paths(now);
  bool progress = true;
  while (progress) {
    progress = complete_finished(now);
    for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
      while (try_issue(q, now)) progress = true;
    }
  }
  if (remaining_ == 0) {
    counters_.finish = now;
    control_.chip_finished();
    return;
  }
  const Tick next = next_wake();
  // A running collective has no local deadline: the interconnect wakes the chip when it completes.
  if (next == kNever && ici_ != nullptr && ici_->busy(id_)) return;
  if (next == kNever) {
    // Cannot happen for a program in topological order (the lowest-index blocked head always has its
    // dependencies issued); kept as a guard against an inconsistent program.
    for (std::size_t q = 0; q < queues_.size(); ++q) {
      const auto& queue = index_.queue(static_cast<int>(q));
      if (queues_[q].cursor < queue.size()) fail(queue[queues_[q].cursor], "deadlock: dependencies never complete");
    }
    fail(0, "deadlock");
  }
  wake_.notify(sc_core::sc_time::from_value(next - now));
}

// Charges the time since the last activation to the state the chip was in; the state only changes here.
void Chip::account(Tick now) {
  const Tick dt = now - last_account_;
  last_account_ = now;
  const bool computing = std::any_of(cores_.begin(), cores_.end(), [](const TensorCore& c) { return c.computing(); });
  if (computing) {
    counters_.compute += dt;
  } else if (ici_ != nullptr && ici_->busy(id_)) {
    counters_.communication += dt;
  } else if (dma_.busy()) {
    counters_.memory_stall += dt;
  } else if (host_.busy()) {
    counters_.host_stall += dt;
  } else {
    counters_.idle += dt;
  }
  for (TensorCore& c : cores_) {
    c.mxu.account(now);
    c.vpu.account(now);
  }
  dma_.account(now);
  host_.account(now);
}

void Chip::advance_paths(Tick now) {
  const auto done = [this](std::uint32_t tag) {
    if (TransferEngine::owner_of(tag) == kHostEngineId) {
      host_.on_done(tag);
    } else {
      dma_.on_done(tag);
    }
  };
  for (BandwidthServer* path : {&hbm_, &pcie_in_, &pcie_out_, &cmem_, &vmem_copy_}) path->advance(now, done);
  dma_.start_ready(now);
  host_.start_ready(now);
}

bool Chip::complete_finished(Tick now) {
  bool any = false;
  for (TensorCore& c : cores_) {
    while (c.mxu.busy() && c.mxu.finish() <= now) {
      const std::uint32_t instr = c.mxu.instr();
      const Tick started = c.mxu.started();
      c.mxu.finish_current();
      complete(instr, started, now);
      any = true;
    }
    if (c.vpu.busy() && c.vpu.finish() <= now) {
      c.vpu.finish_current();
      complete(c.vpu.instr(), c.vpu.started(), now);
      any = true;
    }
  }
  const auto retire = [this, now](std::uint32_t instr, Tick issued) { complete(instr, issued, now); };
  any = dma_.retire(retire) || any;
  any = host_.retire(retire) || any;
  std::uint32_t ici_instr = 0;
  Tick ici_started = 0;
  if (ici_ != nullptr && ici_->take_completed(id_, ici_instr, ici_started)) {
    complete(ici_instr, ici_started, now);
    any = true;
  }
  return any;
}

// A matmul's dependency on an earlier matmul of its own MXU queue is an ordering (accumulation) dependency:
// the in-order MXU pipeline honours it (a matmul's result reaches another matmul's operands only through a
// vector op or a DMA), so it does not hold the matmul back; that is what lets back-to-back matmuls pipeline.
bool Chip::dependencies_done(const ir::Instruction& ins, int queue) const {
  const bool pipelined = ir::unit_of(ins.kind) == ir::UnitKind::mxu;
  const std::uint32_t* deps = program_.deps_of(ins);
  for (std::uint32_t k = 0; k < ins.dep_count; ++k) {
    const std::uint32_t d = deps[k];
    const int dq = index_.queue_of(d);
    if (pipelined && dq == queue) continue;
    if (queues_[static_cast<std::size_t>(dq)].completed <= index_.position(d)) return false;
  }
  return true;
}

bool Chip::try_issue(int q, Tick now) {
  QueueState& state = queues_[static_cast<std::size_t>(q)];
  const auto& queue = index_.queue(q);
  if (state.cursor >= queue.size()) return false;
  const std::uint32_t instr = queue[state.cursor];
  const ir::Instruction& ins = program_[instr];
  switch (ir::unit_of(ins.kind)) {
    case ir::UnitKind::mxu:
      if (cores_[ins.core].mxu.full()) return false;
      break;
    case ir::UnitKind::vpu:
      if (cores_[ins.core].vpu.busy()) return false;
      break;
    case ir::UnitKind::dma:
      if (dma_.full(ins.core)) return false;
      break;
    case ir::UnitKind::host:
      if (host_.full()) return false;
      break;
    case ir::UnitKind::ici:
      if (ici_ != nullptr && ici_->busy(id_)) return false;
      break;
    case ir::UnitKind::sync: break;
  }
  if (!dependencies_done(ins, q)) return false;
  if (ins.vmem_alloc > 0) {
    Vmem& vmem = cores_[ins.core].vmem;
    if (!vmem.allocate(ins.vmem_alloc)) {
      fail(instr, fmt::format("VMEM overflow: allocating {} with {} of {} in use", format_bytes(Bytes(ins.vmem_alloc)),
                              format_bytes(Bytes(vmem.used())), format_bytes(Bytes(vmem.capacity()))));
    }
  }
  ++state.cursor;
  start(instr, now);
  return true;
}

void Chip::start(std::uint32_t instr, Tick now) {
  const ir::Instruction& ins = program_[instr];
  ++counters_.executed[static_cast<std::size_t>(ir::unit_of(ins.kind))];
  switch (ins.kind) {
    case ir::OpKind::matmul: {
      TensorCore& core = cores_[ins.core];
      core.useful_macs += static_cast<double>(ins.m) * static_cast<double>(ins.k) * static_cast<double>(ins.n);
      const MatmulShape shape{ins.m, ins.k, ins.n};
      if (const std::string why = mxu_timer_.unsupported(shape); !why.empty()) fail(instr, why);
      const std::int64_t issue = core.mxu.issue_cycle(now, spec_.clock);
      core.mxu.push(now, instr, mxu_timer_.schedule(shape, ins.dtype, issue, core.mxu), spec_.clock);
      return;
    }
    case ir::OpKind::vector: {
      const std::int64_t cycles = vpu_cycles(spec_.vpu, ins.vector_op, ins.elements);
      cores_[ins.core].vpu.start(now, instr, cycles_to_ticks(cycles, spec_.clock));
      return;
    }
    case ir::OpKind::dma:
    case ir::OpKind::host: start_transfer(instr, ins, now); return;
    case ir::OpKind::barrier: complete(instr, now, now); return;
    case ir::OpKind::collective:
      if (ici_ == nullptr) fail(instr, "no interconnect attached to run a collective");
      ici_->start(id_, instr, now);
      return;
    case ir::OpKind::send:
    case ir::OpKind::recv: fail(instr, "send/recv are not modelled yet");
  }
}

// Picks the transfer's path (the resource that limits it) and its latency:
//   host <-> chip           PCIe, one server per direction, kPcieLatency;
//   anything <-> HBM        HBM at bandwidth x efficiency, hbm.latency (HBM -> HBM moves the bytes twice);
//   VMEM <-> CMEM           CMEM bandwidth, kOnChipCopyLatency;
//   VMEM <-> VMEM           VMEM bandwidth, kOnChipCopyLatency.
// Assumption: a host transfer into HBM is limited by PCIe alone (16 GB/s against ~1 TB/s of HBM), so it does
// not take a share of the HBM server.
// A DMA goes to the descriptor queue of its TensorCore (Instruction::core). Its pattern scales the bytes a
// path must carry: strided and gather transfers move bytes / dma.strided_efficiency (or gather_efficiency)
// worth of the path's time (dma_pattern_efficiency()).
void Chip::start_transfer(std::uint32_t instr, const ir::Instruction& ins, Tick now) {
  const auto bytes = static_cast<double>(ins.bytes);
  if (ins.kind == ir::OpKind::host) {
    counters_.host_bytes += ins.bytes;
    BandwidthServer& path = ins.host_op == ir::HostOp::infeed ? pcie_in_ : pcie_out_;
    host_.issue(now, instr, path, to_ticks(kPcieLatency), bytes);
    return;
  }
  const auto issue = [&](BandwidthServer& path, Tick latency, double moved) {
    dma_.issue(now, ins.core, instr, path, latency, moved / dma_pattern_efficiency(spec_.dma, ins.pattern));
  };
  counters_.dma_bytes += ins.bytes;
  if (touches(ins, ir::Memory::host)) {
    counters_.host_bytes += ins.bytes;
    issue(ins.src == ir::Memory::host ? pcie_in_ : pcie_out_, to_ticks(kPcieLatency), bytes);
  } else if (touches(ins, ir::Memory::hbm)) {
    if (ins.src == ir::Memory::hbm) counters_.hbm_read += ins.bytes;
    if (ins.dst == ir::Memory::hbm) counters_.hbm_written += ins.bytes;
    const double moved = ins.src == ins.dst ? 2 * bytes : bytes;
    // Assumption: writes into HBM are posted (the engine is done once HBM has accepted the last byte), so
    // hbm.latency, a read round trip, applies to transfers that read HBM.
    issue(hbm_, ins.src == ir::Memory::hbm ? to_ticks(spec_.hbm.latency) : 0, moved);
  } else if (touches(ins, ir::Memory::cmem)) {
    issue(cmem_, to_ticks(kOnChipCopyLatency), bytes);
  } else {
    issue(vmem_copy_, to_ticks(kOnChipCopyLatency), bytes);
  }
}

void Chip::complete(std::uint32_t instr, Tick started, Tick now) {
  const ir::Instruction& ins = program_[instr];
  if (control_.tracing()) {
    control_.trace(TraceSpan{id_, ins.core, ir::unit_of(ins.kind), instr, to_seconds(started), to_seconds(now)});
  }
  if (ins.vmem_free > 0 && !cores_[ins.core].vmem.release(ins.vmem_free)) {
    fail(instr, fmt::format("frees {} of VMEM but only {} is allocated", format_bytes(Bytes(ins.vmem_free)),
                            format_bytes(Bytes(cores_[ins.core].vmem.used()))));
  }
  ++queues_[static_cast<std::size_t>(index_.queue_of(instr))].completed;
  --remaining_;
}

Tick Chip::next_wake() const {
  Tick next = std::min(dma_.next_event(), host_.next_event());
  for (const TensorCore& c : cores_) next = std::min({next, c.mxu.finish(), c.vpu.finish()});
  for (const BandwidthServer* path : {&hbm_, &pcie_in_, &pcie_out_, &cmem_, &vmem_copy_}) {
    next = std::min(next, path->next_completion());
  }
  return next;
}

ChipCounters Chip::collect() const {
  ChipCounters c = counters_;
  for (const TensorCore& core : cores_) {
    c.mxu_busy += core.mxu.busy_ticks();
    c.vpu_busy += core.vpu.busy_ticks();
    c.useful_macs += core.useful_macs;
    c.vmem_peak = std::max(c.vmem_peak, core.vmem.peak());
  }
  c.dma_busy = dma_.busy_ticks();
  c.hbm_busy = hbm_.busy_ticks();
  c.host_busy = host_.busy_ticks();
  if (ici_ != nullptr) c.vpu_busy += ici_->reduce_ticks(id_);  // collective reductions run on a VPU
  return c;
}

void Chip::fail(std::uint32_t instr, const std::string& what) const {
  const ir::Instruction& ins = program_[instr];
  throw SimulationError(id_, ins.core, instr, program_.label_of(ins), what);
}

}  // namespace tpusim::models
