#pragma once
// A streaming vector pass lowered onto one chip (tiling/vector_pass.cpp), within the VMEM budget of gemm.h.
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

// A streaming vector pass: `elements` values of each input tensor are read from HBM, `ops_per_element`
// vector operations of kind `op` are applied per value, and `elements` values of each output tensor are
// written to HBM. Chunked to kVectorVmemFraction of VMEM (double-buffered, whole 8x128 vregs), chunks
// round-robin over TensorCores, with the same buffer-reuse dependencies as lower_gemm. A vector instruction's
// `elements` counts element-operations (chunk x ops_per_element); its `bytes` are the VMEM operand bytes,
// chunk x (input + output bytes per element). Vector work carries no model or hardware
// FLOPs (MFU and HFU count MXU work).
struct VectorPass {
  std::int64_t elements = 0;
  std::vector<DType> inputs;   // one entry per input tensor
  std::vector<DType> outputs;  // one entry per output tensor
  ir::VectorOp op = ir::VectorOp::elementwise;
  int ops_per_element = 1;
  DType compute_dtype = DType::bf16;
  ir::OpClass op_class = ir::OpClass::norm_activation;
};
std::vector<std::uint32_t> lower_vector_pass(ir::Program& prog, const ChipSpec& chip, const VectorPass& pass,
                                             const std::vector<std::uint32_t>& after, const std::string& label);
// The instructions lower_vector_pass emits for `pass`, in closed form (estimate_lowering counts a workload by it).
[[nodiscard]] double vector_pass_instruction_count(const ChipSpec& chip, const VectorPass& pass);

}  // namespace tpusim::kernels
