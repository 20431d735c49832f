#pragma once
// The one error a simulation raises for a problem in the program or its fit to the chip (VMEM overflow, an
// instruction on a TensorCore the chip does not have, a unit that is not modelled yet). The message names
// the chip, the TensorCore, the instruction index and its label, so the user can find it in `tpusim lower`.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpusim::models {

class SimulationError : public std::runtime_error {
 public:
  SimulationError(std::uint32_t chip, int core, std::uint32_t instruction, std::string label, const std::string& what);

  [[nodiscard]] std::uint32_t chip() const { return chip_; }
  [[nodiscard]] int core() const { return core_; }
  [[nodiscard]] std::uint32_t instruction() const { return instruction_; }
  [[nodiscard]] const std::string& label() const { return label_; }
  // What is wrong, without the chip and instruction that what() names.
  [[nodiscard]] const std::string& reason() const { return reason_; }

 private:
  std::uint32_t chip_;
  int core_;
  std::uint32_t instruction_;
  std::string label_;
  std::string reason_;
};

}  // namespace tpusim::models
