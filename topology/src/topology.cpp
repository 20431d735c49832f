#include "tpusim/topology/topology.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tpusim {

namespace {

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("build_topology: " + what); }

// The twist rule (see topology.h): which axes are long (length L) and which short (L/2).
struct Twist {
  int long_len = 0;
  std::array<bool, kMaxAxes> is_long{};
};

Twist check_twist(const PodSpec& pod) {
  Twist tw;
  const auto& s = pod.shape;
  if (s.size() < 2) reject("twisted needs at least two axes");
  tw.long_len = *std::max_element(s.begin(), s.end());
  bool any_short = false;
  for (std::size_t a = 0; a < s.size(); ++a) {
    if (pod.wraparound[a] == 0) reject(fmt::format("twisted needs wraparound on every axis, axis {} has none", a));
    if (s[a] == tw.long_len) {
      tw.is_long[a] = true;
    } else if (tw.long_len % 2 == 0 && s[a] == tw.long_len / 2) {
      any_short = true;
    } else {
      reject(fmt::format("twisted needs every axis of length L or L/2 (k x k x 2k or k x 2k x 2k), shape is [{}]",
                         fmt::join(s, ",")));
    }
  }
  if (!any_short) reject(fmt::format("twisted needs an axis of half the longest length, shape is [{}]",
                                     fmt::join(s, ",")));
  return tw;
}

}  // namespace

const char* link_kind_name(LinkKind k) { return k == LinkKind::electrical ? "electrical" : "optical"; }

Topology build_topology(const PodSpec& pod, const ChipSpec& chip) {
  const std::size_t axes = pod.shape.size();
  if (axes < 1 || axes > static_cast<std::size_t>(kMaxAxes)) reject(fmt::format("shape needs 1 to 3 axes, has {}", axes));
  for (int len : pod.shape) {
    if (len < 1) reject(fmt::format("shape entries must be positive, shape is [{}]", fmt::join(pod.shape, ",")));
  }
  if (pod.wraparound.size() != axes) reject(fmt::format("wraparound needs {} entries, has {}", axes, pod.wraparound.size()));
  if (pod.host_shape.size() != axes) reject(fmt::format("host_shape needs {} entries, has {}", axes, pod.host_shape.size()));
  if (!pod.cube.empty() && pod.cube.size() != axes) reject(fmt::format("cube needs {} entries, has {}", axes, pod.cube.size()));
  for (std::size_t a = 0; a < axes; ++a) {
    if (pod.host_shape[a] < 1 || pod.shape[a] % pod.host_shape[a] != 0) {
      reject(fmt::format("host_shape [{}] must divide shape [{}]", fmt::join(pod.host_shape, ","), fmt::join(pod.shape, ",")));
    }
    if (!pod.cube.empty() && (pod.cube[a] < 1 || pod.shape[a] % pod.cube[a] != 0)) {
      reject(fmt::format("cube [{}] must divide shape [{}]", fmt::join(pod.cube, ","), fmt::join(pod.shape, ",")));
    }
  }
  if (pod.pods < 1) reject(fmt::format("pods must be at least 1, is {}", pod.pods));
  if (static_cast<std::size_t>(chip.ici.links) < pod.ici_ports_needed()) {
    reject(fmt::format("chip {} has {} ICI links, a {}-axis shape needs {}", chip.name, chip.ici.links, axes, 2 * axes));
  }
  const long long total = pod.chip_count();
  // Links are at most 2 * axes per chip; their ids must fit a 32-bit id below the sentinel.
  if (total * 2 * kMaxAxes >= static_cast<long long>(std::numeric_limits<std::uint32_t>::max())) {
    reject(fmt::format("{} chips is too many", total));
  }
  Twist tw;
  if (pod.twisted) tw = check_twist(pod);

  Topology t;
  t.name_ = pod.name;
  t.chip_name_ = chip.name;
  t.axes_ = static_cast<int>(axes);
  for (std::size_t a = 0; a < axes; ++a) {
    t.shape_[a] = pod.shape[a];
    t.wrap_[a] = pod.wraparound[a] != 0;
    t.host_shape_[a] = pod.host_shape[a];
  }
  t.twisted_ = pod.twisted;
  t.cube_ = pod.cube;
  t.pods_ = pod.pods;
  t.chips_per_pod_ = static_cast<std::size_t>(t.shape_[0]) * t.shape_[1] * t.shape_[2];
  t.rates_.dcn_per_host = chip.host.dcn_bandwidth * static_cast<double>(t.chips_per_host());
  t.rates_.dcn_oversubscription = pod.dcn_oversubscription;
  t.rates_.link_bandwidth = chip.ici.link_bandwidth;
  t.rates_.hop_latency = chip.ici.hop_latency;

  // Cube geometry and the OCS numbering: axis_ocs_base[a] + face position, for axes with optical links.
  std::array<int, kMaxAxes> cube{1, 1, 1};
  std::array<int, kMaxAxes> cubes_along{1, 1, 1};
  std::array<int, kMaxAxes> axis_ocs_base{};
  const bool has_cube = !pod.cube.empty();
  if (has_cube) {
    int cubes = 1;
    for (std::size_t a = 0; a < axes; ++a) {
      cube[a] = pod.cube[a];
      cubes_along[a] = pod.shape[a] / pod.cube[a];
      cubes *= cubes_along[a];
    }
    for (std::size_t a = 0; a < axes; ++a) {
      axis_ocs_base[a] = t.ocs_.per_pod;
      const bool optical_axis = pod.shape[a] > 1 && (cubes_along[a] > 1 || t.wrap_[a]);
      if (optical_axis) t.ocs_.per_pod += (cube[0] * cube[1] * cube[2]) / cube[a];
    }
    if (t.ocs_.per_pod > 0) t.ocs_.ports = 2 * cubes;
  }
  auto cube_index = [&](const ChipCoord& c) {
    return (c.pos[0] / cube[0]) + cubes_along[0] * ((c.pos[1] / cube[1]) + cubes_along[1] * (c.pos[2] / cube[2]));
  };
  // Position on the face perpendicular to `axis`: the other axes' in-cube coordinates, lower axis fastest.
  auto face_position = [&](const ChipCoord& c, int axis) {
    int pos = 0;
    int stride = 1;
    for (int b = 0; b < kMaxAxes; ++b) {
      if (b == axis) continue;
      pos += (c.pos[b] % cube[b]) * stride;
      stride *= cube[b];
    }
    return pos;
  };

  const std::size_t chips = t.chip_count();
  std::array<LinkId, Topology::kSlots> none;
  none.fill(Topology::kNoLink);
  t.out_ = IdVector<ChipId, std::array<LinkId, Topology::kSlots>>(chips, none);
  t.links_.reserve(chips * 2 * axes);

  for (std::uint32_t s = 0; s < chips; ++s) {
    const ChipId src(s);
    const ChipCoord c = t.coord(src);
    for (int a = 0; a < t.axes_; ++a) {
      const int len = t.shape_[a];
      const int x = c.pos[a];
      if (len == 1 || (x == len - 1 && !t.wrap_[a])) continue;
      const bool wrap = x == len - 1;
      ChipCoord d = c;
      d.pos[a] = (x + 1) % len;
      if (wrap && t.twisted_ && !tw.is_long[a]) {
        for (int b = 0; b < t.axes_; ++b) {
          if (tw.is_long[b]) d.pos[b] = (d.pos[b] + tw.long_len / 2) % tw.long_len;
        }
      }
      const ChipId dst = t.chip_at(d);

      Link fwd;
      fwd.src = src;
      fwd.dst = dst;
      fwd.axis = static_cast<std::int8_t>(a);
      fwd.direction = 1;
      fwd.wraparound = wrap;
      fwd.bandwidth = t.rates_.link_bandwidth;
      fwd.latency = t.rates_.hop_latency;
      const bool optical = has_cube && (wrap || cube_index(c) != cube_index(d));
      if (optical) {
        fwd.kind = LinkKind::optical;
        const int face = face_position(c, a);
        if (face != face_position(d, a)) {
          reject(fmt::format("twisted wraparound from chip {} lands on another cube-face position; the twist "
                             "shift must be a multiple of the cube [{}]", s, fmt::join(pod.cube, ",")));
        }
        const int ocs = c.pod * t.ocs_.per_pod + axis_ocs_base[a] + face;
        fwd.ocs = OcsAttachment{OcsId(static_cast<std::uint32_t>(ocs)), PortId(static_cast<std::uint32_t>(2 * cube_index(c))),
                                PortId(static_cast<std::uint32_t>(2 * cube_index(d) + 1))};
      }
      Link rev = fwd;
      std::swap(rev.src, rev.dst);
      rev.direction = -1;
      if (rev.ocs) std::swap(rev.ocs->src_port, rev.ocs->dst_port);

      const LinkId fwd_id(static_cast<std::uint32_t>(t.links_.size()));
      const LinkId rev_id(fwd_id.value() + 1);
      fwd.reverse = rev_id;
      rev.reverse = fwd_id;
      t.out_[src][static_cast<std::size_t>(2 * a)] = fwd_id;
      t.out_[dst][static_cast<std::size_t>(2 * a + 1)] = rev_id;
      t.links_.push_back(fwd);
      t.links_.push_back(rev);
    }
  }
  return t;
}

ChipCoord Topology::coord(ChipId chip) const {
  ChipCoord c;
  std::size_t r = chip.value();
  c.pod = static_cast<int>(r / chips_per_pod_);
  r %= chips_per_pod_;
  c.pos[0] = static_cast<int>(r % static_cast<std::size_t>(shape_[0]));
  r /= static_cast<std::size_t>(shape_[0]);
  c.pos[1] = static_cast<int>(r % static_cast<std::size_t>(shape_[1]));
  c.pos[2] = static_cast<int>(r / static_cast<std::size_t>(shape_[1]));
  return c;
}

ChipId Topology::chip_at(const ChipCoord& c) const {
  const std::size_t local =
      static_cast<std::size_t>(c.pos[0]) +
      static_cast<std::size_t>(shape_[0]) * (static_cast<std::size_t>(c.pos[1]) + static_cast<std::size_t>(shape_[1]) * c.pos[2]);
  return ChipId(static_cast<std::uint32_t>(static_cast<std::size_t>(c.pod) * chips_per_pod_ + local));
}

HostId Topology::host_of(ChipId chip) const {
  const ChipCoord c = coord(chip);
  const int hx = shape_[0] / host_shape_[0];
  const int hy = shape_[1] / host_shape_[1];
  const std::size_t local = static_cast<std::size_t>(c.pos[0] / host_shape_[0]) +
                            static_cast<std::size_t>(hx) * (static_cast<std::size_t>(c.pos[1] / host_shape_[1]) +
                                                            static_cast<std::size_t>(hy) * (c.pos[2] / host_shape_[2]));
  const std::size_t per_pod = chips_per_pod_ / static_cast<std::size_t>(chips_per_host());
  return HostId(static_cast<std::uint32_t>(static_cast<std::size_t>(c.pod) * per_pod + local));
}

std::vector<ChipId> Topology::chips_of(HostId host) const {
  const std::size_t per_pod = chips_per_pod_ / static_cast<std::size_t>(chips_per_host());
  ChipCoord origin;
  origin.pod = static_cast<int>(host.value() / per_pod);
  std::size_t r = host.value() % per_pod;
  const std::size_t hx = static_cast<std::size_t>(shape_[0] / host_shape_[0]);
  const std::size_t hy = static_cast<std::size_t>(shape_[1] / host_shape_[1]);
  origin.pos[0] = static_cast<int>(r % hx) * host_shape_[0];
  r /= hx;
  origin.pos[1] = static_cast<int>(r % hy) * host_shape_[1];
  origin.pos[2] = static_cast<int>(r / hy) * host_shape_[2];
  std::vector<ChipId> out;
  out.reserve(static_cast<std::size_t>(chips_per_host()));
  for (int z = 0; z < host_shape_[2]; ++z) {
    for (int y = 0; y < host_shape_[1]; ++y) {
      for (int x = 0; x < host_shape_[0]; ++x) {
        ChipCoord c = origin;
        c.pos[0] += x;
        c.pos[1] += y;
        c.pos[2] += z;
        out.push_back(chip_at(c));
      }
    }
  }
  return out;
}

std::size_t Topology::link_count(LinkKind kind) const {
  return static_cast<std::size_t>(
      std::count_if(links_.begin(), links_.end(), [kind](const Link& l) { return l.kind == kind; }));
}

std::optional<LinkId> Topology::out_link(ChipId chip, int axis, int direction) const {
  if (axis < 0 || axis >= axes_) return std::nullopt;
  const LinkId l = out_[chip][static_cast<std::size_t>(2 * axis + (direction < 0 ? 1 : 0))];
  if (l == kNoLink) return std::nullopt;
  return l;
}

std::vector<LinkId> Topology::out_links(ChipId chip) const {
  std::vector<LinkId> out;
  for (LinkId l : out_[chip]) {
    if (l != kNoLink) out.push_back(l);
  }
  return out;
}

std::vector<ChipId> Topology::neighbours(ChipId chip) const {
  std::vector<ChipId> out;
  for (LinkId l : out_links(chip)) out.push_back(links_[l].dst);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<LinkId> Topology::links_through(OcsId ocs, PortId port) const {
  std::vector<LinkId> out;
  for (std::uint32_t i = 0; i < links_.size(); ++i) {
    const Link& l = links_[LinkId(i)];
    if (l.ocs && l.ocs->ocs == ocs && (l.ocs->src_port == port || l.ocs->dst_port == port)) out.push_back(LinkId(i));
  }
  return out;
}

}  // namespace tpusim
