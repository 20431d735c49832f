#include "tools/src/program_capacity.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "tpusim/core/units.h"
#include "tpusim/kernels/program_io.h"

namespace tpusim::tools {
namespace {

// A memory's capacity as the instruction sees it, and what to call it in an error; nullopt for host memory
// (no capacity modelled) and for a memory of capacity 0 (absent: check_program_fits refuses its use).
std::optional<std::pair<Bytes, std::string>> capacity_of(const ChipSpec& chip, ir::Memory m) {
  switch (m) {
    case ir::Memory::vmem:
      return std::pair{chip.vmem.capacity, fmt::format("the TensorCore's VMEM (chip.vmem.capacity of {})", chip.name)};
    case ir::Memory::cmem:
      if (chip.cmem.capacity.count() == 0) return std::nullopt;
      return std::pair{chip.cmem.capacity, fmt::format("CMEM (chip.cmem.capacity of {})", chip.name)};
    case ir::Memory::hbm:
      return std::pair{chip.hbm.capacity, fmt::format("HBM (chip.hbm.capacity of {})", chip.name)};
    case ir::Memory::remote:
      return std::pair{chip.hbm.capacity, fmt::format("the peer's HBM (chip.hbm.capacity of {})", chip.name)};
    case ir::Memory::host: return std::nullopt;
  }
  return std::nullopt;
}

std::string_view memory_word(ir::Memory m) {
  switch (m) {
    case ir::Memory::hbm: return "HBM";
    case ir::Memory::vmem: return "VMEM";
    case ir::Memory::cmem: return "CMEM";
    case ir::Memory::host: return "host memory";
    case ir::Memory::remote: return "remote HBM";
  }
  return "memory";
}

}  // namespace

SourceLoc program_location(const Scenario& s, std::size_t p, std::size_t i, const std::string& field) {
  if (!s.workload.program.empty()) {
    return ir::program_file_location(s.workload.program,
                                     fmt::format("/programs/{}/instructions/{}{}", p, i,
                                                 field.empty() ? "" : "/" + field));
  }
  const auto it = s.workload.model.origins.find(field);
  if (it != s.workload.model.origins.end() && !it->second.defaulted) return it->second.loc;
  const auto kind = s.workload.model.origins.find("kind");
  return kind != s.workload.model.origins.end() ? kind->second.loc : SourceLoc{s.name};
}

std::string program_key(const Scenario& s, std::size_t p, std::size_t i, const std::string& field) {
  if (s.workload.program.empty()) return field.empty() ? "workload" : "workload.model." + field;
  return fmt::format("/programs/{}/instructions/{}{}", p, i, field.empty() ? "" : "/" + field);
}

void check_instruction_capacities(const Scenario& s, std::size_t p, std::size_t i, const ir::Instruction& ins,
                                  Diagnostics& diags) {
  const ChipSpec& chip = s.chip;
  const auto refuse = [&](const std::string& field, std::string message, std::string expected, std::string found) {
    if (diags.size() >= 20) return;  // a generated file can be wrong everywhere: the first ones say what is wrong
    diags.error(program_location(s, p, i, field), program_key(s, p, i, field), std::move(message),
                std::move(expected), std::move(found));
  };
  // One allocation larger than the whole VMEM can never be granted, whatever else runs: the simulator would stop
  // at it.
  if (ins.vmem.alloc > chip.vmem.capacity.count()) {
    refuse("vmem_alloc", "allocates more VMEM than the TensorCore has",
           fmt::format("at most {} (chip.vmem.capacity of {})", format_bytes(chip.vmem.capacity), chip.name),
           fmt::format("{} bytes", ins.vmem.alloc));
  }
  if (ins.kind == ir::OpKind::dma) {
    // The bytes land in the destination at once (one transfer), and a contiguous or strided read touches as many
    // distinct bytes of the source.
    const auto too_many = [&](ir::Memory m, bool into) {
      const auto cap = capacity_of(chip, m);
      if (!cap || ins.bytes <= cap->first.count()) return false;
      refuse("bytes",
             fmt::format("a DMA {} {} of more bytes than it holds", into ? "into" : "out of", memory_word(m)),
             fmt::format("at most {} ({} bytes), the size of {}", format_bytes(cap->first), cap->first.count(),
                         cap->second),
             fmt::format("{} bytes", ins.bytes));
      return true;
    };
    if (!too_many(ins.memory.dst, true) && ins.memory.pattern != ir::DmaPattern::gather) {
      (void)too_many(ins.memory.src, false);
    }
  }
  if (ins.kind == ir::OpKind::matmul && !ins.streams_hbm()) {
    const auto u = [](auto x) { return static_cast<double>(x); };
    const double operands = u(ins.shape.batch) * (u(ins.shape.m) * u(ins.shape.k) + u(ins.shape.k) * u(ins.shape.n)) *
                            u(dtype_bytes(ins.dtype));
    if (operands > chip.vmem.capacity.as_double()) {
      refuse("", "a tile-level matmul whose operands do not fit in VMEM",
             fmt::format("input operands of at most {} ({} bytes, chip.vmem.capacity of {}), where the MXU reads "
                         "them; a matmul larger than that is tiled, or fused with hbm_read and hbm_written",
                         format_bytes(chip.vmem.capacity), chip.vmem.capacity.count(), chip.name),
             fmt::format("{} x ({} x {} + {} x {}) x {} bytes of {} = {:.0f} bytes", ins.shape.batch, ins.shape.m,
                         ins.shape.k, ins.shape.k, ins.shape.n, dtype_bytes(ins.dtype), dtype_name(ins.dtype),
                         operands));
    }
  }
}

void check_instruction_dtype(const Scenario& s, std::size_t p, std::size_t i, const ir::Instruction& ins,
                             Diagnostics& diags) {
  if (ins.kind != ir::OpKind::matmul || (ins.dtype != DType::int8 && ins.dtype != DType::fp8) || diags.size() >= 20) {
    return;
  }
  const bool int8 = ins.dtype == DType::int8;
  if ((int8 ? s.chip.mxu.int8_rate : s.chip.mxu.fp8_rate) > 0) return;
  const std::string_view name = dtype_name(ins.dtype);
  diags.error(program_location(s, p, i, "dtype"), program_key(s, p, i, "dtype"),
              fmt::format("chip {} has no {} MXU rate (chip.mxu.{}_rate is 0)", s.chip.name, name, name),
              "a matmul type the chip computes in", std::string(name),
              int8 ? "bf16, or a chip with an int8 rate (v3 and later)"
                   : "no bundled chip publishes an fp8 rate; set chip.mxu.fp8_rate to model one");
}

}  // namespace tpusim::tools
