// Placing a device mesh on the torus (contract and rule in mesh.h).
#include "tpusim/kernels/mesh.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace tpusim::kernels {
namespace {

// Placement rank of a mesh axis (MeshAxisInfo::placement): lower = more communication, placed first (on the
// shortest hops); a name outside the catalogue after every one in it.
int heaviness(const std::string& name) {
  if (const MeshAxisInfo* a = find_mesh_axis(name)) return a->placement;
  int last = 0;
  for (const MeshAxisInfo& k : known_mesh_axes()) last = std::max(last, k.placement);
  return last + 1;
}

std::string torus_name(const std::array<int, ir::kGroupAxes>& shape, int dims) {
  std::vector<std::string> s;
  for (int d = 0; d < dims; ++d) s.push_back(std::to_string(shape[static_cast<std::size_t>(d)]));
  return fmt::format("{}", fmt::join(s, "x"));
}

}  // namespace

DeviceMesh::DeviceMesh(std::vector<MeshAxis> axes, std::array<int, ir::kGroupAxes> shape, int pods)
    : axes_(std::move(axes)), shape_(shape), pods_(pods) {}

int DeviceMesh::find(std::string_view name) const {
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int DeviceMesh::size_of(std::string_view name) const {
  const int i = find(name);
  return i < 0 ? 1 : axes_[static_cast<std::size_t>(i)].size;
}

int DeviceMesh::chips() const {
  int n = 1;
  for (const MeshAxis& a : axes_) n *= a.size;
  return n;
}

int group_size(const ir::CollectiveGroup& g) {
  int n = static_cast<int>(g.pods);
  for (std::uint32_t s : g.size) n *= static_cast<int>(s);
  return n;
}

std::vector<ir::CollectiveGroup> DeviceMesh::groups(const std::vector<int>& axes) const {
  std::vector<int> used;
  for (int a : axes) {
    if (axes_[static_cast<std::size_t>(a)].size > 1) used.push_back(a);
  }
  if (used.empty()) return {};
  ir::CollectiveGroup combined;
  bool ok = true;
  for (int d = 0; d < ir::kGroupAxes && ok; ++d) {
    // The factors of torus axis d, by stride: they combine when each starts where the previous ends.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> parts;  // stride, size
    for (int a : used) {
      const ir::CollectiveGroup& g = axes_[static_cast<std::size_t>(a)].group;
      if (g.size[static_cast<std::size_t>(d)] > 1) parts.emplace_back(g.stride[d], g.size[d]);
    }
    std::sort(parts.begin(), parts.end());
    std::uint32_t size = 1, stride = parts.empty() ? 1 : parts.front().first;
    for (const auto& [s, n] : parts) {
      if (s != stride * size) ok = false;
      size *= n;
    }
    combined.size[static_cast<std::size_t>(d)] = size;
    combined.stride[static_cast<std::size_t>(d)] = stride;
  }
  for (int a : used) combined.pods *= axes_[static_cast<std::size_t>(a)].group.pods;
  if (ok) return {combined};
  std::vector<ir::CollectiveGroup> out;
  for (int a : used) out.push_back(axes_[static_cast<std::size_t>(a)].group);
  return out;
}

int DeviceMesh::coordinate(std::uint32_t chip, int axis) const {
  const ir::CollectiveGroup& g = axes_[static_cast<std::size_t>(axis)].group;
  std::array<int, ir::kGroupAxes> pos{};
  std::uint32_t rest = chip;
  for (int d = 0; d < ir::kGroupAxes; ++d) {
    pos[static_cast<std::size_t>(d)] = static_cast<int>(rest % static_cast<std::uint32_t>(shape_[d]));
    rest /= static_cast<std::uint32_t>(shape_[d]);
  }
  const int pod = static_cast<int>(rest);
  int coord = 0, scale = 1;
  for (int d = 0; d < ir::kGroupAxes; ++d) {
    const int n = static_cast<int>(g.size[static_cast<std::size_t>(d)]);
    if (n <= 1) continue;
    coord += (pos[static_cast<std::size_t>(d)] / static_cast<int>(g.stride[d]) % n) * scale;
    scale *= n;
  }
  if (g.pods > 1) coord += (pod % static_cast<int>(g.pods)) * scale;
  return coord;
}

DeviceMesh build_mesh(const MeshSpec& spec, const PodSpec& pod) {
  std::array<int, ir::kGroupAxes> shape{1, 1, 1};
  const int dims = static_cast<int>(std::min<std::size_t>(pod.shape.size(), ir::kGroupAxes));
  for (int d = 0; d < dims; ++d) shape[static_cast<std::size_t>(d)] = pod.shape[static_cast<std::size_t>(d)];
  std::vector<MeshAxisSpec> specs = spec.axes;
  if (specs.empty()) specs.push_back(MeshAxisSpec{kDefaultMeshAxis, static_cast<int>(pod.chip_count()), spec.loc});

  std::vector<MeshAxis> axes;
  for (const MeshAxisSpec& a : specs) axes.push_back(MeshAxis{a.name, a.size, {}});
  // The slices of a multislice pod go to one axis (its outermost factor).
  std::vector<int> in_slice(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) in_slice[i] = axes[i].size;
  if (pod.pods > 1) {
    int slice_axis = -1;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const MeshAxisInfo* kind = find_mesh_axis(axes[i].name);
      if (kind != nullptr && kind->takes_slices && axes[i].size % pod.pods == 0) slice_axis = static_cast<int>(i);
    }
    for (std::size_t i = axes.size(); i-- > 0 && slice_axis < 0;) {
      if (axes[i].size % pod.pods == 0) slice_axis = static_cast<int>(i);
    }
    if (slice_axis < 0) {
      throw ConfigError({Diagnostic{spec.loc, "workload.mesh",
                                    fmt::format("no mesh axis spans the {} slices", pod.pods),
                                    fmt::format("an axis (normally data) whose size is a multiple of {}", pod.pods),
                                    "none", ""}});
    }
    axes[static_cast<std::size_t>(slice_axis)].group.pods = static_cast<std::uint32_t>(pod.pods);
    in_slice[static_cast<std::size_t>(slice_axis)] /= pod.pods;
  }

  // Placement order: the explicitly mapped axes (in the mapping's order), then the rest by heaviness.
  std::vector<std::pair<int, std::vector<int>>> order;  // axis, torus axes allowed (empty: any)
  for (const MeshMappingSpec& m : spec.mapping) {
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (axes[i].name == m.axis) order.emplace_back(static_cast<int>(i), m.torus_axes);
    }
  }
  std::vector<int> rest;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const bool mapped = std::any_of(order.begin(), order.end(), [&](const auto& o) { return o.first == static_cast<int>(i); });
    if (!mapped) rest.push_back(static_cast<int>(i));
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [&](int a, int b) { return heaviness(axes[static_cast<std::size_t>(a)].name) < heaviness(axes[static_cast<std::size_t>(b)].name); });
  for (int i : rest) order.emplace_back(i, std::vector<int>{});

  std::array<int, ir::kGroupAxes> left = shape, placed{1, 1, 1};
  for (const auto& [i, allowed] : order) {
    MeshAxis& a = axes[static_cast<std::size_t>(i)];
    int n = in_slice[static_cast<std::size_t>(i)];
    std::vector<int> dims_to_use = allowed;
    if (dims_to_use.empty()) {
      for (int d = 0; d < dims; ++d) dims_to_use.push_back(d);
    }
    for (int d : dims_to_use) {
      if (n == 1) break;
      const auto du = static_cast<std::size_t>(d);
      if (left[du] == 1) continue;
      const int take = n <= left[du] ? n : left[du];
      if ((n <= left[du] && left[du] % n != 0) || (n > left[du] && n % left[du] != 0)) break;
      a.group.size[du] = static_cast<std::uint32_t>(take);
      a.group.stride[du] = static_cast<std::uint32_t>(placed[du]);
      placed[du] *= take;
      left[du] /= take;
      n /= take;
    }
    if (n != 1) {
      SourceLoc at = spec.loc;
      for (const MeshAxisSpec& s : specs) {
        if (s.name == a.name) at = s.loc;
      }
      std::vector<std::string> free;
      for (int d = 0; d < dims; ++d) free.push_back(std::to_string(left[static_cast<std::size_t>(d)]));
      throw ConfigError({Diagnostic{
          at, "workload.mesh." + a.name,
          fmt::format("mesh axis {} cannot be placed on the {} torus of {}", a.name, torus_name(shape, dims), pod.name),
          fmt::format("a size made of what is left of the torus axes{} ({} chips per axis after the axes placed "
                      "before it)",
                      allowed.empty() ? "" : " it is mapped to", fmt::join(free, "x")),
          std::to_string(in_slice[static_cast<std::size_t>(i)]),
          "sizes that divide the torus axes, or workload.mesh_mapping placing the axis explicitly"}});
    }
  }
  return DeviceMesh(std::move(axes), shape, pod.pods);
}

}  // namespace tpusim::kernels
