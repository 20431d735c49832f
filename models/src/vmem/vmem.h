#pragma once
// A TensorCore's VMEM: the space instructions allocate (capacity enforced) and a memory (TLM target) for
// VMEM -> VMEM copies at vmem.bandwidth.
#include <cstdint>

namespace tpusim::models {

// VMEM occupancy of one TensorCore. Instructions allocate when they start and free when they end
// (ir::Instruction::vmem: alloc / free); the capacity is a hard limit (chip.vmem.capacity).
class VmemSpace {
 public:
  virtual ~VmemSpace() = default;
  // False (and no change) if `bytes` more do not fit.
  [[nodiscard]] virtual bool allocate(std::uint64_t bytes) = 0;
  // False (and occupancy clamped at zero) if more is freed than is allocated.
  [[nodiscard]] virtual bool release(std::uint64_t bytes) = 0;
  [[nodiscard]] virtual std::uint64_t used() const = 0;
  [[nodiscard]] virtual std::uint64_t capacity() const = 0;
};

}  // namespace tpusim::models
