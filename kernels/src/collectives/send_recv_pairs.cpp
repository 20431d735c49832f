#include "tpusim/kernels/send_recv_pairs.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "tpusim/kernels/collectives.h"

namespace tpusim::kernels {

namespace {

// Where a send or recv points: `peer` members along torus axis `axis` of group shape `group`. On a line (an
// axis without wraparound links, or a group that is a segment of its axis) the offset must stay on it.
struct Target {
  ir::CollectiveGroup group;
  int axis = 0;
  int peer = 0;
  bool line = false;
  bool operator==(const Target& o) const { return group == o.group && axis == o.axis && peer == o.peer; }
};

// The sends (or recvs) of one program with one target, in program order.
struct Bucket {
  Target target;
  std::vector<std::uint32_t> instructions;
};

struct Ends {
  std::vector<Bucket> sends, recvs;
  std::vector<Bucket> puts;  // remote puts: addressed as sends are, matched by nothing
};

// The instruction's target as the simulator resolves it (models/src/net/point_to_point.cpp), or, in `why`,
// how its peer names no other chip of the slice whatever chip runs it.
std::optional<Target> target_of(const ir::ProgramSet& programs, const ir::Instruction& ins, const Topology& topo,
                                std::string& why, bool& on_axis) {
  on_axis = true;
  Target t;
  int length = 0;
  std::string along;
  if (const ir::CollectiveGroup* named = programs.named_group(ins)) {
    t.group = *named;
    const auto first = std::find_if(named->size.begin(), named->size.end(), [](std::uint32_t s) { return s > 1; });
    if (first == named->size.end()) {
      why = "its group has one chip";
      return std::nullopt;
    }
    t.axis = static_cast<int>(first - named->size.begin());
    length = static_cast<int>(*first);
    along = fmt::format("its group's {} members along axis {}", length, t.axis);
  } else {
    for (int a = 0; a < topo.axes(); ++a) t.group.size[static_cast<std::size_t>(a)] = topo.shape()[a];
    t.group.pods = static_cast<std::uint32_t>(topo.pods());
    const std::uint32_t mask = ins.comm.mesh_axes;
    t.axis = -1;
    if (mask != 0) {
      while ((mask & (1u << ++t.axis)) == 0) {
      }
    } else {
      for (int a = 0; a < topo.axes() && t.axis < 0; ++a) {
        if (topo.shape()[static_cast<std::size_t>(a)] > 1) t.axis = a;
      }
    }
    if (t.axis < 0 || t.axis >= topo.axes()) {
      why = t.axis < 0 ? fmt::format("{} has no axis of more than one chip", topo.name())
                       : fmt::format("axis {}, but {} has {} axes", t.axis, topo.name(), topo.axes());
      return std::nullopt;
    }
    length = topo.shape()[static_cast<std::size_t>(t.axis)];
    along = fmt::format("the {} chips of axis {}", length, t.axis);
  }
  on_axis = false;
  const auto a = static_cast<std::size_t>(t.axis);
  t.peer = ins.comm.peer;
  t.line = !topo.wraps(t.axis) || static_cast<int>(t.group.size[a] * t.group.stride[a]) != topo.shape()[a];
  if (t.peer % length == 0) {
    why = fmt::format("offset {} along {} names the chip itself", t.peer, along);
    return std::nullopt;
  }
  if (std::abs(static_cast<long long>(t.peer)) >= length) {
    why = fmt::format("offset {} passes all {}", t.peer, along);
    return std::nullopt;
  }
  return t;
}

ChipId destination(const Topology& topo, const Target& t, std::uint32_t chip) {
  std::array<int, kMaxAxes> offset{};
  offset[static_cast<std::size_t>(t.axis)] = t.peer;
  return group_destination(topo, t.group, ChipId(chip), offset, 0);
}

// The instructions of `buckets` that `chip` addresses to `other`, in program order.
void toward(const Topology& topo, const std::vector<Bucket>& buckets, std::uint32_t chip, std::uint32_t other,
            std::vector<std::uint32_t>& into) {
  into.clear();
  std::size_t matched = 0;
  for (const Bucket& b : buckets) {
    if (destination(topo, b.target, chip).value() != other) continue;
    into.insert(into.end(), b.instructions.begin(), b.instructions.end());
    ++matched;
  }
  if (matched > 1) std::sort(into.begin(), into.end());
}

}  // namespace

std::vector<PeerMismatch> send_recv_mismatches(const ir::ProgramSet& programs, const Topology& topo) {
  const std::uint32_t chips = topo.chip_count();
  const auto role = [&](std::uint32_t c) -> std::uint16_t {
    return programs.role_of_chip.empty() ? 0 : programs.role_of_chip[c];
  };
  std::vector<PeerMismatch> out;
  std::vector<Ends> ends(programs.programs.size());
  std::vector<bool> runs(programs.programs.size(), false);
  std::vector<std::uint32_t> first_chip(programs.programs.size(), 0);
  for (std::uint32_t c = chips; c-- > 0;) {
    runs[role(c)] = true;
    first_chip[role(c)] = c;
  }
  bool any = false;
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    if (!runs[p]) continue;
    const ir::Program& prog = programs.programs[p];
    for (std::uint32_t i = 0; i < prog.size(); ++i) {
      const ir::Instruction& ins = prog[i];
      const bool put = ir::is_remote_put(ins);
      if (ins.kind != ir::OpKind::send && ins.kind != ir::OpKind::recv && !put) continue;
      any = true;
      std::string why;
      bool on_axis = false;
      const std::optional<Target> t = target_of(programs, ins, topo, why, on_axis);
      if (!t) {
        PeerMismatch m;
        m.on_axis = on_axis;
        m.chip = ChipId(first_chip[p]);
        m.role = static_cast<std::uint16_t>(p);
        m.instruction = i;
        m.why = why;
        out.push_back(m);
        continue;
      }
      std::vector<Bucket>& side = put ? ends[p].puts : ins.kind == ir::OpKind::send ? ends[p].sends : ends[p].recvs;
      auto b = std::find_if(side.begin(), side.end(), [&](const Bucket& x) { return x.target == *t; });
      if (b == side.end()) b = side.insert(side.end(), Bucket{*t, {}});
      b->instructions.push_back(i);
    }
  }
  if (!any) return out;
  // On a line, the offset from some chip leaves it: once per program and target, at its first instruction.
  std::set<std::pair<std::size_t, std::uint32_t>> off_line;
  for (std::uint32_t c = 0; c < chips; ++c) {
    for (const std::vector<Bucket>* side : {&ends[role(c)].sends, &ends[role(c)].recvs, &ends[role(c)].puts}) {
      for (const Bucket& b : *side) {
        if (!b.target.line) continue;
        const auto a = static_cast<std::size_t>(b.target.axis);
        const int at = group_member(topo, b.target.group, ChipId(c), b.target.axis) + b.target.peer;
        if ((at >= 0 && at < static_cast<int>(b.target.group.size[a])) ||
            !off_line.emplace(role(c), b.instructions.front()).second) {
          continue;
        }
        PeerMismatch m;
        m.chip = ChipId(c);
        m.role = role(c);
        m.instruction = b.instructions.front();
        m.why = fmt::format("offset {} from member {} leaves the {} members along axis {} (0 to {}), a line "
                            "without a wraparound link",
                            b.target.peer, at - b.target.peer, b.target.group.size[a], b.target.axis,
                            b.target.group.size[a] - 1);
        out.push_back(m);
      }
    }
  }
  if (!out.empty()) return out;  // pairing what the simulator cannot even address would only repeat them

  using Kind = PeerMismatch::Kind;
  std::set<std::tuple<Kind, std::uint16_t, std::uint32_t>> reported;
  // At `chip`'s `instruction`, the `position`-th toward `peer`, whose end has `peer_count` of its own.
  const auto report = [&](Kind kind, std::uint32_t chip, std::uint32_t peer, std::uint32_t instruction,
                          std::size_t position, std::size_t peer_count) -> PeerMismatch* {
    if (!reported.emplace(kind, role(chip), instruction).second) return nullptr;
    PeerMismatch m;
    m.kind = kind;
    m.chip = ChipId(chip);
    m.peer = ChipId(peer);
    m.role = role(chip);
    m.peer_role = role(peer);
    m.instruction = instruction;
    m.position = position;
    m.peer_count = peer_count;
    out.push_back(std::move(m));
    return &out.back();
  };
  std::vector<std::uint32_t> sent, received, partners;
  for (std::uint32_t c = 0; c < chips; ++c) {
    const Ends& own = ends[role(c)];
    // Every chip this one sends to: its sends there against that chip's recvs from it.
    partners.clear();
    for (const Bucket& b : own.sends) partners.push_back(destination(topo, b.target, c).value());
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    for (const std::uint32_t d : partners) {
      toward(topo, own.sends, c, d, sent);
      toward(topo, ends[role(d)].recvs, d, c, received);
      std::size_t k = 0;
      while (k < sent.size() && k < received.size() &&
             programs.programs[role(c)][sent[k]].bytes == programs.programs[role(d)][received[k]].bytes) {
        ++k;
      }
      if (k < sent.size() && k < received.size()) {
        if (PeerMismatch* m = report(Kind::bytes, d, c, received[k], k, sent.size())) m->peer_instruction = sent[k];
      } else if (k < sent.size()) {
        (void)report(Kind::no_recv, c, d, sent[k], k, received.size());
      } else if (k < received.size()) {
        (void)report(Kind::no_send, d, c, received[k], k, sent.size());
      }
    }
    // Every chip this one receives from that sends it nothing (the others were compared above).
    for (const Bucket& b : own.recvs) {
      const std::uint32_t s = destination(topo, b.target, c).value();
      toward(topo, ends[role(s)].sends, s, c, sent);
      if (!sent.empty()) continue;
      toward(topo, own.recvs, c, s, received);
      (void)report(Kind::no_send, c, s, received.front(), 0, 0);
    }
  }
  return out;
}

}  // namespace tpusim::kernels
