#pragma once
// What one chip holds of a model: the per-chip shard sizes the lowering and the memory plan are functions of.
//
// The lowering of a whole model (lower_workload for kind transformer or resnet) builds one chip's step from a
// ShardView and never from the model's full sizes. On a single chip every size is the full size
// (full_shard). A sharding plan (device mesh and logical-axis rules, issue 9) fills it in per role, e.g. data
// and FSDP parallelism shrink `batch`, tensor parallelism `heads`, `kv_heads`, `d_ff` and `vocab`, sequence
// parallelism `sequence_shards`, context parallelism `seq_len` (setting `context_shards`), pipeline
// parallelism the layer range and the embedding/head flags, expert parallelism `moe.experts`, FSDP
// `weight_shards`; and it inserts collectives at the points kernels/src/graph/collective_points.h names.
#include <cstdint>
#include <utility>
#include <vector>

#include "tpusim/core/scenario.h"

namespace tpusim::kernels {

// A chip's part of the layer stack: its pipeline stage and the blocks that stage runs.
struct PipelinePart {
  int stage = 0;                 // pipeline parallelism: this chip's stage of `stages`
  int stages = 1;
  int first_layer = 0;           // the decoder (encoder-only: encoder) blocks this chip runs: [first, first + layers)
  int layers = 0;
  int encoder_layers = 0;        // encoder_decoder: encoder blocks on this chip
  bool embedding = true;         // holds the input embedding (the first pipeline stage)
  bool head = true;              // holds the final norm, the output projection and the loss (the last stage)
};

// A chip's part of a mixture of experts: its experts and their width (all 0 for a dense model).
struct ExpertPart {
  int experts = 0;         // experts on this chip (0: dense model)
  std::int64_t d_ff = 0;   // expert MLP width on this chip
  int group = 1;           // expert parallelism: chips whose tokens this chip's experts serve
};

// A chip's rows of the vocabulary (the embedding table and the output projection).
struct VocabPart {
  std::int64_t rows = 0;  // rows on this chip: the vocabulary over `shards`, padded up to a multiple of them
  int shards = 1;         // chips the vocabulary is split over (a vocabulary-parallel cross-entropy)
};

// How many chips compute the same products, by the dimension a matmul is split along besides its tokens: a
// mesh axis that shards none of a matmul's dimensions (batch, length and the one below) repeats it on each of
// its chips, as kv heads fewer than their shards do. Model FLOPs count such a matmul once over them (each chip
// 1 / replicas of its FLOPs); hardware FLOPs count it on every chip (kernels/README.md, "FLOPs").
struct Replicas {
  int tokens = 1;    // no other dimension: the router of a mixture of experts, BERT's head transform, ResNet
  int heads = 1;     // query heads: the query and output projections, the attention
  int kv_heads = 1;  // key / value heads: their projections
  int mlp = 1;       // the MLP's width
  int vocab = 1;     // the vocabulary projection
  int experts = 1;   // the experts' matmuls (experts and their width)
};

struct ShardView {
  std::int64_t batch = 0;        // examples (sequences, images) per step on this chip, all microbatches
  int microbatches = 1;          // gradient accumulation slices of `batch`
  std::int64_t seq_len = 0;      // tokens per sequence on this chip (the prompt, for prefill)
  int context_shards = 1;        // context parallelism: each sequence is split this many ways over the
                                 // sequence group, so an attention query sees seq_len x context_shards keys
  std::int64_t decoder_seq_len = 0;  // encoder_decoder: decoder tokens per sequence on this chip
  std::int64_t context = 0;      // decode: tokens per sequence already in this chip's KV cache
  int heads = 0;                 // query heads on this chip
  int kv_heads = 0;              // key/value heads on this chip
  std::int64_t d_ff = 0;         // MLP width on this chip (each branch of a gated MLP)
  ExpertPart moe;                // the experts this chip holds (none for a dense model)
  VocabPart vocab;               // vocabulary rows of the embedding and the output projection on this chip
  int sequence_shards = 1;       // Megatron sequence parallelism: the tokens outside the attention and MLP
                                 // blocks (norms, residual adds, block inputs) are split this many ways over
                                 // the tensor group (1: each chip of the group holds every token)
  int weight_shards = 1;         // FSDP: parameters, gradients and optimizer state stored 1 / weight_shards
                                 // per chip, gathered before use
  PipelinePart pipeline;         // the stage and the blocks this chip runs (the whole model without a pipeline)
  Replicas replicas;             // chips computing the same products (all 1 on one chip)

  [[nodiscard]] std::int64_t microbatch() const { return batch / (microbatches > 0 ? microbatches : 1); }
};

// One chip holding the whole model: every shard size is the full size.
[[nodiscard]] ShardView full_shard(const WorkloadSpec& workload);

// The order of a step's microbatch passes on a chip: (forward?, microbatch). One stage (no pipeline): each
// microbatch's forward then its backward (train), or its forward alone. A pipeline stage s of p over m
// microbatches: GPipe, every forward then every backward; 1F1B, min(p - s - 1, m) forwards, then alternately
// one forward and one backward, then the remaining backwards (Narayanan et al. 2021, PipeDream-Flush).
[[nodiscard]] std::vector<std::pair<bool, int>> pipeline_order(const ShardView& shard, PipelineSchedule schedule,
                                                               bool train);

}  // namespace tpusim::kernels
