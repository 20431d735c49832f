#pragma once
// Mirrored chips (models/README.md "Mirrored chips"): one representative per class runs as a Chip; each other
// member of its class (a mirror) has no Chip. The classes are the translation classes
// (mirror/translation_classes.h) or a refinement of them (SimOptions::mirror_partition). The network runs every
// chip in full: when a representative starts an ICI instruction the interconnect starts it on each of its
// mirrors at the same tick, and what the network does to a mirror is checked here against what it does to its
// representative, tick by tick:
//   - completions: the ICI instructions completing on each member at a tick (instruction and start tick) must be
//     its representative's at that tick; compared once the tick is over (advance), so a member completing one
//     tick early or late is caught at the first tick they differ;
//   - VPU reservations of its collectives' reductions: the k-th of each member of a class must be the class's
//     k-th (same tick, TensorCore, instruction, duration); the first member to make it reserves the
//     representative's VPU, the others get the same end;
//   - HBM charges of its collectives' steps: the charges each member makes at a tick must be its
//     representative's (instruction, slot, bytes, spread), in any order (a chip issues them in slot order); the
//     first member to make one charges the representative's HBM, and when that HBM has moved the bytes every
//     member that made the charge hears of it (charge_done). A charge is not
//     an input in the sense below: what it does to the HBM's rates does not depend on its order relative to
//     the chip's own activation at that tick (the shared scheduler's shares depend on the set of transfers; the
//     fifo scheduler serves in arrival order, an exposure this leaves open);
//   - same-tick order: a chip's behaviour depends on its inputs alone, except where an input reaches it at a
//     tick at which the chip has its own (timed) activation, or two reservations reach it at one tick: the
//     kernel's process order then decides, and may decide differently for a mirror in the full run. Both are
//     reported as mismatches;
//   - at the end, every mirror has taken every completion and made every reservation of its representative.
// A member that received something else at a tick diverged there; from the next tick on it is frozen (the
// network starts nothing more on it, and it reserves and charges nothing on its representative), a guess of what
// a member that fell behind does, so that the run goes on to find the members its divergence reaches. At the
// end (or once half the chips diverged) the run fails (RunControl::fail with MirrorMismatch) and refined() gives
// finer classes, the diverged members split off by when they diverged and what they received then, for the
// caller to try next: only a run with no divergence counts. Everything else (a same-tick order, the checks at
// the end) is a mismatch no refinement follows (refinable() false). simulate() then throws MirrorFallback
// (models/src/simulate.cpp).
#include <cstdint>
#include <map>
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
  [[nodiscard]] bool frozen(std::uint32_t chip) const override {
    return div_.tick[chip] < now_.tick && classes_.mirrored(chip);
  }
  [[nodiscard]] std::uint32_t representative(std::uint32_t chip) const { return classes_.representative[chip]; }
  [[nodiscard]] const std::vector<std::uint32_t>& mirrors(std::uint32_t rep) const override {
    return part_.mirrors[rep];
  }

  // Wiring, by the pod: a representative's chip, whose VPU its class's reductions reserve.
  void attach_representative(std::uint32_t rep, Chip& chip);
  // net::MirrorCheck, as the interconnect calls it (net/mirror_check.h).
  [[nodiscard]] ChipPort& vpu(std::uint32_t chip) override { return *part_.ports[chip]; }
  [[nodiscard]] std::vector<Charger> charge_done(std::uint32_t rep, std::uint32_t token) override;
  void advance(Tick now) override;
  void completed(std::uint32_t chip, std::uint32_t instr, Tick started, Tick now) override;
  void input(std::uint32_t chip, Tick now) override;
  void check_take(std::uint32_t mirror, bool taken, std::uint32_t instr, Tick started, Tick done,
                  std::uint32_t rep_instr, Tick rep_started, Tick rep_done) override;
  void unit_full(std::uint32_t mirror, std::uint32_t instr, Tick now) override;
  void check_end(const std::function<bool(std::uint32_t)>& busy) override;
  void mismatch(std::uint32_t chip, const std::string& what) override;
  // After the kernel stopped: compares the last tick, and fails the run if a member diverged.
  void finish();
  [[nodiscard]] bool failed() const { return !failure_.empty(); }
  [[nodiscard]] const std::string& failure() const { return failure_; }
  // A failure that finer classes may avoid: every member that diverged at the first tick any did.
  [[nodiscard]] bool refinable() const { return failed() && refinable_; }
  // The classes to try next (each chip's representative, its class's lowest chip); only when refinable().
  [[nodiscard]] std::vector<std::uint32_t> refined() const;

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
  struct Completion {
    std::uint32_t cls, chip, instr;
    Tick started;
  };
  class Port;
  Tick reserve(std::uint32_t chip, int core, std::uint32_t instr, Tick now, Tick duration);
  void charge(std::uint32_t chip, std::uint32_t slot, std::uint32_t instr, Tick now, std::uint64_t read,
              std::uint64_t written, Tick spread);
  // `chip` received something its representative did not at tick `at` (what: how, also its new class's key).
  void diverge(std::uint32_t chip, Tick at, const std::string& what);
  // Compares what reached each member at now_.tick with its representative's.
  void audit();
  void fail_diverged();

  TranslationClasses classes_;
  RunControl& control_;
  bool inject_;
  // The classes' members, looked up both ways.
  struct Partition {
    std::vector<std::vector<std::uint32_t>> mirrors;  // [representative]
    std::vector<std::uint32_t> class_of;              // [chip]: dense class index
    std::vector<std::uint32_t> rep_of_class;          // [class]
    std::vector<Chip*> chip_of_class;
    std::vector<std::unique_ptr<ChipPort>> ports;  // [chip]
  } part_;
  // What each class's first members made, and how far each member has made it.
  struct ClassLogs {
    std::vector<std::vector<Reservation>> reservations;  // [class]
    std::vector<std::size_t> reservations_made;          // [chip]
    std::vector<std::vector<Charge>> charges;            // [class]
    std::vector<std::size_t> charges_made;               // [chip]
    std::vector<std::vector<std::size_t>> joined;        // [chip]: its class's charges it made at joined_tick
    std::vector<Tick> joined_tick;                       // [chip]
  } logs_;
  // The tick the network acts at, and what reached the members at it: completions, and the reservations and
  // charges a class's first member made (each member must make them at the same tick).
  struct TickAudit {
    Tick tick = 0;
    std::vector<Completion> completions;
    std::vector<std::pair<std::uint32_t, std::size_t>> new_reservations, new_charges;  // (class, index)
    std::vector<std::uint64_t> mark;                                                   // [chip]: scratch of audit()
    std::uint64_t stamp = 0;
  } now_;
  // Divergences: each member's first, with what it received then. A mirror that diverged at an earlier tick
  // than the network's is frozen: no more starts, and no reservations or charges on its representative.
  struct Divergences {
    std::vector<Tick> tick;         // [chip], kNever: none
    std::vector<std::string> what;  // [chip]
    std::uint32_t count = 0;
  } div_;
  std::string failure_;
  bool refinable_ = false;
};

}  // namespace tpusim::models
