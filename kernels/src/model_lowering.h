#pragma once
// Internal: the model families lowered through the fused graph, one file each (transformer.cpp, resnet.cpp).
// Each builds one chip's step from the ShardView as unfused primitive ops; lower_workload (workload.cpp) then
// fuses (fusion: on), plans memory, and emits instructions.
#include "collective_points.h"
#include "fused_graph.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/shard.h"

namespace tpusim::kernels {

[[nodiscard]] fused::Graph build_transformer_step(const WorkloadSpec& workload, const ChipSpec& chip,
                                                  const ShardView& shard, CollectivePoints& points);
[[nodiscard]] fused::Graph build_resnet_step(const WorkloadSpec& workload, const ChipSpec& chip,
                                             const ShardView& shard, CollectivePoints& points);

}  // namespace tpusim::kernels
