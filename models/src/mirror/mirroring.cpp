#include "mirror/mirroring.h"

#include <fmt/format.h>

#include "chip/chip.h"

namespace tpusim::models {

class Mirroring::Port final : public ChipPort {
 public:
  Port(Mirroring& m, std::uint32_t chip) : m_(m), chip_(chip) {}
  Tick reserve_vpu(int core, std::uint32_t instr, Tick now, Tick duration) override {
    return m_.reserve(chip_, core, instr, now, duration);
  }
  void charge_hbm(std::uint32_t slot, std::uint32_t /*token*/, std::uint32_t instr, Tick now, std::uint64_t read,
                  std::uint64_t written, Tick spread) override {
    m_.charge(chip_, slot, instr, now, read, written, spread);
  }

 private:
  Mirroring& m_;
  std::uint32_t chip_;
};

Mirroring::Mirroring(TranslationClasses classes, RunControl& control, bool inject_mismatch)
    : classes_(std::move(classes)), control_(control), inject_(inject_mismatch) {
  const std::size_t chips = classes_.representative.size();
  mirrors_.resize(chips);
  class_of_.resize(chips);
  cursor_.assign(chips, 0);
  charge_cursor_.assign(chips, 0);
  std::vector<std::uint32_t> index(chips, 0);
  for (std::uint32_t c = 0; c < chips; ++c) {
    const std::uint32_t rep = classes_.representative[c];
    if (rep == c) {
      index[c] = static_cast<std::uint32_t>(log_.size());
      log_.emplace_back();
      charges_.emplace_back();
      chip_of_class_.push_back(nullptr);
    } else {
      mirrors_[rep].push_back(c);
    }
    class_of_[c] = index[rep];  // a representative is its class's lowest chip: indexed before its mirrors
    ports_.push_back(std::make_unique<Port>(*this, c));
  }
}

void Mirroring::attach_representative(std::uint32_t rep, Chip& chip) { chip_of_class_[class_of_[rep]] = &chip; }

void Mirroring::mismatch(std::uint32_t chip, const std::string& what) {
  if (!failure_.empty()) return;
  failure_ = fmt::format("chip {} (mirroring chip {}): {}", chip, classes_.representative[chip], what);
  control_.fail(std::make_exception_ptr(MirrorMismatch(failure_)));
}

void Mirroring::input(std::uint32_t chip, Tick now) {
  const Chip* rep = chip_of_class_[class_of_[chip]];
  if (rep != nullptr && rep->own_activation_at(now)) {
    mismatch(chip, fmt::format("an ICI input at tick {}, when its representative also has its own activation "
                               "(the kernel's process order decides)",
                               now));
  }
}

void Mirroring::check_take(std::uint32_t mirror, bool taken, std::uint32_t instr, Tick started, Tick done,
                           std::uint32_t rep_instr, Tick rep_started, Tick rep_done) {
  if (inject_) {
    mismatch(mirror, "injected (TPUSIM_MIRROR=mismatch)");
    return;
  }
  if (!taken) {
    mismatch(mirror, fmt::format("instruction {} completed on its representative at tick {}, not on the mirror",
                                 rep_instr, rep_done));
  } else if (instr != rep_instr || started != rep_started || done != rep_done) {
    mismatch(mirror, fmt::format("completed instruction {} (started {}, done {}) where its representative "
                                 "completed {} (started {}, done {})",
                                 instr, started, done, rep_instr, rep_started, rep_done));
  }
}

Tick Mirroring::reserve(std::uint32_t chip, int core, std::uint32_t instr, Tick now, Tick duration) {
  input(chip, now);
  std::vector<Reservation>& log = log_[class_of_[chip]];
  std::size_t& k = cursor_[chip];
  if (k < log.size()) {
    const Reservation& r = log[k++];
    if (r.now != now || r.core != core || r.instr != instr || r.duration != duration) {
      mismatch(chip, fmt::format("VPU reservation {} (instruction {}, tick {}, {} ticks) where its class made "
                                 "instruction {}'s at tick {} for {} ticks",
                                 k - 1, instr, now, duration, r.instr, r.now, r.duration));
    }
    return r.end;
  }
  // The class's first member to make this reservation makes it on the representative's VPU.
  Chip* rep = chip_of_class_[class_of_[chip]];
  const Tick end = rep->reserve_vpu(core, instr, now, duration);
  log.push_back(Reservation{now, duration, end, instr, core});
  ++k;
  return end;
}

void Mirroring::charge(std::uint32_t chip, std::uint32_t slot, std::uint32_t instr, Tick now, std::uint64_t read,
                       std::uint64_t written, Tick spread) {
  std::vector<Charge>& log = charges_[class_of_[chip]];
  std::size_t& k = charge_cursor_[chip];
  if (k < log.size()) {
    Charge& c = log[k++];
    if (c.now != now || c.instr != instr || c.slot != slot || c.read != read || c.written != written ||
        c.spread != spread) {
      mismatch(chip, fmt::format("HBM charge {} (instruction {}, slot {}, tick {}, {} bytes read, {} written) where its "
                                 "class made instruction {}'s (slot {}, tick {}, {} read, {} written)",
                                 k - 1, instr, slot, now, read, written, c.instr, c.slot, c.now, c.read, c.written));
      return;
    }
    c.members.push_back(Charger{chip, slot});
    return;
  }
  // The class's first member to make this charge makes it on the representative's HBM, under its index.
  chip_of_class_[class_of_[chip]]->charge_hbm(slot, static_cast<std::uint32_t>(log.size()), instr, now, read, written,
                                              spread);
  log.push_back(Charge{now, instr, slot, read, written, spread, {Charger{chip, slot}}});
  ++k;
}

void Mirroring::check_end(const std::function<bool(std::uint32_t)>& busy) {
  for (std::uint32_t c = 0; c < classes_.representative.size(); ++c) {
    if (busy(c)) mismatch(c, "an ICI instruction left in flight at the end");
    if (cursor_[c] != log_[class_of_[c]].size()) mismatch(c, "fewer VPU reservations than its class");
    if (charge_cursor_[c] != charges_[class_of_[c]].size()) mismatch(c, "fewer HBM charges than its class");
  }
}

std::vector<Mirroring::Charger> Mirroring::charge_done(std::uint32_t rep, std::uint32_t token) {
  return std::move(charges_[class_of_[rep]].at(token).members);
}

}  // namespace tpusim::models
