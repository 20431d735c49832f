#pragma once
// Which positions of one of the chip's unit queues have completed (sequencer.h).
//
// Completion is a prefix count plus the later positions already completed: the ICI ports complete their
// in-flight instructions in any order (net/ici_unit.h); every other queue completes in order. The slots bound
// the instructions in flight, not how far past the oldest one they reach: while one collective waits (a
// transfer lost on a failed link until its detection, seconds later) the other slots keep completing later
// ones. The next 64 positions are bits; later ones (rare) a list, moved into the bits as the prefix grows.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim::models {

class CompletionWindow {
 public:
  [[nodiscard]] bool done(std::uint32_t pos) const {
    if (pos < completed_) return true;
    if (pos == completed_) return false;
    if (pos - completed_ <= 64 && ((ahead_ >> (pos - completed_ - 1)) & 1) != 0) return true;
    // The list keeps a position exactly 64 past the prefix as well: complete() fills bits 0-63 before its
    // final shift, which leaves bit 63 (completed_ + 64) empty.
    return std::find(beyond_.begin(), beyond_.end(), pos) != beyond_.end();
  }

  // Marks `pos` completed; each position completes once.
  void complete(std::uint32_t pos) {
    if (pos != completed_) {
      if (pos - completed_ <= 64) {
        ahead_ |= std::uint64_t{1} << (pos - completed_ - 1);
      } else {
        beyond_.push_back(pos);
      }
      return;
    }
    ++completed_;  // bit i is position completed_ + i until the shift below
    for (;;) {
      while (ahead_ & 1) {
        ahead_ >>= 1;
        ++completed_;
      }
      bool next = false;  // position completed_ was in the list
      for (std::size_t i = 0; i < beyond_.size();) {
        const std::uint32_t d = beyond_[i] - completed_;
        if (d >= 64) {
          ++i;
          continue;
        }
        ahead_ |= std::uint64_t{1} << d;
        next = next || d == 0;
        beyond_[i] = beyond_.back();
        beyond_.pop_back();
      }
      if (!next) break;
    }
    ahead_ >>= 1;
  }

  // Every position below has completed.
  [[nodiscard]] std::uint32_t prefix() const { return completed_; }
  // Completed positions kept in the list (more than 63 past the prefix), for tests.
  [[nodiscard]] std::size_t listed() const { return beyond_.size(); }

 private:
  std::uint32_t completed_ = 0;
  std::uint64_t ahead_ = 0;            // bit i: position completed_ + 1 + i has completed
  std::vector<std::uint32_t> beyond_;  // completed positions past completed_ + 63 not in the bits, unordered
};

}  // namespace tpusim::models
