#include "chip.h"

#include <algorithm>
#include <cmath>
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
      mxu_timer_(dataflow, spec.mxu, mxu_fidelity,
                 static_cast<std::int64_t>(std::ceil(spec.mxu.step_overhead.value() * spec.clock.value() - 1e-9))),
      control_(control),
      queues_(static_cast<std::size_t>(program.layout().count())),
      cores_(static_cast<std::size_t>(spec.tensorcores), TensorCore(spec.vmem.capacity.count(), spec.mxu.per_core)),
      hbm_(spec.hbm.bandwidth.value() * spec.hbm.efficiency, spec.hbm.turnaround),
      pcie_in_(spec.host.pcie_bandwidth.value()),
      pcie_out_(spec.host.pcie_bandwidth.value()),
      cmem_(spec.cmem.bandwidth.value()),
      vmem_copy_(spec.vmem.bandwidth.value()),
      dma_(spec.tensorcores, spec.dma.outstanding),
      host_(kHostTransfersInFlight, kHostEngineId),
      remaining_(program_.size()) {
  for (HwUnit u : {HwUnit::mxu, HwUnit::vpu, HwUnit::dma, HwUnit::host}) {
    const std::size_t instances = u == HwUnit::mxu || u == HwUnit::vpu ? cores_.size() : 1;
    phase_[static_cast<std::size_t>(u)].resize(instances);
    counters_.unit_times[static_cast<std::size_t>(u)].resize(instances);
  }
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

Tick Chip::reserve_vpu(int core, Tick now, Tick duration) {
  TensorCore& c = cores_[static_cast<std::size_t>(core)];
  const Tick earliest = c.vpu.busy() ? std::max(now, c.vpu.finish()) : now;
  return c.pops.reserve(earliest, duration);
}

void Chip::activate(Tick now) {
  // Two wakes at the tick of the last completion (the network's delta wake for an ICI completion and the
  // chip's own timed one at a VPU reservation's end) may activate a finished chip once more: nothing to do.
  if (reported_) return;
  control_.on_activation(now);
  account(now);
  for (TensorCore& c : cores_) c.pops.retire(now);
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
    reported_ = true;
    return;
  }
  classify_units(now);
  const Tick next = next_wake(now);
  // Running ICI instructions have no local deadline: the interconnect wakes the chip when one completes.
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
  for (std::size_t u = 0; u < phase_.size(); ++u) {
    for (std::size_t i = 0; i < phase_[u].size(); ++i) {
      const UnitPhase& ph = phase_[u][i];
      UnitTimes& t = counters_.unit_times[u][i];
      // A VPU the last activation found idle may have run reductions the network reserved since (reserve_vpu
      // does not wake the chip): that time is busy, not stalled.
      const Tick reserved = !ph.busy && u == static_cast<std::size_t>(HwUnit::vpu)
                                ? cores_[i].pops.reserved_within(now - dt, now)
                                : 0;
      if (ph.busy) t.busy += dt;
      t.busy += reserved;
      if (ph.slots) t.queue_slots += dt;
      if (ph.reason >= 0) t.stalled[static_cast<std::size_t>(ph.reason)] += dt - reserved;
    }
  }
}

// Per unit instance: busy if any of its queues has work in flight; then `slots` if a queue's next instruction
// waits for a free slot, else (not busy) the reason the first waiting queue's next instruction cannot start.
// ICI (reported per link and collective) and barriers are not classified.
void Chip::classify_units(Tick now) {
  for (auto& instances : phase_) std::fill(instances.begin(), instances.end(), UnitPhase{});
  const QueueLayout& layout = index_.layout();
  for (int q = 0; q < layout.count(); ++q) {
    const ir::UnitKind unit = layout.unit(q);
    const int core = layout.core(q);
    HwUnit hw = HwUnit::host;
    std::size_t instance = 0;
    bool busy = false, full = false;
    switch (unit) {
      case ir::UnitKind::mxu:
        hw = HwUnit::mxu;
        instance = static_cast<std::size_t>(core);
        busy = cores_[instance].mxu.busy();
        full = cores_[instance].mxu.full();
        break;
      case ir::UnitKind::vpu:
        hw = HwUnit::vpu;
        instance = static_cast<std::size_t>(core);
        busy = full = cores_[instance].vpu_busy(now);
        break;
      case ir::UnitKind::dma:
        hw = HwUnit::dma;
        busy = dma_.busy(core);
        full = dma_.full(core);
        break;
      case ir::UnitKind::host:
        busy = host_.busy();
        full = host_.full();
        break;
      case ir::UnitKind::ici:
      case ir::UnitKind::sync: continue;
    }
    UnitPhase& ph = phase_[static_cast<std::size_t>(hw)][instance];
    ph.busy = ph.busy || busy;
    const auto& queue = index_.queue(q);
    const QueueState& state = queues_[static_cast<std::size_t>(q)];
    if (state.cursor >= queue.size()) continue;
    if (full) {
      ph.slots = true;
    } else if (ph.reason < 0) {
      const int blocker = blocking_queue(program_[queue[state.cursor]], q);
      if (blocker >= 0) ph.reason = static_cast<int>(layout.unit(blocker));  // StallReason::dep_<unit>
    }
  }
  for (auto& instances : phase_) {
    for (UnitPhase& ph : instances) {
      if (ph.busy) {
        ph.reason = -1;
      } else {
        ph.slots = false;
      }
    }
  }
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
  while (ici_ != nullptr && ici_->take_completed(id_, ici_instr, ici_started)) {
    complete(ici_instr, ici_started, now);
    any = true;
  }
  return any;
}

// A matmul's dependency on an earlier matmul of its own MXU queue is an ordering (accumulation) dependency:
// the in-order MXU pipeline honours it (a matmul's result reaches another matmul's operands only through a
// vector op or a DMA), so it does not hold the matmul back; that is what lets back-to-back matmuls pipeline.
bool Chip::dependencies_done(const ir::Instruction& ins, int queue) const { return blocking_queue(ins, queue) < 0; }

int Chip::blocking_queue(const ir::Instruction& ins, int queue) const {
  const bool pipelined = ir::unit_of(ins.kind) == ir::UnitKind::mxu;
  const std::uint32_t* deps = program_.deps_of(ins);
  for (std::uint32_t k = 0; k < ins.dep_count; ++k) {
    const std::uint32_t d = deps[k];
    const int dq = index_.queue_of(d);
    if (pipelined && dq == queue) continue;
    if (!queues_[static_cast<std::size_t>(dq)].done(index_.position(d))) return dq;
  }
  return -1;
}

bool Chip::try_issue(int q, Tick now) {
  QueueState& state = queues_[static_cast<std::size_t>(q)];
  const auto& queue = index_.queue(q);
  if (state.cursor >= queue.size()) return false;
  const std::uint32_t instr = queue[state.cursor];
  const ir::Instruction& ins = program_[instr];
  switch (queue_unit(ins)) {
    case ir::UnitKind::mxu:
      if (cores_[ins.core].mxu.full()) return false;
      break;
    case ir::UnitKind::vpu:
      // In order behind the result pops reserved so far (ResultPops).
      if (cores_[ins.core].vpu.busy() || cores_[ins.core].pops.pending()) return false;
      break;
    case ir::UnitKind::dma:
      if (dma_.full(ins.core)) return false;
      break;
    case ir::UnitKind::host:
      if (host_.full()) return false;
      break;
    case ir::UnitKind::ici:
      if (ici_ != nullptr && ici_->full(id_)) return false;
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
      for (int a = 0; a < spec_.mxu.per_core; ++a) {
        core.array_macs[static_cast<std::size_t>(a)] += matmul_array_macs(spec_.mxu, shape, a);
      }
      const std::uint64_t vmem_bytes = matmul_vmem_bytes(spec_.mxu, shape, ins.dtype);
      core.mxu_vmem_bytes += vmem_bytes;
      const std::int64_t issue = core.mxu.issue_cycle(now, spec_.clock);
      const std::int64_t compute_end = mxu_timer_.schedule(shape, ins.dtype, issue, core.mxu);
      const std::int64_t vmem_end = core.mxu.stream_vmem(
          issue, vmem_bound_cycles(static_cast<double>(vmem_bytes), spec_.vmem.bandwidth, spec_.clock));
      // The VPU pops the results (result_pop_cycles) from the first results on, after what it already
      // holds; the matmul completes no earlier than its last pop. Assumption: the first results come
      // mxu_first_result_cycles after the issue, as on idle arrays (behind a pipelined predecessor they come
      // later, but the predecessor's own pops, reserved first, then usually hold the VPU until then).
      Tick first_results = now + cycles_to_ticks(mxu_first_result_cycles(spec_.mxu, shape), spec_.clock);
      if (core.vpu.busy()) first_results = std::max(first_results, core.vpu.finish());
      const Tick pops_end =
          core.pops.reserve(first_results, cycles_to_ticks(result_pop_cycles(spec_.vpu, shape), spec_.clock));
      core.mxu.push(now, instr, std::max(compute_end, vmem_end), spec_.clock, pops_end);
      return;
    }
    case ir::OpKind::vector: {
      TensorCore& core = cores_[ins.core];
      const std::uint64_t vmem_bytes = ins.bytes;  // declared VMEM operand bytes (timing.h)
      core.vpu_vmem_bytes += vmem_bytes;
      const std::int64_t cycles =
          std::max(vpu_cycles(spec_.vpu, ins.vector_op, ins.elements),
                   vmem_bound_cycles(static_cast<double>(vmem_bytes), spec_.vmem.bandwidth, spec_.clock));
      core.vpu.start(now, instr, cycles_to_ticks(cycles, spec_.clock));
      return;
    }
    case ir::OpKind::dma:
      if (is_remote_put(ins)) {
        // A one-sided put over ICI (net/interconnect.h). Assumption: the local read of its source is not a
        // limit (HBM or VMEM run ~10-100x faster than an ICI link), so it takes no share of the HBM server.
        if (ici_ == nullptr) fail(instr, "no interconnect attached to run a remote DMA");
        counters_.dma_bytes += ins.bytes;
        ici_->start(id_, instr, now);
        return;
      }
      start_transfer(instr, ins, now);
      return;
    case ir::OpKind::host: start_transfer(instr, ins, now); return;
    case ir::OpKind::barrier: complete(instr, now, now); return;
    case ir::OpKind::collective:
    case ir::OpKind::send:
    case ir::OpKind::recv:
      if (ici_ == nullptr) fail(instr, "no interconnect attached to run an ICI instruction");
      ici_->start(id_, instr, now);
      return;
  }
}

// Picks the transfer's path (the resource that limits it) and its latency:
//   host instruction        host_seconds of host-side work, then (with bytes) kPcieLatency and the PCIe
//                           server of its direction (host_op_latency_seconds in timing.h);
//   host <-> chip DMA       PCIe, one server per direction, kPcieLatency;
//   anything <-> HBM        HBM at bandwidth x efficiency, hbm.latency (HBM -> HBM moves the bytes twice);
//                           x (1 - hbm.turnaround) while reads and writes are both in flight (an HBM -> HBM
//                           copy counts as both); one transfer
//                           at most x hbm_channel_share (a transfer below hbm.channels x kHbmStripe bytes
//                           uses fewer channels);
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
    host_.issue(now, instr, path, to_ticks(host_op_latency_seconds(Seconds(ins.host_seconds), ins.bytes)), bytes);
    return;
  }
  // A transfer into HBM writes it, an HBM -> HBM copy reads and writes it (and pays hbm.turnaround alone);
  // anything else reads its path.
  const FlowDirection direction = ins.dst != ir::Memory::hbm   ? FlowDirection::read
                                  : ins.src == ir::Memory::hbm ? FlowDirection::copy
                                                               : FlowDirection::write;
  const auto issue = [&](BandwidthServer& path, Tick latency, double moved, double cap = 1.0) {
    dma_.issue(now, ins.core, instr, path, latency, moved / dma_pattern_efficiency(spec_.dma, ins.pattern),
               direction, cap);
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
    // Striped over min(channels, ceil(bytes / kHbmStripe)) HBM channels (hbm_channel_share).
    issue(hbm_, ins.src == ir::Memory::hbm ? to_ticks(spec_.hbm.latency) : 0, moved,
          hbm_channel_share(spec_.hbm, bytes));
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
  queues_[static_cast<std::size_t>(index_.queue_of(instr))].complete(index_.position(instr));
  --remaining_;
}

Tick Chip::next_wake(Tick now) const {
  Tick next = std::min(dma_.next_event(), host_.next_event());
  for (const TensorCore& c : cores_) next = std::min({next, c.mxu.finish(), c.vpu.finish(), c.pops.next_boundary(now)});
  for (const BandwidthServer* path : {&hbm_, &pcie_in_, &pcie_out_, &cmem_, &vmem_copy_}) {
    next = std::min(next, path->next_completion());
  }
  return next;
}

ChipCounters Chip::collect() const {
  ChipCounters c = counters_;
  for (const TensorCore& core : cores_) {
    c.mxu_busy += core.mxu.busy_ticks();
    c.vpu_busy += core.vpu_busy_ticks();
    c.useful_macs += core.useful_macs;
    c.mxu_vmem_bytes += core.mxu_vmem_bytes;
    c.vpu_vmem_bytes += core.vpu_vmem_bytes;
    c.array_macs.insert(c.array_macs.end(), core.array_macs.begin(), core.array_macs.end());
    c.vmem_peak = std::max(c.vmem_peak, core.vmem.peak());
  }
  c.dma_busy = dma_.busy_ticks();
  c.hbm_busy = hbm_.busy_ticks();
  c.host_busy = host_.busy_ticks();
  return c;
}

void add_unit_stall_stats(const std::vector<const Chip*>& chips, SimResult& r) {
  const double n = chips.empty() ? 1.0 : static_cast<double>(chips.size());
  std::array<double, kHwUnits> busy{}, slots{};
  std::array<std::array<double, kStallReasons>, kHwUnits> stalled{};
  std::array<bool, kHwUnits> queued{};
  std::uint64_t mxu_bytes = 0, vpu_bytes = 0;
  std::vector<double> array_utilization;
  for (const Chip* chip : chips) {
    const ChipCounters c = chip->collect();
    mxu_bytes += c.mxu_vmem_bytes;
    vpu_bytes += c.vpu_vmem_bytes;
    // An array's utilization: its useful MACs / (rows x cols x clock cycles of the step), at the bf16 rate.
    const ChipSpec& spec = chip->spec();
    const double capacity = static_cast<double>(spec.mxu.rows) * spec.mxu.cols * r.step_time.value() *
                            spec.clock.value();
    for (double macs : c.array_macs) array_utilization.push_back(capacity > 0 ? macs / capacity : 0.0);
    for (std::size_t u = 0; u < kHwUnits; ++u) {
      const auto& instances = c.unit_times[u];
      if (instances.empty()) continue;
      queued[u] = true;
      const double share = 1.0 / (static_cast<double>(instances.size()) * n);  // mean over instances and chips
      for (const UnitTimes& t : instances) {
        busy[u] += to_seconds(t.busy).value() * share;
        slots[u] += to_seconds(t.queue_slots).value() * share;
        for (std::size_t k = 0; k < kStallReasons; ++k) stalled[u][k] += to_seconds(t.stalled[k]).value() * share;
      }
    }
  }
  r.units[static_cast<std::size_t>(HwUnit::mxu)].bytes = Bytes(mxu_bytes);
  r.units[static_cast<std::size_t>(HwUnit::vpu)].bytes = Bytes(vpu_bytes);
  if (!array_utilization.empty()) {
    Spread& s = r.mxu_array_utilization;
    s.min = *std::min_element(array_utilization.begin(), array_utilization.end());
    s.max = *std::max_element(array_utilization.begin(), array_utilization.end());
    double sum = 0;
    for (double v : array_utilization) sum += v;
    s.mean = sum / static_cast<double>(array_utilization.size());
  }
  const double step = r.step_time.value();
  for (std::size_t u = 0; u < kHwUnits; ++u) {
    UnitUsage& usage = r.units[u];
    double total = 0;
    for (std::size_t k = 0; k < kStallReasons; ++k) {
      usage.stalled_by[k] = Seconds(stalled[u][k]);
      total += stalled[u][k];
    }
    usage.stalled = Seconds(total);
    usage.queue_slots = Seconds(slots[u]);
    const double in_flight = queued[u] ? busy[u] : usage.busy.value();
    usage.idle = Seconds(std::max(0.0, step - in_flight - total));
  }
}

void Chip::fail(std::uint32_t instr, const std::string& what) const {
  const ir::Instruction& ins = program_[instr];
  throw SimulationError(id_, ins.core, instr, program_.label_of(ins), what);
}

}  // namespace tpusim::models
