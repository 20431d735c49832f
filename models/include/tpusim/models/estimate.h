#pragma once
// What a simulation will allocate and how much work it will do, from the specs and programs alone (no
// SystemC, all in double so no input can overflow it), so that a run far beyond the machine is refused
// before it starts (tools/src/resource_guard.h decides; this only counts).
#include <cstdint>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"

namespace tpusim::models {

// Memory of one simulated chip with its links, apart from the programs (kernels/estimate.h counts those):
// measured with `tpusim run --perf` on the bundled v4 pod (4096 chips, about 12.7 KiB each) and v5p pod
// (8960 chips, about 12.4 KiB each), rounded up.
inline constexpr double kBytesPerChip = 16 * 1024;
// The simulated time a run may reach: SystemC counts picoseconds in 64 bits (about 213 days); a program whose
// instructions, one after the other, would take longer than this is refused (a margin of 18x for contention).
inline constexpr double kMaxSimulatedSeconds = 1e6;
// The cycle-level MXU reference steps about 1e8 processing-element cycles per second on one core (measured:
// a 512^3 GEMM on a v4 chip, fidelity.mxu: cycle, 2.7 s); used to turn its work into a wall-time estimate.
inline constexpr double kReferencePeCyclesPerSecond = 1e8;

struct SimEstimate {
  double chips = 0;
  double bytes = 0;         // chips and links, plus the cycle reference's operand buffers
  double instructions = 0;  // instructions executed: over every chip, the size of its program
  double pe_cycles = 0;     // fidelity.mxu: cycle: processing-element cycles the reference steps (else 0)
  // The program whose instructions, run one after the other alone, take longest, and that time; and its
  // single longest instruction (for errors that name it).
  std::uint32_t program = 0;
  double serial_seconds = 0;
  std::uint32_t longest_instruction = 0;
  double longest_seconds = 0;
};

[[nodiscard]] SimEstimate estimate_simulation(const Scenario& scenario, const ir::ProgramSet& programs);

// Checks, as a simulation does when it starts, that `program` can run on `chip`: the TensorCores its instructions
// name, the units and memories they need (a SparseCore, CMEM, a DMA path), a block for each added unit kind it
// names. Throws SimulationError naming `first_chip` and the first instruction that cannot run.
void check_program_fits(const ir::Program& program, const ChipSpec& chip, std::uint32_t first_chip);

// An upper bound on one instruction's time alone on `chip` (no contention), in seconds; for collectives and
// sends a bound from the buffer size and one link's bandwidth.
[[nodiscard]] double instruction_seconds_bound(const ChipSpec& chip, const PodSpec& pod, const ir::Instruction& ins);

}  // namespace tpusim::models
