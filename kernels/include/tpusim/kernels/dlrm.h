#pragma once
// A DLRM-style recommender lowered onto one chip (zoo/dlrm.cpp).
#include <cstdint>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

// A DLRM-style recommender (ModelKind::dlrm, core/scenario.h) on one chip, batch B, dtype of the workload:
//  - embedding lookups of every table, sum-pooled per example: on the SparseCores when the chip has them
//    (dlrm_lookups_on_sparsecore: one `gather` per table, m = B x lookups_per_table rows of embedding_dim,
//    k = B bags), otherwise on the TensorCores (one streaming pass over the B x tables bags: per chunk a
//    gather-pattern DMA of the rows into VMEM, a vector op adding them, a store of the pooled vectors). They
//    depend on nothing, so they overlap the bottom MLP.
//  - the bottom MLP over dense_features (ReLU after every layer), the interaction (the pairwise dot products of
//    the F = tables + 1 feature vectors: a batched product run block-diagonally on the MXU, floor(cols / F)
//    examples per weight tile, lowered as one GEMM whose FLOPs are scaled to the useful 2 B F^2 d; then a vector
//    pass concatenating the bottom output and the F(F-1)/2 dot products), the top MLP (ReLU between layers, a
//    sigmoid at the end).
//  - train adds the MLPs' backward passes and optimizer updates (as for the MLP model), the interaction's
//    backward (two products of its size), and a sparse SGD update of every looked-up row (`scatter` per
//    table on the SparseCores; on the TensorCores gather DMAs of the gradients and rows, a vector add, and
//    gather-pattern stores of the rows).
// Not modelled: the loss, biases, Adagrad's accumulators, the input pipeline (host instructions).
[[nodiscard]] ir::ProgramSet lower_dlrm(const WorkloadSpec& workload, const ChipSpec& chip);
// Whether the chip runs DLRM's lookups on SparseCores (it has them, and they reach HBM).
[[nodiscard]] bool dlrm_lookups_on_sparsecore(const ChipSpec& chip);
// Model FLOPs of one step (MLP and interaction products; lookups cost none): forward 2 B (sum of the MLPs'
// in x out + F^2 d); train 3x that, less the bottom MLP's first input gradient (2 B dense_features x width).
[[nodiscard]] double dlrm_model_flops(const DlrmModel& model, std::int64_t batch, StepKind step);

}  // namespace tpusim::kernels
