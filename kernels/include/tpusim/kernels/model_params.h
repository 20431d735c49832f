#pragma once
// Parameter counts by component and the model FLOPs of a step as the literature counts them (closed forms,
// independent of the lowering, which tests hold the lowered programs against; formulas in kernels/README.md).
#include <string>
#include <vector>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/shard.h"

namespace tpusim::kernels {

struct ParamGroup {
  std::string component;  // "attention", "mlp", "embedding", ...
  double count = 0;
  // Takes part in matmuls, i.e. counts in the N of 6 N per token (an embedding lookup does not; a vocabulary
  // projection does, tied or not).
  bool matmul = false;
};

// Every parameter of the model, by component (transformer, resnet, mlp, gemm: empty for gemm and collective).
[[nodiscard]] std::vector<ParamGroup> parameter_groups(const ModelSpec& model);
[[nodiscard]] double parameter_count(const ModelSpec& model);
// Parameters a token's forward pass multiplies by (a mixture-of-experts layer counts its router and top_k
// experts), the N of PaLM's 6 N + 12 L H Q T; 0 for kinds without tokens.
[[nodiscard]] double active_matmul_parameters(const ModelSpec& model);

// Model FLOPs of one step of the whole job, its global batch on one model, whatever the mesh (kernels/README.md,
// "FLOPs"; a sharded step's chips count their shares of it, replicated work once): for a decoder
// training step 6 N T + 12 L H Q S T over its T tokens of sequence length S (PaLM, Chowdhery et al. 2022,
// appendix B); forward 2 N T + 4 L H Q S T; prefill likewise with the vocabulary projection for the last
// position only; decode 2 N + 4 L H Q C per sequence against C cached keys (incl. its own); encoder-decoder
// models sum both stacks, the cross-attention over the encoder's keys; ResNet 2 x multiply-adds (x 3 to
// train). Not in the count: the pooler of an encoder (its next-sentence head is not modelled).
[[nodiscard]] double closed_form_model_flops(const WorkloadSpec& workload);

// Examples and tokens one step processes on the chip (tokens: the positions whose loss or next token the step
// computes; decode: one per sequence; 0 for a raw GEMM).
struct StepWork {
  double examples = 0;
  double tokens = 0;
};
[[nodiscard]] StepWork step_work(const WorkloadSpec& workload, const ShardView& shard);

}  // namespace tpusim::kernels
