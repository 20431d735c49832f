#pragma once
// Internal: the software-pipelined load / compute / store emitter shared by lower_gemm and lower_vector_pass.
//
// Each TensorCore runs a stream of steps. A step loads its operands into VMEM, runs one compute instruction
// that frees those operands when it ends, and belongs to a group whose result buffer (an accumulator or an
// output chunk) the group's first compute allocates and the group's stores, after its last compute, free.
// Dependencies, per core (s = step, g = group):
//   loads(s)          <- `after` for s < 2, else compute(s-2)          (two operand buffers)
//   compute(s)        <- loads(s), compute(s-1), and stores(g-2) when s opens group g   (two result buffers)
//   stores(g)         <- compute(last step of g)
// Because computes are chained, loads(s) starting implies every compute up to s-2 has ended, and compute(s)
// starting implies every store of groups up to g-2 has ended; so a core never holds more than two steps'
// operands and two groups' results, whatever the timing.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/kernels/program.h"

namespace tpusim::kernels::detail {

struct Transfer {
  std::string_view name;        // label suffix ("load_a")
  std::uint64_t bytes = 0;      // moved over HBM
  std::uint64_t vmem = 0;       // VMEM bytes it allocates (load) or frees (store)
  ir::DmaPattern pattern = ir::DmaPattern::contiguous;
};

struct Step {
  std::vector<Transfer> loads;  // at least one
  ir::Instruction compute;      // matmul or vector; core, VMEM and deps are filled in by the emitter
  std::uint64_t group_vmem = 0;
  bool first_of_group = false;
  bool last_of_group = false;
  std::vector<Transfer> stores;  // used when last_of_group
};

// Emits every core's steps, interleaved in the order an in-order unit queue needs to overlap DMA with
// compute: loads(0) of every core, then per round r and core: loads(r+1), compute(r), stores. Returns the
// indices of all stores (the stage's final instructions).
std::vector<std::uint32_t> emit_pipeline(ir::Program& prog, const std::vector<std::int64_t>& steps_per_core,
                                         const std::function<Step(int core, std::int64_t step)>& step_of,
                                         const std::vector<std::uint32_t>& after, const std::string& label,
                                         std::string_view compute_name);

}  // namespace tpusim::kernels::detail
