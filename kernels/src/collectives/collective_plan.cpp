// Collective plans: the registry, the automatic choice, the multi-axis composition, the DCN stage and the
// closed forms (contracts in tpusim/kernels/collectives.h; the variants in collective_<name>.cpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/collective_algorithm.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/twisted_rings.h"

namespace tpusim::kernels {

namespace detail {

std::vector<AlgorithmVariant> collective_algorithms() {
  // Explicit, in CollectiveAlgorithm order (index i + 1); a static registration would vanish in a static library.
  return {ring_bidirectional_algorithm(), ring_unidirectional_algorithm(), halving_doubling_algorithm(),
          direct_algorithm()};
}

CollectiveSend axis_send(int axis, int distance, std::uint64_t bytes) {
  CollectiveSend s;
  s.offset[static_cast<std::size_t>(axis)] = distance;
  s.bytes = bytes;
  return s;
}

std::vector<std::array<int, kMaxAxes>> peer_offsets(const std::vector<GroupAxis>& axes) {
  std::vector<std::array<int, kMaxAxes>> out;
  std::array<int, kMaxAxes> offset{};
  while (true) {
    // Mixed-radix increment, first group axis fastest; stops after wrapping back to all zeros.
    std::size_t i = 0;
    for (; i < axes.size(); ++i) {
      int& o = offset[static_cast<std::size_t>(axes[i].axis)];
      if (++o < axes[i].length) break;
      o = 0;
    }
    if (i == axes.size()) break;
    out.push_back(offset);
  }
  return out;
}

PhasePlan compose_per_axis(Phase phase, const std::vector<GroupAxis>& axes, std::uint64_t elements,
                           int dtype_bytes, int directions, AxisPhaseFn fn) {
  PhasePlan plan;
  const std::size_t k = axes.size();
  const std::size_t parts = k * static_cast<std::size_t>(directions);
  std::vector<std::vector<CollectiveStep>> lists(parts);
  for (std::size_t j = 0; j < parts; ++j) {
    const std::size_t rotation = j / static_cast<std::size_t>(directions);
    const int dir = j % static_cast<std::size_t>(directions) == 0 ? 1 : -1;
    // Equal shares; the first (elements mod parts) sub-buffers take one element more.
    std::uint64_t c = elements / parts + (j < elements % parts ? 1 : 0);
    for (std::size_t t = 0; t < k; ++t) {
      const std::size_t pos = phase == Phase::reduce_scatter ? t : k - 1 - t;
      c = fn(phase, axes[(rotation + pos) % k], dir, c, dtype_bytes, lists[j]);
    }
    plan.elements_out += c;
  }
  // Every sub-buffer visits every axis once, so the lists have equal lengths; merge them step by step.
  const std::size_t length = lists.empty() ? 0 : lists.front().size();
  for (std::size_t s = 0; s < length; ++s) {
    CollectiveStep merged;
    for (auto& list : lists) {
      if (list.size() != length) throw std::logic_error("compose_per_axis: sub-buffer step lists differ in length");
      merged.reduce_elements += list[s].reduce_elements;
      for (const CollectiveSend& send : list[s].sends) {
        if (send.bytes == 0) continue;
        const auto same = std::find_if(merged.sends.begin(), merged.sends.end(), [&](const CollectiveSend& m) {
          return m.offset == send.offset && m.pod_offset == send.pod_offset && m.chain.same_step(send.chain);
        });
        if (same != merged.sends.end()) {
          same->bytes += send.bytes;
          same->chain.reduce_elements += send.chain.reduce_elements;
        } else {
          merged.sends.push_back(send);
        }
      }
    }
    if (!merged.sends.empty()) plan.steps.push_back(std::move(merged));
  }
  return plan;
}

}  // namespace detail

namespace {

using detail::AlgorithmVariant;
using detail::ceil_div;
using detail::GroupAxis;
using detail::Phase;

constexpr std::string_view kAuto = "auto";
const std::string kAxesKey = "workload.model.axes";
const std::string kAlgorithmKey = "workload.model.algorithm";
// Why permute has no alternative algorithm (kernels/README.md, "Permute has no alternative").
constexpr std::string_view kPermuteNoAlternative =
    ". A +1 shift already fills the + direction of every link of its axis; the only spare capacity (the - "
    "direction of a torus axis) is N - 1 hops the long way round and would gain at most N/(N-1), nothing on a "
    "mesh axis, so there is no alternative plan; ring_bidirectional sends half to each neighbour instead "
    "(kernels/README.md)";

[[noreturn]] void fail(const std::string& key, std::string message, std::string expected, std::string found,
                       std::string hint = {}) {
  throw ConfigError({Diagnostic{SourceLoc{"collective plan"}, key, std::move(message), std::move(expected),
                                std::move(found), std::move(hint)}});
}

const std::string kGroupKey = "group";

// The participating axes of `g` (size > 1), ascending, as its virtual shape; throws (key `group`) for a group
// that does not tile the topology.
std::vector<GroupAxis> group_axes(const Topology& topo, const ir::CollectiveGroup& g) {
  const auto bad = [&](std::string message, std::string expected) {
    fail(kGroupKey, std::move(message), std::move(expected), describe_group(g),
         fmt::format("{} is {} with {} pod(s)", topo.name(), fmt::join(topo.shape().begin(),
                                                                       topo.shape().begin() + topo.axes(), "x"),
                     topo.pods()));
  };
  std::vector<GroupAxis> axes;
  for (int i = 0; i < ir::kGroupAxes; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const std::uint32_t size = g.size[u], stride = g.stride[u];
    if (size == 0 || stride == 0) bad(fmt::format("group with a zero size or stride on axis {}", i), "sizes and strides >= 1");
    if (size == 1) continue;
    if (i >= topo.axes()) {
      bad(fmt::format("group over axis {}, which the pod does not have", i),
          fmt::format("members on axes [0, {}) only", topo.axes()));
    }
    const auto length = static_cast<std::uint64_t>(topo.shape()[u]);
    const std::uint64_t block = std::uint64_t{size} * stride;
    if (block > length || length % block != 0) {
      bad(fmt::format("group of {} members {} apart on axis {} of length {}: size x stride must divide the length",
                      size, stride, i, length),
          "size x stride dividing the axis length");
    }
    // Members close a ring over the wraparound only when they span the whole axis (the last member's next is
    // the first, stride chips on) and, on a twisted torus's short axis, the group holds the rings the wraparound
    // shifts onto; otherwise the group is a line inside its block.
    axes.push_back({i, static_cast<int>(size), block == length && closes_ring(topo, g, i), static_cast<int>(stride)});
  }
  if (g.pods == 0 || topo.pods() % static_cast<int>(g.pods) != 0) {
    bad(fmt::format("group over {} pods of {}", g.pods, topo.pods()), "a pod count dividing the pods of the slice");
  }
  return axes;
}

int group_size(const std::vector<GroupAxis>& axes) {
  int p = 1;
  for (const GroupAxis& a : axes) p *= a.length;
  return p;
}

// Per-chip DCN bandwidth (each direction) with every chip of a pod sending off it, as the DCN stage's ring
// does; throws when a multi-pod collective has none.
BytesPerSecond dcn_per_chip(const Topology& topo) {
  const BytesPerSecond d = topo.dcn_bandwidth_per_chip();
  if (d.value() <= 0) {
    fail("chip.host.dcn_bandwidth", fmt::format("a collective across {} pods needs DCN bandwidth", topo.pods()),
         "a positive bandwidth", format_bandwidth(d));
  }
  return d;
}

// The DCN stage: one phase over M pods, as a unidirectional ring (pod_offset +1) or one direct step.
std::uint64_t dcn_phase(Phase phase, int pods, bool direct, std::uint64_t elements, int dtype_bytes,
                        std::vector<CollectiveStep>& out) {
  const auto m = static_cast<std::uint64_t>(pods);
  const auto bytes = static_cast<std::uint64_t>(dtype_bytes);
  const std::uint64_t block = phase == Phase::reduce_scatter ? ceil_div(elements, m) : elements;
  const std::uint64_t reduce = phase == Phase::reduce_scatter ? block : 0;
  if (direct) {
    CollectiveStep step;
    for (int p = 1; p < pods; ++p) step.sends.push_back(CollectiveSend{{}, p, block * bytes, {}});
    step.reduce_elements = reduce * (m - 1);
    out.push_back(std::move(step));
  } else {
    for (int p = 1; p < pods; ++p) {
      CollectiveStep step;
      step.sends.push_back(CollectiveSend{{}, 1, block * bytes, {}});
      step.reduce_elements = reduce;
      out.push_back(std::move(step));
    }
  }
  return phase == Phase::reduce_scatter ? block : elements * m;
}

void append(std::vector<CollectiveStep>& to, std::vector<CollectiveStep> from) {
  for (auto& s : from) to.push_back(std::move(s));
}

// The algorithms that can run `kind` over `axes`, for the hint of a rejection.
std::vector<std::string> valid_algorithms(CollectiveKind kind, const std::vector<GroupAxis>& axes) {
  std::vector<std::string> names{std::string(kAuto)};
  for (const AlgorithmVariant& v : detail::collective_algorithms()) {
    if (v.unsupported(kind, axes).empty()) names.emplace_back(v.name);
  }
  return names;
}

// A ring_bidirectional permute over a group of several axes (kernels/README.md, "Where the ring lies"): the step's
// bytes spread over every axis's links in proportion to what each axis carries per chip (the lanes' weights, in units
// of half a link of a group axis of stride 1; stride t divides them by t): a wrapped axis +1 and -1, 2 units each; a
// pair one send to the other member, 2 units (+1 and -1 are the same chip, and DOR sends both out of the + port even
// over a wrapped pair's two cables, kernels/README.md "Permute has no alternative"); a longer line +1 and -1, 1 unit
// each (its ring's wrap send goes back over the links the other direction uses). Every directed link of the group then
// carries the same bytes, S / (the sum of the axes' rates).
struct PermuteLane {
  int axis = 0;
  int distance = 1;
  std::uint64_t weight = 0;
};

std::vector<PermuteLane> permute_lanes(const std::vector<GroupAxis>& axes) {
  std::uint64_t strides = 1;  // a common multiple of the strides, so every weight is whole
  for (const GroupAxis& a : axes) strides *= static_cast<std::uint64_t>(a.stride);
  std::vector<PermuteLane> lanes;
  for (const GroupAxis& a : axes) {
    const std::uint64_t unit = strides / static_cast<std::uint64_t>(a.stride);
    if (a.length == 2) {
      lanes.push_back({a.axis, 1, 2 * unit});
    } else {
      const std::uint64_t w = a.wraps ? 2 * unit : unit;
      lanes.push_back({a.axis, 1, w});
      lanes.push_back({a.axis, -1, w});
    }
  }
  return lanes;
}

// `elements` shared over the lanes by weight, the first (remainder) lanes one element more.
std::vector<std::uint64_t> lane_elements(const std::vector<PermuteLane>& lanes, std::uint64_t elements) {
  std::uint64_t total = 0;
  for (const PermuteLane& l : lanes) total += l.weight;
  std::vector<std::uint64_t> out;
  std::uint64_t given = 0;
  for (const PermuteLane& l : lanes) {
    out.push_back(elements / total * l.weight + (elements % total) * l.weight / total);
    given += out.back();
  }
  for (std::size_t i = 0; given < elements; i = (i + 1) % out.size(), ++given) ++out[i];
  return out;
}

// The multi-axis permute's closed form: the most bytes a directed link carries / B + the longest send's hops (a
// wrapped axis or a pair: stride hops; a longer line: its wrap send's (N - 1) x stride).
Seconds multi_axis_permute_ideal(const Topology& topo, double bytes, const std::vector<GroupAxis>& axes) {
  const std::vector<PermuteLane> lanes = permute_lanes(axes);
  std::uint64_t total = 0;
  for (const PermuteLane& l : lanes) total += l.weight;
  double load = 0;
  int hops = 0;
  for (const GroupAxis& a : axes) {
    double plus = 0, minus = 0;
    for (const PermuteLane& l : lanes) {
      if (l.axis != a.axis) continue;
      (l.distance > 0 ? plus : minus) += bytes * static_cast<double>(l.weight) / static_cast<double>(total);
    }
    // The t lanes of a strided block interleave on the same links; a longer line's two directions share them.
    const double on_link = (a.wraps || a.length == 2 ? std::max(plus, minus) : plus + minus) * a.stride;
    load = std::max(load, on_link);
    hops = std::max(hops, (a.wraps || a.length == 2 ? 1 : a.length - 1) * a.stride);
  }
  return Seconds(load / topo.link_bandwidth().value() + hops * topo.hop_latency().value());
}

// Closed forms of the in-pod part (see ideal_collective_time in collectives.h).
Seconds in_pod_ideal(const Topology& topo, CollectiveKind kind, double s, const std::vector<GroupAxis>& axes) {
  if (axes.empty() || s == 0) return Seconds(0);
  const double b = topo.link_bandwidth().value();
  const double hop = topo.hop_latency().value();
  if (b <= 0) {
    fail("chip.ici.link_bandwidth", "a collective over ICI needs link bandwidth", "a positive bandwidth",
         format_bandwidth(topo.link_bandwidth()));
  }
  double rate = 0, ring_steps = 0, diameter = 0, all_to_all = 0;
  double p = 1;
  for (const GroupAxis& a : axes) {
    // A group `stride` chips apart shares each link with stride - 1 other groups of its block (their lanes
    // interleave) and each of its ring steps crosses `stride` links.
    const double n = a.length, t = a.stride;
    const double r = (a.wraps ? 2 * b : b) / t;
    rate += r;
    p *= n;
    ring_steps += (n - 1) * t;
    diameter += (a.wraps ? std::floor(n / 2) : n - 1) * t;
    all_to_all = std::max(all_to_all, std::floor(n * n / 4) * s / (n * r));
  }
  switch (kind) {
    case CollectiveKind::all_reduce: return Seconds(2 * (p - 1) / p * s / rate + 2 * ring_steps * hop);
    case CollectiveKind::reduce_scatter: return Seconds((p - 1) / p * s / rate + ring_steps * hop);
    case CollectiveKind::all_gather: return Seconds((p - 1) * s / rate + ring_steps * hop);
    case CollectiveKind::all_to_all: return Seconds(all_to_all + diameter * hop);
    case CollectiveKind::permute: {
      const GroupAxis& a = axes.front();
      const int hops = (a.wraps || a.length == 2 ? 1 : a.length - 1) * a.stride;
      return Seconds(s * a.stride / b + hops * hop);
    }
  }
  return Seconds(0);
}

}  // namespace

std::string_view algorithm_name(CollectiveAlgorithm a) {
  if (a == CollectiveAlgorithm::automatic) return kAuto;
  for (const AlgorithmVariant& v : detail::collective_algorithms()) {
    if (v.id == a) return v.name;
  }
  return "?";
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names{std::string(kAuto)};
  for (const AlgorithmVariant& v : detail::collective_algorithms()) names.emplace_back(v.name);
  return names;
}

std::optional<CollectiveAlgorithm> algorithm_by_name(std::string_view name) {
  if (name == kAuto) return CollectiveAlgorithm::automatic;
  for (const AlgorithmVariant& v : detail::collective_algorithms()) {
    if (v.name == name) return v.id;
  }
  return std::nullopt;
}

CollectiveAlgorithm resolve_algorithm(CollectiveAlgorithm requested, CollectiveKind kind,
                                      std::uint64_t bytes_per_chip, int /*pod_group_size*/, bool twisted_short_axis) {
  if (requested != CollectiveAlgorithm::automatic) return requested;
  switch (kind) {
    case CollectiveKind::all_to_all:
      // sweeps/alltoall-algorithms-v4-4x4x4.yaml: direct wins by ~2% up to 64 KiB (one step of latency), the
      // bidirectional ring from 256 KiB on (neighbour links only, no DOR tie imbalance: 1.5x at 64 MiB). On a
      // twisted torus direct wins at every size where the group spans a short axis (v4 4x4x8, the whole torus:
      // 1.8x to 2.2x faster from 1 MiB to 256 MiB per chip; collectives_test.cpp).
      if (twisted_short_axis) return CollectiveAlgorithm::direct;
      return bytes_per_chip <= kAutoDirectMaxBytes ? CollectiveAlgorithm::direct
                                                   : CollectiveAlgorithm::ring_bidirectional;
    case CollectiveKind::permute: return CollectiveAlgorithm::ring_unidirectional;
    default:
      // Measurement C1 (collectives.h): the ring at every size, even latency-bound ones.
      return CollectiveAlgorithm::ring_bidirectional;
  }
}

double bus_factor(CollectiveKind kind, int participants) {
  const double n = participants;
  if (n < 1) return 0;
  switch (kind) {
    case CollectiveKind::all_reduce: return 2 * (n - 1) / n;
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: return (n - 1) / n;
    case CollectiveKind::all_gather: return n - 1;
    case CollectiveKind::permute: return 1;
  }
  return 1;
}

ir::CollectiveGroup whole_axes_group(const Topology& topo, std::uint32_t axes_mask) {
  const std::uint32_t all = (1u << topo.axes()) - 1;
  if ((axes_mask & ~all) != 0) {
    std::vector<int> bad;
    for (int i = topo.axes(); i < 32; ++i) {
      if (axes_mask & (1u << i)) bad.push_back(i);
    }
    fail(kAxesKey, "collective over an axis the pod does not have",
         fmt::format("axes in [0, {}) ({} is {}-dimensional)", topo.axes(), topo.name(), topo.axes()),
         fmt::format("axis {}", fmt::join(bad, ", ")));
  }
  if (axes_mask == 0) axes_mask = all;
  ir::CollectiveGroup g;
  for (int i = 0; i < topo.axes(); ++i) {
    if (axes_mask & (1u << i)) g.size[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(topo.shape()[static_cast<std::size_t>(i)]);
  }
  g.pods = static_cast<std::uint32_t>(topo.pods());
  return g;
}

std::string describe_group(const ir::CollectiveGroup& g) {
  return fmt::format("size {}, stride {}, {} pod(s)", fmt::join(g.size, "x"), fmt::join(g.stride, "x"), g.pods);
}

int group_participants(const Topology& topo, const ir::CollectiveGroup& group) {
  return group_size(group_axes(topo, group)) * static_cast<int>(group.pods);
}

Seconds ideal_collective_time(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip,
                              std::uint32_t axes_mask) {
  return ideal_collective_time(topo, kind, bytes_per_chip, whole_axes_group(topo, axes_mask));
}

Seconds ideal_collective_time(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip,
                              const ir::CollectiveGroup& group) {
  const std::vector<GroupAxis> axes = group_axes(topo, group);
  const auto s = static_cast<double>(bytes_per_chip);
  const auto m = static_cast<int>(group.pods);
  if (m == 1 || s == 0) return in_pod_ideal(topo, kind, s, axes);
  if (kind == CollectiveKind::permute && !axes.empty()) return in_pod_ideal(topo, kind, s, axes);
  const double d = dcn_per_chip(topo).value();
  const double p = group_size(axes), pods = m;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return in_pod_ideal(topo, CollectiveKind::reduce_scatter, s, axes) + Seconds(2 * (pods - 1) / pods * (s / p) / d) +
             in_pod_ideal(topo, CollectiveKind::all_gather, s / p, axes);
    case CollectiveKind::reduce_scatter:
      return in_pod_ideal(topo, kind, s, axes) + Seconds((pods - 1) / pods * (s / p) / d);
    case CollectiveKind::all_gather:
      return Seconds((pods - 1) * s / d) + in_pod_ideal(topo, kind, pods * s, axes);
    case CollectiveKind::all_to_all:
      return Seconds((pods - 1) / pods * s / d) + in_pod_ideal(topo, kind, s, axes);
    case CollectiveKind::permute: return Seconds(s / d);
  }
  return Seconds(0);
}

CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip, DType dtype,
                               std::uint32_t axes_mask, CollectiveAlgorithm algorithm) {
  return plan_collective(topo, kind, bytes_per_chip, dtype, whole_axes_group(topo, axes_mask), algorithm);
}

CollectivePlan plan_collective(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip, DType dtype,
                               const ir::CollectiveGroup& group, CollectiveAlgorithm algorithm) {
  const bool phased = kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter ||
                      kind == CollectiveKind::all_gather;
  if (algorithm == CollectiveAlgorithm::automatic && phased && bytes_per_chip > 0) {
    (void)group_axes(topo, group);  // a group that does not tile the pod is rejected before any candidate
    return detail::plan_automatic(topo, kind, bytes_per_chip, dtype, group);
  }
  return detail::plan_collective_cut(topo, kind, bytes_per_chip, dtype, group, algorithm, {-1, -1, -1});
}

CollectivePlan detail::plan_collective_cut(const Topology& topo, CollectiveKind kind, std::uint64_t bytes_per_chip,
                                           DType dtype, const ir::CollectiveGroup& group,
                                           CollectiveAlgorithm algorithm, const std::array<int, kMaxAxes>& cut) {
  std::vector<GroupAxis> axes = group_axes(topo, group);
  for (GroupAxis& a : axes) {
    const int c = cut[static_cast<std::size_t>(a.axis)];
    if (a.wraps || (c == a.length - 1 && a.length <= detail::kMaxLineLength)) a.cut = c;  // a ring's cut, or a line
  }
  const auto pods = static_cast<int>(group.pods);
  const int in_pod = group_size(axes);

  CollectivePlan plan;
  plan.kind = kind;
  // A twisted torus's short axes (shorter than its longest) wrap onto another ring (topology.h).
  const int longest = *std::max_element(topo.shape().begin(), topo.shape().begin() + topo.axes());
  const bool twisted_short_axis =
      topo.twisted() && std::any_of(axes.begin(), axes.end(), [&](const GroupAxis& a) {
        return topo.shape()[static_cast<std::size_t>(a.axis)] < longest;
      });
  plan.algorithm = resolve_algorithm(algorithm, kind, bytes_per_chip, in_pod, twisted_short_axis);
  for (const GroupAxis& a : axes) plan.axes_mask |= 1u << a.axis;
  plan.participants = in_pod * pods;
  plan.bytes_per_chip = bytes_per_chip;
  plan.bus_factor = bus_factor(kind, plan.participants);
  const bool ring = plan.algorithm == CollectiveAlgorithm::ring_bidirectional ||
                    plan.algorithm == CollectiveAlgorithm::ring_unidirectional;
  const bool phased = kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter ||
                      kind == CollectiveKind::all_gather;
  for (GroupAxis& a : axes) {
    if (!ring || !phased) a.cut = -1;
    if (a.cut >= 0) plan.cut[static_cast<std::size_t>(a.axis)] = a.cut;
  }

  const std::vector<AlgorithmVariant> registry = detail::collective_algorithms();
  const auto variant = std::find_if(registry.begin(), registry.end(),
                                    [&](const AlgorithmVariant& v) { return v.id == plan.algorithm; });
  if (variant == registry.end()) {
    fail(kAlgorithmKey, "unknown collective algorithm index", fmt::format("one of: {}", fmt::join(algorithm_names(), ", ")),
         std::to_string(static_cast<int>(algorithm)));
  }
  if (const std::string why = variant->unsupported(kind, axes); !why.empty()) {
    std::string hint = fmt::format("algorithms that can: {}", fmt::join(valid_algorithms(kind, axes), ", "));
    if (kind == CollectiveKind::permute) hint += kPermuteNoAlternative;
    fail(kAlgorithmKey, fmt::format("{} cannot run {} on {}", variant->name, collective_name(kind), topo.name()),
         fmt::format("an algorithm that can run {} here", collective_name(kind)), why, std::move(hint));
  }
  plan.ideal_time = ideal_collective_time(topo, kind, bytes_per_chip, group);
  // A permute's algorithm says where its data goes: ring_bidirectional sends half each way, so its best case is
  // the +1 shift of half the buffer.
  if (kind == CollectiveKind::permute && plan.algorithm == CollectiveAlgorithm::ring_bidirectional) {
    plan.ideal_time = axes.size() > 1
                          ? multi_axis_permute_ideal(topo, static_cast<double>(bytes_per_chip), axes)
                          : ideal_collective_time(topo, kind, ceil_div(bytes_per_chip, std::uint64_t{2}), group);
  }
  if (bytes_per_chip == 0 || (axes.empty() && pods == 1)) return plan;

  const int dbytes = dtype_bytes(dtype);
  const std::uint64_t elements = ceil_div(bytes_per_chip, static_cast<std::uint64_t>(dbytes));
  const bool direct_dcn = plan.algorithm == CollectiveAlgorithm::direct;
  auto in_pod_phase = [&](Phase phase, std::uint64_t e) {
    if (axes.empty()) return e;
    detail::PhasePlan p = variant->phase(phase, axes, e, dbytes);
    append(plan.steps, std::move(p.steps));
    return p.elements_out;
  };
  auto dcn = [&](Phase phase, std::uint64_t e) {
    return pods > 1 ? dcn_phase(phase, pods, direct_dcn, e, dbytes, plan.steps) : e;
  };

  switch (kind) {
    case CollectiveKind::all_reduce: {
      std::uint64_t shard = in_pod_phase(Phase::reduce_scatter, elements);
      shard = dcn(Phase::reduce_scatter, shard);
      in_pod_phase(Phase::all_gather, dcn(Phase::all_gather, shard));
      break;
    }
    case CollectiveKind::reduce_scatter: dcn(Phase::reduce_scatter, in_pod_phase(Phase::reduce_scatter, elements)); break;
    case CollectiveKind::all_gather: in_pod_phase(Phase::all_gather, dcn(Phase::all_gather, elements)); break;
    case CollectiveKind::all_to_all: {
      if (pods > 1) {
        // Each chip first sends to the same chip of every other pod the 1/M of its buffer bound for that pod.
        CollectiveStep step;
        const std::uint64_t block = ceil_div(elements, static_cast<std::uint64_t>(pods));
        for (int p = 1; p < pods; ++p) {
          step.sends.push_back(CollectiveSend{{}, p, block * static_cast<std::uint64_t>(dbytes), {}});
        }
        plan.steps.push_back(std::move(step));
      }
      if (!axes.empty()) append(plan.steps, variant->all_to_all(axes, elements, dbytes));
      break;
    }
    case CollectiveKind::permute: {
      CollectiveStep step;
      const auto db = static_cast<std::uint64_t>(dbytes);
      if (axes.empty()) {
        step.sends.push_back(CollectiveSend{{}, 1, elements * db, {}});
      } else if (plan.algorithm == CollectiveAlgorithm::ring_bidirectional && axes.size() > 1) {
        // Over several axes: rings through the members, on every axis's links (collectives.h).
        const std::vector<PermuteLane> lanes = permute_lanes(axes);
        const std::vector<std::uint64_t> share = lane_elements(lanes, elements);
        for (std::size_t i = 0; i < lanes.size(); ++i) {
          if (share[i] > 0) step.sends.push_back(detail::axis_send(lanes[i].axis, lanes[i].distance, share[i] * db));
        }
      } else if (plan.algorithm == CollectiveAlgorithm::ring_bidirectional) {
        // The exchange of a bidirectional ring step (collectives.h): the first half to +1, the rest to -1.
        const std::uint64_t plus = ceil_div(elements, std::uint64_t{2});
        step.sends.push_back(detail::axis_send(axes.front().axis, 1, plus * db));
        if (elements > plus) step.sends.push_back(detail::axis_send(axes.front().axis, -1, (elements - plus) * db));
      } else {
        step.sends.push_back(detail::axis_send(axes.front().axis, 1, elements * db));
      }
      plan.steps.push_back(std::move(step));
      break;
    }
  }
  return plan;
}

}  // namespace tpusim::kernels
