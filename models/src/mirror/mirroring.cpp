#include "mirror/mirroring.h"

#include <algorithm>
#include <tuple>

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
  part_.mirrors.resize(chips);
  part_.class_of.resize(chips);
  logs_.reservations_made.assign(chips, 0);
  logs_.charges_made.assign(chips, 0);
  std::vector<std::uint32_t> index(chips, 0);
  for (std::uint32_t c = 0; c < chips; ++c) {
    const std::uint32_t rep = classes_.representative[c];
    if (rep == c) {
      index[c] = static_cast<std::uint32_t>(logs_.reservations.size());
      logs_.reservations.emplace_back();
      logs_.charges.emplace_back();
      part_.chip_of_class.push_back(nullptr);
      part_.rep_of_class.push_back(c);
    } else {
      part_.mirrors[rep].push_back(c);
    }
    part_.class_of[c] = index[rep];  // a representative is its class's lowest chip: indexed before its mirrors
    part_.ports.push_back(std::make_unique<Port>(*this, c));
  }
  logs_.joined.resize(chips);
  div_.tick.assign(chips, kNever);
  div_.what.resize(chips);
  logs_.joined_tick.assign(chips, kNever);
  now_.mark.assign(chips, 0);
}

void Mirroring::attach_representative(std::uint32_t rep, Chip& chip) {
  part_.chip_of_class[part_.class_of[rep]] = &chip;
}

void Mirroring::mismatch(std::uint32_t chip, const std::string& what) {
  // Once a member diverged, what follows may be its consequence: the refinement goes first.
  if (!failure_.empty() || div_.count > 0) return;
  failure_ = fmt::format("chip {} (mirroring chip {}): {}", chip, classes_.representative[chip], what);
  control_.fail(std::make_exception_ptr(MirrorMismatch(failure_)));
}

void Mirroring::diverge(std::uint32_t chip, Tick at, const std::string& what) {
  if (!failure_.empty()) return;
  Tick& first = div_.tick[chip];
  if (at > first) return;
  if (first == kNever) ++div_.count;
  if (at < first) {
    first = at;
    div_.what[chip].clear();
  }
  std::string& all = div_.what[chip];
  if (!all.empty()) all += "; ";
  all += what;
}

void Mirroring::advance(Tick now) {
  if (now <= now_.tick) return;
  audit();
  now_.tick = now;
  // Past half the chips the refined classes would be too many to be worth another run.
  if (div_.count > chip_count() / 2 && failure_.empty()) fail_diverged();
}

void Mirroring::finish() {
  audit();
  if (div_.count > 0 && failure_.empty()) fail_diverged();
}

void Mirroring::fail_diverged() {
  std::uint32_t chip = 0;
  for (std::uint32_t c = 0; c < chip_count(); ++c) {
    if (div_.tick[c] < div_.tick[chip]) chip = c;
  }
  Tick last = 0;
  for (const Tick t : div_.tick) last = t == kNever ? last : std::max(last, t);
  failure_ = fmt::format("chip {} (mirroring chip {}) at tick {}: {}", chip, classes_.representative[chip],
                         div_.tick[chip], div_.what.at(chip));
  if (div_.count > 1) {
    failure_ += fmt::format(" ({} more chips diverged, up to tick {})", div_.count - 1, last);
  }
  refinable_ = true;
  control_.fail(std::make_exception_ptr(MirrorMismatch(failure_)));
}

void Mirroring::input(std::uint32_t chip, Tick now) {
  const Chip* rep = part_.chip_of_class[part_.class_of[chip]];
  if (rep != nullptr && rep->own_activation_at(now)) {
    mismatch(chip, fmt::format("an ICI input at tick {}, when its representative also has its own activation "
                               "(the kernel's process order decides)",
                               now));
  }
}

void Mirroring::completed(std::uint32_t chip, std::uint32_t instr, Tick started, Tick now) {
  if (frozen(chip)) return;
  input(chip, now);
  now_.completions.push_back(Completion{part_.class_of[chip], chip, instr, started});
}

void Mirroring::audit() {
  // Completions: each member's at now_.tick must be its representative's. Sorted by class, then chip: a class's
  // representative, its lowest chip, comes first.
  std::sort(now_.completions.begin(), now_.completions.end(), [](const Completion& a, const Completion& b) {
    return std::tie(a.cls, a.chip, a.instr, a.started) < std::tie(b.cls, b.chip, b.instr, b.started);
  });
  using It = std::vector<Completion>::const_iterator;
  const auto describe = [](It first, It last) {
    if (first == last) return std::string("completed nothing");
    std::string out = "completed";
    for (It it = first; it != last; ++it) out += fmt::format(" {} (started {})", it->instr, it->started);
    return out;
  };
  const auto of_chip = [](It first, It last, std::uint32_t chip) {
    return std::find_if(first, last, [chip](const Completion& c) { return c.chip != chip; });
  };
  const auto same = [](It a, It a_end, It b, It b_end) {
    return std::equal(a, a_end, b, b_end, [](const Completion& x, const Completion& y) {
      return x.instr == y.instr && x.started == y.started;
    });
  };
  std::vector<std::uint32_t> seen;  // ascending
  for (It begin = now_.completions.begin(); begin != now_.completions.end();) {
    const std::uint32_t cls = begin->cls, rep = part_.rep_of_class[cls];
    const It end = std::find_if(begin, now_.completions.cend(), [cls](const Completion& c) { return c.cls != cls; });
    const It rep_end = of_chip(begin, end, rep);
    seen.clear();
    for (It it = rep_end; it != end;) {
      const It chip_end = of_chip(it, end, it->chip);
      if (!frozen(it->chip) && !same(it, chip_end, begin, rep_end)) {
        diverge(it->chip, now_.tick,
                fmt::format("{} where its representative {}", describe(it, chip_end), describe(begin, rep_end)));
      }
      seen.push_back(it->chip);
      it = chip_end;
    }
    if (rep_end != begin && seen.size() < part_.mirrors[rep].size()) {
      for (const std::uint32_t m : part_.mirrors[rep]) {
        if (!frozen(m) && !std::binary_search(seen.begin(), seen.end(), m)) {
          diverge(m, now_.tick, fmt::format("completed nothing where its representative {}", describe(begin, rep_end)));
        }
      }
    }
    begin = end;
  }
  now_.completions.clear();
  // Reservations a class's first member made at now_.tick: every member makes them at this tick if its
  // representative did, none if it did not (one that differs was reported as it was made).
  const auto as_representative = [this](const std::vector<std::pair<std::uint32_t, std::size_t>>& made,
                                        const std::vector<std::size_t>& cursor, const char* what) {
    for (const auto& [cls, k] : made) {
      const std::uint32_t rep = part_.rep_of_class[cls];
      const bool by_rep = cursor[rep] > k;
      for (const std::uint32_t m : part_.mirrors[rep]) {
        if (frozen(m) || (cursor[m] > k) == by_rep) continue;
        diverge(m, now_.tick,
                by_rep ? fmt::format("made no {} {}, which its representative made", what, k)
                       : fmt::format("made {} {}, which its representative did not", what, k));
      }
    }
  };
  as_representative(now_.new_reservations, logs_.reservations_made, "VPU reservation");
  now_.new_reservations.clear();
  // Charges: every member makes each of its representative's at this tick, and no other.
  for (const auto& [cls, k] : now_.new_charges) {
    const Charge& c = logs_.charges[cls][k];
    const std::uint32_t rep = part_.rep_of_class[cls];
    ++now_.stamp;
    for (const Charger& m : c.members) now_.mark[m.chip] = now_.stamp;
    const bool by_rep = now_.mark[rep] == now_.stamp;
    for (const std::uint32_t m : part_.mirrors[rep]) {
      if (frozen(m) || (now_.mark[m] == now_.stamp) == by_rep) continue;
      diverge(m, now_.tick,
              fmt::format("{} HBM charge (instruction {}, slot {}, {} bytes read, {} written){}",
                          by_rep ? "made no" : "made an", c.instr, c.slot, c.read, c.written,
                          by_rep ? ", which its representative made" : ", which its representative did not"));
    }
  }
  now_.new_charges.clear();
}

std::vector<std::uint32_t> Mirroring::refined() const {
  std::vector<std::uint32_t> rep = classes_.representative;
  // (old representative, tick, what) -> the lowest chip of the new class
  std::map<std::tuple<std::uint32_t, Tick, std::string>, std::uint32_t> lowest;
  const auto diverged = [this](std::uint32_t c) { return div_.tick[c] != kNever; };
  const auto key_of = [this](std::uint32_t c) { return std::pair{div_.tick[c], div_.what.at(c)}; };
  for (std::uint32_t c = 0; c < rep.size(); ++c) {
    const std::uint32_t r = classes_.representative[c];
    if (r == c) continue;
    std::pair<Tick, std::string> key;
    if (diverged(r)) {
      // The representative made something its class's first member did not: the members that did not diverge
      // are with that first member, the ones that diverged as their representative did are with it.
      if (!diverged(c)) {
        key = {kNever, "as its class's first member"};
      } else if (key_of(c) == key_of(r)) {
        continue;
      } else {
        key = key_of(c);
      }
    } else if (!diverged(c)) {
      continue;
    } else {
      key = key_of(c);
    }
    // Chips ascending: a new class's first chip is its lowest.
    rep[c] = lowest.try_emplace({r, key.first, key.second}, c).first->second;
  }
  return rep;
}

void Mirroring::check_take(std::uint32_t mirror, bool taken, std::uint32_t instr, Tick started, Tick done,
                           std::uint32_t rep_instr, Tick rep_started, Tick rep_done) {
  if (inject_) {
    mismatch(mirror, "injected (TPUSIM_MIRROR=mismatch)");
    return;
  }
  if (frozen(mirror)) return;
  if (!taken) {
    diverge(mirror, rep_done,
            fmt::format("instruction {} completed on its representative at tick {}, not on the mirror", rep_instr,
                        rep_done));
  } else if (instr != rep_instr || started != rep_started || done != rep_done) {
    diverge(mirror, std::min(done, rep_done),
            fmt::format("completed instruction {} (started {}, done {}) where its representative completed {} "
                        "(started {}, done {})",
                        instr, started, done, rep_instr, rep_started, rep_done));
  }
}

void Mirroring::unit_full(std::uint32_t mirror, std::uint32_t instr, Tick now) {
  diverge(mirror, now, fmt::format("its ICI unit is full when its representative starts instruction {}", instr));
}

Tick Mirroring::reserve(std::uint32_t chip, int core, std::uint32_t instr, Tick now, Tick duration) {
  if (frozen(chip)) return now + duration;  // the run is failing: its representative's VPU is not touched
  input(chip, now);
  const std::uint32_t cls = part_.class_of[chip];
  std::vector<Reservation>& log = logs_.reservations[cls];
  std::size_t& k = logs_.reservations_made[chip];
  if (k < log.size()) {
    const Reservation& r = log[k++];
    if (r.now != now || r.core != core || r.instr != instr || r.duration != duration) {
      diverge(chip, std::min(now, r.now),
              fmt::format("made VPU reservation {} (instruction {}, tick {}, {} ticks) where its class's first "
                          "member made instruction {}'s at tick {} for {} ticks",
                          k - 1, instr, now, duration, r.instr, r.now, r.duration));
    }
    return r.end;
  }
  // The class's first member to make this reservation makes it on the representative's VPU.
  Chip* rep = part_.chip_of_class[cls];
  const Tick end = rep->reserve_vpu(core, instr, now, duration);
  log.push_back(Reservation{now, duration, end, instr, core});
  now_.new_reservations.emplace_back(cls, k);
  ++k;
  return end;
}

void Mirroring::charge(std::uint32_t chip, std::uint32_t slot, std::uint32_t instr, Tick now, std::uint64_t read,
                       std::uint64_t written, Tick spread) {
  if (frozen(chip)) return;  // the run is failing: its representative's HBM is not charged
  const std::uint32_t cls = part_.class_of[chip];
  std::vector<Charge>& log = logs_.charges[cls];
  ++logs_.charges_made[chip];
  std::vector<std::size_t>& joined = logs_.joined[chip];
  if (logs_.joined_tick[chip] != now) {
    joined.clear();
    logs_.joined_tick[chip] = now;
  }
  // The charges of one tick are a set (the chip issues them in slot order: CollectiveSide::take): join the
  // class's charge like this one made at this tick, if this chip has not joined it yet.
  for (std::size_t i = log.size(); i-- > 0 && log[i].now == now;) {
    Charge& c = log[i];
    if (c.instr == instr && c.slot == slot && c.read == read && c.written == written && c.spread == spread &&
        std::find(joined.begin(), joined.end(), i) == joined.end()) {
      c.members.push_back(Charger{chip, slot});
      joined.push_back(i);
      return;
    }
  }
  // The class's first member to make this charge makes it on the representative's HBM, under its index.
  part_.chip_of_class[cls]->charge_hbm(slot, static_cast<std::uint32_t>(log.size()), instr, now, read, written, spread);
  joined.push_back(log.size());
  now_.new_charges.emplace_back(cls, log.size());
  log.push_back(Charge{now, instr, slot, read, written, spread, {Charger{chip, slot}}});
}

void Mirroring::check_end(const std::function<bool(std::uint32_t)>& busy) {
  for (std::uint32_t c = 0; c < classes_.representative.size(); ++c) {
    if (busy(c)) mismatch(c, "an ICI instruction left in flight at the end");
    if (logs_.reservations_made[c] != logs_.reservations[part_.class_of[c]].size())
      mismatch(c, "fewer VPU reservations than its class");
    if (logs_.charges_made[c] != logs_.charges[part_.class_of[c]].size())
      mismatch(c, "fewer HBM charges than its class");
  }
}

std::vector<Mirroring::Charger> Mirroring::charge_done(std::uint32_t rep, std::uint32_t token) {
  Charge& c = logs_.charges[part_.class_of[rep]].at(token);
  if (c.now == now_.tick) return c.members;  // this tick's audit still reads them
  return std::move(c.members);
}

}  // namespace tpusim::models
