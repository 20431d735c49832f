#include "program_index.h"

#include <fmt/format.h>

#include "block/unit_blocks.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/models/errors.h"
#include "tpusim/models/estimate.h"

namespace tpusim::models {

// The queues kind by kind in the catalogue's order (kernels/program.h): a per-core kind's queues by core.
QueueLayout::QueueLayout(int cores) : cores_(cores) {
  for (int k = 0; k < ir::unit_kind_count(); ++k) {
    const auto unit = static_cast<ir::UnitKind>(k);
    base_[static_cast<std::size_t>(k)] = static_cast<int>(unit_.size());
    const int queues = ir::unit_info(unit).per_core ? cores : 1;
    for (int c = 0; c < queues; ++c) {
      unit_.push_back(unit);
      core_.push_back(c);
    }
  }
}

ir::UnitKind queue_unit(const ir::Instruction& ins) {
  return is_remote_put(ins) ? ir::UnitKind::ici : ir::unit_of(ins.kind);
}

namespace {

bool touches(const ir::Instruction& ins, ir::Memory m) { return ins.memory.src == m || ins.memory.dst == m; }

BlockKind memory_block(ir::Memory m) {
  switch (m) {
    case ir::Memory::vmem: return BlockKind::vmem;
    case ir::Memory::cmem: return BlockKind::cmem;
    case ir::Memory::host: return BlockKind::host;
    case ir::Memory::hbm:
    case ir::Memory::remote: break;
  }
  return BlockKind::hbm;
}

}  // namespace

void ProgramIndex::note_uses(const ir::Instruction& ins, ir::UnitKind unit) {
  const auto use = [this](BlockKind k) { uses_.set(static_cast<std::size_t>(k)); };
  if (ins.vmem.alloc > 0 || ins.vmem.free > 0) use(BlockKind::vmem);
  if (ins.streams_hbm()) use(BlockKind::hbm);  // a fused instruction's stream (kernels/program.h)
  if (const UnitBlock* runs = unit_block_for(unit)) use(runs->block);  // sync: the sequencer's own
  // What the unit reaches besides: the memories a transfer or a SparseCore gather moves between; a
  // collective's reductions run on the VPU of its TensorCore and its steps read and write HBM (ici/chip_port.h),
  // as sends and recvs do.
  if (unit == ir::UnitKind::dma || unit == ir::UnitKind::sparsecore) {
    use(memory_block(ins.memory.src));
    use(memory_block(ins.memory.dst));
  } else if (unit == ir::UnitKind::ici && ins.kind == ir::OpKind::collective) {
    use(BlockKind::vpu);
    use(BlockKind::hbm);
  } else if (unit == ir::UnitKind::ici) {  // a send or recv reads or writes HBM; a put reads its source
    use(is_remote_put(ins) ? memory_block(ins.memory.src) : BlockKind::hbm);
  }
}

ProgramIndex::ProgramIndex(const ir::Program& program, const ChipSpec& chip, std::uint32_t first_chip)
    : program_(program), layout_(chip.tensorcores) {
  const std::size_t n = program.size();
  queue_of_.resize(n);
  position_.resize(n);
  queues_.resize(static_cast<std::size_t>(layout_.count()));
  const bool dma_reaches_cmem = has_path(chip, BlockKind::dma, BlockKind::cmem);
  const bool dma_reaches_host = has_path(chip, BlockKind::dma, BlockKind::host);
  for (std::size_t i = 0; i < n; ++i) {
    const ir::Instruction& ins = program[i];
    const auto fail = [&](const std::string& what) {
      throw SimulationError(first_chip, ins.core, static_cast<std::uint32_t>(i), program.label_of(ins), what);
    };
    const ir::UnitKind unit = queue_unit(ins);
    const bool uses_vmem = ins.vmem.alloc > 0 || ins.vmem.free > 0 ||
                           (ins.kind == ir::OpKind::dma && touches(ins, ir::Memory::vmem));
    const bool reduces = ins.kind == ir::OpKind::collective;  // on the VPU of ins.core
    if ((unit == ir::UnitKind::mxu || unit == ir::UnitKind::vpu || uses_vmem || reduces) &&
        ins.core >= chip.tensorcores) {
      fail(fmt::format("{} on TensorCore {}, but the chip has {}", ir::op_name(ins.kind), ins.core,
                       chip.tensorcores));
    }
    if (ins.kind == ir::OpKind::dma) {
      if (ins.memory.src == ir::Memory::remote) {
        fail("a DMA from a remote chip (a one-sided get) is not modelled: issue a put (dst: remote) on the "
             "chip that holds the data, or a send/recv pair");
      }
      if (is_remote_put(ins) && (ins.memory.src == ir::Memory::host || ins.memory.src == ir::Memory::remote)) {
        fail("a remote DMA reads local HBM, VMEM or CMEM");
      }
      if (touches(ins, ir::Memory::cmem) && !dma_reaches_cmem) {
        fail(chip.cmem.capacity.count() == 0
                 ? fmt::format("DMA uses CMEM, but chip {} has none", chip.name)
                 : fmt::format("DMA uses CMEM, but chip {}'s DMA engine does not reach it (no path dma -> cmem)",
                               chip.name));
      }
      if (touches(ins, ir::Memory::host) && !dma_reaches_host) {
        fail(fmt::format("DMA uses host memory, but chip {}'s DMA engine does not reach it (no path dma -> host)",
                         chip.name));
      }
    }
    if (unit == ir::UnitKind::sparsecore) {
      if (find_block(chip, BlockKind::sparsecore) == nullptr) {
        fail(fmt::format("{} runs on a SparseCore, but chip {} has none (the lowering runs lookups on the "
                         "TensorCores of such a chip)",
                         ir::op_name(ins.kind), chip.name));
      }
      for (const ir::Memory m : {ins.memory.src, ins.memory.dst}) {
        if (!has_path(chip, BlockKind::sparsecore, memory_block(m))) {
          fail(fmt::format("the SparseCore does not reach {} (no path sparsecore -> {})",
                           block_kind_name(memory_block(m)), block_kind_name(memory_block(m))));
        }
      }
    }
    if (ir::is_custom(ins.kind)) {
      const UnitBlock* runs = static_cast<int>(unit) < ir::unit_kind_count() ? unit_block_for(unit) : nullptr;
      if (runs == nullptr) {
        fail(fmt::format("a custom instruction of op kind {}, whose unit kind no added block kind runs",
                         static_cast<int>(ins.kind)));
      }
      if (find_block(chip, runs->block) == nullptr) {
        fail(fmt::format("a custom instruction runs on unit {}, but chip {} has no {} block", ir::unit_name(unit),
                         chip.name, block_kind_name(runs->block)));
      }
    }
    const bool per_core = unit == ir::UnitKind::mxu || unit == ir::UnitKind::vpu || unit == ir::UnitKind::dma;
    if (ir::unit_of(ins.kind) == ir::UnitKind::dma && ins.core >= chip.tensorcores) {
      fail(fmt::format("DMA on the descriptor queue of TensorCore {}, but the chip has {}", ins.core,
                       chip.tensorcores));
    }
    note_uses(ins, unit);
    const int q = layout_.queue(unit, per_core ? ins.core : 0);
    auto& queue = queues_[static_cast<std::size_t>(q)];
    queue_of_[i] = static_cast<std::uint8_t>(q);
    position_[i] = static_cast<std::uint32_t>(queue.size());
    queue.push_back(static_cast<std::uint32_t>(i));
  }
  // The MXU's results occupy the unit that drains them; what sits in a TensorCore needs the TensorCore.
  if (uses(BlockKind::mxu) && has_path(chip, BlockKind::mxu, BlockKind::vpu)) {
    uses_.set(static_cast<std::size_t>(BlockKind::vpu));
  }
  if (uses(BlockKind::mxu) || uses(BlockKind::vpu) || uses(BlockKind::vmem)) {
    uses_.set(static_cast<std::size_t>(BlockKind::tensorcore));
  }
  // An observer is built whenever a block it reaches is (BlockKindInfo::observes).
  for (const BlockKindInfo& observer : block_kinds()) {
    if (!observer.observes) continue;
    for (const BlockKindInfo& to : block_kinds()) {
      if (uses(to.kind) && has_path(chip, observer.kind, to.kind)) uses_.set(static_cast<std::size_t>(observer.kind));
    }
  }
}

void check_program_fits(const ir::Program& program, const ChipSpec& chip, std::uint32_t first_chip) {
  (void)ProgramIndex(program, chip, first_chip);
}

bool uses_ici(const ir::ProgramSet& programs) {
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    bool used = programs.role_of_chip.empty() ? p == 0 : false;
    for (std::size_t c = 0; !used && c < programs.role_of_chip.size(); ++c) used = programs.role_of_chip[c] == p;
    if (!used) continue;
    for (const ir::Instruction& ins : programs.programs[p].instructions()) {
      if (queue_unit(ins) == ir::UnitKind::ici) return true;  // collectives, send/recv, remote DMAs
    }
  }
  return false;
}

}  // namespace tpusim::models
