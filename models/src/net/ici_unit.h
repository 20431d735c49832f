#pragma once
// The ICI unit of every chip as the chip's sequencer sees it: up to kIciOperationsInFlight ICI instructions
// (collectives, sends, recvs, remote puts) in flight at once, each in a slot, started in the chip's ICI
// queue order and completing independently. The engines mark a slot's completion with finish(); the chip
// collects completions with take_completed() from its own activation, oldest start first.
//
// Waking: finish() wakes the chip with a delta notification, except while the chip is inside
// Interconnect::start() (between begin_start() and end_start()): its own activation collects the completion
// before it returns, and a wake after its last instruction would activate a finished chip.
#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "../ticks.h"

namespace tpusim::models::net {

// Assumption: a chip's ICI unit keeps up to 8 operations in flight (the DMA engines behind the ICI ports take
// several descriptor chains at once; the number is not published). Enough for what an XLA schedule overlaps
// in one layer: a weight all-gather, a gradient reduce-scatter, pipeline sends and receives, and a few
// data-parallel gradient buckets.
inline constexpr int kIciOperationsInFlight = 8;

using Slot = std::uint32_t;

class IciUnits {
 public:
  static constexpr int kSlots = kIciOperationsInFlight;
  static_assert(kSlots >= 1, "an ICI unit needs a slot");

  explicit IciUnits(std::size_t chips) : slots_(chips * kSlots), count_(chips, 0), wake_(chips, nullptr) {}

  // `wake` null: a mirrored chip (mirror/mirroring.h), which nothing wakes; `input` (with mirroring) hears of
  // every completion that reaches a chip from outside its own start: the instruction, its start and `now`.
  void attach(std::uint32_t chip, sc_core::sc_event* wake) { wake_[chip] = wake; }
  using InputWatch = std::function<void(std::uint32_t chip, std::uint32_t instr, Tick started, Tick now)>;
  void watch_inputs(InputWatch input) { input_ = std::move(input); }

  // Some instruction is in flight (running, or completed and not yet taken).
  [[nodiscard]] bool busy(std::uint32_t chip) const { return count_[chip] > 0; }
  // No slot is free: the chip's next ICI instruction waits.
  [[nodiscard]] bool full(std::uint32_t chip) const { return count_[chip] == kSlots; }

  // Takes a free slot for `instr` (the unit must not be full), inside Interconnect::start().
  [[nodiscard]] Slot begin_start(std::uint32_t chip, std::uint32_t instr, Tick now) {
    Slot s = 0;
    while (slot(chip, s).instr != kIdle) ++s;
    Entry& e = slot(chip, s);
    e.instr = instr;
    e.started = now;
    e.done = false;
    e.order = next_order_++;
    ++count_[chip];
    starting_ = chip;
    return s;
  }
  void end_start() { starting_ = kIdle; }

  void finish(std::uint32_t chip, Slot s) {
    Entry& e = slot(chip, s);
    e.done = true;
    if (!input_) {
      if (chip != starting_) wake_[chip]->notify(sc_core::SC_ZERO_TIME);
      return;
    }
    e.finished = sc_core::sc_time_stamp().value();  // the network runs at the kernel's time
    if (chip == starting_) return;
    input_(chip, e.instr, e.started, e.finished);
    if (wake_[chip] != nullptr) wake_[chip]->notify(sc_core::SC_ZERO_TIME);
  }

  // If an instruction of the chip has completed: returns true with the oldest such (by start) and its start
  // tick, and frees its slot.
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started) {
    Tick finished = 0;
    return take_completed(chip, instr, started, finished);
  }
  // The same, with the tick it finished at (recorded with watch_inputs only).
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started, Tick& finished) {
    if (count_[chip] == 0) return false;
    Entry* oldest = nullptr;
    for (Slot s = 0; s < kSlots; ++s) {
      Entry& e = slot(chip, s);
      if (e.instr != kIdle && e.done && (oldest == nullptr || e.order < oldest->order)) oldest = &e;
    }
    if (oldest == nullptr) return false;
    instr = oldest->instr;
    started = oldest->started;
    finished = oldest->finished;
    oldest->instr = kIdle;
    oldest->done = false;
    --count_[chip];
    return true;
  }

 private:
  static constexpr std::uint32_t kIdle = 0xffffffffU;
  struct Entry {
    std::uint32_t instr = kIdle;
    bool done = false;
    Tick started = 0;
    Tick finished = 0;        // with watch_inputs only
    std::uint64_t order = 0;  // start order
  };
  Entry& slot(std::uint32_t chip, Slot s) { return slots_[static_cast<std::size_t>(chip) * kSlots + s]; }
  [[nodiscard]] const Entry& slot(std::uint32_t chip, Slot s) const {
    return slots_[static_cast<std::size_t>(chip) * kSlots + s];
  }

  std::vector<Entry> slots_;  // [chip][slot]
  std::vector<std::uint8_t> count_;
  std::vector<sc_core::sc_event*> wake_;
  InputWatch input_;
  std::uint32_t starting_ = kIdle;
  std::uint64_t next_order_ = 0;
};

}  // namespace tpusim::models::net
