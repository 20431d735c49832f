#include "tensor_core.h"

#include <algorithm>

namespace tpusim::models {

bool Vmem::allocate(std::uint64_t bytes) {
  if (bytes > capacity_ - used_) return false;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return true;
}

bool Vmem::release(std::uint64_t bytes) {
  if (bytes > used_) {
    used_ = 0;
    return false;
  }
  used_ -= bytes;
  return true;
}

}  // namespace tpusim::models
