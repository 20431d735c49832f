#include "graph/fused_ops.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tpusim::kernels {

std::vector<VpuCost> vpu_costs() {
  return {kLayerNormForward, kLayerNormBackward, kRmsNormForward, kRmsNormBackward, kGeluForward, kGeluBackward,
          kReluForward, kReluBackward, kSwigluForward, kSwigluBackward, kGegluForward, kGegluBackward, kScale, kMask,
          kSoftmax, kOnlineSoftmax, kSoftmaxRecompute, kSoftmaxBackward, kSoftmaxBackwardRows, kAttentionBackwardRows, kRotary, kAdd,
          kCrossEntropyForward, kCrossEntropyWithGradient, kCrossEntropyMax, kCrossEntropySums,
          kCrossEntropyGradient, kCrossEntropyLoss, kSampling, kSgdUpdate, kAdamUpdate, kAdamWUpdate,
          kAdafactorUpdate, kGradientAccumulate, kWeightCast, kRouter, kDispatch, kCombine, kBatchNormForward, kBatchNormBackward,
          kMaxPool, kAveragePool, kAqtQuantize};
}

std::string op_label(const OpName& name) {
  return fmt::format("{}.{}.{}", name.scope, fused::phase_name(name.phase), name.name);
}

Builder::Builder(const ChipSpec& chip, DType activation_dtype) : chip_(chip), act_(activation_dtype) {}

fused::TensorId Builder::activation(const std::string& name, double elements, std::optional<DType> dtype) {
  return graph_.tensor(name, elements, dtype.value_or(act_), fused::TensorKind::activation);
}

fused::TensorId Builder::on_chip(const std::string& name) {
  return graph_.tensor(name, 0, act_, fused::TensorKind::on_chip);
}

fused::TensorId Builder::tensor(const std::string& name, double elements, DType dtype, fused::TensorKind kind) {
  return graph_.tensor(name, elements, dtype, kind);
}

Builder::Flops Builder::matmul_flops(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t batch,
                                     bool recompute) {
  const double f = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n) *
                   static_cast<double>(batch);
  return Flops{recompute ? 0.0 : f, f};
}

GemmTiling Builder::tiling(std::int64_t m, std::int64_t k, std::int64_t n, DType dtype, OperandBytes operands,
                           std::int64_t batch) {
  const auto key = std::make_tuple(m, k, n, dtype, operands.a, operands.b, batch);
  const auto it = tilings_.find(key);
  if (it != tilings_.end()) return it->second;
  return tilings_[key] = tile_gemm(chip_, m, k, n, dtype, operands, batch);
}

GemmTiling Builder::tiling(const Matmul& mm) {
  // Bytes per element of the operand tensors in HBM; 0 (the dtype's) for operands that never reach HBM.
  auto per_element = [&](const std::vector<fused::TensorId>& ts) {
    double bytes = 0, elements = 0;
    for (fused::TensorId t : ts) bytes += graph_.tensor(t).bytes(), elements += graph_.tensor(t).elements;
    return bytes > 0 && elements > 0 ? bytes / elements : 0.0;
  };
  return tiling(mm.m, mm.k, mm.n, mm.dtype, OperandBytes{per_element(mm.a), per_element(mm.b)}, mm.batch);
}

double vector_grid_steps(const ChipSpec& chip, double elements, double bytes_per_element) {
  const double budget = vmem_budget(chip, kVectorVmemFraction);
  const double chunk = std::max(1024.0, budget / std::max(1.0, 2.0 * bytes_per_element));
  return std::max(1.0, std::ceil(elements / chunk));
}

void Builder::ring_gathered(fused::TensorId whole, std::vector<fused::TensorId> chunks) {
  ring_chunks_[whole] = std::move(chunks);
}

std::vector<fused::TensorId> Builder::ring_split(const Matmul& mm) const {
  const auto ring = mm.a.size() == 1 ? ring_chunks_.find(mm.a.front()) : ring_chunks_.end();
  if (ring == ring_chunks_.end() || mm.batch != 1 || mm.gathered_along_k) return {};
  const auto n = static_cast<std::int64_t>(ring->second.size());
  if (n < 2 || mm.m % n != 0) return {};
  return ring->second;
}

std::size_t Builder::matmul(const OpName& name, ir::OpClass cls, const Matmul& mm) {
  const std::vector<fused::TensorId> chunks = ring_split(mm);
  if (chunks.empty()) return one_matmul(name, cls, mm);
  // Collective matmul: one partial matmul per ring step, on the chunk that step delivered, at 1/N of the rows;
  // each writes its rows of the outputs.
  std::size_t last = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) last = ring_partial(name, cls, mm, chunks, i);
  return last;
}

std::size_t Builder::ring_partial(const OpName& name, ir::OpClass cls, const Matmul& mm,
                                  const std::vector<fused::TensorId>& chunks, std::size_t i) {
  const Flops whole =
      mm.flops.given.value_or(matmul_flops(mm.m, mm.k, mm.n, mm.batch, name.phase == fused::Phase::recompute));
  const auto n = static_cast<std::int64_t>(chunks.size());
  const double share = 1.0 / static_cast<double>(n);
  Matmul part = mm;
  part.m = mm.m / n;
  part.a = {chunks[i]};
  part.flops.given = Flops{whole.model * share, whole.hardware * share};
  part.epilogue = mm.epilogue.times(share);
  OpName pn = name;
  pn.name = fmt::format("{}.step{}", name.name, i);
  const std::size_t op = one_matmul(pn, cls, part);
  for (fused::Access& w : graph_.ops()[op].writes) w.times = share;
  return op;
}

void Builder::matmul_with_gradient(const OpName& fed_name, ir::OpClass fed_cls, const Matmul& fed,
                                   const OpName& dw_name, ir::OpClass dw_cls, const Matmul& dw) {
  const std::vector<fused::TensorId> chunks = ring_split(fed);
  const auto n = static_cast<std::int64_t>(chunks.size());
  const fused::TensorId whole = chunks.empty() ? fused::TensorId{} : fed.a.front();
  const bool in_a = dw.a.size() == 1 && dw.a.front() == whole, in_b = dw.b.size() == 1 && dw.b.front() == whole;
  if (chunks.empty() || !dw.gathered_along_k || dw.batch != 1 || dw.k % n != 0 || in_a == in_b) {
    matmul(fed_name, fed_cls, fed);
    matmul(dw_name, dw_cls, dw);
    return;
  }
  const Flops f =
      dw.flops.given.value_or(matmul_flops(dw.m, dw.k, dw.n, dw.batch, dw_name.phase == fused::Phase::recompute));
  const double share = 1.0 / static_cast<double>(n);
  std::vector<fused::TensorId> accumulated = dw.outputs;  // every tensor the partials write, added into in place
  for (const fused::Access& w : dw.extra_writes) accumulated.push_back(w.tensor);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    ring_partial(fed_name, fed_cls, fed, chunks, i);
    Matmul part = dw;
    part.k = dw.k / n;
    const GemmTiling t = tiling(part);
    // The chunk's tokens of the other operand, re-read once per tile of the part's own tiling.
    if (in_b) {
      part.b = {chunks[i]};
      part.a_times = dw.a_times.value_or(static_cast<double>((part.n + t.tn - 1) / t.tn)) * share;
    } else {
      part.a = {chunks[i]};
      part.b_times = dw.b_times.value_or(static_cast<double>((part.m + t.tm - 1) / t.tm)) * share;
    }
    part.flops.given = Flops{f.model * share, f.hardware * share};
    part.epilogue = dw.epilogue.times(share);
    for (fused::Access& r : part.extra_reads) r.times *= share;
    if (i > 0) {
      for (fused::TensorId o : accumulated) {
        part.extra_reads.push_back({o, 1});
        part.epilogue += kAdd.per_element.times(graph_.tensor(o).elements);
      }
    }
    OpName pn = dw_name;
    pn.name = fmt::format("{}.step{}", dw_name.name, i);
    one_matmul(pn, dw_cls, part);
  }
}

std::size_t Builder::partial_rows(const OpName& name, ir::OpClass cls, const Matmul& mm, int blocks, int order,
                                  fused::TensorId out) {
  const Flops whole =
      mm.flops.given.value_or(matmul_flops(mm.m, mm.k, mm.n, mm.batch, name.phase == fused::Phase::recompute));
  const double share = 1.0 / static_cast<double>(blocks);
  Matmul part = mm;
  part.m = mm.m / blocks;
  const GemmTiling t = tiling(part);
  // This block's rows of `a`, each re-read once per column tile of the part's own tiling.
  part.a_times = mm.a_times.value_or(static_cast<double>((part.n + t.tn - 1) / t.tn)) * share;
  part.flops.given = Flops{whole.model * share, whole.hardware * share};
  part.epilogue = mm.epilogue.times(share);
  part.outputs = {out};
  OpName pn = name;
  pn.name = fmt::format("{}.ring{}", name.name, order);
  return one_matmul(pn, cls, part);
}

std::size_t Builder::one_matmul(const OpName& name, ir::OpClass cls, const Matmul& mm) {
  const GemmTiling t = tiling(mm);
  const auto ceil_div = [](std::int64_t x, std::int64_t y) { return (x + y - 1) / y; };
  const std::int64_t nm = ceil_div(mm.m, t.tm), nn = ceil_div(mm.n, t.tn), nk = ceil_div(mm.k, t.tk);
  fused::Op op;
  op.label = op_label(name);
  op.cls = cls;
  op.unit = fused::Unit::mxu;
  op.phase = name.phase;
  op.shape.m = mm.m;
  op.shape.k = mm.k;
  op.shape.n = mm.n;
  op.shape.batch = static_cast<std::int32_t>(mm.batch);
  op.dtype = mm.dtype;
  for (fused::TensorId a : mm.a) op.reads.push_back({a, mm.a_times.value_or(static_cast<double>(nn))});
  for (fused::TensorId b : mm.b) op.reads.push_back({b, mm.b_times.value_or(static_cast<double>(nm))});
  op.reads.insert(op.reads.end(), mm.extra_reads.begin(), mm.extra_reads.end());
  for (fused::TensorId c : mm.outputs) op.writes.push_back({c, 1});
  op.writes.insert(op.writes.end(), mm.extra_writes.begin(), mm.extra_writes.end());
  const Flops f =
      mm.flops.given.value_or(matmul_flops(mm.m, mm.k, mm.n, mm.batch, name.phase == fused::Phase::recompute));
  op.flops.model = f.model * mm.flops.model_share;
  op.flops.hardware = f.hardware;
  op.vpu = mm.epilogue;
  if (quantize_int8_ && mm.dtype == DType::int8) {
    const double operands = static_cast<double>(mm.batch) * (static_cast<double>(mm.m) * static_cast<double>(mm.k) +
                                                              static_cast<double>(mm.k) * static_cast<double>(mm.n));
    op.vpu += kAqtQuantize.per_element.times(operands);
  }
  op.grid.steps = static_cast<double>(nm * nn * nk * mm.batch);
  // The pipeline bound of tile_gemm's tiling (the simulation charges it: kernels/program.h HbmStream). A
  // batch of products runs its grid over the products too, and tile_gemm does not choose how many products
  // share a step (a kernel blocks several small ones together, enough to hide the HBM latency): assumption,
  // no bound for batch > 1.
  op.grid.buffers = mm.batch == 1 ? t.buffers : 0;
  return graph_.add(std::move(op));
}

std::size_t Builder::vector(const OpName& name, ir::OpClass cls, ir::VectorOp kind, double elements,
                            const VpuCost& cost, const std::vector<fused::Access>& reads,
                            const std::vector<fused::Access>& writes, std::optional<fused::TensorId> fuse_into) {
  fused::Op op;
  op.label = op_label(name);
  op.cls = cls;
  op.unit = fused::Unit::vpu;
  op.phase = name.phase;
  op.dtype = DType::f32;  // the VPU computes in 32 bits
  op.vector_op = kind;
  op.vpu = cost.per_element.times(elements);
  op.reads = reads;
  op.writes = writes;
  op.passes.fuse_into = fuse_into;
  double bytes = 0;
  for (const auto& r : reads) bytes += graph_.tensor(r.tensor).bytes() * r.times;
  for (const auto& w : writes) bytes += graph_.tensor(w.tensor).bytes() * w.times;
  op.grid.steps = vector_grid_steps(chip_, elements, elements > 0 ? bytes / elements : 0.0);
  return graph_.add(std::move(op));
}

Param Builder::parameter(const std::string& name, std::int64_t rows, std::int64_t cols, const ParamStorage& storage) {
  Param p;
  const double shards = std::max(1, storage.shards);
  p.elements = static_cast<double>(rows) * static_cast<double>(cols) / shards;
  if (p.elements <= 0) return p;
  p.w = graph_.tensor(name, p.elements, storage.dtype, fused::TensorKind::weight);
  if (!storage.train) return p;
  p.grad = graph_.tensor(name + ".grad", p.elements, storage.dtype, fused::TensorKind::gradient);
  p.shards = static_cast<int>(shards);
  auto state = [&](const char* suffix, double elements) {
    p.state.push_back(graph_.tensor(name + suffix, elements, DType::f32, fused::TensorKind::optimizer_state));
  };
  switch (storage.optimizer) {
    case Optimizer::sgd: break;
    case Optimizer::adam:
    case Optimizer::adamw:
      state(".m", p.elements);
      state(".v", p.elements);
      break;
    case Optimizer::adafactor:
      if (rows > 1 && cols > 1) state(".vr", static_cast<double>(rows + cols) / shards);
      else state(".v", p.elements);
      break;
  }
  return p;
}

GradientWrite Builder::gradient(const Param& p, int microbatch) {
  if (p.shards <= 1) return GradientWrite{*p.grad, microbatch > 0};
  const auto [it, fresh] = whole_gradients_.try_emplace({*p.grad, microbatch}, 0);
  if (fresh) {
    const fused::Tensor& g = graph_.tensor(*p.grad);
    it->second = graph_.tensor(fmt::format("{}{}.whole", microbatch > 0 ? fmt::format("mb{}.", microbatch) : "", g.name),
                               g.elements * p.shards, g.dtype, fused::TensorKind::activation);
  }
  return GradientWrite{it->second, !fresh};
}

std::vector<GradientBuffer> Builder::gradient_buffers(const std::vector<const Param*>& params, int microbatch) {
  std::vector<GradientBuffer> out;
  for (const Param* p : params) {
    if (p->elements <= 0 || !p->grad) continue;
    const auto it = whole_gradients_.find({*p->grad, microbatch});
    out.push_back(GradientBuffer{*p->grad, it != whole_gradients_.end() ? it->second : *p->grad});
  }
  return out;
}

void Builder::optimizer_update(const std::string& scope, const std::vector<const Param*>& params,
                               Optimizer optimizer) {
  const VpuCost& cost = optimizer == Optimizer::sgd     ? kSgdUpdate
                        : optimizer == Optimizer::adam  ? kAdamUpdate
                        : optimizer == Optimizer::adamw ? kAdamWUpdate
                                                        : kAdafactorUpdate;
  const char* name = optimizer == Optimizer::sgd     ? "sgd"
                     : optimizer == Optimizer::adam  ? "adam"
                     : optimizer == Optimizer::adamw ? "adamw"
                                                     : "adafactor";
  std::vector<fused::Access> reads, writes;
  double elements = 0;
  for (const Param* p : params) {
    if (p->elements <= 0 || !p->grad) continue;
    elements += p->elements;
    reads.push_back({p->w, 1});
    reads.push_back({*p->grad, 1});
    writes.push_back({p->w, 1});
    for (fused::TensorId s : p->state) {
      reads.push_back({s, 1});
      writes.push_back({s, 1});
    }
  }
  if (elements <= 0) return;
  vector(OpName{fused::Phase::optimizer, scope, name}, ir::OpClass::optimizer, ir::VectorOp::elementwise, elements,
         cost, reads, writes);
}

void Builder::add_vpu(std::size_t op, double elements, const VpuCost& cost) {
  graph_.ops()[op].vpu += cost.per_element.times(elements);
}

}  // namespace tpusim::kernels
