#pragma once
// The ICI unit of every chip as the chip's sequencer sees it: which ICI instruction it runs, since when, and
// whether it has completed. The engines (collective, point-to-point) mark completion with finish(); the chip
// collects it with take_completed() from its own activation.
//
// Waking: finish() wakes the chip with a delta notification, except while the chip is inside
// Interconnect::start() (between begin_start() and end_start()): its own activation collects the completion
// before it returns, and a wake after its last instruction would activate a finished chip.
#include <cstdint>
#include <vector>

#include <systemc>

#include "../ticks.h"

namespace tpusim::models::net {

class IciUnits {
 public:
  explicit IciUnits(std::size_t chips) : units_(chips), wake_(chips, nullptr) {}

  void attach(std::uint32_t chip, sc_core::sc_event& wake) { wake_[chip] = &wake; }

  [[nodiscard]] bool busy(std::uint32_t chip) const { return units_[chip].instr != kIdle; }
  [[nodiscard]] std::uint32_t instr(std::uint32_t chip) const { return units_[chip].instr; }
  [[nodiscard]] Tick started(std::uint32_t chip) const { return units_[chip].started; }
  // The running instruction has not completed yet.
  [[nodiscard]] bool running(std::uint32_t chip) const { return busy(chip) && !units_[chip].done; }

  // Starts `instr` on the chip's unit (which must be idle), inside Interconnect::start().
  void begin_start(std::uint32_t chip, std::uint32_t instr, Tick now) {
    Unit& u = units_[chip];
    u.instr = instr;
    u.started = now;
    u.done = false;
    starting_ = chip;
  }
  void end_start() { starting_ = kIdle; }

  void finish(std::uint32_t chip) {
    units_[chip].done = true;
    if (chip != starting_) wake_[chip]->notify(sc_core::SC_ZERO_TIME);
  }

  // If the chip's running instruction has completed: returns true with it and its start tick, and frees the unit.
  bool take_completed(std::uint32_t chip, std::uint32_t& instr, Tick& started) {
    Unit& u = units_[chip];
    if (u.instr == kIdle || !u.done) return false;
    instr = u.instr;
    started = u.started;
    u.instr = kIdle;
    u.done = false;
    return true;
  }

 private:
  static constexpr std::uint32_t kIdle = 0xffffffffU;
  struct Unit {
    std::uint32_t instr = kIdle;
    bool done = false;
    Tick started = 0;
  };
  std::vector<Unit> units_;
  std::vector<sc_core::sc_event*> wake_;
  std::uint32_t starting_ = kIdle;
};

}  // namespace tpusim::models::net
