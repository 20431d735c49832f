// The job timeline (tpusim/models/job.h; docs/faults.md). Time advances in closed form from step boundary to
// step boundary: the steps between two events (a checkpoint, a fault) are composed, never looped over one by
// one, so a year of steps costs as much as the faults in it.
#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tpusim/core/interrupt.h"
#include "tpusim/models/failed_cables.h"
#include "lasting_faults.h"
#include "out_of_use.h"
#include "random_faults.h"
#include "recovery_policy.h"
#include "tpusim/models/job.h"

namespace tpusim::models {
namespace {

constexpr double kNoEnd = std::numeric_limits<double>::infinity();

using job::OutOfUse;
using job::out_of_use;

// "[1,0,0]", and " of pod 1" after it in a multislice.
std::string coord_str(const Topology& topo, ChipId chip) {
  const ChipCoord c = topo.coord(chip);
  return fmt::format("[{}]{}", fmt::join(c.pos.begin(), c.pos.begin() + topo.axes(), ","),
                     topo.pods() > 1 ? fmt::format(" of pod {}", c.pod) : std::string());
}

// "chip [1,0,0] cut off: every cable down"; a split: "pod split by 8 cables down: 4 chips [2,0,0] to [3,1,0]
// cut off from the other 4".
std::string cut_description(const Topology& topo, const job::FailedCables& cables, const std::vector<ChipId>& cut) {
  if (cut.size() == 1) return fmt::format("chip {} cut off: every cable down", coord_str(topo, cut.front()));
  const std::size_t pod = topo.chip_count() / static_cast<std::size_t>(std::max(1, topo.pods()));
  return fmt::format("pod split by {} cables down: {} chips {} to {} cut off from the other {}",
                     cables.between(cut).size(), cut.size(), coord_str(topo, cut.front()),
                     coord_str(topo, cut.back()), pod - cut.size());
}

// The merged stream of timed faults (in `at` order) and random ones, after the faults found at a relaunch: those
// landed while the job was down for a recovery and are met, in time order, when it starts again (they are
// older than any fault left in the stream).
class FaultStream {
 public:
  FaultStream(const Scenario& s, const Topology& topo) : random_(s, topo) {
    for (const FaultSpec& f : s.faults.faults) timed_.push_back(concrete_fault(f, topo, s.seed));
    next_random_ = random_.next();
  }
  [[nodiscard]] double peek() const {
    if (!found_.empty()) return found_.front().spec.at.value();
    const double a = pos_ < timed_.size() ? timed_[pos_].spec.at.value() : kNoEnd;
    const double b = next_random_ ? next_random_->spec.at.value() : kNoEnd;
    return std::min(a, b);
  }
  [[nodiscard]] const ConcreteFault& peek_fault() const {  // the fault peek() times; only when one is left
    if (!found_.empty()) return found_.front();
    const double a = pos_ < timed_.size() ? timed_[pos_].spec.at.value() : kNoEnd;
    const double b = next_random_ ? next_random_->spec.at.value() : kNoEnd;
    return a <= b ? timed_[pos_] : *next_random_;
  }
  // The next fault is one found at a relaunch (already judged in use when it landed).
  [[nodiscard]] bool next_found() const { return !found_.empty(); }
  ConcreteFault pop() {
    if (!found_.empty()) {
      ConcreteFault f = std::move(found_.front());
      found_.pop_front();
      return f;
    }
    const double a = pos_ < timed_.size() ? timed_[pos_].spec.at.value() : kNoEnd;
    const double b = next_random_ ? next_random_->spec.at.value() : kNoEnd;
    if (a <= b) return timed_[pos_++];
    ConcreteFault f = *next_random_;
    next_random_ = random_.next();
    return f;
  }
  // Faults found when the job starts again, in time order, to be met before any other.
  void found(std::vector<ConcreteFault> faults) {
    found_.insert(found_.begin(), std::make_move_iterator(faults.begin()), std::make_move_iterator(faults.end()));
  }

 private:
  std::vector<ConcreteFault> timed_;
  std::size_t pos_ = 0;
  job::RandomFaults random_;
  std::optional<ConcreteFault> next_random_;
  std::deque<ConcreteFault> found_;
};

}  // namespace

JobResult run_job(const Scenario& s, const Topology& topo, const JobCosts& costs, std::size_t max_faults) {
  JobResult r;
  const double healthy = costs.step.value();
  const double write = costs.checkpoint_write.value();
  const int every = s.workload.host.checkpoint.every_steps;
  const double heartbeat = s.job.heartbeat.value();
  const double timeout = s.job.timeout.value();
  // A component failing at `at` is declared failed `timeout` after its last heartbeat, at the last multiple of
  // `heartbeat` before it.
  const auto heartbeat_timeout = [&](double at) { return std::floor(at / heartbeat) * heartbeat + timeout; };
  const bool keeps = keeps_every_step(s);  // a step that trains nothing is kept as it completes
  r.steps = job_steps(s, costs.step, costs.checkpoint_write);

  auto policy = job::make_recovery_policy(s, topo);
  const job::RecoveryContext ctx{s, topo, costs};
  FaultStream faults(s, topo);
  job::FailedCables cables(topo);  // routed around so far (reroute)
  bool in_restore = false;  // the restore is still to be read: a fault interrupted it, or was found before it
  std::vector<OutOfUse> out;  // hardware the job does not use now (a fault on it costs nothing)
  // What a fault landing at `when` is on that the job does not use (nullptr: it is in use).
  auto unused = [&](const ConcreteFault& f, double when) -> const OutOfUse* {
    static const OutOfUse routed{{}, false, std::nullopt, kNoEnd, "cable routed around"};
    if (fault_on_link(f.spec.kind)) {
      if (cables.down(f.link)) return &routed;
    }
    for (const OutOfUse& o : out) {
      if (when < o.until && job::on(topo, o, f)) return &o;
    }
    return nullptr;
  };

  double t = 0;             // wall time at the current step boundary
  double step = healthy;    // the step time now (lasting faults slow it): lasting.step()
  job::LastingFaults lasting(healthy);
  std::int64_t done = 0;    // steps completed (since the start; rolled back on a restart)
  std::int64_t since = 0;   // of which after the last checkpoint
  double since_time = 0;    // their wall time (lost on a rollback)
  double since_slow = 0;    // their slowdown part (moves to `slowdown` when a checkpoint keeps them)
  double slowdown = 0, lost = 0, checkpointing = 0, detection = 0, repair = 0, restart = 0, reconf = 0, restore = 0;

  // The policy's recovery of `fault`. A cable routed around that cuts chips off (its pod no longer connected)
  // fails them: no route reaches them, so the recovery of a failed chip applies, for the first of them (the
  // policy that routes links around keeps no state, so asking it again is safe); that recovery repairs their
  // cables (the timeline does, once the recovery is known to roll back), and `cut_off` says which chips.
  auto recover = [&](const ConcreteFault& fault, std::vector<ChipId>& cut_off) {
    job::Recovery rec = policy->recover(ctx, fault);
    if (rec.lasting && !rec.rollback && fault_stops_cable(fault.spec.kind)) {
      if (std::optional<std::vector<ChipId>> cut = cables.fail(fault.link)) {
        cut_off = std::move(*cut);
        ConcreteFault chip = fault;
        chip.spec.kind = FaultKind::chip_down;
        chip.chip = cut_off.front();
        chip.host = topo.host_of(chip.chip);
        chip.cube = job::cube_of(topo, chip.chip);
        rec = policy->recover(ctx, chip);
        rec.how = fmt::format("{} ({})", rec.how.substr(0, rec.how.find(" (")), cut_description(topo, cables, cut_off));
      } else {
        r.cables_down_at_most = std::max(r.cables_down_at_most, cables.size());  // the job runs on with them
      }
    }
    return rec;
  };
  // `fault` lasts (a slowdown, or a cable routed around) with the step simulated with it.
  auto lasts = [&](const ConcreteFault& fault, double with) {
    lasting.add(fault, with);
    step = lasting.step();
  };
  // A recovery that rolls back replaces what failed (docs/faults.md "Over the job"): the chip or cable repaired
  // (a host's repair mends no chip), the cube swapped for a spare (its chips and the links leaving them), or the
  // failed cables around the chips a cut left unreachable. The lasting faults on what it replaced end.
  auto replace = [&](const ConcreteFault& fault, const job::Recovery& rec, const std::vector<ChipId>& cut_off) {
    if (cut_off.empty()) {
      const OutOfUse part = out_of_use(topo, fault, rec.swapped, kNoEnd, "");
      lasting.end_if([&](const ConcreteFault& f) { return job::on(topo, part, f); });
    } else {
      const std::vector<std::uint32_t> repaired = cables.repair_around(cut_off);
      lasting.end_if([&](const ConcreteFault& f) {
        return fault_on_link(f.spec.kind) &&
               std::binary_search(repaired.begin(), repaired.end(), cables.cable_of(f.link));
      });
    }
    step = lasting.step();
  };
  auto keep_since = [&] {
    slowdown += since_slow;
    since = 0;
    since_time = since_slow = 0;
  };
  // Whole checkpoint intervals (`every` steps, then a write) from a checkpoint on, up to the next fault and short
  // of the job's last interval, composed at once: k of them take k x (every x step + write), one rounding. Used
  // once the first kMaxRecordedCheckpoints writes are recorded, which are walked one by one (their sums as they
  // always were, to the last bit), so a job of 2^63 steps with a checkpoint after each costs what a short one does.
  auto compose_intervals = [&] {
    const std::int64_t whole = (r.steps - done - 1) / every;  // the intervals left that end with a write
    if (whole < 2) return;
    const double per = static_cast<double>(every) * step + write;
    const auto end_after = [&](std::int64_t k) { return t + static_cast<double>(k) * per; };
    const double f = faults.peek();
    std::int64_t k = whole;
    if (end_after(k) > f) {  // a fault comes first: the intervals that end by it (as the loop's `f >= end`)
      const double q = std::floor((f - t) / per);
      k = q <= 0 ? 0 : q >= static_cast<double>(whole) ? whole : static_cast<std::int64_t>(q);
      while (k > 0 && end_after(k) > f) --k;
      while (k < whole && end_after(k + 1) <= f) ++k;
    }
    if (k == 0) return;
    t = end_after(k);
    done += k * every;
    r.checkpoints += k;
    checkpointing += static_cast<double>(k) * write;
    slowdown += static_cast<double>(k) * (static_cast<double>(every) * (step - healthy));
  };
  // A job that meets this many faults stops (tools/src/preflight.cpp refuses plans expecting more).
  max_faults = std::min(max_faults, kMaxJobFaults);
  auto check_fault_count = [&](std::size_t met) {
    if (met < max_faults) return;
    if (max_faults < kMaxJobFaults) {
      throw std::runtime_error(fmt::format(
          "the job met {} faults, as many as the memory limit holds, and has done {} of {} steps (lower the "
          "fault rates, or raise the limit)",
          met, done, r.steps));
    }
    throw std::runtime_error(fmt::format(
        "the job met {} faults and has done {} of {} steps: failures come faster than it makes progress "
        "(lower the fault rates{})",
        met, done, r.steps, keeps ? "" : ", or checkpoint more often"));
  };
  while (done < r.steps) {
    throw_if_interrupted();  // Ctrl-C and SIGTERM stop a job of many faults
    if (every > 0 && since == 0 && r.checkpoint_writes.size() >= kMaxRecordedCheckpoints) compose_intervals();
    // The next event that is not a fault: the checkpoint after `every - since` more steps, or the job's end.
    const std::int64_t left = r.steps - done;
    const std::int64_t to_checkpoint = every > 0 ? every - since : left;
    const std::int64_t n = std::min(left, to_checkpoint);
    const bool writes = every > 0 && n == to_checkpoint && n < left;
    const double end = t + static_cast<double>(n) * step + (writes ? write : 0.0);
    const double f = faults.peek();
    if (f >= end) {
      if (writes && r.checkpoint_writes.size() < kMaxRecordedCheckpoints) {
        r.checkpoint_writes.emplace_back(t + static_cast<double>(n) * step);  // `end` less the write, as it adds up
      }
      t = end;
      done += n;
      since += n;
      since_time += static_cast<double>(n) * step;
      since_slow += static_cast<double>(n) * (step - healthy);
      if (writes) {
        ++r.checkpoints;
        checkpointing += write;
        keep_since();
      }
      continue;
    }
    // A fault lands inside this stretch: complete the steps before it.
    check_fault_count(r.events.size());
    const bool found = faults.next_found();  // landed while the job was down: met as it starts again
    ConcreteFault fault = faults.pop();
    const bool restoring = std::exchange(in_restore, false);
    const double at = std::max(f, t);
    const auto before = std::min<std::int64_t>(n, static_cast<std::int64_t>(std::floor((at - t) / step)));
    t += static_cast<double>(before) * step;
    done += before;
    since += before;
    since_time += static_cast<double>(before) * step;
    since_slow += static_cast<double>(before) * (step - healthy);
    const double partial = at - t;  // the step (or checkpoint write) in flight
    FaultEvent e;
    e.fault = fault;
    e.step = done;
    e.step_before = Seconds(step);
    e.step_started = Seconds(t);
    // Where it landed: while the job was down (found at a relaunch, or in a reroute's stall: f < t), in a
    // restore, in the checkpoint write after the stretch's steps, or in a step.
    if (found || f < t) {
      e.landed = FaultLanded::recovery;
    } else if (restoring) {
      e.landed = FaultLanded::restore;
    } else if (writes && before == n) {
      e.landed = FaultLanded::checkpoint_write;
    }
    if (found) {
      // It is met now: its component leaves the list of those failed and not yet found.
      const auto o = std::find_if(out.begin(), out.end(), [](const OutOfUse& u) { return u.until == kNoEnd; });
      if (o != out.end()) out.erase(o);
    } else if (const OutOfUse* o = unused(fault, f)) {
      e.detected = Seconds(at);
      e.resumed = Seconds(at);
      e.recovery = fmt::format("not in use ({})", o->why);
      e.step_after = Seconds(step);
      r.events.push_back(std::move(e));
      in_restore = restoring;
      continue;
    }
    if (!fault_stops(fault.spec.kind)) {
      // A slowdown applies from the start of the step (or checkpoint write) it hits, at most one step early. The
      // job never stops: it is detected and goes on at the fault's own time (not the step's start, which would
      // have it resume before it was hit).
      lasts(fault, costs.step_with ? costs.step_with(fault).value() : healthy);
      e.detected = Seconds(at);
      e.resumed = Seconds(at);
      e.recovery = "slowdown";
      e.step_after = Seconds(step);
      r.events.push_back(std::move(e));
      in_restore = restoring;
      continue;
    }
    // Detection at the heartbeat's timeout. A fault left over from a reroute's stall, or found at a relaunch (f < t), is detected from its own time once
    // the job runs (at = t).
    const double detected = std::max(at, heartbeat_timeout(f));
    std::vector<ChipId> cut_off;
    job::Recovery rec = recover(fault, cut_off);
    // A job that has written no checkpoint yet starts again from its initial state: there is nothing to read. A
    // job that trains nothing has no state to read back either (the relaunch loads its weights: job.restart).
    if (rec.rollback && (r.checkpoints == 0 || keeps)) rec.stages.restore = Seconds(0);
    e.detected = Seconds(detected);
    e.recovery = rec.how;
    if (!rec.ends_job && rec.rollback) {
      e.stages = rec.stages;
    }
    // Rerouted in place with the step in flight simulated with the fault at its tick: the step ends when that
    // simulation says (its in-flight transfers retransmitted, or lost until detection: job.in_flight); its
    // excess over the step time is charged to detection (lose) or slowdown (retransmit). No work is lost.
    std::optional<Seconds> hit;
    if (!restoring && !rec.rollback && !rec.ends_job && rec.lasting && costs.step_hit && partial < step &&
        before < n) {
      hit = costs.step_hit(fault, Seconds(partial), Seconds(detected - t), lasting.faults());
    }
    if (hit) {
      // The hit step is simulated as the job runs it, with the faults lasting then: what it adds to the step
      // before is charged as the cut's (with two or more lasting faults, simulated together there and not in the
      // steps around it, also what they cost together beyond the slowest alone: docs/faults.md). It is charged at
      // least the step before, so it never comes out faster than the steps around it.
      const double excess = std::max(0.0, hit->value() - step);
      (s.job.in_flight == InFlightPolicy::lose ? detection : slowdown) += excess;
      // Under retransmit the link layer notices the lost signal and the routes change at the tick: the cable is
      // detected then, not at its heartbeat's timeout (which would read after the job resumed).
      if (s.job.in_flight == InFlightPolicy::retransmit) e.detected = Seconds(at);
      done += 1;
      since += 1;
      since_time += step;
      since_slow += step - healthy;
      const Seconds charged(hit->value() >= step ? hit->value() : step);
      t += charged.value();
      if (costs.step_with) lasts(fault, costs.step_with(fault).value());
      e.step_hit = charged;
      e.downtime = Seconds(excess);
      e.resumed = Seconds(t);
      e.step_after = Seconds(step);
      r.events.push_back(std::move(e));
      continue;
    }
    detection += detected - at;
    const bool chip_stops = fault_effect(fault.spec.kind) == FaultEffect::stops_chip;
    if ((rec.rollback || rec.ends_job) && costs.step_stopped && chip_stops &&
        !fault.drawn && !restoring && partial < step && before < n) {
      costs.step_stopped(fault, Seconds(partial), Seconds(detected - t), lasting.faults());
    }
    // The steps since the last checkpoint and the step in flight are lost: the job goes back to the checkpoint.
    // A job that trains nothing keeps every step it completed, as if each were a checkpoint written at no cost
    // (what it served was delivered): only the step in flight is lost, and its slow steps stay `slowdown`.
    auto roll_back = [&] {
      if (keeps) keep_since();
      lost += since_time + partial;
      e.lost_work = Seconds(since_time + partial);
      done -= since;
      since = 0;
      since_time = since_slow = 0;
    };
    if (rec.ends_job) {
      roll_back();
      t = detected;
      e.resumed = Seconds(detected);
      e.downtime = Seconds(detected - at);
      e.step_after = Seconds(0);
      r.failed = true;
      r.events.push_back(std::move(e));
      break;
    }
    double resume = detected + rec.stages.repair.value() + rec.stages.restart.value() +
                    rec.stages.reconfiguration.value() + rec.stages.restore.value();
    repair += rec.stages.repair.value();
    restart += rec.stages.restart.value();
    reconf += rec.stages.reconfiguration.value();
    restore += rec.stages.restore.value();
    if (rec.rollback) {
      roll_back();
      replace(fault, rec, cut_off);
    } else {
      // In place: the step (or checkpoint write) in flight stalls from the fault to its detection (its transfers
      // on the failed link wait for the timeout and are sent again on the new routes), then runs again from its
      // start at the step time simulated with the fault (at most one step pessimistic): what it did before the
      // fault is lost. A restore the fault interrupted reads the checkpoint again from the detection.
      resume = detected;
      if (restoring && faults.next_found()) {
        in_restore = true;  // another fault found at the same relaunch is met first: the restore waits for it
      } else if (restoring) {
        const Seconds read = keeps || r.checkpoints == 0 ? Seconds(0) : costs.checkpoint_restore;  // nothing to read
        resume += read.value();
        restore += read.value();
        e.stages.restore = read;
      } else {
        lost += partial;
        e.lost_work = Seconds(partial);
      }
      if (rec.lasting && costs.step_with) lasts(fault, costs.step_with(fault).value());
    }
    if (found) {
      e.recovery += ", found at the relaunch";
    } else if (restoring) {
      e.recovery += ", in the restore: read again";
    }
    e.downtime = Seconds(resume - at);
    e.resumed = Seconds(resume);
    e.step_after = Seconds(step);
    const std::size_t met = r.events.size();
    r.events.push_back(std::move(e));
    if (rec.rollback) {
      // The faults that land while the job is down for this recovery (its detection, repair, relaunch or
      // reconfiguration; docs/faults.md):
      // - on hardware the job does not use (this fault's chip, host or cable until its repair ends, its cube
      //   until the swap, a component already failed): nothing;
      // - a slowdown: from when the job runs again;
      // - one that stops a component the job uses: found when the job starts again, at the end of this
      //   recovery's relaunch, before the restore (which is not read): met then, detected from its own heartbeat
      //   if that is later, and recovered by the policy (repaired, swapped for a spare or routed around, before
      //   the restore). Several found at one relaunch are recovered together (below).
      // One that stops a component during the restore (the recovery's last part) interrupts it: the part not
      // yet read is not paid, and the fault is met at once, as in a step (nothing more to lose: the job is at
      // the checkpoint); its recovery reads the checkpoint again.
      out.erase(std::remove_if(out.begin(), out.end(), [t](const OutOfUse& o) { return o.until <= t; }), out.end());
      if (cut_off.empty()) {
        out.push_back(out_of_use(topo, fault, rec.swapped, detected + rec.stages.repair.value(),
                                 rec.swapped ? "cube swapped out" : "failed before: in repair"));
      }
      double restore_from = resume - rec.stages.restore.value();
      std::vector<ConcreteFault> found_now;
      std::vector<std::size_t> group{met};  // this fault and the others found at the same relaunch
      // Recovers fault g with this one, in parallel (its repair, swap or detection overlaps this one's; the relaunch
      // and restore are paid once): what it adds is the time its own recovery ends after this one's, before the
      // relaunch. `how` says why it joined.
      const auto recover_with_this = [&](ConcreteFault g, const char* how) {
        FaultEvent d;
        d.fault = g;
        d.landed = FaultLanded::recovery;
        d.step = done;
        d.step_before = Seconds(step);
        d.step_started = Seconds(t);
        if (const OutOfUse* u = unused(g, g.spec.at.value())) {  // its cube went with this fault's swap
          d.detected = d.resumed = g.spec.at;
          d.recovery = fmt::format("not in use ({})", u->why);
          d.step_after = Seconds(step);
          r.events.push_back(std::move(d));
          return;
        }
        const double ready = restore_from - rec.stages.restart.value();  // this recovery's repair or swap ends
        const double own = std::max(t, heartbeat_timeout(g.spec.at.value()));
        std::vector<ChipId> cut;
        const job::Recovery gr = recover(g, cut);
        double end = own;
        if (gr.rollback) {
          end += gr.stages.repair.value() + gr.stages.reconfiguration.value();
          if (cut.empty()) {
            out.push_back(out_of_use(topo, g, gr.swapped, own + gr.stages.repair.value(),
                                     gr.swapped ? "cube swapped out" : "failed before: in repair"));
          }
          replace(g, gr, cut);
        } else if (gr.lasting && costs.step_with) {
          lasts(g, costs.step_with(g).value());
        }
        const double extra = std::max(0.0, end - ready);
        const double late = std::clamp(own - ready, 0.0, extra);  // detected after this recovery's repair
        detection += late;
        (gr.swapped ? reconf : repair) += extra - late;
        resume += extra;
        restore_from += extra;
        d.detected = Seconds(own);
        d.recovery = gr.how + how;
        d.downtime = Seconds(extra);
        d.step_after = Seconds(step);
        group.push_back(r.events.size());
        r.events.push_back(std::move(d));
      };
      while (faults.peek() < resume) {
        // Faults a minute apart meet a recovery of an hour by the dozen: the cap and Ctrl-C hold here too.
        throw_if_interrupted();
        check_fault_count(r.events.size() + found_now.size());
        const double next = faults.peek();
        if (!found_now.empty() && next >= restore_from) break;  // the restore is not read: met after them
        if (faults.next_found()) {
          // Found at the same relaunch as this fault: no longer "not yet found", and recovered with it.
          const auto o = std::find_if(out.begin(), out.end(), [](const OutOfUse& u) { return u.until == kNoEnd; });
          if (o != out.end()) out.erase(o);
          recover_with_this(faults.pop(), ", found at the relaunch");
          continue;
        }
        const OutOfUse* o = unused(faults.peek_fault(), next);
        if (o == nullptr && fault_stops(faults.peek_fault().spec.kind) && next < detected) {
          // It stops a component the job uses before this fault is detected: the job is still up, hung on this
          // fault, so its own heartbeat finds it, and it is recovered with this one.
          recover_with_this(faults.pop(), ", detected with the fault before it");
          continue;
        }
        if (o == nullptr && fault_stops(faults.peek_fault().spec.kind)) {
          if (next >= restore_from) {
            restore -= resume - next;
            resume = next;
            in_restore = true;
            break;
          }
          ConcreteFault d = faults.pop();
          out.push_back(out_of_use(topo, d, false, kNoEnd, "failed before: not yet found"));
          found_now.push_back(std::move(d));
          continue;
        }
        FaultEvent d;
        d.fault = faults.pop();
        d.landed = FaultLanded::recovery;
        d.step = done;
        d.step_before = Seconds(step);
        d.step_started = Seconds(t);
        if (o != nullptr) {
          d.detected = d.fault.spec.at;
          d.resumed = d.fault.spec.at;
          d.recovery = fmt::format("not in use ({})", o->why);
        } else {
          // A slowdown still applies once the job runs again.
          d.detected = d.fault.spec.at;
          d.resumed = Seconds(resume);
          d.recovery = "slowdown";
          if (costs.step_with) lasts(d.fault, costs.step_with(d.fault).value());
        }
        d.step_after = Seconds(step);
        r.events.push_back(std::move(d));
      }
      if (!found_now.empty()) {
        restore -= rec.stages.restore.value();
        resume = restore_from;
        in_restore = true;
        faults.found(std::move(found_now));
      }
      r.events[met].downtime = Seconds(resume - at);
      for (std::size_t i : group) r.events[i].resumed = Seconds(resume);
    }
    t = resume;
  }
  keep_since();
  // Faults found at a relaunch are recorded when they are met, after those that landed later and cost nothing.
  std::stable_sort(r.events.begin(), r.events.end(),
                   [](const FaultEvent& a, const FaultEvent& b) { return a.fault.spec.at < b.fault.spec.at; });
  r.steps_done = done;
  r.wall = Seconds(t);
  r.useful = Seconds(static_cast<double>(done) * healthy);
  r.goodput = t > 0 ? r.useful.value() / t : 0;
  r.losses = JobLosses{Seconds(checkpointing), Seconds(lost),   Seconds(detection), Seconds(repair),
                       Seconds(restart),      Seconds(reconf), Seconds(restore),   Seconds(slowdown)};
  r.spare_cubes_left = policy->spare_cubes_left();
  r.ocs_remaps = policy->ocs_remaps();
  return r;
}

}  // namespace tpusim::models
