#include "tpusim/models/timing.h"

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

Seconds host_op_latency_seconds(Seconds host_seconds, std::uint64_t bytes) {
  return bytes > 0 ? host_seconds + kPcieLatency : host_seconds;
}

}  // namespace tpusim::models
