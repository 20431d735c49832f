#pragma once
// Per-program lookup tables shared by every chip that runs the program: which unit queue each instruction
// goes to and its position there. Chips then keep only a cursor and a completion count per queue, and an
// instruction's dependency d is done exactly when completed[queue_of(d)] > position(d), because every queue
// completes its instructions in program order; the ICI queue, whose in-flight instructions complete in any
// order, adds the positions completed ahead of the count (Sequencer::QueueState: a 64-bit window, and a list
// for those further ahead). This keeps per-chip state O(queues + ICI instructions completed out of order).
#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// The unit queues of one chip: per TensorCore an MXU, a VPU and a DMA descriptor queue (the DMAs that
// Instruction::core names; chip-level copies use core 0's), then the chip-level ICI, host, sync (barrier) and
// SparseCore queues. Each queue starts its instructions in program order, independently of the others.
class QueueLayout {
 public:
  explicit QueueLayout(int cores);
  [[nodiscard]] int cores() const { return cores_; }
  [[nodiscard]] int count() const { return static_cast<int>(unit_.size()); }
  [[nodiscard]] int queue(ir::UnitKind unit, int core) const {
    return base_[static_cast<std::size_t>(unit)] + (ir::unit_info(unit).per_core ? core : 0);
  }
  [[nodiscard]] ir::UnitKind unit(int queue) const { return unit_[static_cast<std::size_t>(queue)]; }
  // The TensorCore of a per-core queue (MXU, VPU, DMA); 0 for chip-level queues.
  [[nodiscard]] int core(int queue) const { return core_[static_cast<std::size_t>(queue)]; }

 private:
  int cores_;
  std::array<int, ir::kMaxUnitKinds> base_{};  // [unit kind]: its first queue
  std::vector<ir::UnitKind> unit_;          // [queue]
  std::vector<int> core_;                   // [queue]
};

// The unit queue an instruction goes to: ir::unit_of(kind), except a DMA to a remote chip (dst: remote), a
// one-sided put that the chip's ICI unit runs like a send (see net/interconnect.h).
[[nodiscard]] ir::UnitKind queue_unit(const ir::Instruction& ins);
using ir::is_remote_put;

class ProgramIndex {
 public:
  // Checks that the program fits the chip (TensorCores, modelled units and memories) and throws
  // SimulationError naming `chip` (the first chip running it) and the offending instruction otherwise.
  ProgramIndex(const ir::Program& program, const ChipSpec& chip, std::uint32_t first_chip);

  [[nodiscard]] const ir::Program& program() const { return program_; }
  [[nodiscard]] const QueueLayout& layout() const { return layout_; }
  [[nodiscard]] int queue_of(std::uint32_t instr) const { return queue_of_[instr]; }
  [[nodiscard]] std::uint32_t position(std::uint32_t instr) const { return position_[instr]; }
  [[nodiscard]] const std::vector<std::uint32_t>& queue(int q) const { return queues_[static_cast<std::size_t>(q)]; }
  // The block kinds the program's instructions reach: the units they are issued to, the memories their DMAs
  // read and write, the VMEM they allocate, and the VPU that drains the MXU (when a path says so). A chip
  // elaborates only these (pods of collective-only programs stay cheap); the composition is checked whole.
  [[nodiscard]] bool uses(BlockKind kind) const { return uses_[static_cast<std::size_t>(kind)]; }
  [[nodiscard]] const std::bitset<kMaxBlockKinds>& blocks_used() const { return uses_; }

 private:
  const ir::Program& program_;
  QueueLayout layout_;
  std::vector<std::uint8_t> queue_of_;
  std::vector<std::uint32_t> position_;
  std::vector<std::vector<std::uint32_t>> queues_;
  void note_uses(const ir::Instruction& ins, ir::UnitKind unit);

  std::bitset<kMaxBlockKinds> uses_;
};

// Some program a chip runs has an ICI instruction (collective, send/recv, remote DMA).
[[nodiscard]] bool uses_ici(const ir::ProgramSet& programs);

}  // namespace tpusim::models
