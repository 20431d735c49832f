#pragma once
// Mirrored chips (models/README.md "Mirrored chips"): one representative per translation class
// (mirror/translation_classes.h) runs as a Chip; each other member of its class (a mirror) has no Chip. The
// network runs every chip in full: when a representative starts an ICI instruction the interconnect starts
// it on each of its mirrors at the same tick, and what the network does to a mirror is checked here against
// what it does to its representative, as it happens:
//   - completions: when the representative takes a completed ICI instruction (Interconnect::take_completed),
//     each mirror must have the same instruction completed, started and finished at the same ticks;
//   - VPU reservations of its collectives' reductions: the k-th of each member of a class must be the class's
//     k-th (same tick, TensorCore, instruction, duration); the first member to make it reserves the
//     representative's VPU, the others get the same end;
//   - HBM charges of its collectives' steps: the k-th of each member of a class must be the class's k-th (same
//     tick, instruction, slot, bytes, spread); the first member to make it charges the representative's HBM, and when
//     that HBM has moved the bytes every member that made the charge hears of it (charge_done). A charge is not
//     an input in the sense below: what it does to the HBM's rates does not depend on its order relative to
//     the chip's own activation at that tick (the shared scheduler's shares depend on the set of transfers; the
//     fifo scheduler serves in arrival order, an exposure this leaves open);
//   - same-tick order: a chip's behaviour depends on its inputs alone, except where an input reaches it at a
//     tick at which the chip has its own (timed) activation, or two reservations reach it at one tick: the
//     kernel's process order then decides, and may decide differently for a mirror in the full run. Both are
//     reported as mismatches;
//   - at the end, every mirror has taken every completion and made every reservation of its representative.
// The first mismatch fails the run (RunControl::fail with MirrorMismatch); simulate() then throws MirrorFallback
// (models/src/simulate.cpp), and the caller simulates the step again with every chip.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ici/chip_port.h"
#include "mirror/translation_classes.h"
#include "net/mirror_check.h"
#include "run_control.h"
#include "ticks.h"

namespace tpusim::models {

class Chip;

// A mirror received something its representative did not (or not at the same tick, or not in the same order).
class MirrorMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Mirroring final : public net::MirrorCheck {
 public:
  // `inject_mismatch` (SimOptions::mirror_mismatch) reports a mismatch at the first completion a mirror takes.
  Mirroring(TranslationClasses classes, RunControl& control, bool inject_mismatch);

  [[nodiscard]] const TranslationClasses& classes() const { return classes_; }
  [[nodiscard]] std::uint32_t chip_count() const override {
    return static_cast<std::uint32_t>(classes_.representative.size());
  }
  [[nodiscard]] bool mirrored(std::uint32_t chip) const override { return classes_.mirrored(chip); }
  [[nodiscard]] std::uint32_t representative(std::uint32_t chip) const { return classes_.representative[chip]; }
  [[nodiscard]] const std::vector<std::uint32_t>& mirrors(std::uint32_t rep) const override { return mirrors_[rep]; }

  // Wiring, by the pod: a representative's chip, whose VPU its class's reductions reserve.
  void attach_representative(std::uint32_t rep, Chip& chip);
  // net::MirrorCheck, as the interconnect calls it (net/mirror_check.h).
  [[nodiscard]] ChipPort& vpu(std::uint32_t chip) override { return *ports_[chip]; }
  [[nodiscard]] std::vector<Charger> charge_done(std::uint32_t rep, std::uint32_t token) override;
  void input(std::uint32_t chip, Tick now) override;
  void check_take(std::uint32_t mirror, bool taken, std::uint32_t instr, Tick started, Tick done,
                  std::uint32_t rep_instr, Tick rep_started, Tick rep_done) override;
  void check_end(const std::function<bool(std::uint32_t)>& busy) override;
  void mismatch(std::uint32_t chip, const std::string& what) override;
  [[nodiscard]] bool failed() const { return !failure_.empty(); }
  [[nodiscard]] const std::string& failure() const { return failure_; }

 private:
  struct Reservation {
    Tick now, duration, end;
    std::uint32_t instr;
    int core;
  };
  struct Charge {
    Tick now;
    std::uint32_t instr, slot;
    std::uint64_t read, written;
    Tick spread;
    std::vector<Charger> members;  // until charge_done
  };
  class Port;
  Tick reserve(std::uint32_t chip, int core, std::uint32_t instr, Tick now, Tick duration);
  void charge(std::uint32_t chip, std::uint32_t slot, std::uint32_t instr, Tick now, std::uint64_t read,
              std::uint64_t written, Tick spread);

  TranslationClasses classes_;
  RunControl& control_;
  bool inject_;
  std::vector<std::vector<std::uint32_t>> mirrors_;  // [representative]
  std::vector<std::uint32_t> class_of_;              // [chip]: dense class index
  std::vector<Chip*> chip_of_class_;
  std::vector<std::vector<Reservation>> log_;        // [class]
  std::vector<std::size_t> cursor_;                  // [chip]: reservations made
  std::vector<std::vector<Charge>> charges_;         // [class]
  std::vector<std::size_t> charge_cursor_;           // [chip]: HBM charges made
  std::vector<std::unique_ptr<ChipPort>> ports_;     // [chip]
  std::string failure_;
};

}  // namespace tpusim::models
