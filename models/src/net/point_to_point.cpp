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
    : transport_(transport), units_(units), chips_(transport.topology().chip_count()) {}

TargetId PointToPoint::target(const Origin& origin, const ir::Instruction& ins) {
  const Topology& topo = transport_.topology();
  const auto fail = [&](const std::string& what) {
    throw SimulationError(0, origin.core, origin.instr, origin.label, what);
  };
  int axis = -1;
  if (ins.mesh_axes != 0) {
    while ((ins.mesh_axes & (1u << ++axis)) == 0) {
    }
    if (axis >= topo.axes()) {
      fail(fmt::format("{} along axis {}, but {} has {} axes", ir::op_name(ins.kind), axis, topo.name(), topo.axes()));
    }
  } else {
    for (int a = 0; a < topo.axes() && axis < 0; ++a) {
      if (topo.shape()[static_cast<std::size_t>(a)] > 1) axis = a;
    }
  }
  if (axis < 0 || wrap(ins.peer, topo.shape()[static_cast<std::size_t>(axis)]) == 0) {
    fail(fmt::format("{} with peer offset {} along axis {} of {} names the chip itself", ir::op_name(ins.kind),
                     ins.peer, std::max(axis, 0), topo.name()));
  }
  Target t;
  t.offset[static_cast<std::size_t>(axis)] = ins.peer;
  return transport_.add_target(t, origin);
}

void PointToPoint::start(std::uint32_t chip, const ir::Instruction& ins, TargetId target, Tick now) {
  if (ins.kind == ir::OpKind::send || is_remote_put(ins)) {
    const TransferId id = transport_.start(chip, target, ins.bytes, now, Owner::point_to_point);
    if (id >= put_.size()) put_.resize(static_cast<std::size_t>(id) + 1);
    put_[id] = ins.kind != ir::OpKind::send;
    return;
  }
  ChipState& s = chips_[chip];
  s.peer = transport_.destination(chip, target).value();
  for (Arrivals& a : s.arrived) {
    if (a.source == s.peer && a.count > 0) {
      --a.count;
      units_.finish(chip);
      return;
    }
  }
  s.waiting = true;
}

void PointToPoint::on_delivered(TransferId id, Tick /*now*/) {
  const std::uint32_t src = transport_.source(id), dst = transport_.sink(id);
  const bool put = put_[id];
  transport_.release(id);
  units_.finish(src);  // the send (or put) is delivered
  if (put) return;     // one-sided: nothing for the destination to match
  ChipState& d = chips_[dst];
  if (d.waiting && d.peer == src) {
    d.waiting = false;
    units_.finish(dst);
    return;
  }
  const auto a = std::find_if(d.arrived.begin(), d.arrived.end(), [&](const Arrivals& x) { return x.source == src; });
  if (a != d.arrived.end()) ++a->count;
  else d.arrived.push_back(Arrivals{src, 1});
}

}  // namespace tpusim::models::net
