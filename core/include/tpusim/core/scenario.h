#pragma once
// A scenario: pod + workload + options, fully resolved. load_scenario() composes the scenario YAML with the
// bundled pod, chip and model it names, merges inline overrides, applies `--set` overrides, and validates the
// whole tree at once. Nothing downstream sees YAML.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/fault_plan.h"
#include "tpusim/core/mesh_spec.h"
#include "tpusim/core/model_spec.h"
#include "tpusim/core/pod_spec.h"

namespace tpusim {

// forward: one forward pass; train: forward, backward and optimizer update; prefill: the forward pass over a
// prompt that fills the KV cache (time to first token); decode: one new token per sequence against a KV cache.
enum class StepKind { forward, train, prefill, decode };
enum class Optimizer { sgd, adam, adamw, adafactor };
// Rematerialization (kernels/README.md, "Rematerialization"): keep every activation the backward pass reads
// (none), keep each block's input and recompute the block in the backward pass (full), recompute only the
// attention core (selective, Korthikanti et al. 2022), or one of MaxText's named policies over the block's
// tagged tensors (RematTag), with custom naming each tag's placement in MemoryPolicy::remat_custom.
enum class Remat {
  none,
  full,
  selective,
  minimal,
  save_dot_except_mlpwi,
  save_dot_except_mlp,
  save_dot_with_context_except_mlp,
  save_dot_except_logits_ffn1,
  save_qkv_proj,
  save_out_proj,
  qkv_proj_offloaded,
  minimal_offloaded,
  custom,
};
// The tensors of a transformer block a named policy places, by MaxText's checkpoint names.
enum class RematTag : std::uint8_t {
  decoder_layer_input,
  query_proj,
  key_proj,
  value_proj,
  context,
  out_proj,
  mlpwi,
  mlpwo,
};
inline constexpr std::size_t kRematTags = 8;
// Where a tagged tensor waits for the backward pass: in HBM, recomputed, or in host memory.
enum class RematPlacement : std::uint8_t { device, remat, offload };
using RematPlacements = std::array<RematPlacement, kRematTags>;
[[nodiscard]] std::string_view remat_tag_name(RematTag tag);  // "query_proj"
// Attention core: scores and probabilities written to HBM (unfused), or tiled through VMEM with an online
// softmax (flash, Dao et al. 2022).
enum class AttentionImpl { unfused, flash };
// What of a transformer the step runs on its chip: the whole model, or its blocks only (no embedding, final
// norm, vocabulary projection or loss, as a middle pipeline stage runs them): with model.layers: 1, one layer.
enum class ModelPart { model, blocks };
// Quantized training of a transformer's dense layers as AQT does it (MaxText `quantization: int8`): their
// matmuls (forward, input and weight gradients) take int8 operands, quantized inside the kernel, at the chip's
// int8 MXU rate; activations and gradients stay in `dtype`, master weights in f32. The attention core is not
// quantized.
enum class Quantization { none, int8 };

// The host's input pipeline (tf.data / grain on the host CPU) feeding each step's batch to the chips. The
// lowering turns it into a host infeed (see lower_workload in kernels/lowering.h).
struct InputSpec {
  double examples_per_s_per_host = 0;  // examples the pipeline produces per second per host; 0 = no limit
  Bytes bytes_per_example;             // host -> chip bytes per example; 0 (and no rate) = no infeed
  int prefetch = 2;                    // steps of input buffered ahead; 0 = the step waits for its input
};

struct CheckpointSpec {
  int every_steps = 0;  // write the parameters and optimizer state every N steps (amortised); 0 = never
};

// The number formats of a step (the workload's keys dtype, weight_dtype and quantization).
struct Numerics {
  DType dtype = DType::bf16;                // matmul operands and activations
  std::optional<DType> weight_dtype;        // parameters in HBM; resolved by load_scenario (auto: f32 to train,
                                            // else dtype); int8/fp8 need the chip's MXU rate for them
  Quantization quantization = Quantization::none;  // AQT int8 dense-layer matmuls (transformers)
};

// Tokens per sequence (the workload's keys seq_len, context and decoder_seq_len).
struct SequenceLengths {
  std::int64_t seq_len = 0;          // tokens per sequence (prompt, for prefill); resolved: 0 = context
  std::int64_t context = 0;          // decode: tokens already in the KV cache; resolved: 0 = seq_len
  std::int64_t decoder_seq_len = 0;  // encoder_decoder: decoder tokens; resolved: 0 = seq_len
};

// What a training step keeps in HBM (the workload's keys microbatches, remat and remat_custom).
struct MemoryPolicy {
  int microbatches = 1;  // gradient accumulation: the batch runs in this many slices
  Remat remat = Remat::none;
  // remat: custom: each tag's placement (the block input on the device, the rest recomputed unless named).
  RematPlacements remat_custom{RematPlacement::device, RematPlacement::remat, RematPlacement::remat,
                               RematPlacement::remat,  RematPlacement::remat, RematPlacement::remat,
                               RematPlacement::remat,  RematPlacement::remat};
};

// How the lowering builds the step's kernels (the workload's keys fusion and attention).
struct KernelChoices {
  bool fusion = true;  // XLA-style fusion of elementwise ops into their neighbours
  AttentionImpl attention = AttentionImpl::flash;
};

// The host's part of a step (the workload's keys input, step_launch_overhead, host_syncs and checkpoint).
struct HostWork {
  InputSpec input;
  Seconds step_launch_overhead;  // host time to launch the step's program, before anything runs
  int host_syncs = 0;            // host round trips at the end of the step (e.g. fetching the loss)
  CheckpointSpec checkpoint;
};

// workload.collective_matmul: decompose the tensor group's gathers and reduce-scatters into ring steps always
// (on), never (off), or where XLA would (automatic, written `auto`: kWindowedEinsumThreshold).
enum class CollectiveMatmul { off, on, automatic };
// XLA's SPMD partitioner rewrites an einsum as a windowed loop of ring steps when the operand it would otherwise
// all-gather is at least this large (SpmdPartitionerOptions::threshold_for_windowed_einsum_mib, default 256,
// in xla/service/spmd/spmd_partitioner.h). Assumption: libtpu keeps the partitioner's default (its own flag,
// xla_jf_spmd_threshold_for_windowed_einsum_mib, has no published default).
inline constexpr std::uint64_t kWindowedEinsumThreshold = 256ull << 20;

// How the compiler schedules the step's collectives and microbatches (the workload's keys overlap,
// async_collectives, collective_matmul and pipeline_schedule).
struct CompileSchedule {
  // Collectives overlapped with independent compute as a compiler schedules them (on), or each after all earlier
  // compute and before all later compute (off, the serialized baseline).
  bool overlap = true;
  // The collective kinds that run asynchronously (XLA's async start/done pairs: started once their operands
  // are ready, overlapped with independent compute); the others are synchronous: the TensorCores finish their
  // earlier work, the collective runs, and their later work starts after it (XLA's collectives without their
  // async flags, docs/calibration.md "Synchronous collectives"). Default: every kind. overlap: off makes
  // every collective synchronous and each wait for the one before it.
  std::vector<CollectiveKind> async_collectives = all_collective_kinds();
  // Collective matmul (Wang et al., ASPLOS 2023; XLA's windowed einsum): the tensor group's all-gathers of the
  // split residual stream and its reduce-scatters run as bidirectional ring steps, each overlapped with a
  // partial matmul (kernels/README.md "Collective matmul"). `automatic` does so where XLA's SPMD partitioner
  // does by default: when the gathered operand is at least kWindowedEinsumThreshold.
  CollectiveMatmul collective_matmul = CollectiveMatmul::automatic;
  PipelineSchedule pipeline_schedule = PipelineSchedule::gpipe;
};

struct WorkloadSpec {
  ModelSpec model;
  // A program file (the format `tpusim lower` writes, kernels/README.md) run instead of a lowered model: the
  // path as resolved against the scenario's folder; empty when the workload is a model.
  std::string program;
  std::int64_t batch = 0;  // examples (sequences, images) per step; ignored by a raw GEMM
  StepKind step = StepKind::train;
  Numerics numerics;
  Optimizer optimizer = Optimizer::adam;
  MemoryPolicy memory;
  KernelChoices kernels;
  ModelPart part = ModelPart::model;
  SequenceLengths tokens;
  HostWork host;
  // Sharding over the pod (issue 9): the device mesh, its placement on the torus and the sharding rules
  // (core/mesh_spec.h), and how the compiler schedules its collectives and microbatches.
  MeshSpec mesh;
  CompileSchedule schedule;
  std::map<std::string, FieldOrigin> origins;  // where each workload field came from (for errors)

  [[nodiscard]] DType weights() const {
    return numerics.weight_dtype.value_or(step == StepKind::train ? DType::f32 : numerics.dtype);
  }
  [[nodiscard]] bool inference() const { return step == StepKind::prefill || step == StepKind::decode; }
};

enum class MxuFidelity { fast, cycle };
// ICI link model: chunked store-and-forward transfers with per-link FIFO contention, or flow level with
// max-min fair bandwidth sharing (faster; no per-chunk events).
enum class LinkFidelity { chunked, flow };
// ICI routing policy (topology/routing.h): dimension-order routes, or fault-aware routes that keep DOR where
// it avoids every failed link and chip and take a shortest surviving path elsewhere.
enum class RoutingPolicy { dor, fault_aware };
// How the network runs a ring collective (models/src/net/README.md, "Aggregate ring collectives"): step by
// step, every send of every chip a transfer; or, when the plan is congruent (every step sends the same bytes
// to the same ring neighbours over fixed routes) and the links are flows, each group as one flow over all its
// ring links carrying the whole collective's bytes, at the bottleneck rate, plus the steps' fixed costs.
enum class CollectiveFidelity { per_step, aggregate };

struct FidelitySpec {
  MxuFidelity mxu = MxuFidelity::fast;
  LinkFidelity links = LinkFidelity::flow;
  Bytes link_chunk = MiB(1);  // chunk size of the chunked link model
  RoutingPolicy routing = RoutingPolicy::dor;
  CollectiveFidelity collectives = CollectiveFidelity::aggregate;
};

struct Scenario {
  std::string name;
  std::string description;
  std::int64_t seed = 1;
  PodSpec pod;
  ChipSpec chip;
  WorkloadSpec workload;
  FidelitySpec fidelity;
  JobSpec job;       // `job:`; job.enabled when the scenario has a job, faults or fault rates
  FaultPlan faults;  // `faults:` and `fault_rates:`
  // The composed tree after merges and overrides (for the record); the typed fields above are the truth.
  ConfigNode tree;
  std::map<std::string, FieldOrigin> origins;  // top-level scenario fields
};

// Resolves a scenario given as a bundled name (scenarios/NAME.yaml) or a path. Throws ConfigError with
// every problem found.
[[nodiscard]] Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides);
// The same with overrides that were written in a file (a sweep's grid): errors name that file and line.
[[nodiscard]] Scenario load_scenario_with_overrides(const std::string& name_or_path,
                                                   const std::vector<Override>& overrides);

// The resolved scenario as a flat, ordered list of (dotted key, value with units) for reports.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> render_scenario(const Scenario& s);

// Loads a bundled or user chip / pod / model by name or path (used by `tpusim describe`).
[[nodiscard]] ChipSpec load_chip(const std::string& name_or_path);
[[nodiscard]] PodSpec load_pod(const std::string& name_or_path);

// The rules a pod keeps on its chip, each an error at the key to change (slice_checks.cpp): enough ICI ports for
// its axes; wraparound only where the generation's sources (docs/hardware.md) allow it: v5e on axes of 16
// chips, v4 on slices of whole 4x4x4 cubes through the OCS (so with a `cube`); host blocks of
// chip.host.chips_per_host chips (or the whole slice, when smaller). `prefix`: "pod." in a scenario, "" alone.
void check_pod_on_chip(const PodSpec& pod, const ChipSpec& chip, const std::string& prefix, Diagnostics& diags);
// ICI ports the user gave the chip (chip.ici.links written in a scenario, a chip file of theirs or a --set) beyond
// the most one slice of the pod cables (PodSpec::ici_ports_needed: two per axis) are accepted and idle: the note
// that says so, for the run's notes. None for a bundled chip's ports (a small slice of a 3-D generation leaves
// some unconnected by design) or a slice of one chip (no ICI at all).
[[nodiscard]] std::optional<std::string> idle_ici_ports_note(const PodSpec& pod, const ChipSpec& chip);
// A pod's chip (load_chip of pod.chip), checked with the pod as a scenario's is (check_pod_on_chip): what `tpusim
// topo` and `describe pod` build is refused where `validate` would refuse it.
[[nodiscard]] ChipSpec load_chip_of_pod(const PodSpec& pod);

}  // namespace tpusim

namespace tpusim {
// Every declared field of every spec, grouped by section ("chip", "pod", "workload", ...), for
// `tpusim describe params` and the generated docs.
[[nodiscard]] std::vector<std::pair<std::string, std::vector<FieldInfo>>> all_field_tables();
}  // namespace tpusim
