// A streaming vector pass lowered onto one chip (contract in tpusim/kernels/vector_pass.h).
#include "tpusim/kernels/vector_pass.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tiling/pipeline.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/gemm.h"

namespace tpusim::kernels {
namespace {

std::uint64_t bytes_per_element(const std::vector<DType>& tensors) {
  std::uint64_t b = 0;
  for (DType t : tensors) b += static_cast<std::uint64_t>(dtype_bytes(t));
  return b;
}

// The elements of one chunk of a vector pass (whole vregs that fit kVectorVmemFraction of VMEM, double-
// buffered; small passes still spread over every core). Throws when not even one vreg fits.
std::int64_t vector_chunk(const ChipSpec& chip, const VectorPass& pass, const std::string& label) {
  const std::uint64_t in_b = bytes_per_element(pass.inputs), out_b = bytes_per_element(pass.outputs);
  // Chunks are whole vregs (sublanes x lanes values), double-buffered on both sides.
  const std::int64_t vreg = chip.vpu.lanes > 0 && chip.vpu.sublanes > 0
                                ? static_cast<std::int64_t>(chip.vpu.lanes) * chip.vpu.sublanes
                                : 1024;
  const auto budget = static_cast<std::uint64_t>(vmem_budget(chip, kVectorVmemFraction));
  const std::int64_t fit = static_cast<std::int64_t>(budget / (2 * (in_b + out_b))) / vreg * vreg;
  if (fit == 0) {
    throw detail::vmem_too_small(chip, kVectorVmemFraction, static_cast<double>(2 * (in_b + out_b) * vreg),
                                 fmt::format("one vreg chunk of vector pass {}", label));
  }
  const int cores = std::max(1, chip.tensorcores);
  const std::int64_t per_core = (pass.elements + cores - 1) / cores;
  return std::min(fit, (per_core + vreg - 1) / vreg * vreg);
}

}  // namespace

double vector_pass_instruction_count(const ChipSpec& chip, const VectorPass& pass) {
  if (pass.elements <= 0) return 0;
  const double chunks =
      std::ceil(static_cast<double>(pass.elements) / static_cast<double>(vector_chunk(chip, pass, "estimate")));
  // Per chunk: a load per input, the vector op, a store per output.
  return chunks * static_cast<double>(pass.inputs.size() + 1 + pass.outputs.size());
}

std::vector<std::uint32_t> lower_vector_pass(ir::Program& prog, const ChipSpec& chip, const VectorPass& pass,
                                             const std::vector<std::uint32_t>& after, const std::string& label) {
  if (pass.elements < 0 || pass.inputs.empty() || pass.outputs.empty() || pass.ops_per_element < 1) {
    throw std::invalid_argument(fmt::format("vector pass {}: needs elements >= 0, inputs, outputs, ops >= 1", label));
  }
  if (pass.elements == 0) return after;
  const std::uint64_t in_b = bytes_per_element(pass.inputs), out_b = bytes_per_element(pass.outputs);
  const int cores = std::max(1, chip.tensorcores);
  const std::int64_t chunk = vector_chunk(chip, pass, label);
  const std::int64_t chunks = (pass.elements + chunk - 1) / chunk;

  std::vector<std::int64_t> steps(cores);
  for (int c = 0; c < cores; ++c) steps[c] = chunks > c ? (chunks - c + cores - 1) / cores : 0;
  auto step_of = [&](int core, std::int64_t s) {
    const std::int64_t index = core + s * cores;
    const std::int64_t count = std::min(chunk, pass.elements - index * chunk);
    detail::Step st;
    for (DType t : pass.inputs) {
      const auto b = static_cast<std::uint64_t>(count * dtype_bytes(t));
      st.loads.push_back({"load", b, b, ir::DmaPattern::contiguous});
    }
    st.compute.kind = ir::OpKind::vector;
    st.compute.vector.op = pass.op;
    st.compute.dtype = pass.compute_dtype;
    st.compute.vector.elements = count * pass.ops_per_element;
    // VMEM operands: each input read and each output written once (the ops in between stay in vregs).
    st.compute.bytes = static_cast<std::uint64_t>(count) * (in_b + out_b);
    st.first_of_group = st.last_of_group = true;
    st.group_vmem = static_cast<std::uint64_t>(count) * out_b;
    for (DType t : pass.outputs) {
      const auto b = static_cast<std::uint64_t>(count * dtype_bytes(t));
      st.stores.push_back({"store", b, b, ir::DmaPattern::contiguous});
    }
    return st;
  };
  return detail::emit_pipeline(prog, steps, step_of, after, label, "op", 2, pass.op_class);
}

}  // namespace tpusim::kernels
