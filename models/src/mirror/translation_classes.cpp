#include "mirror/translation_classes.h"

#include "../program_index.h"
#include "tpusim/kernels/collectives.h"

namespace tpusim::models {
namespace {

// Along one dimension of length n: a group spanning s members at stride t maps onto a group of its shape under
// a shift by p when p keeps its blocks whole (p a multiple of s x t) or the block is the whole wrapping axis
// and p keeps the lanes (a multiple of t). (A block of the whole axis needs the axis to wrap, which the
// topology condition already requires of any p < n.)
bool keeps_groups(int p, int n, std::uint32_t s, std::uint32_t t) {
  if (s <= 1) return true;
  const auto block = static_cast<int>(s * t);
  if (block < n) return p % block == 0;
  return p % static_cast<int>(t) == 0;
}

// The groups of every ICI instruction of every program some chip runs (point-to-point without a group: the
// whole axes, as PointToPoint::target resolves it).
std::vector<ir::CollectiveGroup> used_groups(const Topology& topo, const ir::ProgramSet& programs) {
  std::vector<bool> used(programs.programs.size(), programs.role_of_chip.empty());
  for (const std::uint16_t role : programs.role_of_chip) used[role] = true;
  std::vector<ir::CollectiveGroup> groups;
  const auto add = [&](const ir::CollectiveGroup& g) {
    for (const ir::CollectiveGroup& h : groups) {
      if (h == g) return;
    }
    groups.push_back(g);
  };
  for (std::size_t p = 0; p < programs.programs.size(); ++p) {
    if (!used[p]) continue;
    for (const ir::Instruction& ins : programs.programs[p].instructions()) {
      if (queue_unit(ins) != ir::UnitKind::ici) continue;
      if (const ir::CollectiveGroup* g = programs.named_group(ins)) {
        add(*g);
      } else if (ins.kind == ir::OpKind::collective) {
        add(kernels::whole_axes_group(topo, ins.comm.mesh_axes));
      } else {
        add(kernels::whole_axes_group(topo, 0));
      }
    }
  }
  return groups;
}

}  // namespace

TranslationClasses translation_classes(const Topology& topo, const ir::ProgramSet& programs) {
  TranslationClasses tc;
  const auto chips = static_cast<std::uint32_t>(topo.chip_count());
  const std::vector<ir::CollectiveGroup> groups = used_groups(topo, programs);
  const auto role = [&](std::uint32_t c) { return programs.role_of_chip.empty() ? 0 : programs.role_of_chip[c]; };
  // Whether shifting every chip by `p` along dimension `d` (kMaxAxes: the pods) keeps every chip's role.
  const auto keeps_roles = [&](int d, int p) {
    if (programs.role_of_chip.empty()) return true;
    for (std::uint32_t c = 0; c < chips; ++c) {
      ChipCoord at = topo.coord(ChipId(c));
      if (d == kMaxAxes) {
        at.pod = (at.pod + p) % topo.pods();
      } else {
        const auto a = static_cast<std::size_t>(d);
        at.pos[a] = (at.pos[a] + p) % topo.shape()[a];
      }
      if (role(topo.chip_at(at).value()) != role(c)) return false;
    }
    return true;
  };
  const bool twisted = topo.twisted();
  for (int d = 0; d <= kMaxAxes; ++d) {
    const bool pods = d == kMaxAxes;
    if (!pods && d >= topo.axes()) continue;
    const int n = pods ? topo.pods() : topo.shape()[static_cast<std::size_t>(d)];
    int chosen = n;
    if (!twisted && (pods || topo.wraps(d))) {
      for (int p = 1; p < n; ++p) {
        if (n % p != 0) continue;
        // Across pods the chips of a host share its DCN NIC: host blocks must map onto host blocks.
        if (!pods && topo.pods() > 1 && p % topo.host_shape()[static_cast<std::size_t>(d)] != 0) continue;
        bool ok = true;
        for (const ir::CollectiveGroup& g : groups) {
          const auto a = static_cast<std::size_t>(pods ? 0 : d);
          ok = ok && (pods ? keeps_groups(p, n, g.pods, 1) : keeps_groups(p, n, g.size[a], g.stride[a]));
        }
        if (ok && keeps_roles(d, p)) {
          chosen = p;
          break;
        }
      }
    }
    if (pods) {
      tc.pod_period = chosen;
    } else {
      tc.period[static_cast<std::size_t>(d)] = chosen;
    }
  }
  tc.representative.resize(chips);
  tc.classes = 0;
  for (std::uint32_t c = 0; c < chips; ++c) {
    ChipCoord at = topo.coord(ChipId(c));
    for (std::size_t a = 0; a < kMaxAxes; ++a) at.pos[a] %= tc.period[a];
    at.pod %= tc.pod_period;
    tc.representative[c] = topo.chip_at(at).value();
    if (tc.representative[c] == c) ++tc.classes;
  }
  return tc;
}

}  // namespace tpusim::models
