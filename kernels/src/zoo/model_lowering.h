#pragma once
// Internal: the model families lowered through the fused graph, one file each (transformer.cpp, resnet.cpp).
// Each builds one chip's step from the ShardView as unfused primitive ops; lower_workload (workload.cpp) then
// fuses (fusion: on), plans memory, and emits instructions.
#include "graph/collective_points.h"
#include "graph/fused_graph.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/shard.h"

namespace tpusim::kernels {

using StepBuilder = fused::Graph (*)(const WorkloadSpec& workload, const ChipSpec& chip, const ShardView& shard,
                                     CollectivePoints& points);

[[nodiscard]] fused::Graph build_transformer_step(const WorkloadSpec& workload, const ChipSpec& chip,
                                                  const ShardView& shard, CollectivePoints& points);
[[nodiscard]] fused::Graph build_resnet_step(const WorkloadSpec& workload, const ChipSpec& chip,
                                             const ShardView& shard, CollectivePoints& points);

// The builder of a model kind lowered as a whole model (a new family adds its file and one line here);
// nullptr for the kinds lowered otherwise (gemm, mlp, collective, dlrm).
[[nodiscard]] inline StepBuilder step_builder(ModelKind kind) {
  switch (kind) {
    case ModelKind::transformer: return &build_transformer_step;
    case ModelKind::resnet: return &build_resnet_step;
    case ModelKind::gemm:
    case ModelKind::mlp:
    case ModelKind::collective:
    case ModelKind::dlrm: return nullptr;  // dlrm.cpp lowers it tile by tile (lower_dlrm)
  }
  return nullptr;
}

}  // namespace tpusim::kernels
