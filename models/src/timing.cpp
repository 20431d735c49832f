#include "tpusim/models/timing.h"

#include <algorithm>
#include <cmath>

namespace tpusim::models {

// Defined in the variant files (one file per dataflow, no header of their own).
std::unique_ptr<const MxuDataflowModel> make_weight_stationary_dataflow();
std::unique_ptr<const MxuDataflowModel> make_output_stationary_dataflow();

std::unique_ptr<const MxuDataflowModel> make_mxu_dataflow(MxuDataflow dataflow) {
  switch (dataflow) {
    case MxuDataflow::weight_stationary: return make_weight_stationary_dataflow();
    case MxuDataflow::output_stationary: return make_output_stationary_dataflow();
  }
  return make_weight_stationary_dataflow();
}

std::int64_t tiles_on_array(const MxuSpec& mxu, std::int64_t total, int array) {
  if (total <= array || mxu.per_core < 1) return 0;
  return ceil_div(total - array, mxu.per_core);
}

std::int64_t MxuDataflowModel::bf16_cycles(const MxuSpec& mxu, MatmulShape s) const {
  // Array 0 gets the most tiles (round-robin from array 0) and all arrays start idle, so it finishes last.
  const std::int64_t count = tiles_on_array(mxu, tiles(mxu, s), 0);
  if (count == 0) return 0;
  MxuArrayState idle;
  return schedule_array(mxu, s, count, 0, idle);
}

std::int64_t MxuDataflowModel::schedule(const MxuSpec& mxu, MatmulShape s, std::int64_t issue,
                                        std::vector<MxuArrayState>& arrays) const {
  const std::int64_t total = tiles(mxu, s);
  std::int64_t end = issue;
  for (int a = 0; a < mxu.per_core && a < static_cast<int>(arrays.size()); ++a) {
    const std::int64_t count = tiles_on_array(mxu, total, a);
    if (count == 0) continue;
    end = std::max(end, schedule_array(mxu, s, count, issue, arrays[static_cast<std::size_t>(a)]));
  }
  return end;
}

double mxu_dtype_rate(const MxuSpec& mxu, DType dtype) {
  switch (dtype) {
    case DType::bf16:
    case DType::f32: return 1.0;
    case DType::int8: return mxu.int8_rate > 0 ? mxu.int8_rate : 1.0;
    case DType::fp8: return mxu.fp8_rate > 0 ? mxu.fp8_rate : 1.0;
  }
  return 1.0;
}

std::int64_t matmul_cycles(const MxuDataflowModel& dataflow, const MxuSpec& mxu, MatmulShape s, DType dtype) {
  const std::int64_t cycles = dataflow.bf16_cycles(mxu, s);
  const double rate = mxu_dtype_rate(mxu, dtype);
  if (rate == 1.0) return cycles;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(cycles) / rate));
}

double mxu_mac_capacity(const MxuSpec& mxu, DType dtype, std::int64_t cycles) {
  return static_cast<double>(mxu.rows) * mxu.cols * mxu.per_core * static_cast<double>(cycles) *
         mxu_dtype_rate(mxu, dtype);
}

std::int64_t vpu_cycles(const VpuSpec& vpu, ir::VectorOp op, std::int64_t elements) {
  if (elements <= 0) return 0;
  const std::int64_t per_cycle = static_cast<std::int64_t>(vpu.lanes) * vpu.sublanes * vpu.alus;
  switch (op) {
    case ir::VectorOp::elementwise: return ceil_div(elements, per_cycle);
    case ir::VectorOp::transcendental: {
      const double rate = vpu.transcendental_rate > 0 ? vpu.transcendental_rate : 1.0;
      return static_cast<std::int64_t>(
          std::ceil(static_cast<double>(elements) / (static_cast<double>(per_cycle) * rate)));
    }
    case ir::VectorOp::reduction: {
      const double vreg = static_cast<double>(vpu.lanes) * vpu.sublanes;
      return ceil_div(elements, per_cycle) + static_cast<std::int64_t>(std::ceil(std::log2(vreg)));
    }
    case ir::VectorOp::transpose: return ceil_div(elements, vpu.lanes);
  }
  return ceil_div(elements, per_cycle);
}

std::int64_t result_pop_cycles(const VpuSpec& vpu, MatmulShape s) {
  if (s.m <= 0 || s.n <= 0) return 0;
  const double per_cycle = static_cast<double>(vpu.lanes) * vpu.sublanes *
                           (vpu.result_pops_per_cycle > 0 ? vpu.result_pops_per_cycle : 1.0);
  return static_cast<std::int64_t>(
      std::ceil(static_cast<double>(s.m) * static_cast<double>(s.n) / per_cycle - 1e-9));
}

MatmulShape matmul_timing_shape(const MxuSpec& mxu, const ir::Instruction& ins) {
  if (ins.shape.batch <= 1) return MatmulShape{ins.shape.m, ins.shape.k, ins.shape.n};
  const std::int64_t cols = std::max(1, mxu.cols);
  return MatmulShape{ins.shape.m, ins.shape.k, ins.shape.batch * ceil_div(ins.shape.n, cols) * cols};
}

double matmul_useful_macs(const ir::Instruction& ins) {
  return static_cast<double>(std::max(1, ins.shape.batch)) * static_cast<double>(ins.shape.m) *
         static_cast<double>(ins.shape.k) * static_cast<double>(ins.shape.n);
}

std::int64_t matmul_vpu_cycles(const VpuSpec& vpu, const ir::Instruction& ins) {
  const std::int64_t outputs = ins.shape.sum_batch ? 1 : std::max(1, ins.shape.batch);
  return outputs * result_pop_cycles(vpu, MatmulShape{ins.shape.m, ins.shape.k, ins.shape.n}) +
         vpu_cycles(vpu, ins.vector.op, ins.vector.elements);
}

std::int64_t mxu_first_result_cycles(const MxuSpec& mxu, MatmulShape s) {
  const std::int64_t r = mxu.rows, c = mxu.cols;
  switch (mxu.dataflow) {
    case MxuDataflow::weight_stationary: return 2 * r + c - 1;
    case MxuDataflow::output_stationary: return s.k + r + c - 1;
  }
  return 2 * r + c - 1;
}

double dma_pattern_efficiency(const DmaSpec& dma, ir::DmaPattern pattern) {
  switch (pattern) {
    case ir::DmaPattern::contiguous: return 1.0;
    case ir::DmaPattern::strided: return dma.strided_efficiency > 0 ? dma.strided_efficiency : 1.0;
    case ir::DmaPattern::gather: return dma.gather_efficiency > 0 ? dma.gather_efficiency : 1.0;
  }
  return 1.0;
}

Seconds transfer_time(Bytes bytes, Seconds latency, BytesPerSecond bandwidth, double efficiency) {
  return latency + Seconds(bytes.as_double() / (bandwidth.value() * efficiency));
}

std::uint64_t matmul_vmem_bytes(const MxuSpec& mxu, MatmulShape s, DType dtype) {
  if (s.m <= 0 || s.k <= 0 || s.n <= 0 || mxu.rows < 1 || mxu.cols < 1) return 0;
  const auto in = static_cast<std::uint64_t>(dtype_bytes(dtype));
  const auto m = static_cast<std::uint64_t>(s.m), k = static_cast<std::uint64_t>(s.k),
             n = static_cast<std::uint64_t>(s.n);
  const auto col_tiles = static_cast<std::uint64_t>(ceil_div(s.n, mxu.cols));
  const auto acc = static_cast<std::uint64_t>(kMxuAccumulatorBytes);
  switch (mxu.dataflow) {
    case MxuDataflow::weight_stationary: {
      const auto k_tiles = static_cast<std::uint64_t>(ceil_div(s.k, mxu.rows));
      return k * n * in + m * k * col_tiles * in + m * n * k_tiles * acc;
    }
    case MxuDataflow::output_stationary: {
      const auto row_tiles = static_cast<std::uint64_t>(ceil_div(s.m, mxu.rows));
      return m * k * col_tiles * in + k * n * row_tiles * in + m * n * acc;
    }
  }
  return 0;
}

std::int64_t vmem_bound_cycles(double bytes, BytesPerSecond vmem_bandwidth, Hertz clock) {
  if (bytes <= 0 || vmem_bandwidth.value() <= 0) return 0;
  return static_cast<std::int64_t>(std::ceil(bytes * clock.value() / vmem_bandwidth.value() - 1e-9));
}

double matmul_array_macs(const MxuSpec& mxu, MatmulShape s, int array) {
  if (s.m <= 0 || s.k <= 0 || s.n <= 0 || mxu.per_core < 1 || array < 0 || array >= mxu.per_core) return 0;
  // The tile grid: `outer` x `inner` tiles along dimensions of length outer_len (cut by rows) and inner_len
  // (cut by cols); every tile also spans `depth` of the third dimension. Tile t = i x inner + j goes to array
  // t mod per_core. Every tile is full but those of the last grid row (rows short by dr) and the last grid
  // column (cols short by dc), so the array's MACs are depth x (its tiles x R x C - the shortfall of its
  // last-row and last-column tiles), in O(per_core) steps rather than O(tiles) (fused instructions have
  // hundreds of thousands of tiles).
  const bool ws = mxu.dataflow == MxuDataflow::weight_stationary;
  const std::int64_t outer_len = ws ? s.k : s.m, inner_len = s.n, depth = ws ? s.m : s.k;
  const std::int64_t r = mxu.rows, c = mxu.cols, p = mxu.per_core;
  const std::int64_t outer = ceil_div(outer_len, r), inner = ceil_div(inner_len, c);
  const std::int64_t dr = outer * r - outer_len, dc = inner * c - inner_len;
  const auto mod = [p](std::int64_t x) { return ((x % p) + p) % p; };
  const std::int64_t tiles = tiles_on_array(mxu, outer * inner, array);
  // Tiles of this array in the last grid column (j = inner - 1): i x inner + inner - 1 = array (mod p). The
  // residue repeats with i every p rows, so count each of the first p rows' residues once per period: the rows
  // i0, i0 + p, ... below outer are ceil((outer - i0) / p).
  std::int64_t last_column = 0;
  for (std::int64_t i0 = 0; i0 < std::min(outer, p); ++i0) {
    if (mod(i0 * inner + inner - 1) == array) last_column += ceil_div(outer - i0, p);
  }
  // Tiles in the last grid row (i = outer - 1): j = array - (outer - 1) x inner (mod p), j < inner.
  const std::int64_t first_j = mod(array - (outer - 1) * inner);
  const std::int64_t last_row = first_j < inner ? (inner - 1 - first_j) / p + 1 : 0;
  const bool corner = mod(outer * inner - 1) == array;
  const double area = static_cast<double>(tiles) * static_cast<double>(r * c) -
                      static_cast<double>(last_column) * static_cast<double>(r * dc) -
                      static_cast<double>(last_row) * static_cast<double>(dr * c) +
                      (corner ? static_cast<double>(dr * dc) : 0.0);
  return area * static_cast<double>(depth);
}

double embedding_row_volume(const ir::Instruction& ins) {
  if (ins.shape.m <= 0 || ins.shape.n <= 0) return 0;
  const auto row = static_cast<std::uint64_t>(ins.shape.n) * static_cast<std::uint64_t>(dtype_bytes(ins.dtype));
  const std::uint64_t accesses = (row + kHbmAccessBytes - 1) / kHbmAccessBytes;
  return static_cast<double>(ins.shape.m) * static_cast<double>(accesses * kHbmAccessBytes);
}

std::int64_t sparsecore_pool_cycles(const SparseCoreSpec& sc, const ir::Instruction& ins) {
  const std::int64_t per_cycle = static_cast<std::int64_t>(sc.count) * sc.tiles * sc.lanes;
  if (ins.shape.m <= 0 || ins.shape.n <= 0 || per_cycle <= 0) return 0;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(ins.shape.m) * static_cast<double>(ins.shape.n) /
                                             static_cast<double>(per_cycle) - 1e-9));
}

int hbm_channels_used(const HbmSpec& hbm, double bytes) {
  const int channels = std::max(1, hbm.channels);
  if (bytes <= 0) return 0;
  const double stripes = std::ceil(bytes / static_cast<double>(kHbmStripe) - 1e-9);
  return stripes >= channels ? channels : static_cast<int>(stripes);
}

double hbm_channel_share(const HbmSpec& hbm, double bytes) {
  return static_cast<double>(std::max(1, hbm_channels_used(hbm, bytes))) / std::max(1, hbm.channels);
}

Seconds hbm_transfer_time(const HbmSpec& hbm, Bytes bytes, Seconds latency) {
  return transfer_time(bytes, latency, hbm.bandwidth,
                       hbm.achievable_fraction() * hbm_channel_share(hbm, bytes.as_double()));
}

Seconds host_op_latency_seconds(Seconds host_seconds, std::uint64_t bytes) {
  return bytes > 0 ? host_seconds + kPcieLatency : host_seconds;
}

}  // namespace tpusim::models
