#pragma once
// The lowering library's entry points: a model + batch + step on a chip becomes per-role programs, tiled to
// the chip's MXU shape and VMEM size. The stages it is made of: tpusim/kernels/gemm.h (the GEMM tiling and the
// VMEM budgets), vector_pass.h; DLRM's lowering: dlrm.h.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/dlrm.h"
#include "tpusim/kernels/gemm.h"
#include "tpusim/kernels/memory_plan.h"
#include "tpusim/kernels/model_params.h"
#include "tpusim/kernels/program.h"
#include "tpusim/kernels/shard.h"
#include "tpusim/kernels/sharding.h"
#include "tpusim/kernels/vector_pass.h"

namespace tpusim::kernels {

// A lowered workload: its programs, and for whole models (kinds transformer and resnet, lowered as one fused
// instruction per op and TensorCore; see kernels/README.md) the per-chip memory plan and what a step does.
struct LoweredWorkload {
  ir::ProgramSet programs;
  std::optional<MemoryPlan> memory;    // per chip, after sharding
  StepWork work;                       // examples and tokens per step of the whole job (the global batch)
  // model_params.h's closed form for the whole job (the global batch, whatever the mesh; the other kinds: one
  // chip's times the chips); 0 for a collective. Equal to model_flops(lowered, chips).
  double closed_form_model_flops = 0;
  std::optional<ShardingPlan> sharding;  // whole models: the mesh and rules the programs were lowered for
  // Whole models: the HBM each program (pipeline stage, in program order) holds over its step; empty otherwise.
  std::vector<MemoryTimeline> memory_timelines;
  // Whole models with FSDP: the step with each layer's all-gathers run ahead during the layer before did not fit
  // the chip's HBM, so each gather waits for the op before its first reader (kernels/README.md).
  bool fsdp_gathers_held_back = false;
};

// The model FLOPs of a step summed over the `chips` chips of the pod (each runs programs.program_for(chip)).
[[nodiscard]] double model_flops(const LoweredWorkload& lowered, std::uint32_t chips);

// The dispatcher: lowers any workload kind. For a whole model that does not fit chip.hbm.capacity it throws a
// ConfigError naming the largest categories, the capacity and what would fit (remat: full, more microbatches,
// or how many chips would hold it sharded), before emitting any instruction.
[[nodiscard]] LoweredWorkload lower(const WorkloadSpec& workload, const ChipSpec& chip);
// The same on a pod: a whole model is sharded over workload.mesh (no mesh: data parallel over every chip;
// sharding.h), with the collectives the sharding implies; the other kinds run one program on every chip.
[[nodiscard]] LoweredWorkload lower(const WorkloadSpec& workload, const ChipSpec& chip, const PodSpec& pod);

// The memory plan of a whole model's step on one chip (nullopt for gemm, mlp and collective workloads).
[[nodiscard]] std::optional<MemoryPlan> plan_memory(const WorkloadSpec& workload, const ChipSpec& chip);
// The same per chip of `pod` after sharding.
[[nodiscard]] std::optional<MemoryPlan> plan_memory(const WorkloadSpec& workload, const ChipSpec& chip,
                                                    const PodSpec& pod);

// The whole workload of a scenario for a single chip: one program that every chip runs (lower(...).programs).
//  - gemm: one lower_gemm (lowering: tiled), or one fused matmul per TensorCore streaming its operands
//    (lowering: fused; the HBM bytes and grid steps of tile_gemm's tiling).
//  - transformer, resnet: see kernels/README.md ("Whole models").
//  - mlp forward: per layer l = 1..L a GEMM [B, w(l-1)] x [w(l-1), w(l)], then (except after the last layer)
//    the activation as an unfused vector pass Z -> X (gelu: transcendental, relu: elementwise).
//  - mlp train adds, per layer from L down to 1: dX(l-1) = dZ(l) W(l)^T (skipped for l = 1), dW(l) =
//    X(l-1)^T dZ(l), the activation gradient dZ(l-1) = dX(l-1) * act'(Z(l-1)) (vector pass reading both), and
//    the optimizer update of W(l) (sgd: read W and dW, 1 op, write W; adam: read W, dW and two f32 moments,
//    10 ops, write W and the moments). Model FLOPs = 6 B sum(w(l-1) w(l)) - 2 B w0 w1.
// Not modelled: biases, the loss and its gradient (O(B w(L)) vector work), layouts/transposes (the DMA
// engine and MXU handle transposed tiles at full rate).
//
// Host work (gemm and mlp; host instructions carry their host-side time in Instruction::host.seconds, then
// move their bytes over PCIe; see host_step_costs for the numbers):
//  - workload.step_launch_overhead > 0: a "host.launch" instruction (ir::HostOp::launch, no bytes) that all
//    other work of the step depends on.
//  - an input pipeline (input.bytes_per_example or input.examples_per_s_per_host set, mlp only): one infeed
//    of batch x bytes_per_example into HBM whose host side takes input_seconds. With input.prefetch = 0 it is
//    "host.infeed" and the first layer depends on it (the step waits for the host to produce and send its
//    batch). With prefetch > 0 the program models the steady state of a pipelined input: this step's batch is
//    already in HBM, and "host.infeed.next_step" produces and sends the next step's batch concurrently with
//    this step (depending only on the launch); the step ends when both are done, so the input exposed per
//    step is max(0, input_seconds + PCIe time - the rest of the step). A deeper buffer (prefetch > 1) only
//    absorbs jitter, which is not modelled, so every prefetch > 0 behaves alike.
//  - checkpoint.every_steps = N > 0 (train): a "host.checkpoint" after the optimizer updates, carrying 1/N of
//    the parameters and optimizer state over PCIe and 1/N of the host's storage write (amortised per step).
//  - host_syncs = S: S chained "host.sync" instructions (ir::HostOp::sync, chip.host.round_trip each, no bytes)
//    at the very end.
[[nodiscard]] ir::ProgramSet lower_workload(const WorkloadSpec& workload, const ChipSpec& chip);

// Host-side costs of one step on one chip (a pure function of the specs, for tests and lower_workload):
//   infeed_bytes       = batch x input.bytes_per_example
//   input_seconds      = batch x F / input.examples_per_s_per_host (0 when no rate): the host's pipeline
//                        prepares the batch of every chip it feeds (each chip's program runs the whole batch).
//                        F = the chips of the slice's host block (pod.host_shape) on a slice of several chips;
//                        on one chip (or the first form, no pod), chip.host.chips_per_host (assumption: a
//                        one-chip run stands for one chip of a fully populated host)
//   checkpoint_bytes   = ceil(state / N), state = what the chip holds: its shard of the parameters and of the
//                        optimizer state (the memory plan's weights + optimizer_state) for a sharded model; for
//                        one chip holding the whole model, parameters x dtype bytes (+ 2 f32 moments per
//                        parameter for adam)
//   checkpoint_seconds = state x writers / chip.host.storage_bandwidth / N: each distinct shard is written
//                        once, by the data replica at coordinate 0 (JAX's replica_id 0), its host writing the
//                        shards of its writing chips; writers = the most such chips on one host (one for a
//                        chip holding the whole model: its host's other chips are identical replicas)
// gemm and collective workloads have no input pipeline and no checkpoint (all zero). The first form is one
// chip holding the whole model; the second shards the model over `pod`'s mesh, and its checkpoint is that of
// the fullest pipeline stage (the last host to finish writing bounds the job's checkpoint).
struct HostStepCosts {
  std::uint64_t infeed_bytes = 0;
  double input_seconds = 0;
  std::uint64_t checkpoint_bytes = 0;
  double checkpoint_seconds = 0;
};
[[nodiscard]] HostStepCosts host_step_costs(const WorkloadSpec& workload, const ChipSpec& chip);
[[nodiscard]] HostStepCosts host_step_costs(const WorkloadSpec& workload, const ChipSpec& chip, const PodSpec& pod);

}  // namespace tpusim::kernels
