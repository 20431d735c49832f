#pragma once
// The program IR: the contract between the lowering library (kernels/) and the hardware models (models/).
//
// SPMD like XLA: one Program per distinct role; every chip of a role runs the same Program, so memory is
// O(programs + chips), never O(chips x instructions). A Program is a DAG in topological order: an
// instruction's dependencies always have smaller indices. Each instruction runs on one unit queue of one
// TensorCore (or of the chip, for DMA/ICI/host); a unit starts its queue's instructions in program order, each
// once its dependencies have completed, so overlap is exactly what the lowering's dependencies allow.
//
// Every instruction carries the model FLOPs and hardware FLOPs it stands for and the bytes it moves, so MFU,
// HFU and rooflines come from the program itself.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/model_spec.h"  // DType, CollectiveKind

namespace tpusim::ir {

// custom: an instruction for a unit kind added at run time (add_unit_kind), whose block says what it does with
// the instruction's bytes and FLOPs. Each added unit kind has an op kind of its own, custom + its index among the
// added kinds (custom_op, unit_of).
enum class OpKind : std::uint8_t {
  matmul, vector, dma, collective, send, recv, host, barrier, gather, scatter, custom
};
[[nodiscard]] constexpr bool is_custom(OpKind k) { return k >= OpKind::custom; }
enum class VectorOp : std::uint8_t { elementwise, transcendental, reduction, transpose };
enum class Memory : std::uint8_t { hbm, vmem, cmem, host, remote };
enum class DmaPattern : std::uint8_t { contiguous, strided, gather };
using CollectiveKind = tpusim::CollectiveKind;  // declared with the scenario specs (core)
// What a host instruction does, as the lowering declares it (the run's notes sort host time by it): infeed
// feeds the input batch (host -> HBM); outfeed sends results back (HBM -> host); checkpoint writes the state to
// storage (HBM -> host); launch starts the step (host -> chip); sync is a host round trip (chip -> host).
enum class HostOp : std::uint8_t { infeed, outfeed, checkpoint, launch, sync };

// What an instruction computes, for the per-op-class time breakdown (tools/ aggregates by it; it changes no
// timing). matmul: dense projections (and a GEMM); attention: the attention core (scores, softmax, values)
// and its gradient; norm_activation: norms, activations, residual adds and other elementwise work;
// optimizer: parameter updates and gradient accumulation; embedding: lookups and their gradients; loss: the
// vocabulary softmax / cross-entropy (or a classifier's loss); communication: collectives and transfers to
// other chips; host: host work (launch, infeed, checkpoint, syncs); other: anything else.
enum class OpClass : std::uint8_t {
  other, matmul, attention, norm_activation, optimizer, embedding, loss, communication, host
};
inline constexpr int kOpClasses = 9;
[[nodiscard]] std::string_view op_class_name(OpClass c);
// The class an instruction of kind `k` has when a program file does not say: communication for collectives,
// sends and receives, host for host work, other for the rest (the writer leaves out a class equal to it).
[[nodiscard]] OpClass default_op_class(OpKind k);

// The unit queue an instruction is issued to. Derived from the kind (see unit_of()); the built-in kinds, then
// those added at run time (add_unit_kind), numbered on from kBuiltInUnitKinds.
enum class UnitKind : std::uint8_t { mxu, vpu, dma, ici, host, sync, sparsecore };
inline constexpr int kBuiltInUnitKinds = 7;
inline constexpr int kMaxUnitKinds = 16;
// The unit kinds' catalogue, in UnitKind's order: each kind's name; whether a chip has one queue of it per
// TensorCore (the instruction's `core`) or one in all (a chip's queues are numbered in this order, kind by
// kind: models' QueueLayout); and its rank in the step's time breakdown, where an interval goes to the
// instructions in flight of the lowest rank present: compute (1) before the ICI (2), the DMA (3) and the
// host (4), so that only time no compute covers shows as exposed communication; 0 for a unit whose time is
// never attributed (sync); and the name of a stall on its instructions in the report (models' stall reasons).
struct UnitKindInfo {
  std::string_view name;
  bool per_core = false;
  std::uint8_t time_rank = 0;
  std::string_view stall_name;
};
inline constexpr std::uint8_t kTimeRanks = 5;  // 0 .. the highest time_rank
inline constexpr std::array<UnitKindInfo, kBuiltInUnitKinds> kUnitKindInfo{{
    {"mxu", true, 1, "dependency_mxu"},
    {"vpu", true, 1, "dependency_vpu"},
    {"dma", true, 3, "dependency_dma"},
    {"ici", false, 2, "dependency_ici"},
    {"host", false, 4, "dependency_host"},
    {"sync", false, 0, "dependency_barrier"},
    {"sparsecore", false, 1, "dependency_sparsecore"},
}};
[[nodiscard]] constexpr bool time_ranks_in_range() {
  for (const UnitKindInfo& u : kUnitKindInfo) {
    if (u.time_rank >= kTimeRanks) return false;
  }
  return true;
}
static_assert(time_ranks_in_range(), "every unit kind's time_rank is below kTimeRanks");

namespace detail {
// Every kind's entry: kUnitKindInfo, then the added ones (program.cpp keeps it).
extern std::array<UnitKindInfo, kMaxUnitKinds> unit_kind_table;
extern int unit_kind_count;
}  // namespace detail
[[nodiscard]] inline const UnitKindInfo& unit_info(UnitKind u) {
  return detail::unit_kind_table[static_cast<std::size_t>(u)];
}
// The kinds in the catalogue: kBuiltInUnitKinds plus those added.
[[nodiscard]] inline int unit_kind_count() { return detail::unit_kind_count; }
// Adds a chip-level unit kind (its blocks run one queue per chip) and returns it. Refused with
// std::invalid_argument: an empty or taken name, no stall name, per_core, a time_rank outside 1..kTimeRanks - 1,
// a full catalogue. Its texts are views: they must outlive the kind (string literals do).
UnitKind add_unit_kind(UnitKindInfo info);
// Takes the last added kind out again (tests); false when `name` is not the last added kind.
bool remove_unit_kind(std::string_view name);
// The kind named `name`, or false.
[[nodiscard]] bool unit_kind_named(std::string_view name, UnitKind& out);

// matmul: C[m,n] (+)= A[m,k] x B[k,n], `batch` times: independent products, each padded to the MXU array on its
// own (attention heads; a convolution's taps), whose results are `batch` outputs of m x n, or, with sum_batch,
// add up into one (a convolution accumulating its taps).
// gather (embedding lookup, on the SparseCore): m rows of an embedding table of n values each, read from
//   `memory.src`, summed into k pooled vectors (bags) of n values written to `memory.dst`; bytes = m x n x dtype
//   bytes.
// scatter (embedding update, on the SparseCore): k gradient vectors of n values read from `memory.src`, each
//   added to its rows: m rows of n values of the table in `memory.dst` read and written back; bytes as gather.
struct MatmulShape {
  std::int64_t m = 0, k = 0, n = 0;
  std::int32_t batch = 1;
  bool sum_batch = false;
};

// vector: `op` over `elements` values. matmul: the VPU work of its fused epilogue (bias, activation, residual
// add, softmax, ...), `elements` element-operations of `op` on its TensorCore's VPU beside the result pops
// (0: none).
struct VectorWork {
  VectorOp op = VectorOp::elementwise;
  std::int64_t elements = 0;
};

// Fused instruction (a matmul or vector op standing for a whole compiler fusion, e.g. one XLA kernel): the HBM
// bytes its operands and results stream while it computes, read and written, and the grid steps its kernel
// takes. Contract with the chip model (models/src/memory/fused_stream.h): with hbm_read + hbm_written > 0 the
// instruction runs alone on its unit, its TensorCore's MXU or VPU (no pipelining with other matmuls; a
// dependency on an earlier matmul is real); its bytes stream through the chip's HBM (one read and one write
// transfer in a queue of their own per TensorCore and unit, sharing HBM bandwidth with every other transfer;
// the reads after the HBM latency, the writes posted, served in that order); its compute starts after the
// exposed first load, hbm.latency + (hbm_read / grid_steps) / (bandwidth x efficiency), a matmul's compute adds
// (grid_steps - 1) x chip.mxu.step_overhead (the per-step bookkeeping the tiled lowering's back-to-back matmuls
// pay), and the instruction completes at the later of its compute end plus the exposed last store,
// (hbm_written / grid_steps) / (bandwidth x efficiency), and the end of its streams. Its VMEM tiles are the
// compiler's business (no vmem.alloc / vmem.free). grid_steps 0 counts as 1. A matmul with `buffers` D > 0 (its
// tiling's operand buffers per core) computes for at least D-th of grid_steps x (the MXU's drain, 2 rows +
// columns cycles, + hbm.latency + one step's reads, hbm_read / grid_steps, of every TensorCore at that rate) plus
// its compute: each step's loads are issued once the matmul D steps before has drained (kernels' tile_gemm
// ranks tilings by the same bound). 0: no bound.
struct HbmStream {
  std::uint64_t hbm_read = 0;
  std::uint64_t hbm_written = 0;
  std::uint32_t grid_steps = 0;
  std::uint8_t buffers = 0;  // matmul only
};

// dma, gather, scatter: the memories the bytes move between, and how a dma reads them.
struct MemoryPath {
  Memory src = Memory::hbm, dst = Memory::vmem;
  DmaPattern pattern = DmaPattern::contiguous;
};

// The algorithms a collective instruction may ask for, by their index in the registry of kernels/collectives.h
// (which plans them and names them); 0 ("auto") lets the planner choose for the operation and topology.
enum class CollectiveAlgorithm : std::uint8_t {
  automatic = 0,
  ring_bidirectional,    // per axis, data halved over both ring directions (bandwidth-optimal on a torus;
                         // all_to_all: each block the shorter way round)
  ring_unidirectional,   // per axis, one direction only (and the one permute plan)
  halving_doubling,      // recursive halving / doubling (log2 steps at distances 1, 2, 4, ...; power-of-two axes)
  direct,                // one step: every chip sends straight to every peer (latency-optimal; auto all-to-all)
};

// collective / send / recv: who takes part, and how.
struct Communication {
  CollectiveKind collective = CollectiveKind::all_reduce;
  std::uint8_t algorithm = 0;     // collective: index in the algorithm registry (kernels/collectives.h); 0 = auto
  // collective / send / recv: index into ProgramSet::groups, or kAxesGroup: the whole torus axes of mesh_axes.
  std::uint16_t group = 0xffff;
  std::uint32_t mesh_axes = 0;    // collective: bit i set = mesh axis i takes part
  std::int32_t peer = 0;          // send/recv: mesh offset along the first axis of mesh_axes (or of the group)
};

// host: what it does, and the seconds of host-side work before the PCIe transfer of the instruction's `bytes`
// (the input pipeline producing the batch, a step launch, a host round trip, a storage write); the lowering
// computes them from the workload.
struct HostWork {
  HostOp op = HostOp::infeed;
  double seconds = 0;
};

// VMEM accounting (per TensorCore): bytes allocated when the instruction starts, and freed when it ends.
struct VmemUse {
  std::uint64_t alloc = 0;
  std::uint64_t free = 0;
};

// What an instruction represents.
struct Flops {
  double model = 0;     // useful FLOPs (for MFU)
  double hardware = 0;  // FLOPs the hardware executes, incl. recomputation (for HFU)
};

// Dependencies: indices [begin, begin + count) into Program::deps.
struct DepRange {
  std::uint32_t begin = 0;
  std::uint32_t count = 0;
};

struct Instruction {
  OpKind kind = OpKind::barrier;
  // TensorCore that issues it (matmul/vector) or whose VMEM a dma reads or writes (its vmem.alloc / vmem.free
  // count against that core); 0 for other chip-level work.
  std::uint8_t core = 0;
  OpClass op_class = OpClass::other;
  DType dtype = DType::bf16;
  MatmulShape shape;  // matmul, gather, scatter
  VectorWork vector;  // vector; a matmul's fused epilogue
  HbmStream stream;   // a fused matmul or vector op
  [[nodiscard]] bool streams_hbm() const { return stream.hbm_read + stream.hbm_written > 0; }
  MemoryPath memory;   // dma, gather, scatter
  Communication comm;  // collective, send, recv
  HostWork host;
  std::uint64_t bytes = 0;  // dma / collective / send / recv / host / gather / scatter: payload
  VmemUse vmem;
  Flops flops;
  DepRange deps;
  std::uint32_t label = 0;  // index into Program::labels ("layer3.fwd.matmul")
};

// A one-sided put into another chip's HBM: a dma to `remote`, addressed by comm.peer and comm.mesh_axes as a
// send is, and matched by nothing.
[[nodiscard]] inline bool is_remote_put(const Instruction& ins) {
  return ins.kind == OpKind::dma && ins.memory.dst == Memory::remote;
}

// Instruction::comm.group for "the whole torus axes named by mesh_axes, across every pod" (the default).
inline constexpr std::uint16_t kAxesGroup = 0xffff;

// The torus axes a group describes (topology's kMaxAxes; collectives.h checks they agree).
inline constexpr int kGroupAxes = 3;

// A replica group shape: which chips run a collective (or exchange sends and recvs) together, as aligned blocks
// of the torus (kernels/README.md, "Groups"). Along axis a a group has size[a] members stride[a] chips
// apart; a chip's group is the set of chips that differ from it only in the group's coordinates, so the
// groups of one shape tile the pod (size x stride must divide the axis length). `pods` > 1 spans that many
// pods (aligned blocks of consecutive pods) over the DCN.
struct CollectiveGroup {
  std::array<std::uint32_t, kGroupAxes> size{1, 1, 1};
  std::array<std::uint32_t, kGroupAxes> stride{1, 1, 1};
  std::uint32_t pods = 1;
  bool operator==(const CollectiveGroup& o) const { return size == o.size && stride == o.stride && pods == o.pods; }
  bool operator!=(const CollectiveGroup& o) const { return !(*this == o); }
};

[[nodiscard]] UnitKind unit_of(OpKind k);
// The op kind of an added unit kind's instructions.
[[nodiscard]] OpKind custom_op(UnitKind added);
[[nodiscard]] std::string_view op_name(OpKind k);
[[nodiscard]] std::string_view unit_name(UnitKind u);

class Program {
 public:
  explicit Program(std::string name = "main");

  // Appends an instruction depending on `deps` (indices of earlier instructions); returns its index.
  std::uint32_t add(Instruction ins, const std::vector<std::uint32_t>& deps, const std::string& label);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::size_t size() const { return instrs_.size(); }
  [[nodiscard]] const Instruction& operator[](std::size_t i) const { return instrs_[i]; }
  [[nodiscard]] const std::vector<Instruction>& instructions() const { return instrs_; }
  [[nodiscard]] const std::uint32_t* deps_of(const Instruction& ins) const { return deps_.data() + ins.deps.begin; }
  [[nodiscard]] const std::vector<std::uint32_t>& deps() const { return deps_; }
  [[nodiscard]] const std::string& label_of(const Instruction& ins) const { return labels_[ins.label]; }
  [[nodiscard]] const std::vector<std::string>& labels() const { return labels_; }
  [[nodiscard]] int cores_used() const;  // 1 + highest core index

  // Totals over the program.
  [[nodiscard]] double model_flops() const;
  [[nodiscard]] double hardware_flops() const;
  [[nodiscard]] std::uint64_t dma_bytes() const;

  // Multiplies the model and hardware FLOPs of instructions [begin, end) by `factor` (a lowering that pads
  // its work says which part of it is useful).
  void scale_flops(std::size_t begin, std::size_t end, double factor);

  // Rebuilds a program from serialized parts (program_io); checks the DAG order and indices.
  static Program from_parts(std::string name, std::vector<Instruction> instrs, std::vector<std::uint32_t> deps,
                            std::vector<std::string> labels);

 private:
  std::uint32_t intern(const std::string& label);

  std::string name_;
  std::vector<Instruction> instrs_;
  std::vector<std::uint32_t> deps_;
  std::vector<std::string> labels_;
};

// All programs of a run and which one each chip executes.
struct ProgramSet {
  std::vector<Program> programs;
  std::vector<std::uint16_t> role_of_chip;  // empty = every chip runs programs[0]
  std::vector<CollectiveGroup> groups;      // the groups instructions name (Instruction::comm.group)
  [[nodiscard]] const Program& program_for(std::uint32_t chip) const {
    return programs[role_of_chip.empty() ? 0 : role_of_chip[chip]];
  }
  // The group an ICI instruction names, or nullptr for the whole torus axes of its mesh_axes (and for a
  // remote put, which names none). An index past `groups` throws std::out_of_range (a file reader rejects it
  // first, with the line).
  [[nodiscard]] const CollectiveGroup* named_group(const Instruction& ins) const {
    if (ins.comm.group == kAxesGroup || ins.kind == OpKind::dma) return nullptr;
    return &groups.at(ins.comm.group);
  }
};

}  // namespace tpusim::ir
