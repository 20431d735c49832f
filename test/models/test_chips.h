#pragma once
// Chip specs and scenarios built by hand for the models tests, so the tests do not depend on configs/.
#include <cstdint>
#include <utility>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models::testing {

// The tick of the simulations (1 ps): the tolerance of an exact timing comparison in seconds.
inline constexpr double kPicosecond = 1e-12;

// A TPU v4-like chip (docs/hardware.md): 2 TensorCores x 4 MXUs of 128 x 128 at 1.05 GHz = 275.25 TFLOP/s bf16,
// 128 x 8 VPU, 16 MiB VMEM per core, 1200 GB/s HBM at 100% efficiency and 500 ns latency, 8 DMAs in flight,
// 16 GB/s PCIe.
inline ChipSpec v4_like() {
  ChipSpec c;
  c.name = "v4-like";
  c.published.generation = "v4";
  c.tensorcores = 2;
  c.clock = Hertz(1.05e9);
  c.published.peak_bf16 = FlopsPerSecond(275.25e12);
  c.published.peak_int8 = FlopsPerSecond(275.25e12);
  c.mxu.per_core = 4;
  c.mxu.rows = 128;
  c.mxu.cols = 128;
  c.mxu.int8_rate = 1;
  c.vpu.lanes = 128;
  c.vpu.sublanes = 8;
  c.vpu.alus = 1;
  c.vpu.transcendental_rate = 0.25;
  c.vmem.capacity = MiB(16);
  c.vmem.bandwidth = BytesPerSecond(4e12);
  c.cmem.capacity = MiB(128);
  c.cmem.bandwidth = BytesPerSecond(2e12);
  c.hbm.capacity = GiB(32);
  c.hbm.bandwidth = BytesPerSecond(1200e9);
  c.hbm.latency = Seconds(500e-9);
  c.hbm.efficiency = 1.0;
  c.dma.outstanding = 8;
  c.ici.links = 6;
  c.ici.link_bandwidth = BytesPerSecond(45e9);
  c.ici.hop_latency = Seconds(1e-6);
  c.host.chips_per_host = 4;
  c.host.pcie_bandwidth = BytesPerSecond(16e9);
  return c;
}

inline Scenario scenario_for(const ChipSpec& chip, std::vector<int> shape = {1}) {
  Scenario s;
  s.name = "models-test";
  s.chip = chip;
  s.pod.name = "test-slice";
  s.pod.shape = std::move(shape);
  s.pod.wraparound.assign(s.pod.shape.size(), 0);
  s.pod.host_shape.assign(s.pod.shape.size(), 1);
  return s;
}

// Hand-built instructions for tests: a matmul on `core` counting 2mkn model FLOPs, a DMA, a vector op.
inline ir::Instruction matmul(int core, std::int64_t m, std::int64_t k, std::int64_t n) {
  ir::Instruction i;
  i.kind = ir::OpKind::matmul;
  i.core = static_cast<std::uint8_t>(core);
  i.shape.m = m;
  i.shape.k = k;
  i.shape.n = n;
  i.flops.model = i.flops.hardware = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  return i;
}

inline ir::Instruction dma(ir::Memory src, ir::Memory dst, std::uint64_t bytes, int core = 0) {
  ir::Instruction i;
  i.kind = ir::OpKind::dma;
  i.core = static_cast<std::uint8_t>(core);
  i.memory.src = src;
  i.memory.dst = dst;
  i.bytes = bytes;
  return i;
}

inline ir::Instruction vector(int core, ir::VectorOp op, std::int64_t elements) {
  ir::Instruction i;
  i.kind = ir::OpKind::vector;
  i.core = static_cast<std::uint8_t>(core);
  i.vector.op = op;
  i.vector.elements = elements;
  return i;
}

// A program set in which every chip runs `p`.
inline ir::ProgramSet single(ir::Program p) {
  ir::ProgramSet set;
  set.programs.push_back(std::move(p));
  return set;
}

}  // namespace tpusim::models::testing
