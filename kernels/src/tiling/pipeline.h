#pragma once
// Internal: the software-pipelined load / compute / store emitter shared by lower_gemm and lower_vector_pass.
//
// Each TensorCore runs a stream of steps. A step loads its operands into VMEM, runs one compute instruction
// that frees those operands when it ends, and belongs to a group whose result buffer (an accumulator or an
// output chunk) the group's first compute allocates and the group's stores, after its last compute, free.
// Dependencies, per core (s = step, g = group):
//   loads(s)          <- `after` for s < D, else compute(s-D)          (D = 2 or 3 operand buffers)
//   compute(s)        <- loads(s), compute(s-1), and stores(g-2) when s opens group g   (two result buffers)
//   stores(g)         <- compute(last step of g)
// Because computes are chained (and complete in order), loads(s) starting implies every compute up to s-D
// has ended, and compute(s) starting implies every store of groups up to g-2 has ended; so a core never
// holds more than D steps' operands and two groups' results, whatever the timing. A third operand buffer
// hides HBM latency and the MXU drain behind steps that are short next to them.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels::detail {

// Where the chip's VMEM capacity was written (the chip file, a scenario override or a --set), for errors
// about a VMEM too small for the work; the chip's name when the spec was built without origins.
[[nodiscard]] SourceLoc vmem_capacity_origin(const ChipSpec& chip);

// The error for work whose smallest tile, `needed` bytes, exceeds vmem_budget(chip, share): it names the
// scoped limit when that is what binds, else the capacity (with the capacity the share would need).
[[nodiscard]] ConfigError vmem_too_small(const ChipSpec& chip, double share, double needed, const std::string& what);

inline constexpr int kMaxOperandBuffers = 3;

struct Transfer {
  std::string_view name;        // label suffix ("load_a")
  std::uint64_t bytes = 0;      // moved
  std::uint64_t vmem = 0;       // VMEM bytes it allocates (load) or frees (store)
  ir::DmaPattern pattern = ir::DmaPattern::contiguous;
  // Memories: a load defaults to HBM -> VMEM, a store is always VMEM -> HBM.
  ir::Memory src = ir::Memory::hbm;
  ir::Memory dst = ir::Memory::vmem;
  // Staging (keys are the caller's, unique per stage): a stage records its instruction under `records`; a
  // load with `waits_for` >= 0 depends on the stage recorded under that key, which must have been emitted.
  std::int64_t records = -1;
  std::int64_t waits_for = -1;
};

struct Step {
  // Copies that do not touch VMEM (HBM -> CMEM), emitted just before the step's loads in the core's DMA
  // queue; they depend on `after` only (they hold no operand buffer).
  std::vector<Transfer> stages;
  std::vector<Transfer> loads;  // at least one
  ir::Instruction compute;      // matmul or vector; core, VMEM and deps are filled in by the emitter
  std::uint64_t group_vmem = 0;
  bool first_of_group = false;
  bool last_of_group = false;
  std::vector<Transfer> stores;  // used when last_of_group
};

// Emits every core's steps, interleaved in the order an in-order unit queue needs to overlap DMA with
// compute: loads(0..D-2) of every core, then per round r and core: loads(r+D-1), the stores of the group that
// compute(r-1) closed, compute(r); the last stores after the last round. A group's stores come after the
// next step's loads so that, in a DMA descriptor queue served in order, a result write-back never delays
// the operands the MXU needs next. Returns the indices of all stores (the stage's final instructions). Every
// instruction of the stage carries `op_class`.
std::vector<std::uint32_t> emit_pipeline(ir::Program& prog, const std::vector<std::int64_t>& steps_per_core,
                                         const std::function<Step(int core, std::int64_t step)>& step_of,
                                         const std::vector<std::uint32_t>& after, const std::string& label,
                                         std::string_view compute_name, int operand_buffers = 2,
                                         ir::OpClass op_class = ir::OpClass::other);

}  // namespace tpusim::kernels::detail
