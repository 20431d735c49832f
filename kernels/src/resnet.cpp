// ResNet as a fused-graph step (contract in model_lowering.h).
#include <stdexcept>

#include "model_lowering.h"

namespace tpusim::kernels {

fused::Graph build_resnet_step(const WorkloadSpec& workload, const ChipSpec&, const ShardView&, CollectivePoints&) {
  throw std::invalid_argument("model " + workload.model.name + ": resnet is not lowered yet");
}

}  // namespace tpusim::kernels
