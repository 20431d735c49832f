#include "tpusim/models/errors.h"

#include <fmt/format.h>

namespace tpusim::models {

SimulationError::SimulationError(std::uint32_t chip, int core, std::uint32_t instruction, std::string label,
                                 const std::string& what)
    : std::runtime_error(fmt::format("chip {}, core {}, instruction {} '{}': {}", chip, core, instruction, label, what)),
      chip_(chip), core_(core), instruction_(instruction), label_(std::move(label)), reason_(what) {}

}  // namespace tpusim::models
