#include "tpusim/models/estimate.h"

#include <algorithm>
#include <cmath>

namespace tpusim::models {
namespace {

double ceil_ratio(double a, double b) { return b > 0 ? std::ceil(a / b) : 0; }

// What the cycle reference steps for a matmul (weight-stationary, mxu_weight_stationary.cpp): its weight tiles
// dealt over the arrays, max(m, R) cycles each, plus one fill and drain.
double weight_stationary_cycles(const ChipSpec& chip, const ir::Instruction& ins) {
  const double m = static_cast<double>(ins.shape.m), k = static_cast<double>(ins.shape.k),
               n = static_cast<double>(ins.shape.n);
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  const double r = std::max(1, chip.mxu.rows), c = std::max(1, chip.mxu.cols), arrays = std::max(1, chip.mxu.per_core);
  return ceil_ratio(ceil_ratio(k, r) * ceil_ratio(n, c), arrays) * std::max(m, r) + r + c + std::min(m, r);
}

// MXU cycles of a matmul on one TensorCore, an upper bound over both dataflows: its array tiles dealt over
// the core's arrays, each as long as its stream (max(m, R) weight-stationary; k + R + C output-stationary),
// plus one fill and drain; and never less than its VMEM traffic and its result pops allow.
double matmul_cycles_bound(const ChipSpec& chip, const ir::Instruction& ins) {
  const double m = static_cast<double>(ins.shape.m), k = static_cast<double>(ins.shape.k),
               n = static_cast<double>(ins.shape.n);
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  const double r = std::max(1, chip.mxu.rows), c = std::max(1, chip.mxu.cols), arrays = std::max(1, chip.mxu.per_core);
  const double ws = weight_stationary_cycles(chip, ins);
  const double os = ceil_ratio(ceil_ratio(m, r) * ceil_ratio(n, c), arrays) * (k + r + c) + r + c;
  const double in = dtype_bytes(ins.dtype);
  const double vmem_bytes = k * n * in + m * k * ceil_ratio(n, c) * in + m * n * (ceil_ratio(k, r) + 1) * 4;
  const double vmem = chip.vmem.bandwidth.value() > 0 ? vmem_bytes * chip.clock.value() / chip.vmem.bandwidth.value() : 0;
  const double pops = m * n / std::max(1.0, static_cast<double>(chip.vpu.lanes) * chip.vpu.sublanes *
                                                std::min(1.0, chip.vpu.result_pops_per_cycle));
  return std::max({ws, os, vmem, pops});
}

double slowest(std::initializer_list<double> rates) {
  double r = 0;
  for (double x : rates) {
    if (x > 0) r = r > 0 ? std::min(r, x) : x;
  }
  return r;
}

}  // namespace

double instruction_seconds_bound(const ChipSpec& chip, const PodSpec& pod, const ir::Instruction& ins) {
  const double clock = chip.clock.value() > 0 ? chip.clock.value() : 1;
  const double bytes = static_cast<double>(ins.bytes);
  // A fused instruction (program format 2) also streams its operands through HBM and pays the MXU's step
  // overhead per grid step: both added to the compute bound (the model overlaps them; a sum bounds that).
  const double hbm_rate = chip.hbm.achievable_bandwidth().value();
  const double streamed = static_cast<double>(ins.stream.hbm_read) + static_cast<double>(ins.stream.hbm_written);
  const double fused = (hbm_rate > 0 ? streamed / hbm_rate : 0) +
                       static_cast<double>(ins.stream.grid_steps) * std::max(0.0, chip.mxu.step_overhead.value());
  switch (ins.kind) {
    case ir::OpKind::matmul:
      return matmul_cycles_bound(chip, ins) * std::max(1, static_cast<int>(ins.shape.batch)) / clock + fused;
    case ir::OpKind::vector: {
      const double per_cycle = static_cast<double>(std::max(1, chip.vpu.lanes)) * std::max(1, chip.vpu.sublanes) *
                               std::max(1, chip.vpu.alus) * std::min(1.0, std::max(1e-6, chip.vpu.transcendental_rate));
      const double vmem = chip.vmem.bandwidth.value() > 0 ? bytes / chip.vmem.bandwidth.value() : 0;
      return std::max(static_cast<double>(ins.vector.elements) / per_cycle / clock, vmem) + 64 / clock + fused;
    }
    case ir::OpKind::gather:
    case ir::OpKind::scatter:
    case ir::OpKind::dma:
    case ir::OpKind::host: {
      const double rate = slowest({chip.hbm.bandwidth.value(), chip.vmem.bandwidth.value(), chip.cmem.bandwidth.value(),
                                   chip.host.pcie_bandwidth.value(), chip.ici.link_bandwidth.value()});
      const double efficiency = std::min({1.0, std::max(1e-6, chip.dma.strided_efficiency),
                                          std::max(1e-6, chip.dma.gather_efficiency),
                                          chip.hbm.achievable_fraction()});
      return ins.host.seconds + (rate > 0 ? bytes / (rate * efficiency) : 0) + chip.hbm.latency.value() + 1e-6;
    }
    case ir::OpKind::collective:
    case ir::OpKind::send:
    case ir::OpKind::recv: {
      // Every byte crosses a few links of the ring or the DCN; 4 x bytes on the slowest of them bounds the
      // algorithms we plan, plus a hop latency per chip of the pod.
      const double rate =
          slowest({chip.ici.link_bandwidth.value(), chip.host.dcn_bandwidth.value() / pod.dcn_oversubscription});
      const double chips = static_cast<double>(pod.chip_count());
      return (rate > 0 ? 4 * bytes / rate : 0) + chips * chip.ici.hop_latency.value();
    }
    case ir::OpKind::barrier: return 0;
    case ir::OpKind::custom: break;
  }
  return 0;  // custom: an added unit kind's time is its block's own, none known here
}

SimEstimate estimate_simulation(const Scenario& scenario, const ir::ProgramSet& programs) {
  SimEstimate e;
  const ChipSpec& chip = scenario.chip;
  e.chips = static_cast<double>(scenario.pod.chip_count());
  // Per chip: the measured base, plus the per-array MXU state of absurdly wide chips.
  const double per_chip = kBytesPerChip + static_cast<double>(chip.tensorcores) * chip.mxu.per_core * 64.0;
  e.bytes = e.chips * per_chip;
  const bool cycle = scenario.fidelity.mxu == MxuFidelity::cycle;
  const double pes = static_cast<double>(chip.mxu.rows) * chip.mxu.cols * chip.mxu.per_core;
  double reference_buffers = 0;
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    const ir::Program& prog = programs.programs[p];
    double runs = 0;  // chips running this program
    if (programs.role_of_chip.empty()) {
      runs = p == 0 ? e.chips : 0;
    } else {
      for (std::uint16_t role : programs.role_of_chip) runs += role == p ? 1 : 0;
    }
    e.instructions += runs * static_cast<double>(prog.size());
    double serial = 0, longest = 0;
    std::uint32_t longest_at = 0;
    for (std::size_t i = 0; i < prog.size(); ++i) {
      const ir::Instruction& ins = prog[i];
      const double t = instruction_seconds_bound(chip, scenario.pod, ins);
      serial += t;
      if (t > longest) {
        longest = t;
        longest_at = static_cast<std::uint32_t>(i);
      }
      if (cycle && ins.kind == ir::OpKind::matmul && runs > 0) {
        e.pe_cycles +=
            runs * weight_stationary_cycles(chip, ins) * std::max(1, static_cast<int>(ins.shape.batch)) * pes;
        reference_buffers =
            std::max(reference_buffers, (static_cast<double>(ins.shape.m) * static_cast<double>(ins.shape.k) +
                                         static_cast<double>(ins.shape.k) * static_cast<double>(ins.shape.n)) * 8);
      }
    }
    if (runs > 0 && serial > e.serial_seconds) {
      e.program = static_cast<std::uint32_t>(p);
      e.serial_seconds = serial;
      e.longest_instruction = longest_at;
      e.longest_seconds = longest;
    }
  }
  e.bytes += reference_buffers;
  return e;
}

}  // namespace tpusim::models
