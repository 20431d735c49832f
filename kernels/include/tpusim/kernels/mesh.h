#pragma once
// A device mesh placed on the torus: each named mesh axis takes, per torus axis, `size` members `stride`
// chips apart (and `pods` slices over the DCN), so the chips that differ only along one mesh axis (or a set of
// them) are a collective group (ir::CollectiveGroup) the network plans for its shape.
//
// Default placement (JAX's create_device_mesh in spirit): the axes in order of communication heaviness,
// tensor, tensor_sequence, sequence, expert, fsdp, data, pipeline, then any other named axis (in mesh order), each take the
// next chips of the torus axes in order x, y, z: an axis no longer than what is left of the current torus
// axis takes contiguous segments of it (stride = the product of the axes placed before it there), a longer
// one takes all that is left and continues on the next torus axis. So the heaviest axis is on contiguous
// chips of one torus axis, with the shortest hops. A multislice pod puts its slices on `data` (else on the
// least heavy axis whose size the slice count divides): the slices are that axis's outermost factor.
// `workload.mesh_mapping` places the axes it names first, in its order, on the torus axes it lists for them.
// An axis whose size does not divide what is left is bad input (ConfigError at the axis).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/mesh_spec.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/kernels/program.h"

namespace tpusim::kernels {

struct MeshAxis {
  std::string name;
  int size = 1;
  ir::CollectiveGroup group;  // its chips: per torus axis size x stride, and pods
};

class DeviceMesh {
 public:
  DeviceMesh() = default;
  DeviceMesh(std::vector<MeshAxis> axes, std::array<int, ir::kGroupAxes> shape, int pods);

  [[nodiscard]] const std::vector<MeshAxis>& axes() const { return axes_; }
  [[nodiscard]] int find(std::string_view name) const;  // -1 when absent
  [[nodiscard]] int size_of(std::string_view name) const;  // 1 when absent
  [[nodiscard]] int chips() const;
  [[nodiscard]] const std::array<int, ir::kGroupAxes>& shape() const { return shape_; }
  [[nodiscard]] int pods() const { return pods_; }

  // The chips that differ from a chip only along the mesh axes `axes` (indices): one group when the axes
  // combine (on each torus axis their members are adjacent factors), else one group per axis (a collective
  // over them runs as one collective per group, in order). Empty when every axis has size 1.
  [[nodiscard]] std::vector<ir::CollectiveGroup> groups(const std::vector<int>& axes) const;
  // A chip's coordinate along mesh axis `axis` (0 .. size - 1). Chips are numbered x fastest, then y, z, pod.
  [[nodiscard]] int coordinate(std::uint32_t chip, int axis) const;

 private:
  std::vector<MeshAxis> axes_;
  std::array<int, ir::kGroupAxes> shape_{1, 1, 1};
  int pods_ = 1;
};

// Places `mesh` on `pod` (no mesh: one axis `data` over every chip). Throws ConfigError for an axis that
// cannot be placed.
[[nodiscard]] DeviceMesh build_mesh(const MeshSpec& mesh, const PodSpec& pod);

// Chips in a group.
[[nodiscard]] int group_size(const ir::CollectiveGroup& g);

}  // namespace tpusim::kernels
