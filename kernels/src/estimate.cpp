// Closed-form counts of what lower_workload emits (contract in tpusim/kernels/estimate.h). Mirrors the stages
// of lower_workload (workload.cpp); test/kernels/estimate_test.cpp compares the two on real lowerings, so a
// change there that this file misses fails a test.
#include "tpusim/kernels/estimate.h"

#include <algorithm>
#include <cmath>

#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {

LoweringEstimate estimate_lowering(const WorkloadSpec& workload, const ChipSpec& chip) {
  const ModelSpec& model = workload.model;
  LoweringEstimate e;
  const DType dt = workload.numerics.dtype;
  const double cores = std::max(1, chip.tensorcores);
  switch (model.kind) {
    case ModelKind::collective:
      e.instructions = 1;
      return e;
    case ModelKind::dlrm: {
      // An upper bound (test/kernels/estimate_test.cpp holds it against real lowerings): each MLP layer's
      // forward GEMM and its two backward GEMMs (the bottom MLP's first layer and the interaction at most as
      // large as the widest layer), vector passes over each layer's output and parameters, and the
      // embeddings: one gather and one scatter per table on SparseCores, or vector passes over every
      // looked-up value on the TensorCores, forward and update.
      const DlrmModel& m = model.dlrm;
      const std::int64_t batch = std::max<std::int64_t>(1, workload.batch);
      double layers = 0;
      std::int64_t in = m.dense_features;
      for (const std::vector<int>* mlp : {&m.bottom_mlp, &m.top_mlp}) {
        if (mlp == &m.top_mlp) in = static_cast<std::int64_t>(m.embedding_dim) + static_cast<std::int64_t>(m.tables + 1) * m.tables;
        for (const int out : *mlp) {
          const std::int64_t wide = std::max<std::int64_t>(in, out);
          layers += 3 * gemm_instruction_count(chip, batch, wide, wide, dt) +
                    3 * vector_pass_instruction_count(
                            chip, VectorPass{batch * out, {dt, dt}, {dt}, ir::VectorOp::elementwise, 1, dt}) +
                    vector_pass_instruction_count(
                        chip, VectorPass{wide * wide, {dt, dt, DType::f32, DType::f32}, {dt, DType::f32, DType::f32},
                                         ir::VectorOp::elementwise, 10, DType::f32});
          in = out;
        }
      }
      const std::int64_t f = m.tables + 1;
      layers += 3 * gemm_instruction_count(chip, std::max<std::int64_t>(f, chip.mxu.cols), m.embedding_dim,
                                           (batch + 1) * std::max(1, chip.mxu.cols), dt);
      // On the TensorCores (dlrm.cpp): chunks of bags (tables x batch) that fit the vector share of VMEM
      // double-buffered, at most four instructions each, one pass to look up and one to update.
      const double bags = static_cast<double>(batch) * m.tables;
      const double row = static_cast<double>(m.lookups_per_table) * m.embedding_dim * dtype_bytes(dt);
      const double per_bag = 2 * row + static_cast<double>(m.embedding_dim) * dtype_bytes(dt);
      const double fit = std::max(1.0, std::floor(vmem_budget(chip, kVectorVmemFraction) / (2 * per_bag)));
      const double chunk = std::min(fit, std::ceil(bags / cores));
      const double embeddings = chip.sparsecore.count > 0 ? 2.0 * m.tables : 2 * 4 * (std::ceil(bags / chunk) + cores);
      e.instructions = 2 * (layers + embeddings) + 8 + workload.host.host_syncs;
      return e;
    }
    case ModelKind::transformer:
    case ModelKind::resnet: {
      // Lowered as whole models through the fused-op graph: at most kFusedOpsPerBlock unfused ops per block
      // and microbatch (forward, backward, recomputation, optimizer) plus as many again for the embedding,
      // the head and the loss; each op becomes at most one instruction per TensorCore. An upper bound
      // (estimate_test.cpp holds it against real lowerings of every kind of step), not a count.
      double blocks = 0;
      if (model.kind == ModelKind::transformer) {
        blocks = static_cast<double>(model.transformer.layers) + model.transformer.encoder_layers;
      } else {
        for (int b : model.resnet.blocks) blocks += b;
      }
      const bool train = workload.step == StepKind::train;
      const double micro = train ? std::max(1, workload.memory.microbatches) : 1;
      e.graph_ops = micro * (blocks + 2) * (train ? kFusedOpsPerBlock : kFusedOpsPerBlockInference);
      e.instructions = cores * e.graph_ops + 8 + workload.host.host_syncs;
      return e;
    }
    case ModelKind::gemm:
    case ModelKind::mlp:
      break;
  }
  const HostStepCosts host = host_step_costs(workload, chip);
  double n = 0;
  if (workload.host.step_launch_overhead.value() > 0) n += 1;     // host.launch
  if (host.infeed_bytes > 0 || host.input_seconds > 0) n += 1;  // host.infeed
  if (model.kind == ModelKind::gemm && model.gemm.lowering == GemmGranularity::fused) {
    n += cores;  // one fused matmul per TensorCore
  } else if (model.kind == ModelKind::gemm) {
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
  n += workload.host.host_syncs;
  e.instructions = n;
  return e;
}

}  // namespace tpusim::kernels
