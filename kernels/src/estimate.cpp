// Closed-form counts of what lower_workload emits (contract in tpusim/kernels/estimate.h). Mirrors the stages
// of lower_workload (workload.cpp); test/kernels/estimate_test.cpp compares the two on real lowerings, so a
// change there that this file misses fails a test.
#include "tpusim/kernels/estimate.h"

#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {

LoweringEstimate estimate_lowering(const WorkloadSpec& workload, const ChipSpec& chip) {
  const ModelSpec& model = workload.model;
  LoweringEstimate e;
  switch (model.kind) {
    case ModelKind::collective:
      e.instructions = 1;
      return e;
    case ModelKind::gemm:
    case ModelKind::mlp:
      break;
  }
  const DType dt = workload.dtype;
  const HostStepCosts host = host_step_costs(workload, chip);
  double n = 0;
  if (workload.step_launch_overhead.value() > 0) n += 1;     // host.launch
  if (host.infeed_bytes > 0 || host.input_seconds > 0) n += 1;  // host.infeed
  if (model.kind == ModelKind::gemm) {
    n += gemm_instruction_count(chip, model.gemm.m, model.gemm.k, model.gemm.n, dt);
  } else {
    const std::vector<int>& w = model.mlp.widths;
    const std::int64_t batch = workload.batch;
    const auto layers = static_cast<int>(w.size()) - 1;
    const ir::VectorOp act = model.mlp.activation == Activation::gelu ? ir::VectorOp::transcendental
                                                                        : ir::VectorOp::elementwise;
    for (int l = 1; l <= layers; ++l) {
      n += gemm_instruction_count(chip, batch, w[l - 1], w[l], dt);
      if (l < layers) n += vector_pass_instruction_count(chip, {batch * w[l], {dt}, {dt}, act, 1, dt});
    }
    if (workload.step == StepKind::train) {
      for (int l = layers; l >= 1; --l) {
        if (l > 1) n += gemm_instruction_count(chip, batch, w[l], w[l - 1], dt);
        n += gemm_instruction_count(chip, w[l - 1], batch, w[l], dt);
        if (l > 1) n += vector_pass_instruction_count(chip, {batch * w[l - 1], {dt, dt}, {dt}, act, 1, dt});
        const std::int64_t params = static_cast<std::int64_t>(w[l - 1]) * w[l];
        n += workload.optimizer == Optimizer::sgd
                 ? vector_pass_instruction_count(chip, {params, {dt, dt}, {dt}, ir::VectorOp::elementwise, 1, dt})
                 : vector_pass_instruction_count(chip, {params, {dt, dt, DType::f32, DType::f32},
                                                        {dt, DType::f32, DType::f32}, ir::VectorOp::elementwise,
                                                        10, DType::f32});
      }
    }
    if (host.checkpoint_bytes > 0) n += 1;  // host.checkpoint
  }
  n += workload.host_syncs;
  e.instructions = n;
  return e;
}

}  // namespace tpusim::kernels
