#include "zoo/replicated_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/model_params.h"

namespace tpusim::kernels {

// Parameters plus optimizer state, as the checkpoint writes them: an MLP keeps its parameters in the compute
// type; whole models in workload.weight_dtype, with two f32 moments for adam / adamw (adafactor's factored
// moments are small next to the parameters and not counted).
std::uint64_t state_bytes(const WorkloadSpec& workload) {
  const bool mlp = workload.model.kind == ModelKind::mlp;
  const auto params = static_cast<std::uint64_t>(parameter_count(workload.model));
  const bool moments = workload.optimizer == Optimizer::adam || (!mlp && workload.optimizer == Optimizer::adamw);
  const DType stored = mlp ? workload.numerics.dtype : workload.weights();
  const std::uint64_t per_param = static_cast<std::uint64_t>(dtype_bytes(stored)) + (moments ? 2 * sizeof(float) : 0);
  return params * per_param;
}

namespace {

// What a GEMM, an MLP or a DLRM step must hold in HBM at once, at least (they have no memory plan of their own;
// a whole model's is made from its graph): a GEMM its A, B and C; an MLP its parameters and optimizer state (as
// the checkpoint writes them), in training its gradients, and one layer's widest activation for the whole batch;
// a DLRM its embedding tables. A lower bound: a step above it cannot fit, one below it may still not.
double resident_bytes(const WorkloadSpec& w) {
  const double e = dtype_bytes(w.numerics.dtype);
  const ModelSpec& m = w.model;
  switch (m.kind) {
    case ModelKind::gemm: {
      const double a = static_cast<double>(m.gemm.m) * static_cast<double>(m.gemm.k);
      const double b = static_cast<double>(m.gemm.k) * static_cast<double>(m.gemm.n);
      const double c = static_cast<double>(m.gemm.m) * static_cast<double>(m.gemm.n);
      return (a + b + c) * e;
    }
    case ModelKind::mlp: {
      const double widest = *std::max_element(m.mlp.widths.begin(), m.mlp.widths.end());
      const double gradients = w.step == StepKind::train ? parameter_count(m) * e : 0;
      return static_cast<double>(state_bytes(w)) + gradients + static_cast<double>(w.batch) * widest * e;
    }
    case ModelKind::dlrm:
      return static_cast<double>(m.dlrm.tables) * static_cast<double>(m.dlrm.rows_per_table) *
             m.dlrm.embedding_dim * e;
    default: return 0;
  }
}

}  // namespace

void check_resident_bytes(const WorkloadSpec& workload, const ChipSpec& chip) {
  const double need = resident_bytes(workload);
  const auto capacity = static_cast<double>(chip.hbm.capacity.count());
  if (need <= capacity) return;
  const char* what = workload.model.kind == ModelKind::gemm  ? "A, B and C"
                     : workload.model.kind == ModelKind::dlrm ? "the embedding tables"
                     : workload.step == StepKind::train
                         ? "parameters, optimizer state, gradients and the widest activation"
                         : "parameters and the widest activation";
  const auto bytes = [](double v) { return Bytes(static_cast<std::uint64_t>(std::min(v, 0x1p60))); };
  const bool gemm = workload.model.kind == ModelKind::gemm;
  throw ConfigError({Diagnostic{gemm ? origin_of(workload.model.origins, "m") : origin_of(workload.origins, "batch"),
                                "workload",
                                fmt::format("the step does not fit in HBM: at least {} per chip ({}), chip {} has {}{}",
                                            format_bytes_approx(bytes(need)), what, chip.name,
                                            format_bytes_approx(chip.hbm.capacity),
                                            written_by_user(chip, BlockKind::hbm, "capacity")),
                                fmt::format("at most {} (chip.hbm.capacity)", format_bytes_approx(chip.hbm.capacity)),
                                format_bytes_approx(bytes(need)),
                                "smaller shapes, a smaller batch, or a chip with more HBM (every chip runs the whole "
                                "step: an mlp, a gemm or a dlrm is not sharded)"}});
}

}  // namespace tpusim::kernels
