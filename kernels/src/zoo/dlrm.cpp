// DLRM-style recommender (contract in lowering.h, lower_dlrm).
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tiling/pipeline.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/kernels/dlrm.h"
#include "tpusim/kernels/gemm.h"
#include "tpusim/kernels/vector_pass.h"

namespace tpusim::kernels {
namespace {

// Sorted union of dependency lists.
std::vector<std::uint32_t> join(std::vector<std::uint32_t> a, const std::vector<std::uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

std::int64_t interaction_outputs(const DlrmModel& m) {
  const std::int64_t f = m.tables + 1;
  return f * (f - 1) / 2;
}

// The embedding work of every table on the TensorCores, as one streaming pass over all bags (tables x batch):
// per chunk of bags, a gather DMA of their rows into VMEM, a vector op adding them, and a store. A lookup
// writes the pooled vectors; an update also loads the bags' gradients and writes the rows back (scatter).
std::vector<std::uint32_t> embeddings_on_tensorcores(ir::Program& prog, const ChipSpec& chip, std::int64_t bags,
                                                     std::int64_t lookups, std::int64_t width, DType dt,
                                                     bool update, const std::vector<std::uint32_t>& after,
                                                     const std::string& label) {
  const auto eb = static_cast<std::uint64_t>(dtype_bytes(dt));
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(lookups * width) * eb;  // a bag's rows
  const std::uint64_t bag_bytes = static_cast<std::uint64_t>(width) * eb;            // a pooled vector
  // Double-buffered operands and results within the vector share of VMEM (as lower_vector_pass).
  const std::uint64_t per_bag = update ? 2 * row_bytes + bag_bytes : row_bytes + bag_bytes;
  const auto budget = static_cast<std::uint64_t>(vmem_budget(chip, kVectorVmemFraction));
  const auto fit = static_cast<std::int64_t>(budget / (2 * per_bag));
  if (fit == 0) {
    throw detail::vmem_too_small(chip, kVectorVmemFraction, static_cast<double>(2 * per_bag),
                                 fmt::format("one bag of {}", label));
  }
  const int cores = std::max(1, chip.tensorcores);
  const std::int64_t chunk = std::min(fit, (bags + cores - 1) / cores);
  const std::int64_t chunks = (bags + chunk - 1) / chunk;
  std::vector<std::int64_t> steps(static_cast<std::size_t>(cores));
  for (int c = 0; c < cores; ++c) steps[static_cast<std::size_t>(c)] = chunks > c ? (chunks - c + cores - 1) / cores : 0;
  const auto step_of = [&](int core, std::int64_t s) {
    const std::int64_t index = core + s * cores;
    const auto n = static_cast<std::uint64_t>(std::min(chunk, bags - index * chunk));
    detail::Step st;
    if (update) st.loads.push_back({"load_gradients", n * bag_bytes, n * bag_bytes, ir::DmaPattern::contiguous});
    st.loads.push_back({"gather_rows", n * row_bytes, n * row_bytes, ir::DmaPattern::gather});
    st.compute.kind = ir::OpKind::vector;
    st.compute.vector.op = ir::VectorOp::elementwise;
    st.compute.dtype = dt;
    st.compute.vector.elements = static_cast<std::int64_t>(n) * lookups * width;  // one add per row value
    st.compute.bytes = n * per_bag;                                         // VMEM operands in and out
    st.first_of_group = st.last_of_group = true;
    st.group_vmem = update ? n * row_bytes : n * bag_bytes;
    if (update) {
      st.stores.push_back({"scatter_rows", n * row_bytes, n * row_bytes, ir::DmaPattern::gather});
    } else {
      st.stores.push_back({"store_pooled", n * bag_bytes, n * bag_bytes, ir::DmaPattern::contiguous});
    }
    return st;
  };
  return detail::emit_pipeline(prog, steps, step_of, after, label, update ? "add" : "pool");
}

// The same work on the SparseCores: one gather (or scatter) per table.
std::vector<std::uint32_t> embeddings_on_sparsecores(ir::Program& prog, const DlrmModel& m, std::int64_t batch,
                                                     DType dt, bool update, const std::vector<std::uint32_t>& after,
                                                     const std::string& label) {
  std::vector<std::uint32_t> done;
  for (int t = 0; t < m.tables; ++t) {
    ir::Instruction ins;
    ins.kind = update ? ir::OpKind::scatter : ir::OpKind::gather;
    ins.shape.m = batch * m.lookups_per_table;
    ins.shape.n = m.embedding_dim;
    ins.shape.k = batch;
    ins.dtype = dt;
    ins.memory.src = ir::Memory::hbm;
    ins.memory.dst = ir::Memory::hbm;
    ins.bytes = static_cast<std::uint64_t>(ins.shape.m * ins.shape.n * dtype_bytes(dt));
    done.push_back(prog.add(ins, after, fmt::format("{}.table{}", label, t)));
  }
  return done;
}

}  // namespace

bool dlrm_lookups_on_sparsecore(const ChipSpec& chip) {
  return chip.sparsecore.count > 0 && has_path(chip, BlockKind::sparsecore, BlockKind::hbm);
}

double dlrm_model_flops(const DlrmModel& m, std::int64_t batch, StepKind step) {
  const auto b = static_cast<double>(batch);
  double bottom = 0, top = 0;
  std::int64_t in = m.dense_features;
  for (int w : m.bottom_mlp) {
    bottom += static_cast<double>(in) * w;
    in = w;
  }
  in = m.embedding_dim + interaction_outputs(m);
  for (int w : m.top_mlp) {
    top += static_cast<double>(in) * w;
    in = w;
  }
  const double f = m.tables + 1;
  const double interaction = f * f * m.embedding_dim;
  if (step == StepKind::forward) return 2 * b * (bottom + top + interaction);
  // Training: forward, the weight gradients and the input gradients, except the bottom MLP's first layer's
  // (its input is data); the interaction's backward is two products of the forward's size.
  return 6 * b * (bottom + top + interaction) - 2 * b * static_cast<double>(m.dense_features) * m.bottom_mlp.front();
}

ir::ProgramSet lower_dlrm(const WorkloadSpec& workload, const ChipSpec& chip) {
  const DlrmModel& m = workload.model.dlrm;
  const std::int64_t batch = workload.batch;
  const DType dt = workload.numerics.dtype;
  if (batch < 1 || m.bottom_mlp.empty() || m.top_mlp.empty() || m.bottom_mlp.back() != m.embedding_dim) {
    throw std::invalid_argument("dlrm: needs a positive batch, both MLPs, and a bottom MLP ending in embedding_dim");
  }
  ir::Program prog(workload.model.name.empty() ? "dlrm" : workload.model.name);
  const bool train = workload.step == StepKind::train;
  const bool sparsecore = dlrm_lookups_on_sparsecore(chip);
  const auto embeddings = [&](bool update, const std::vector<std::uint32_t>& after, const std::string& label) {
    return sparsecore ? embeddings_on_sparsecores(prog, m, batch, dt, update, after, label)
                      : embeddings_on_tensorcores(prog, chip, batch * m.tables, m.lookups_per_table,
                                                  m.embedding_dim, dt, update, after, label);
  };

  // GEMMs follow GEMMs and vector passes follow vector passes (the VMEM contract in lowering.h).
  std::vector<std::uint32_t> last_gemm, last_vector;
  const auto gemm = [&](std::int64_t rows, std::int64_t k, std::int64_t n, const std::vector<std::uint32_t>& reads,
                        const std::string& label) {
    last_gemm = lower_gemm(prog, chip, rows, k, n, dt, join(reads, last_gemm), label).done;
    return last_gemm;
  };
  const auto vector = [&](std::int64_t elements, std::vector<DType> in, ir::VectorOp op,
                          const std::vector<std::uint32_t>& reads, const std::string& label) {
    last_vector = lower_vector_pass(prog, chip, VectorPass{elements, std::move(in), {dt}, op, 1, dt},
                                    join(reads, last_vector), label);
    return last_vector;
  };
  // A stack of dense layers with ReLU after each (and, when `sigmoid_last`, a sigmoid instead after the
  // last); returns each layer's input width and readiness for the backward pass.
  struct Layer {
    std::int64_t in, out;
    std::vector<std::uint32_t> input;  // the layer's input is ready once these are done
  };
  const auto forward = [&](const std::string& name, std::int64_t in, const std::vector<int>& widths,
                           std::vector<std::uint32_t> x, bool sigmoid_last, std::vector<Layer>& layers) {
    for (std::size_t l = 0; l < widths.size(); ++l) {
      layers.push_back(Layer{in, widths[l], x});
      x = gemm(batch, in, widths[l], x, fmt::format("{}{}.fwd", name, l + 1));
      const bool last = l + 1 == widths.size();
      x = vector(batch * widths[l], {dt}, last && sigmoid_last ? ir::VectorOp::transcendental : ir::VectorOp::elementwise,
                 x, fmt::format("{}{}.{}", name, l + 1, last && sigmoid_last ? "sigmoid" : "relu"));
      in = widths[l];
    }
    return x;
  };
  // Backward through `layers` from the output gradient `dz`; returns the gradient of the stack's input (none
  // when `input_grad` is false) and appends the optimizer updates.
  const auto backward = [&](const std::string& name, const std::vector<Layer>& layers, std::vector<std::uint32_t> dz,
                            bool input_grad) {
    for (std::size_t i = layers.size(); i-- > 0;) {
      const Layer& L = layers[i];
      std::vector<std::uint32_t> dx;
      if (i > 0 || input_grad) dx = gemm(batch, L.out, L.in, dz, fmt::format("{}{}.bwd.dx", name, i + 1));
      const auto dw = gemm(L.in, batch, L.out, join(dz, L.input), fmt::format("{}{}.bwd.dw", name, i + 1));
      const std::int64_t params = L.in * L.out;
      if (workload.optimizer == Optimizer::sgd) {
        last_vector = lower_vector_pass(prog, chip, VectorPass{params, {dt, dt}, {dt}, ir::VectorOp::elementwise, 1, dt},
                                        join(dw, last_vector), fmt::format("{}{}.update", name, i + 1));
      } else {
        last_vector = lower_vector_pass(
            prog, chip,
            VectorPass{params, {dt, dt, DType::f32, DType::f32}, {dt, DType::f32, DType::f32}, ir::VectorOp::elementwise,
                       10, DType::f32},
            join(dw, last_vector), fmt::format("{}{}.update", name, i + 1));
      }
      if (!dx.empty()) dz = vector(batch * L.in, {dt, dt}, ir::VectorOp::elementwise, dx,
                                   fmt::format("{}{}.bwd.relu", name, i));
    }
    return dz;
  };

  // Forward: the lookups (independent of the dense path, so they overlap the bottom MLP), the bottom MLP,
  // the interaction, the top MLP.
  const std::vector<std::uint32_t> pooled = embeddings(false, {}, "embedding.lookup");
  std::vector<Layer> bottom_layers, top_layers;
  const auto bottom = forward("bottom", m.dense_features, m.bottom_mlp, {}, false, bottom_layers);

  // The interaction Z Z^T of every example (Z: the F = tables + 1 feature vectors of embedding_dim) is a
  // batched product; the MXU runs it block-diagonally: g = floor(cols / F) examples share a weight tile (their
  // Z^T side by side) and stream their F rows each through it; with F above cols an example's Z^T takes
  // t = ceil(F / cols) tiles of its own. Lowered as one GEMM of m = g F rows, k = embedding_dim and
  // n = ceil(batch / g) x t x cols, whose FLOPs are scaled to the useful 2 batch F^2 d.
  const std::int64_t f = m.tables + 1;
  const auto cols = static_cast<std::int64_t>(chip.mxu.cols);
  const std::int64_t per_tile = std::max<std::int64_t>(1, cols / f);
  const std::int64_t tiles = (f + cols - 1) / cols;  // an example's Z^T
  const std::int64_t im = per_tile * f, ik = m.embedding_dim, in = (batch + per_tile - 1) / per_tile * tiles * cols;
  const double useful = 2.0 * static_cast<double>(batch) * static_cast<double>(f * f) * static_cast<double>(ik);
  const auto interaction = [&](const std::vector<std::uint32_t>& reads, const std::string& label) {
    const std::size_t first = prog.size();
    const auto done = gemm(im, ik, in, reads, label);
    double padded = 0;
    for (std::size_t i = first; i < prog.size(); ++i) padded += prog[i].flops.model;
    const double scale = padded > 0 ? useful / padded : 0.0;
    prog.scale_flops(first, prog.size(), scale);
    return done;
  };
  auto z = interaction(join(pooled, bottom), "interaction.fwd");
  z = vector(batch * (m.embedding_dim + interaction_outputs(m)), {dt, dt}, ir::VectorOp::elementwise, z,
             "interaction.concat");
  const auto out = forward("top", m.embedding_dim + interaction_outputs(m), m.top_mlp, z, true, top_layers);

  if (train) {
    // The loss gradient is not modelled (O(batch) work): the top MLP's output gradient is ready with it.
    const auto dtop = backward("top", top_layers, out, true);
    // dZ = dI (Z + Z^T restricted to the pairs): two products of the forward's size.
    const auto dz1 = interaction(dtop, "interaction.bwd.a");
    const auto dz = interaction(join(dz1, dtop), "interaction.bwd.b");
    backward("bottom", bottom_layers, dz, false);
    // Sparse SGD: each looked-up row gets its bag's gradient added (Adagrad's accumulator is not modelled).
    embeddings(true, dz, "embedding.update");
  }
  ir::ProgramSet set;
  set.programs.push_back(std::move(prog));
  return set;
}

}  // namespace tpusim::kernels
