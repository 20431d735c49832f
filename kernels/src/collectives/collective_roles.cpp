#include "tpusim/kernels/collective_roles.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "tpusim/kernels/collectives.h"

namespace tpusim::kernels {

namespace {

// The member of `chip`'s group of shape `group` with the lowest coordinates: what names the group (as the
// collective engine's layout of a shape does).
std::uint32_t first_member(const Topology& topo, const ir::CollectiveGroup& group, std::uint32_t chip) {
  ChipCoord at = topo.coord(ChipId(chip));
  for (std::size_t a = 0; a < kMaxAxes; ++a) {
    const int size = static_cast<int>(group.size[a]), stride = static_cast<int>(group.stride[a]);
    at.pos[a] -= (at.pos[a] % (size * stride)) / stride * stride;
  }
  at.pod -= at.pod % static_cast<int>(group.pods);
  return topo.chip_at(at).value();
}

// Whether the simulator would pair `a` and `b` as one collective: what it plans one collective from.
bool same_collective(const ir::Instruction& a, const ir::Instruction& b) {
  return a.comm.collective == b.comm.collective && a.bytes == b.bytes && a.dtype == b.dtype &&
         a.comm.algorithm == b.comm.algorithm;
}

}  // namespace

std::string describe_collective(const ir::Instruction& ins) {
  return fmt::format("{} of {} bytes of {} (algorithm {})", collective_name(ins.comm.collective), ins.bytes,
                     dtype_name(ins.dtype), algorithm_name(static_cast<CollectiveAlgorithm>(ins.comm.algorithm)));
}

std::vector<RoleMismatch> collective_role_mismatches(const ir::ProgramSet& programs, const Topology& topo) {
  const std::vector<std::uint16_t>& roles = programs.role_of_chip;
  const std::uint32_t chips = topo.chip_count();
  if (roles.size() != chips || std::all_of(roles.begin(), roles.end(), [&](auto r) { return r == roles[0]; })) {
    return {};
  }
  // Per program some chip runs: its collectives over each shape, in program order.
  std::vector<bool> used(programs.programs.size(), false);
  for (const std::uint16_t r : roles) used[r] = true;
  std::vector<ir::CollectiveGroup> shapes;
  std::vector<std::vector<std::vector<std::uint32_t>>> over(programs.programs.size());  // [role][shape]
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    if (!used[p]) continue;
    const ir::Program& prog = programs.programs[p];
    for (std::uint32_t i = 0; i < prog.size(); ++i) {
      const ir::Instruction& ins = prog[i];
      if (ins.kind != ir::OpKind::collective) continue;
      const ir::CollectiveGroup* named = programs.named_group(ins);
      const ir::CollectiveGroup g = named != nullptr ? *named : whole_axes_group(topo, ins.comm.mesh_axes);
      const auto s = static_cast<std::size_t>(std::find(shapes.begin(), shapes.end(), g) - shapes.begin());
      if (s == shapes.size()) shapes.push_back(g);
      over[p].resize(shapes.size());
      over[p][s].push_back(i);
    }
  }
  std::vector<RoleMismatch> out;
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<std::uint32_t> seen(chips);  // by a group's first member: the first chip of the group met
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const auto of = [&](std::uint16_t role) -> const std::vector<std::uint32_t>& {
      static const std::vector<std::uint32_t> none;
      return s < over[role].size() ? over[role][s] : none;
    };
    std::fill(seen.begin(), seen.end(), kNone);
    std::set<std::pair<std::uint16_t, std::uint16_t>> compared;
    for (std::uint32_t c = 0; c < chips; ++c) {
      std::uint32_t& first = seen[first_member(topo, shapes[s], c)];
      if (first == kNone) first = c;
      const std::uint16_t a = roles[first], b = roles[c];
      if (a == b || !compared.emplace(a, b).second) continue;
      const std::vector<std::uint32_t>& x = of(a);
      const std::vector<std::uint32_t>& y = of(b);
      std::size_t k = 0;
      while (k < x.size() && k < y.size() &&
             same_collective(programs.programs[a][x[k]], programs.programs[b][y[k]])) {
        ++k;
      }
      if (k == x.size() && k == y.size()) continue;
      RoleMismatch m;
      m.group = shapes[s];
      m.position = k;
      m.first = ChipId(first);
      m.other = ChipId(c);
      m.first_role = a;
      m.other_role = b;
      if (k < x.size()) m.first_instruction = x[k];
      if (k < y.size()) m.other_instruction = y[k];
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace tpusim::kernels
