#include "interconnect.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>

#include "../program_index.h"
#include "tpusim/models/errors.h"

namespace tpusim::models::net {

namespace {

// The program set's group an ICI instruction names (ProgramSet::named_group), with the instruction in the
// error when its index is past the set's groups.
const ir::CollectiveGroup* named_group(const ir::ProgramSet& programs, const Origin& origin,
                                       const ir::Instruction& ins) {
  try {
    return programs.named_group(ins);
  } catch (const std::out_of_range&) {
    throw SimulationError(0, origin.core, origin.instr, origin.label,
                          fmt::format("{} names group {}, but the program set has {} groups", ir::op_name(ins.kind),
                                      ins.comm.group, programs.groups.size()));
  }
}

}  // namespace

Interconnect::Interconnect(const sc_core::sc_module_name& name, const Topology& topo, const Scenario& scenario,
                           const ir::ProgramSet& programs, const InterconnectOptions& options, RunControl& control)
    : sc_core::sc_module(name),
      programs_(programs),
      control_(control),
      transport_(topo, scenario, options.faults, options.degraded, options.timed, options.in_flight,
                 options.timed_chips, options.end_at_stop),
      units_(topo.chip_count()),
      collectives_(transport_, scenario.chip, units_, stats_, options.planner, scenario.fidelity.collectives),
      p2p_(transport_, units_) {
  // Plan each collective and resolve each point-to-point target of each program some chip runs, once.
  std::vector<bool> used(programs.programs.size(), programs.role_of_chip.empty());
  for (std::uint16_t role : programs.role_of_chip) used[role] = true;
  dispatch_.resize(programs.programs.size());
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    if (!used[p]) continue;
    const ir::Program& program = programs.programs[p];
    for (std::uint32_t i = 0; i < program.size(); ++i) {
      const ir::Instruction& ins = program[i];
      if (queue_unit(ins) != ir::UnitKind::ici) continue;
      if (dispatch_[p].empty()) dispatch_[p].resize(program.size());
      const Origin origin{i, ins.core, program.label_of(ins)};
      const ir::CollectiveGroup* group = named_group(programs, origin, ins);
      if (group != nullptr) (void)kernels::group_participants(topo, *group);  // throws if it does not fit
      Dispatch& d = dispatch_[p][i];
      if (ins.kind == ir::OpKind::collective) {
        d.plan = collectives_.add(origin, ins,
                                  group != nullptr ? *group : kernels::whole_axes_group(topo, ins.comm.mesh_axes));
        d.entry = stats_.add_collective(p, i, d.plan);
      } else {
        d.target = p2p_.target(origin, ins, group);
      }
    }
  }
  transport_.cache_routes();
  SC_METHOD(run);
  sensitive << event_;
  dont_initialize();
}

void Interconnect::run() {
  if (control_.failed()) return;
  try {
    const Tick now = sc_core::sc_time_stamp().value();
    control_.on_activation(now);
    if (mirroring_ != nullptr) mirroring_->advance(now);
    sync(now);
    arm(now);
  } catch (...) {
    control_.fail(std::current_exception());
  }
}

void Interconnect::sync(Tick now) {
  for (;;) {
    transport_.advance(now, delivered_);
    const bool deliveries = !delivered_.empty();
    for (std::size_t i = 0; i < delivered_.size(); ++i) {
      const TransferId id = delivered_[i];
      if (transport_.owner(id) == Owner::collective) {
        collectives_.on_delivered(id, now);
      } else {
        p2p_.on_delivered(id, now);
      }
    }
    delivered_.clear();
    const bool timers = collectives_.fire_timers(now) | p2p_.fire_timers(now);  // both fire
    if (!deliveries && !timers && transport_.next_event() > now) break;
  }
  collectives_.flush_reductions(now);
}

void Interconnect::arm(Tick now) {
  const Tick next = std::min({transport_.next_event(), collectives_.next_timer(), p2p_.next_timer()});
  if (next == kNever) return;
  // A pending notification at an earlier time wins over this one (sc_event keeps the earliest).
  event_.notify(sc_core::sc_time::from_value(next - now));
}

void Interconnect::start(std::uint32_t chip, std::uint32_t instr, Tick now) {
  if (mirroring_ != nullptr) mirroring_->advance(now);
  sync(now);
  start_one(chip, instr, now);
  if (mirroring_ != nullptr) {
    for (const std::uint32_t m : mirroring_->mirrors(chip)) {
      if (mirroring_->frozen(m)) continue;
      if (units_.full(m)) {
        mirroring_->unit_full(m, instr, now);
        continue;
      }
      start_one(m, instr, now);
    }
  }
  collectives_.flush_reductions(now);
  arm(now);
}

// No sync: marking a charge done changes nothing in the network at `now`; a timer at now + 1 only needs the
// event armed (a pending earlier notification wins).
void Interconnect::hbm_done(std::uint32_t chip, std::uint32_t token, Tick now) {
  if (mirroring_ != nullptr) mirroring_->advance(now);
  bool timer = false;
  // The slot's owner: a send, recv or put of the point-to-point engine, else a collective.
  const auto done = [&](std::uint32_t c, Slot slot) {
    return p2p_.owns(c, slot) ? p2p_.hbm_done(c, slot, now) : collectives_.hbm_done(c, slot, now);
  };
  if (mirroring_ == nullptr) {
    timer = done(chip, token);
  } else {
    for (const MirrorCheck::Charger& c : mirroring_->charge_done(chip, token)) timer = done(c.chip, c.slot) || timer;
  }
  if (timer) arm(now);
}

void Interconnect::start_one(std::uint32_t chip, std::uint32_t instr, Tick now) {
  const std::size_t program = programs_.role_of_chip.empty() ? 0 : programs_.role_of_chip[chip];
  const ir::Instruction& ins = programs_.programs[program][instr];
  const Dispatch& d = dispatch_[program][instr];
  const Slot slot = units_.begin_start(chip, instr, now);
  if (ins.kind == ir::OpKind::collective) {
    collectives_.start(chip, slot, instr, ins, d.plan, d.entry, now);
  } else {
    p2p_.start(chip, slot, instr, ins, d.target, now);
  }
  units_.end_start();
}

void Interconnect::mirror(MirrorCheck& mirroring) {
  mirroring_ = &mirroring;
  units_.watch_inputs([&mirroring](std::uint32_t chip, std::uint32_t instr, Tick started, Tick now) {
    mirroring.completed(chip, instr, started, now);
  });
  for (std::uint32_t c = 0; c < mirroring.chip_count(); ++c) {
    if (mirroring.mirrored(c)) units_.attach(c, nullptr);
    collectives_.attach_chip(c, mirroring.vpu(c));
    p2p_.attach_chip(c, mirroring.vpu(c));
  }
}

bool Interconnect::take_mirrored(std::uint32_t chip, std::uint32_t& instr, Tick& started) {
  Tick finished = 0;
  if (!units_.take_completed(chip, instr, started, finished)) return false;
  for (const std::uint32_t m : mirroring_->mirrors(chip)) {
    std::uint32_t i = 0;
    Tick s = 0, f = 0;
    const bool taken = units_.take_completed(m, i, s, f);
    mirroring_->check_take(m, taken, i, s, f, instr, started, finished);
  }
  return true;
}

void Interconnect::check_mirrors_end() {
  mirroring_->check_end([this](std::uint32_t c) { return units_.busy(c); });
}

}  // namespace tpusim::models::net
