#include "point_to_point.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "../program_index.h"
#include "tpusim/models/errors.h"

namespace tpusim::models::net {
namespace {

int wrap(int a, int m) { return ((a % m) + m) % m; }

}  // namespace

PointToPoint::PointToPoint(Transport& transport, IciUnits& units)
    : transport_(transport),
      units_(units),
      peers_(transport.topology().chip_count()),
      ports_(transport.topology().chip_count(), nullptr),
      slots_(static_cast<std::size_t>(transport.topology().chip_count()) * IciUnits::kSlots),
      put_written_(transport.topology().chip_count(), 0) {}

PointToPoint::Peer& PointToPoint::peer(std::uint32_t chip, std::uint32_t other) {
  std::vector<Peer>& peers = peers_[chip];
  for (Peer& p : peers) {
    if (p.chip == other) return p;
  }
  peers.emplace_back();
  peers.back().chip = other;
  return peers.back();
}

TargetId PointToPoint::target(const Origin& origin, const ir::Instruction& ins, const ir::CollectiveGroup* group) {
  const Topology& topo = transport_.topology();
  const auto fail = [&](const std::string& what) {
    throw SimulationError(0, origin.core, origin.instr, origin.label, what);
  };
  int axis = -1;
  int length = 1;
  Target t;
  if (group != nullptr) {
    for (int a = 0; a < kMaxAxes && axis < 0; ++a) {
      if (group->size[static_cast<std::size_t>(a)] > 1) axis = a;
    }
    if (axis < 0) fail(fmt::format("{} in a group of one chip", ir::op_name(ins.kind)));
    length = static_cast<int>(group->size[static_cast<std::size_t>(axis)]);
    t.group = transport_.add_group(*group);
  } else {
    if (ins.comm.mesh_axes != 0) {
      while ((ins.comm.mesh_axes & (1u << ++axis)) == 0) {
      }
      if (axis >= topo.axes()) {
        fail(fmt::format("{} along axis {}, but {} has {} axes", ir::op_name(ins.kind), axis, topo.name(),
                         topo.axes()));
      }
    } else {
      for (int a = 0; a < topo.axes() && axis < 0; ++a) {
        if (topo.shape()[static_cast<std::size_t>(a)] > 1) axis = a;
      }
    }
    length = topo.shape()[static_cast<std::size_t>(std::max(axis, 0))];
    // Every axis whole: an offset moves modulo the axis length.
    ir::CollectiveGroup whole;
    for (int a = 0; a < topo.axes(); ++a) {
      whole.size[static_cast<std::size_t>(a)] = static_cast<std::uint32_t>(topo.shape()[static_cast<std::size_t>(a)]);
    }
    whole.pods = static_cast<std::uint32_t>(topo.pods());
    t.group = transport_.add_group(whole);
  }
  if (axis < 0 || wrap(ins.comm.peer, length) == 0) {
    fail(fmt::format("{} with peer offset {} along axis {} of {} names the chip itself", ir::op_name(ins.kind),
                     ins.comm.peer, std::max(axis, 0), group != nullptr ? "its group" : topo.name()));
  }
  t.offset[static_cast<std::size_t>(axis)] = ins.comm.peer;
  return transport_.add_target(t, origin);
}

void PointToPoint::start(std::uint32_t chip, Slot slot, std::uint32_t instr, const ir::Instruction& ins,
                         TargetId target, Tick now) {
  const std::uint32_t other = transport_.destination(chip, target).value();
  SlotState& s = state(chip, slot);
  s = SlotState{true, true, false, instr};
  if (ins.kind == ir::OpKind::send || is_remote_put(ins)) {
    const bool put = ins.kind != ir::OpKind::send;
    const std::uint32_t number = put ? 0 : peer(chip, other).sent++;
    const TransferId id = transport_.start(chip, target, ins.bytes, now, Owner::point_to_point);
    if (id >= sent_.size()) sent_.resize(static_cast<std::size_t>(id) + 1);
    sent_[id] = Sent{slot, put, number, ins.bytes};
    if (put) {  // its source is read by the DMA when it is HBM (a put from VMEM reads none)
      if (ins.memory.src == ir::Memory::hbm) charge(chip, slot, now, ins.bytes, 0);
      return;
    }
    charge(chip, slot, now, ins.bytes, 0);
    // The receiver's write, once its recv has started.
    Peer& at = peer(other, chip);
    const auto r = std::find_if(at.posted.begin(), at.posted.end(),
                                [&](const std::pair<std::uint32_t, Slot>& x) { return x.first == number; });
    if (r == at.posted.end()) {
      at.started.emplace_back(number, ins.bytes);
      return;
    }
    const Slot recv = r->second;
    at.posted.erase(r);
    charge(other, recv, now, 0, ins.bytes);
    return;
  }
  Peer& p = peer(chip, other);  // a recv: `other` is its source
  const std::uint32_t k = p.received++;
  const auto st = std::find_if(p.started.begin(), p.started.end(),
                               [&](const std::pair<std::uint32_t, std::uint64_t>& x) { return x.first == k; });
  if (st != p.started.end()) {
    const std::uint64_t bytes = st->second;
    p.started.erase(st);
    charge(chip, slot, now, 0, bytes);
  } else {
    p.posted.emplace_back(k, slot);
  }
  const auto d = std::find(p.delivered.begin(), p.delivered.end(), k);
  if (d != p.delivered.end()) {
    p.delivered.erase(d);
    s.moving = false;
    settle(chip, slot);
    return;
  }
  p.waiting.emplace_back(k, slot);
}

void PointToPoint::charge(std::uint32_t chip, Slot slot, Tick now, std::uint64_t read, std::uint64_t written) {
  if (read + written == 0) return;
  SlotState& s = state(chip, slot);
  s.hbm = true;
  ports_[chip]->charge_hbm(slot, slot, s.instr, now, read, written, 0);
}

void PointToPoint::settle(std::uint32_t chip, Slot slot) {
  SlotState& s = state(chip, slot);
  if (s.moving || s.hbm) return;
  s.active = false;
  units_.finish(chip, slot);
}

void PointToPoint::on_delivered(TransferId id, Tick /*now*/) {
  const std::uint32_t src = transport_.source(id), dst = transport_.sink(id);
  const Sent sent = sent_[id];
  transport_.release(id);
  state(src, sent.slot).moving = false;
  settle(src, sent.slot);  // the send (or put) is delivered
  if (sent.put) {  // one-sided: nothing for the destination to match; its HBM write is counted only
    put_written_[dst] += sent.bytes;
    return;
  }
  Peer& p = peer(dst, src);
  const auto w = std::find_if(p.waiting.begin(), p.waiting.end(),
                              [&](const std::pair<std::uint32_t, Slot>& x) { return x.first == sent.number; });
  if (w != p.waiting.end()) {
    const Slot slot = w->second;
    p.waiting.erase(w);
    state(dst, slot).moving = false;
    settle(dst, slot);
    return;
  }
  p.delivered.push_back(sent.number);
}

bool PointToPoint::hbm_done(std::uint32_t chip, Slot slot, Tick now) {
  SlotState& s = state(chip, slot);
  if (s.moving) {  // nothing waits for the HBM yet: the delivery completes it
    s.hbm = false;
    return false;
  }
  timers_.push_back(Timer{now + 1, chip, slot});
  return true;
}

bool PointToPoint::fire_timers(Tick now) {
  bool fired = false;
  while (!timers_.empty() && timers_.front().at <= now) {
    const Timer t = timers_.front();
    timers_.pop_front();
    state(t.chip, t.slot).hbm = false;
    settle(t.chip, t.slot);
    fired = true;
  }
  return fired;
}

}  // namespace tpusim::models::net
