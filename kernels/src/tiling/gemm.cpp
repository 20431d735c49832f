// GEMM tiling and lowering (contracts in lowering.h).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "tiling/pipeline.h"
#include "tpusim/core/checked.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/gemm.h"

namespace tpusim::kernels {

namespace {

// A ranking-only cost per pipeline step. The hardware models charge chip.mxu.step_overhead per step (the
// estimate below includes it), but many small steps make the schedule more fragile than the estimate sees (a
// C tile's write-back queued ahead of operand loads, HBM latency barely hidden), so a tiling with more steps
// must win by more than this per step. Assumption: 50 ns.
constexpr double kStepRankingSeconds = 50e-9;
// The MXU consumes LHS rows 8 at a time (bf16[8,128] per push, docs/hardware.md), so rows pad to 8.
constexpr std::int64_t kRowGranule = 8;
constexpr std::uint64_t kAccumulatorBytes = 4;  // f32 (int32 for int8) accumulation

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

// Tile sizes tried along a dimension: power-of-two multiples of the granule below the dimension, and the
// whole dimension.
std::vector<std::int64_t> candidates(std::int64_t dim, std::int64_t granule) {
  std::vector<std::int64_t> out;
  for (std::int64_t t = granule; t < dim; t = t <= dim / 2 ? t * 2 : dim) out.push_back(t);
  out.push_back(dim);
  return out;
}

void check_chip(const ChipSpec& chip) {
  if (chip.tensorcores < 1 || chip.mxu.per_core < 1 || chip.mxu.rows < 1 || chip.mxu.cols < 1 ||
      chip.vmem.capacity.count() == 0 || chip.clock.value() <= 0 || chip.hbm.bandwidth.value() <= 0) {
    throw std::invalid_argument(fmt::format(
        "chip '{}': lowering needs tensorcores, mxu per_core/rows/cols, vmem capacity, clock and hbm bandwidth",
        chip.name));
  }
}

std::int64_t cores_of(const ChipSpec& chip) { return chip.tensorcores; }

struct Counts {
  std::int64_t nm, nn, nk, tiles_per_core, steps_per_core;
};

// A batch of products is dealt over the TensorCores product by product, each product's tiles on one core.
Counts counts(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t tm,
              std::int64_t tk, std::int64_t tn, std::int64_t batch = 1) {
  Counts c{ceil_div(m, tm), ceil_div(n, tn), ceil_div(k, tk), 0, 0};
  // Saturating: a tiling of absurdly many steps ranks last (and the resource estimate refuses it).
  c.tiles_per_core = batch > 1 ? saturating_mul(ceil_div(batch, chip.tensorcores), saturating_mul(c.nm, c.nn))
                               : ceil_div(saturating_mul(c.nm, c.nn), chip.tensorcores);
  c.steps_per_core = saturating_mul(c.tiles_per_core, c.nk);
  return c;
}

}  // namespace

GemmTiling tile_gemm(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n, DType dtype,
                     OperandBytes operands, std::int64_t batch) {
  if (m < 1 || k < 1 || n < 1 || batch < 1) {
    throw std::invalid_argument(fmt::format("gemm {} x {}x{}x{}: empty", batch, m, k, n));
  }
  check_chip(chip);
  const auto eb = static_cast<std::uint64_t>(dtype_bytes(dtype));
  const double a_bytes = operands.a > 0 ? operands.a : static_cast<double>(eb);
  const double b_bytes = operands.b > 0 ? operands.b : static_cast<double>(eb);
  const auto budget = static_cast<std::uint64_t>(vmem_budget(chip, kGemmVmemFraction));
  const double bw = chip.hbm.achievable_bandwidth().value();
  const double latency = chip.hbm.latency.value();
  const std::int64_t r = chip.mxu.rows, cols = chip.mxu.cols;

  GemmTiling best;
  std::tuple<double, double, std::int64_t, int> best_key{0, 0, 0, 0};
  double smallest = 0;
  for (std::int64_t tm : candidates(m, chip.mxu.rows)) {
    for (std::int64_t tn : candidates(n, chip.mxu.cols)) {
      for (std::int64_t tk : candidates(k, chip.mxu.rows)) {
       for (int buffers = 2; buffers <= detail::kMaxOperandBuffers; ++buffers) {
        const Counts c = counts(chip, m, k, n, tm, tk, tn, batch);
        // In double until it is known to fit (shapes up to kMaxDimension would overflow 64-bit integers).
        const double tile_bytes = static_cast<double>(tm) * static_cast<double>(tk) * a_bytes +
                                  static_cast<double>(tk) * static_cast<double>(tn) * b_bytes;
        const double vmem_bytes =
            static_cast<double>(std::min<std::int64_t>(buffers, c.steps_per_core)) * tile_bytes +
            static_cast<double>(std::min<std::int64_t>(2, c.tiles_per_core)) * static_cast<double>(tm) *
                static_cast<double>(tn) * kAccumulatorBytes;
        if (smallest == 0 || vmem_bytes < smallest) smallest = vmem_bytes;
        if (vmem_bytes > static_cast<double>(budget)) continue;
        const auto vmem = static_cast<std::uint64_t>(vmem_bytes);
        const double hbm = static_cast<double>(batch) *
                           (a_bytes * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(c.nn) +
                            b_bytes * static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(c.nm) +
                            static_cast<double>(eb) * static_cast<double>(m) * static_cast<double>(n));
        // Weight-stationary MXU time of one full step: its R x C weight tiles dealt over the core's arrays,
        // max(rows, R) cycles each (rows padded to the 8-row granule); back-to-back steps pipeline, so the
        // busiest core pays that per step plus one fill and drain (2R + C) at the end.
        const std::int64_t step_tiles = ceil_div(ceil_div(tk, r) * ceil_div(tn, cols), chip.mxu.per_core);
        const double step_cycles =
            static_cast<double>(step_tiles) * static_cast<double>(std::max(round_up(tm, kRowGranule), r));
        const double drain_s = static_cast<double>(2 * r + cols) / chip.clock.value();
        const double active =
            static_cast<double>(std::min<std::int64_t>(cores_of(chip), saturating_mul(batch, c.nm * c.nn)));
        // With D operand buffers, the loads of step s+D start when the matmul of step s has drained, and
        // must land before step s+D streams; they overlap the loads already in flight, so D steps last at
        // least drain + HBM latency + one step's loads of every core + one step's matmul. A batch of products
        // is not bound so (kernels/src/graph/fused_ops.cpp, one_matmul: the simulation charges it no bound).
        const double step_mxu_s = step_cycles / chip.clock.value() + chip.mxu.step_overhead.value();
        const double step_hbm_s = active * tile_bytes / bw;
        const double pipeline_s = batch > 1 ? 0.0 : (drain_s + latency + step_hbm_s + step_mxu_s) / buffers;
        const double step_s = std::max({step_mxu_s, step_hbm_s, pipeline_s});
        const double mxu_s = static_cast<double>(c.steps_per_core) * step_s;
        // Exposed: the first step's loads of every core (nothing to hide them behind) and, at the end, the
        // last step's matmul and the last C tiles' stores.
        const double head_s = latency + active * tile_bytes / bw;
        const double tail_s = step_cycles / chip.clock.value() + drain_s + latency +
                              active * static_cast<double>(tm) * static_cast<double>(tn) * static_cast<double>(eb) / bw;
        const double time = std::max(mxu_s, hbm / bw) + head_s + tail_s +
                            static_cast<double>(c.steps_per_core) * kStepRankingSeconds;
        const std::tuple<double, double, std::int64_t, int> key{time, hbm, c.steps_per_core, buffers};
        if (best.tm == 0 || key < best_key) {
          best = GemmTiling{tm, tk, tn, vmem, buffers};
          best_key = key;
        }
       }
      }
    }
  }
  if (best.tm == 0) {
    throw detail::vmem_too_small(chip, kGemmVmemFraction, smallest,
                                 fmt::format("the smallest tile of a {}x{}x{} GEMM", m, k, n));
  }
  return best;
}

double gemm_instruction_count(const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n, DType dtype) {
  const GemmTiling t = tile_gemm(chip, m, k, n, dtype);
  // lower_gemm: per step two loads and a matmul; per C tile one store; with B staged in CMEM, one stage per
  // B tile (by the steps of C tile row 0).
  const double nm = std::ceil(static_cast<double>(m) / static_cast<double>(t.tm));
  const double nn = std::ceil(static_cast<double>(n) / static_cast<double>(t.tn));
  const double nk = std::ceil(static_cast<double>(k) / static_cast<double>(t.tk));
  const double tiles = nm * nn;
  const bool stage_b = weights_fit_cmem(chip, k, n, dtype) && nm > 1;
  return 3 * tiles * nk + tiles + (stage_b ? nn * nk : 0);
}

bool weights_fit_cmem(const ChipSpec& chip, std::int64_t k, std::int64_t n, DType dtype) {
  if (chip.cmem.capacity.count() == 0 || chip.cmem.bandwidth.value() <= 0 || k < 1 || n < 1) return false;
  if (!has_path(chip, BlockKind::dma, BlockKind::cmem)) return false;  // CMEM the DMA engine cannot reach
  const double bytes = static_cast<double>(k) * static_cast<double>(n) * dtype_bytes(dtype);
  return bytes <= chip.cmem.capacity.as_double() * kGemmCmemFraction;
}

GemmLowering lower_gemm(ir::Program& prog, const ChipSpec& chip, std::int64_t m, std::int64_t k, std::int64_t n,
                        DType dtype, const std::vector<std::uint32_t>& after, const std::string& label) {
  const GemmTiling t = tile_gemm(chip, m, k, n, dtype);
  const Counts c = counts(chip, m, k, n, t.tm, t.tk, t.tn);
  const int cores = chip.tensorcores;
  const auto eb = static_cast<std::uint64_t>(dtype_bytes(dtype));
  const std::int64_t tiles = c.nm * c.nn;
  const bool stage_b = weights_fit_cmem(chip, k, n, dtype) && c.nm > 1;

  std::vector<std::int64_t> steps(cores);
  for (int core = 0; core < cores; ++core) {
    steps[core] = (tiles > core ? ceil_div(tiles - core, cores) : 0) * c.nk;
  }
  // A tile spanning whole rows of its row-major matrix is one contiguous block.
  auto pattern = [](std::int64_t cols, std::int64_t row_len) {
    return cols == row_len ? ir::DmaPattern::contiguous : ir::DmaPattern::strided;
  };
  auto step_of = [&](int core, std::int64_t s) {
    const std::int64_t tile = core + (s / c.nk) * cores, ks = s % c.nk;
    const std::int64_t i = tile / c.nn, j = tile % c.nn;
    const std::int64_t rows = std::min(t.tm, m - i * t.tm), cols = std::min(t.tn, n - j * t.tn),
                       depth = std::min(t.tk, k - ks * t.tk);
    detail::Step st;
    const auto a = static_cast<std::uint64_t>(rows * depth) * eb, b = static_cast<std::uint64_t>(depth * cols) * eb;
    st.loads = {{"load_a", a, a, pattern(depth, k)}, {"load_b", b, b, pattern(cols, n)}};
    if (stage_b) {
      // B tile (ks, j): staged HBM -> CMEM by its first user (C tile row 0, emitted before every later row),
      // then every user loads it CMEM -> VMEM, contiguous in CMEM.
      const std::int64_t key = ks * c.nn + j;
      if (i == 0) {
        detail::Transfer stage{"stage_b", b, 0, pattern(cols, n)};
        stage.dst = ir::Memory::cmem;
        stage.records = key;
        st.stages.push_back(stage);
      }
      detail::Transfer& load_b = st.loads[1];
      load_b.src = ir::Memory::cmem;
      load_b.pattern = ir::DmaPattern::contiguous;
      load_b.waits_for = key;
    }
    st.compute.kind = ir::OpKind::matmul;
    st.compute.dtype = dtype;
    st.compute.shape.m = rows;
    st.compute.shape.k = depth;
    st.compute.shape.n = cols;
    st.compute.flops.model = st.compute.flops.hardware = 2.0 * static_cast<double>(rows * depth) * cols;
    st.first_of_group = ks == 0;
    st.last_of_group = ks == c.nk - 1;
    st.group_vmem = static_cast<std::uint64_t>(rows * cols) * kAccumulatorBytes;
    // The store casts the f32 accumulator to `dtype` on the way out (no separate VPU pass).
    st.stores = {{"store_c", static_cast<std::uint64_t>(rows * cols) * eb, st.group_vmem, pattern(cols, n)}};
    return st;
  };
  return GemmLowering{detail::emit_pipeline(prog, steps, step_of, after, label, "matmul", t.buffers, ir::OpClass::matmul),
                      t, stage_b};
}

}  // namespace tpusim::kernels
