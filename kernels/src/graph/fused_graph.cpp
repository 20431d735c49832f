#include "graph/fused_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim::kernels::fused {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "fwd";
    case Phase::backward: return "bwd";
    case Phase::recompute: return "remat";
    case Phase::optimizer: return "update";
    case Phase::other: return "step";
  }
  return "?";
}

TensorId Graph::tensor(std::string name, double elements, DType dtype, TensorKind kind) {
  tensors_.push_back(Tensor{std::move(name), elements, dtype, kind});
  return static_cast<TensorId>(tensors_.size() - 1);
}

std::size_t Graph::add(Op op) {
  ops_.push_back(std::move(op));
  return ops_.size() - 1;
}

double Graph::bytes_of(TensorKind kind) const {
  double b = 0;
  for (const Tensor& t : tensors_) {
    if (t.kind == kind) b += t.bytes();
  }
  return b;
}

double read_bytes(const Graph& g, const Op& op) {
  double b = 0;
  for (const Access& a : op.reads) b += g.tensor(a.tensor).bytes() * a.times;
  return b;
}

double written_bytes(const Graph& g, const Op& op) {
  double b = 0;
  for (const Access& a : op.writes) b += g.tensor(a.tensor).bytes() * a.times;
  return b;
}

void fuse(Graph& g) {
  std::vector<Op>& ops = g.ops();
  const std::size_t n = ops.size();
  // The group each op belongs to (the index of the op everything merged into), and the op writing each tensor.
  std::vector<std::size_t> group(n);
  std::map<TensorId, std::size_t> writer;
  for (std::size_t i = 0; i < n; ++i) {
    group[i] = i;
    if (ops[i].passes.dropped) continue;
    if (ops[i].passes.fuse_into) {
      const auto it = writer.find(*ops[i].passes.fuse_into);
      if (it == writer.end()) throw std::logic_error("fuse: " + ops[i].label + " fuses into an unwritten tensor");
      // A collective or a host copy has no epilogue.
      if (ops[it->second].unit != Unit::ici && ops[it->second].unit != Unit::dma) group[i] = group[it->second];
    }
    for (const Access& w : ops[i].writes) writer[w.tensor] = i;
  }
  // Which groups read each tensor, to find the tensors that never leave their group.
  std::map<TensorId, std::vector<std::size_t>> reader_groups;
  for (std::size_t i = 0; i < n; ++i) {
    if (ops[i].passes.dropped) continue;
    for (const Access& r : ops[i].reads) reader_groups[r.tensor].push_back(group[i]);
  }
  auto internal = [&](TensorId t, std::size_t grp) {
    if (g.tensor(t).kind != TensorKind::activation) return false;
    const auto it = reader_groups.find(t);
    if (it == reader_groups.end()) return false;  // a step output
    return std::all_of(it->second.begin(), it->second.end(), [grp](std::size_t r) { return r == grp; });
  };
  // Merge members into their group's head in program order. A member's read of a tensor an earlier member of
  // the group wrote comes from VMEM; any other read (including an op reading what it overwrites in place, an
  // optimizer update) streams from HBM. Two reads of the same tensor by members are one stream.
  std::map<std::size_t, std::vector<TensorId>> produced;  // per group, written so far
  std::map<std::size_t, std::vector<Access>> reads;       // per group, from HBM
  for (std::size_t i = 0; i < n; ++i) {
    if (ops[i].passes.dropped) continue;
    const std::size_t grp = group[i];
    auto& made = produced[grp];
    auto& in = reads[grp];
    for (const Access& r : ops[i].reads) {
      if (std::find(made.begin(), made.end(), r.tensor) != made.end()) continue;
      const auto same = std::find_if(in.begin(), in.end(), [&](const Access& a) { return a.tensor == r.tensor; });
      if (same == in.end()) in.push_back(r);
      else same->times = std::max(same->times, r.times);
    }
    for (const Access& w : ops[i].writes) made.push_back(w.tensor);
    if (grp == i) continue;
    Op& head = ops[grp];
    Op& member = ops[i];
    head.vpu += member.vpu;
    head.flops.model += member.flops.model;
    head.flops.hardware += member.flops.hardware;
    for (const Access& w : member.writes) head.writes.push_back(w);
    member.passes.merged = true;
    member.passes.merged_into = grp;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Op& op = ops[i];
    if (op.passes.merged || op.passes.dropped) continue;
    op.reads = std::move(reads[i]);
    std::vector<Access> writes;
    for (const Access& w : op.writes) {
      if (!internal(w.tensor, i)) writes.push_back(w);
    }
    op.writes = std::move(writes);
  }
}

namespace {

// Each tensor's extent over the ops that touch it (first write, last access: `n` and 0 for a tensor no kept op
// touches), and whether the forward phase wrote it for the backward (or a recomputed block) to read. With
// `from_placement` an op placed to start once an earlier one is done (`after`: an FSDP all-gather once the
// previous layer's first matmul is) holds its outputs from the op after that one, where the schedule may start it:
// the memory plan counts what the run can hold at once. Without, from the op itself: where the program allocates
// them (the in-use record).
struct TensorExtents {
  std::vector<std::size_t> first, last;
  std::vector<bool> kept;
};

TensorExtents tensor_extents(const Graph& g, bool from_placement) {
  const std::vector<Op>& ops = g.ops();
  const std::size_t n = ops.size();
  TensorExtents e{std::vector<std::size_t>(g.tensors().size(), n), std::vector<std::size_t>(g.tensors().size(), 0),
                  {}};
  std::vector<bool> forward_written(g.tensors().size(), false), backward_read(g.tensors().size(), false);
  for (std::size_t i = 0; i < n; ++i) {
    if (ops[i].passes.merged || ops[i].passes.dropped) continue;
    const std::vector<std::size_t>& after = ops[i].after;
    const std::size_t from =
        from_placement && !after.empty() ? std::min(i, *std::max_element(after.begin(), after.end()) + 1) : i;
    for (const Access& w : ops[i].writes) {
      e.first[w.tensor] = std::min(e.first[w.tensor], from);
      e.last[w.tensor] = std::max(e.last[w.tensor], i);
      if (ops[i].phase == Phase::forward) forward_written[w.tensor] = true;
    }
    for (const Access& r : ops[i].reads) {
      e.last[r.tensor] = std::max(e.last[r.tensor], i);
      // A block recomputed for the backward pass reads what the forward pass kept, as the backward does.
      if (ops[i].phase == Phase::backward || ops[i].phase == Phase::recompute) backward_read[r.tensor] = true;
    }
  }
  e.kept.resize(g.tensors().size());
  for (TensorId t = 0; t < g.tensors().size(); ++t) e.kept[t] = forward_written[t] && backward_read[t];
  return e;
}

}  // namespace

Liveness activation_liveness(const Graph& g) {
  const std::size_t n = g.ops().size();
  const TensorExtents e = tensor_extents(g, true);
  // Sweep: +bytes at the first write, -bytes after the last access; kept tensors also on their own sweep.
  std::vector<double> delta(n + 1, 0.0), kept_delta(n + 1, 0.0), host_delta(n + 1, 0.0);
  for (TensorId t = 0; t < g.tensors().size(); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (e.first[t] == n) continue;
    const std::size_t end = std::max(e.first[t], e.last[t]) + 1;
    if (tensor.kind == TensorKind::host_offload) {
      host_delta[e.first[t]] += tensor.bytes();
      host_delta[end] -= tensor.bytes();
    }
    if (tensor.kind != TensorKind::activation) continue;
    delta[e.first[t]] += tensor.bytes();
    delta[end] -= tensor.bytes();
    if (e.kept[t]) {
      kept_delta[e.first[t]] += tensor.bytes();
      kept_delta[end] -= tensor.bytes();
    }
  }
  Liveness l;
  double live = 0, kept = 0, host = 0;
  for (std::size_t i = 0; i < n; ++i) {
    live += delta[i];
    kept += kept_delta[i];
    host += host_delta[i];
    l.host_offload = std::max(l.host_offload, host);
    l.peak = std::max(l.peak, live);
    l.saved_for_backward = std::max(l.saved_for_backward, kept);
  }
  return l;
}

ActivationSpans activation_spans(const Graph& g) {
  const std::size_t n = g.ops().size();
  const TensorExtents e = tensor_extents(g, false);
  ActivationSpans spans{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (TensorId t = 0; t < g.tensors().size(); ++t) {
    if (e.first[t] == n || g.tensor(t).kind != TensorKind::activation) continue;
    spans.allocated[e.first[t]] += g.tensor(t).bytes();
    spans.freed[std::max(e.first[t], e.last[t])] += g.tensor(t).bytes();
  }
  return spans;
}

namespace {

std::int64_t split_size(std::int64_t total, int parts, int part) {
  return total / parts + (part < total % parts ? 1 : 0);
}

}  // namespace

std::vector<std::uint32_t> emit(const Graph& g, const ChipSpec& chip, ir::Program& prog,
                                const std::vector<std::uint32_t>& after, const CollectiveTiming& timing,
                                std::vector<std::vector<std::uint32_t>>* op_instructions) {
  const bool serialize_collectives = timing.serialize;
  const int cores = std::max(1, chip.tensorcores);
  const double transcendental_cost = chip.vpu.transcendental_rate > 0 ? 1.0 / chip.vpu.transcendental_rate : 1.0;
  const std::int64_t row_granule = 8;  // the MXU takes LHS rows 8 at a time (docs/hardware.md)
  std::vector<std::vector<std::uint32_t>> writer(g.tensors().size());   // instructions of the last write
  std::vector<std::vector<std::uint32_t>> readers(g.tensors().size());  // instructions reading since then
  std::vector<std::optional<std::uint32_t>> chain(static_cast<std::size_t>(cores));
  std::vector<std::uint32_t> sinks;
  std::vector<std::vector<std::uint32_t>> op_ids(g.ops().size());  // the instructions of each op
  std::optional<std::uint32_t> last_collective;
  for (std::size_t oi = 0; oi < g.ops().size(); ++oi) {
    const Op& op = g.ops()[oi];
    if (op.passes.merged || op.passes.dropped) continue;
    std::vector<std::uint32_t> deps = after;
    for (std::size_t a : op.after) {
      const std::size_t head = g.ops()[a].passes.merged ? g.ops()[a].passes.merged_into : a;
      deps.insert(deps.end(), op_ids[head].begin(), op_ids[head].end());
    }
    for (const Access& r : op.reads) deps.insert(deps.end(), writer[r.tensor].begin(), writer[r.tensor].end());
    for (const Access& w : op.writes) {
      deps.insert(deps.end(), readers[w.tensor].begin(), readers[w.tensor].end());
      deps.insert(deps.end(), writer[w.tensor].begin(), writer[w.tensor].end());
    }
    const double read = read_bytes(g, op), written = written_bytes(g, op);
    std::vector<std::uint32_t> ids;
    if (op.unit == Unit::dma) {
      // A copy between HBM and host memory on the chip's DMA engine, over PCIe; it runs beside the compute.
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      ir::Instruction ins;
      ins.kind = ir::OpKind::dma;
      ins.op_class = op.cls;
      ins.dtype = op.dtype;
      const bool to_host = g.tensor(op.writes.at(0).tensor).kind == TensorKind::host_offload;
      ins.memory.src = to_host ? ir::Memory::hbm : ir::Memory::host;
      ins.memory.dst = to_host ? ir::Memory::host : ir::Memory::hbm;
      ins.bytes = static_cast<std::uint64_t>(std::llround(written));
      ids.push_back(prog.add(ins, deps, op.label));
      sinks.push_back(ids.back());
    } else if (op.unit == Unit::ici) {
      const bool synchronous =
          serialize_collectives || (op.ici.kind == ir::OpKind::collective &&
                                    std::find(timing.async.begin(), timing.async.end(), op.ici.comm.collective) ==
                                        timing.async.end());
      if (synchronous) {
        for (const auto& c : chain) {
          if (c) deps.push_back(*c);
        }
      }
      if (serialize_collectives && last_collective) deps.push_back(*last_collective);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      ir::Instruction ins;
      ins.kind = op.ici.kind;
      ins.op_class = op.cls;
      ins.comm = op.ici.comm;
      ins.bytes = op.ici.bytes;
      ins.dtype = op.dtype;
      ids.push_back(prog.add(ins, deps, op.label));
      sinks.push_back(ids.back());
      if (serialize_collectives) last_collective = ids.back();
      if (synchronous) {
        for (auto& c : chain) c = ids.back();  // later work on every TensorCore waits for it
      }
    } else {
      // How the op splits over the TensorCores.
      enum class Split { batch, rows, cols, elements, none } split = Split::none;
      if (op.unit == Unit::mxu) {
        if (op.shape.batch >= cores && !op.shape.sum_batch) split = Split::batch;
        else if (op.shape.m >= cores * row_granule) split = Split::rows;
        else if (op.shape.n >= cores * static_cast<std::int64_t>(std::max(1, chip.mxu.cols))) split = Split::cols;
      } else {
        split = Split::elements;
      }
      const int parts = split == Split::none ? 1 : cores;
      const std::int64_t whole = split == Split::batch ? op.shape.batch
                                 : split == Split::rows ? op.shape.m
                                 : split == Split::cols ? op.shape.n
                                                        : 1;
      for (int p = 0; p < parts; ++p) {
        const std::int64_t size = split == Split::elements || split == Split::none ? 1 : split_size(whole, parts, p);
        const double share = split == Split::elements ? 1.0 / parts
                             : split == Split::none   ? 1.0
                                                      : static_cast<double>(size) / static_cast<double>(whole);
        if (share <= 0) continue;
        ir::Instruction ins;
        ins.core = static_cast<std::uint8_t>(p);
        ins.op_class = op.cls;
        ins.dtype = op.dtype;
        const double vpu = (op.vpu.elementwise + op.vpu.transcendental * transcendental_cost) * share;
        ins.vector.elements = static_cast<std::int64_t>(std::ceil(vpu - 1e-9));
        ins.stream.hbm_read = static_cast<std::uint64_t>(std::llround(read * share));
        ins.stream.hbm_written = static_cast<std::uint64_t>(std::llround(written * share));
        // A fused op always streams something.
        if (ins.stream.hbm_read + ins.stream.hbm_written == 0) ins.stream.hbm_read = 1;
        ins.stream.grid_steps = static_cast<std::uint32_t>(std::max(1.0, std::ceil(op.grid.steps * share - 1e-9)));
        ins.stream.buffers = static_cast<std::uint8_t>(op.grid.buffers);
        ins.flops.model = op.flops.model * share;
        ins.flops.hardware = op.flops.hardware * share;
        if (op.unit == Unit::mxu) {
          ins.kind = ir::OpKind::matmul;
          ins.shape.m = split == Split::rows ? size : op.shape.m;
          ins.shape.n = split == Split::cols ? size : op.shape.n;
          ins.shape.k = op.shape.k;
          ins.shape.batch = split == Split::batch ? static_cast<std::int32_t>(size) : op.shape.batch;
          ins.shape.sum_batch = op.shape.sum_batch;
          ins.vector.op = ir::VectorOp::elementwise;
        } else {
          ins.kind = ir::OpKind::vector;
          ins.vector.op = op.vector_op;
          ins.bytes = ins.stream.hbm_read + ins.stream.hbm_written;  // every operand passes through VMEM once
        }
        std::vector<std::uint32_t> d = deps;
        if (chain[static_cast<std::size_t>(p)]) d.push_back(*chain[static_cast<std::size_t>(p)]);
        std::sort(d.begin(), d.end());
        d.erase(std::unique(d.begin(), d.end()), d.end());
        const std::uint32_t id = prog.add(ins, d, op.label);
        chain[static_cast<std::size_t>(p)] = id;
        ids.push_back(id);
      }
    }
    op_ids[oi] = ids;
    for (const Access& r : op.reads) readers[r.tensor].insert(readers[r.tensor].end(), ids.begin(), ids.end());
    for (const Access& w : op.writes) {
      writer[w.tensor] = ids;
      readers[w.tensor].clear();
    }
  }
  for (const auto& c : chain) {
    if (c) sinks.push_back(*c);
  }
  if (sinks.empty()) sinks = after;
  std::sort(sinks.begin(), sinks.end());
  sinks.erase(std::unique(sinks.begin(), sinks.end()), sinks.end());
  if (op_instructions != nullptr) *op_instructions = std::move(op_ids);
  return sinks;
}

}  // namespace tpusim::kernels::fused
