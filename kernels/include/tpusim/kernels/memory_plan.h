#pragma once
// The per-chip HBM plan of a lowered step, by category, computed before simulation from the same graph the
// instructions come from (kernels/src/graph/fused_graph.h): persistent tensors by kind, and the activations from a
// liveness sweep over the step's ops in program order.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/core/units.h"

namespace tpusim::kernels {

struct MemoryPlan {
  Bytes capacity;         // chip.hbm.capacity
  Bytes weights;          // parameters (stored 1 / weight_shards per chip under FSDP)
  Bytes gradients;        // one per parameter, in the parameter type (train)
  Bytes optimizer_state;  // adam/adamw: two f32 moments per parameter; adafactor: factored f32 second moments
  Bytes activations;      // written by the forward pass and read by the backward pass (kept under the remat policy)
  Bytes kv_cache;         // inference: keys and values of every layer for the batch and context
  Bytes workspace;        // the peak of every other live activation (transients, recomputed blocks, logits)
  [[nodiscard]] Bytes total() const {
    return weights + gradients + optimizer_state + activations + kv_cache + workspace;
  }
  [[nodiscard]] bool fits() const { return total() <= capacity; }
  // Host memory (not HBM): the peak of the activations a remat policy offloaded, against chip.host.memory_per_chip.
  Bytes host_offload;
  Bytes host_capacity;
  [[nodiscard]] bool host_fits() const { return host_offload <= host_capacity; }
  // (name, bytes) in the order above: "weights", "gradients", "optimizer_state", "activations", "kv_cache",
  // "workspace".
  [[nodiscard]] std::vector<std::pair<std::string, Bytes>> categories() const {
    return {{"weights", weights},       {"gradients", gradients}, {"optimizer_state", optimizer_state},
            {"activations", activations}, {"kv_cache", kv_cache},   {"workspace", workspace}};
  }
};

// The HBM a chip's program holds over its step, for following it in simulated time (tools: summary.json's
// memory.in_use, the trace's "HBM in use" counter): the persistent bytes (weights, gradients, optimizer state,
// KV cache: held all step) and, per op of the step's graph that allocates or frees activations (the transients and
// FSDP-gathered weights included), its instructions and the bytes it allocates from the first one's start and
// frees at the last one's end. The plan's activations and workspace come from the same spans swept in program
// order, with an op placed to start early (a run-ahead FSDP gather) counted from where it may start.
struct ActivationUse {
  std::vector<std::uint32_t> instructions;
  double allocated = 0, freed = 0;  // bytes
};
struct MemoryTimeline {
  Bytes persistent;
  std::vector<ActivationUse> uses;  // in graph order
};

}  // namespace tpusim::kernels
