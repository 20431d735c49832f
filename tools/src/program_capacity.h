#pragma once
// Where the preflight (preflight.h) places an error about one instruction of a program, and the capacity rules
// an instruction's sizes must meet on the chip it runs on.
#include <cstddef>
#include <string>

#include "tpusim/core/diagnostics.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::tools {

// Where an error about program `p`, instruction `i` (field `field`) belongs: the program file's line, or the
// model's field in the scenario when the program was lowered from a model.
[[nodiscard]] SourceLoc program_location(const Scenario& s, std::size_t p, std::size_t i, const std::string& field);
// The key an error about program `p`, instruction `i` names: the JSON pointer in a program file, or the model's
// field (workload.model.FIELD).
[[nodiscard]] std::string program_key(const Scenario& s, std::size_t p, std::size_t i, const std::string& field);

// Sizes no memory of the chip can hold, each bad input at the field: a VMEM allocation larger than the
// TensorCore's VMEM; a DMA writing more bytes than its destination memory holds (VMEM per TensorCore, CMEM,
// HBM; a remote put another chip's HBM), or reading more than its source holds (not for a gather pattern, whose
// rows may repeat); a tile-level matmul (one that streams nothing from HBM) whose input operands,
// batch x (m x k + k x n) values of its dtype, exceed its TensorCore's VMEM, where the MXU reads them.
void check_instruction_capacities(const Scenario& s, std::size_t p, std::size_t i, const ir::Instruction& ins,
                                  Diagnostics& diags);
// A matmul in int8 or fp8 on a chip whose MXU has no rate for that type (chip.mxu.int8_rate or fp8_rate is 0): the
// chip cannot run it, and timing it at the bf16 rate would be a wrong answer. Bad input at its dtype, as a model
// scenario's workload.dtype is.
void check_instruction_dtype(const Scenario& s, std::size_t p, std::size_t i, const ir::Instruction& ins,
                             Diagnostics& diags);

}  // namespace tpusim::tools
