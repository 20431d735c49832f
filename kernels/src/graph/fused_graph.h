#pragma once
// Internal: a step as a graph of ops over named tensors, the form whole models are lowered through.
//
// A model family's builder (transformer.cpp, resnet.cpp) adds one op per primitive operation of the step, each
// reading and writing whole tensors in HBM (or part of one: an embedding lookup reads the rows it gathers).
// Then, in this order:
//   fuse()    merges every elementwise op marked `fuse_into` into the op producing its input, XLA-style: the
//             group runs as one op (the matmul or reduction with the elementwise work in its epilogue), and a
//             tensor produced inside a group and read only inside it is never written to HBM nor read back
//             (fusion: off skips this pass, so every primitive op pays its own HBM round trip);
//   liveness  gives the memory plan's activation bytes: each materialized activation is live from the op that
//             writes it first to the op that reads it last;
//   emit()    turns each op into one instruction per TensorCore (megacore: the op split in equal parts), with
//             the HBM bytes of its reads and writes as the instruction's stream (ir::Instruction::stream:
//             hbm_read, hbm_written), dependencies on the producers of what it reads (and on earlier readers of what it
//             overwrites), and each TensorCore's ops chained in program order (a TensorCore runs one fused
//             kernel at a time, as XLA executes a TensorCore's fusions one after another).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/model_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels::fused {

using TensorId = std::uint32_t;

enum class TensorKind : std::uint8_t {
  activation,       // produced and consumed within the step (the memory plan's activations and workspace)
  weight,           // parameters
  gradient,         // parameter gradients
  optimizer_state,  // moments, factored second moments
  kv_cache,         // the attention KV cache of inference steps
  on_chip,          // stays in VMEM between the instructions of one kernel (flash attention): no HBM traffic
  host_offload,     // an activation copied to host memory for the backward pass (the memory plan's host_offload)
};

struct Tensor {
  std::string name;
  double elements = 0;
  DType dtype = DType::bf16;
  TensorKind kind = TensorKind::activation;
  [[nodiscard]] double bytes() const {
    return kind == TensorKind::on_chip ? 0.0 : elements * static_cast<double>(dtype_bytes(dtype));
  }
};

// An access to a tensor: `times` whole passes over it (a tiled matmul re-reads an operand once per tile of the
// other side), or a fraction of it (an embedding lookup touches only the rows it gathers).
struct Access {
  TensorId tensor = 0;
  double times = 1;
};

// dma: a copy of its one read into its one write between HBM and host memory over PCIe (host offload).
enum class Unit : std::uint8_t { mxu, vpu, ici, dma };
enum class Phase : std::uint8_t { forward, backward, recompute, optimizer, other };
[[nodiscard]] std::string_view phase_name(Phase p);

// VPU element-operations, by kind: transcendentals cost 1 / chip.vpu.transcendental_rate elementwise slots.
struct VpuWork {
  double elementwise = 0;
  double transcendental = 0;
  VpuWork& operator+=(const VpuWork& o) {
    elementwise += o.elementwise;
    transcendental += o.transcendental;
    return *this;
  }
  [[nodiscard]] VpuWork times(double f) const { return VpuWork{elementwise * f, transcendental * f}; }
};

// ici: a collective (sharding inserts these at the CollectivePoints) over `comm.group` (an index into the
// program set's groups; ir::kAxesGroup: the whole torus axes of comm.mesh_axes), or with `kind` send / recv a
// point-to-point transfer of `bytes` to (from) member `comm.peer` of the group instead. Emitted as one
// instruction with this kind, communication and payload.
struct IciWork {
  ir::OpKind kind = ir::OpKind::collective;
  ir::Communication comm;
  std::uint64_t bytes = 0;
};

// What the passes over the graph do with an op (fuse(), a remat policy's recomputation).
struct OpPasses {
  // Fusion: an elementwise op whose work merges into the op that produced `fuse_into` (its epilogue).
  std::optional<TensorId> fuse_into;
  // Merged into another op by fuse() (then skipped by liveness and emit), the op `merged_into`.
  bool merged = false;
  std::size_t merged_into = 0;
  // A recomputation nothing reads (remat policies recompute only what the backward needs): skipped by fuse,
  // liveness and emit; an op placed after it gets no dependency from it.
  bool dropped = false;
};

struct Op {
  std::string label;  // "layer3.fwd.qkv"
  ir::OpClass cls = ir::OpClass::other;
  Unit unit = Unit::vpu;
  Phase phase = Phase::forward;
  // mxu: `shape.batch` products of m x k x n (as ir::Instruction's), operands in `dtype`.
  ir::MatmulShape shape;
  DType dtype = DType::bf16;
  // vpu: the op's kind (reduction for norms and softmax); its work (and a matmul's fused epilogue) in `vpu`.
  ir::VectorOp vector_op = ir::VectorOp::elementwise;
  VpuWork vpu;
  std::vector<Access> reads;
  std::vector<Access> writes;
  ir::Flops flops;
  // The kernel's grid: its steps over all TensorCores and, for a matmul, the operand buffers per core its
  // tiling pipelines (GemmTiling::buffers; 0: no pipeline bound, as a vector op).
  struct Grid {
    double steps = 1;
    int buffers = 0;
  } grid;
  IciWork ici;            // unit ici
  // Ops (earlier indices) this one also waits for besides its tensors: the placement of an async collective
  // (an FSDP all-gather waits for the previous layer's compute to start, as XLA's scheduler places it).
  std::vector<std::size_t> after;
  OpPasses passes;
};

class Graph {
 public:
  TensorId tensor(std::string name, double elements, DType dtype, TensorKind kind);
  std::size_t add(Op op);

  [[nodiscard]] const Tensor& tensor(TensorId t) const { return tensors_[t]; }
  [[nodiscard]] const std::vector<Tensor>& tensors() const { return tensors_; }
  [[nodiscard]] const std::vector<Op>& ops() const { return ops_; }
  [[nodiscard]] std::vector<Op>& ops() { return ops_; }

  // Bytes of every tensor of `kind` (persistent state for the memory plan).
  [[nodiscard]] double bytes_of(TensorKind kind) const;

 private:
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
};

// Merges each op with `fuse_into` into the (group of the) op that writes that tensor (never into a collective), and drops the HBM
// traffic of tensors produced and consumed only inside a group. A tensor produced in a group stays written if
// an op outside the group reads it, if it is not an activation, or if nothing reads it (a step output).
void fuse(Graph& g);

// HBM bytes an op reads and writes.
[[nodiscard]] double read_bytes(const Graph& g, const Op& op);
[[nodiscard]] double written_bytes(const Graph& g, const Op& op);

// Activation memory over the step: the peak of live materialized activation bytes, and the peak of the live
// bytes that the forward phase wrote for the backward phase (or a rematerialized block) to read, the
// activations kept for the backward (with microbatches, one microbatch's at a time).
struct Liveness {
  double peak = 0;
  double saved_for_backward = 0;
  double host_offload = 0;  // the peak of live host_offload bytes (host memory, not HBM)
};
[[nodiscard]] Liveness activation_liveness(const Graph& g);

// The same activations by op, for following them in time: a tensor is allocated by the first op that writes it
// and freed by the last op that reads or writes it (activation_liveness sweeps these in graph order). Indexed by
// op; merged and dropped ops allocate and free nothing (a group's head carries its members' accesses).
struct ActivationSpans {
  std::vector<double> allocated, freed;  // bytes
};
[[nodiscard]] ActivationSpans activation_spans(const Graph& g);

// Appends the graph's ops to `prog`: one instruction per TensorCore and op (parts of equal size along the
// batch, the rows, or else the columns of a matmul, or the elements of a vector op; an op too small to split
// runs on TensorCore 0), every instruction depending on `after`. Returns the step's last instructions (the
// end of each TensorCore's chain and every collective), which later work (a checkpoint) depends on.
//
// A synchronous collective (its kind not in `timing.async`) waits for every TensorCore's earlier work, and
// their later work waits for it. With `timing.serialize` (workload overlap: off) every collective does, and
// waits for the collective before it too: the baseline without compute / communication overlap.
// `op_instructions` (if not null) receives each op's instructions, indexed by op (none for merged and dropped
// ops).
struct CollectiveTiming {
  bool serialize = false;
  std::vector<CollectiveKind> async = all_collective_kinds();
};
std::vector<std::uint32_t> emit(const Graph& g, const ChipSpec& chip, ir::Program& prog,
                                const std::vector<std::uint32_t>& after, const CollectiveTiming& timing = {},
                                std::vector<std::vector<std::uint32_t>>* op_instructions = nullptr);

}  // namespace tpusim::kernels::fused
