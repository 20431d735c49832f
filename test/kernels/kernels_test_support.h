#pragma once
// Hand-built chips and program checkers shared by the kernels tests.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels::testing {

// A collective send offset of `distance` along `axis`.
inline std::array<int, kMaxAxes> along(int axis, int distance) {
  std::array<int, kMaxAxes> o{};
  o[static_cast<std::size_t>(axis)] = distance;
  return o;
}

// The first diagnostic of the ConfigError `f` throws; fails the test when it does not throw one.
template <class F>
Diagnostic config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.diagnostics().at(0);
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

// v4-like numbers from docs/hardware.md: 2 TensorCores of 4 128x128 MXUs, 16 MiB VMEM each, 1200 GB/s HBM.
inline ChipSpec v4_like() {
  ChipSpec c;
  c.name = "v4-like";
  c.tensorcores = 2;
  c.clock = Hertz(1.05e9);
  c.mxu = MxuSpec{4, 128, 128, MxuDataflow::weight_stationary, 1, 0, Seconds(0)};
  c.vpu = VpuSpec{128, 8, 1, 1};
  c.vmem = VmemSpec{{MiB(16), BytesPerSecond(0)}};
  c.hbm.capacity = GiB(32);
  c.hbm.bandwidth = BytesPerSecond(1200e9);
  return c;
}

// A chip with room for any model (tests that look at programs, not at fitting).
inline ChipSpec roomy() {
  ChipSpec c = v4_like();
  c.hbm.capacity = Bytes(1ULL << 42);
  c.vpu.transcendental_rate = 0.25;
  return c;
}

// A decoder small enough to count by hand: no biases, no position embedding, RMSNorm, ReLU, tied embeddings.
inline ModelSpec small_decoder(const std::string& name, int layers, std::int64_t d, int heads, std::int64_t d_ff,
                               std::int64_t vocab, std::int64_t context) {
  ModelSpec m;
  m.name = name;
  m.kind = ModelKind::transformer;
  TransformerModel& t = m.transformer;
  t.layers = layers;
  t.d_model = d;
  t.heads = heads;
  t.d_ff = d_ff;
  t.vocab = vocab;
  t.context = context;
  t.style.position = PositionKind::none;
  t.style.norm = NormKind::rmsnorm;
  t.style.mlp = MlpKind::relu;
  t.style.bias = false;
  return m;
}

// A training step of `model` over `batch` sequences of `seq_len` tokens, bf16 with f32 master weights.
inline WorkloadSpec training_step(ModelSpec model, std::int64_t batch, std::int64_t seq_len) {
  WorkloadSpec w;
  w.model = std::move(model);
  w.step = StepKind::train;
  w.batch = batch;
  w.tokens.seq_len = w.tokens.decoder_seq_len = w.tokens.context = seq_len;
  w.numerics.weight_dtype = w.weights();
  return w;
}

// v5e-like: 1 TensorCore, 128 MiB VMEM, 819 GB/s HBM.
inline ChipSpec v5e_like() {
  ChipSpec c = v4_like();
  c.name = "v5e-like";
  c.tensorcores = 1;
  c.clock = Hertz(1.5e9);
  c.vmem = VmemSpec{{MiB(128), BytesPerSecond(0)}};
  c.hbm.capacity = GiB(16);
  c.hbm.bandwidth = BytesPerSecond(819e9);
  return c;
}

// Peak live VMEM per core when every instruction starts as soon as its dependencies end (unlimited units)
// and takes a random duration: the most overlap the DAG allows, so a program whose VMEM contract holds by
// dependencies stays within it for every seed. Allocations count from an instruction's start, frees from
// its end; at equal times frees come first (the freeing instruction ended before the next one started).
inline std::vector<std::uint64_t> asap_vmem_peak(const ir::Program& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> duration(1, 100);
  std::vector<std::int64_t> end(p.size());
  std::vector<std::tuple<std::int64_t, int, int, std::int64_t>> events;  // time, free first, core, delta
  for (std::size_t i = 0; i < p.size(); ++i) {
    const ir::Instruction& ins = p[i];
    std::int64_t start = 0;
    for (std::uint32_t d = 0; d < ins.deps.count; ++d) start = std::max(start, end[p.deps_of(ins)[d]]);
    end[i] = start + duration(rng);
    events.emplace_back(start, 1, ins.core, static_cast<std::int64_t>(ins.vmem.alloc));
    events.emplace_back(end[i], 0, ins.core, -static_cast<std::int64_t>(ins.vmem.free));
  }
  std::sort(events.begin(), events.end());
  std::vector<std::int64_t> live(p.cores_used(), 0);
  std::vector<std::uint64_t> peak(p.cores_used(), 0);
  for (const auto& [time, order, core, delta] : events) {
    live[core] += delta;
    peak[core] = std::max(peak[core], static_cast<std::uint64_t>(std::max<std::int64_t>(live[core], 0)));
  }
  return peak;
}

// The largest asap_vmem_peak over cores and a few seeds.
inline std::uint64_t worst_vmem_peak(const ir::Program& p) {
  std::uint64_t worst = 0;
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    for (std::uint64_t v : asap_vmem_peak(p, seed)) worst = std::max(worst, v);
  }
  return worst;
}

// An MLP workload of the given layer widths.
inline WorkloadSpec mlp(std::vector<int> widths, std::int64_t batch, StepKind step, Optimizer opt = Optimizer::adam,
                        Activation act = Activation::gelu) {
  WorkloadSpec w;
  w.model.name = "mlp";
  w.model.kind = ModelKind::mlp;
  w.model.mlp.widths = std::move(widths);
  w.model.mlp.activation = act;
  w.batch = batch;
  w.step = step;
  w.optimizer = opt;
  return w;
}

// A collective group: members per axis, strides per axis, pods.
inline ir::CollectiveGroup group(std::array<std::uint32_t, 3> size, std::array<std::uint32_t, 3> stride = {1, 1, 1},
                                 std::uint32_t pods = 1) {
  return ir::CollectiveGroup{size, stride, pods};
}

}  // namespace tpusim::kernels::testing
