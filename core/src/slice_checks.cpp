// The rules a pod keeps on its chip (scenario.h, check_pod_on_chip), from docs/hardware.md's sources.
#include <algorithm>
#include <climits>
#include <numeric>

#include <fmt/format.h>

#include "tpusim/core/scenario.h"

namespace tpusim {
namespace {

// Where the pod's `key` was written: its origin, else the pod's name (a key nobody wrote, e.g. cube: []).
SourceLoc pod_key_loc(const PodSpec& pod, const std::string& key) {
  const auto it = pod.origins.find(key);
  if (it != pod.origins.end() && !it->second.defaulted) return it->second.loc;
  const auto name = pod.origins.find("name");
  return name != pod.origins.end() ? name->second.loc : SourceLoc{"(pod)", 0, 0};
}

// A chip with fewer ICI ports than a slice of the pod needs (PodSpec::ici_ports_needed) cannot form it. When the
// port count is the chip file's own, the mistake is the shape (a 3-D shape on a 2-D generation): the error is at
// the pod's shape and names the chip's ports and where they were written. When a scenario or --set overrode the
// ports, the error stays at that override.
void check_ici_ports(const PodSpec& pod, const ChipSpec& chip, const std::string& prefix, Diagnostics& diags) {
  const std::size_t needed = pod.ici_ports_needed();
  if (static_cast<std::size_t>(chip.ici.links) >= needed) return;
  const ChipBlock* ici = find_block(chip, BlockKind::ici);
  const std::string field = (ici != nullptr ? ici->name : std::string("ici")) + ".links";
  const auto at = chip.origins.find(field);
  const auto name = chip.origins.find("name");
  const bool written = at != chip.origins.end() && !at->second.defaulted;
  const SourceLoc links_loc = written ? at->second.loc : SourceLoc{"(chip)", 0, 0};
  const bool overridden = written && name != chip.origins.end() && name->second.loc.file != links_loc.file;
  if (overridden) {
    diags.error(links_loc, "chip." + field, "too few ICI ports for the pod",
                fmt::format("at least {}: two per axis of the pod's shape [{}]", needed, fmt::join(pod.shape, ", ")),
                std::to_string(chip.ici.links), "a chip that forms this pod, or a pod of one chip");
    return;
  }
  const int pairs = std::max(chip.ici.links, 0) / 2;
  const std::size_t axes = pod.shape.size();
  const std::string forms = pairs == 0 ? "so it cannot form a slice of more than one chip"
                                       : fmt::format("so a {}-D generation cannot form a {}-D shape", pairs, axes);
  diags.error(pod_key_loc(pod, "shape"), prefix + "shape",
              fmt::format("a {}-axis shape needs {} ICI ports per chip; chip {} has {} (chip.{} at {})", axes,
                          needed, chip.name, chip.ici.links, field, links_loc.str()),
              fmt::format("a shape of at most {} ax{} (two ICI ports per axis), or one chip", pairs,
                          pairs == 1 ? "is" : "es"),
              format_value(pod.shape),
              fmt::format("chip {} has {} ICI ports ({}), {}; give the shape fewer axes, or choose a chip with {} "
                          "ports",
                          chip.name, chip.ici.links, links_loc.str(), forms, needed));
}

// A v5p slice is one of the shapes below a cube Cloud TPU offers (2x2x1, 2x2x2, 2x2x4, 2x4x4, any axis order),
// or whole 4x4x4 cubes; one chip alone is accepted too (a chip simulated by itself). Fewer than three axes read
// as axes of one chip. False when the shape is refused.
bool check_v5p_shape(const PodSpec& pod, const std::string& prefix, Diagnostics& diags) {
  std::vector<int> dims = pod.shape;
  if (dims.size() > 3) return true;  // resolve_pod refuses it
  dims.resize(3, 1);
  std::vector<int> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<std::vector<int>> below_cube = {{1, 2, 2}, {2, 2, 2}, {2, 2, 4}, {2, 4, 4}};
  const bool one_chip = sorted == std::vector<int>{1, 1, 1};
  const bool whole_cubes = std::all_of(dims.begin(), dims.end(), [](int n) { return n % 4 == 0; });
  if (one_chip || whole_cubes || std::find(below_cube.begin(), below_cube.end(), sorted) != below_cube.end()) {
    return true;
  }
  const std::string source = "docs/hardware.md, v5p [P] cloud-v5p, xpk: the slice shapes Cloud TPU offers";
  std::string hint = source;
  if (1LL * sorted[0] * sorted[1] * sorted[2] > 32) {  // more chips than a slice below a cube: the cubes around it
    std::vector<int> down = dims;
    std::vector<int> up = dims;
    for (std::size_t a = 0; a < dims.size(); ++a) {
      down[a] = std::max(4, dims[a] / 4 * 4);
      up[a] = dims[a] % 4 == 0 || dims[a] > INT_MAX - 4 ? down[a] : dims[a] / 4 * 4 + 4;
    }
    hint = down == up ? fmt::format("did you mean {}? {}", format_value(down), source)
                      : fmt::format("did you mean {} or {}? {}", format_value(down), format_value(up), source);
  }
  diags.error(pod_key_loc(pod, "shape"), prefix + "shape",
              "not a v5p slice: below a cube a slice is 2x2x1, 2x2x2, 2x2x4 or 2x4x4, from a cube up whole 4x4x4 "
              "cubes",
              "2x2x1, 2x2x2, 2x2x4 or 2x4x4 in any axis order, or every axis a multiple of 4 (whole cubes)",
              format_value(pod.shape), hint);
  return false;
}

// Wraparound the generation's ICI cannot close: v5e and v6e only on axes of 16 chips (the pod's side); v4 and
// v5p only on a slice of whole 4 x 4 x 4 cubes, through the OCS (so with `cube`).
void check_wraparound(const PodSpec& pod, const ChipSpec& chip, const std::string& prefix, Diagnostics& diags) {
  const std::string& generation = chip.published.generation;
  const auto wrapped = [&](std::size_t a) { return a < pod.wraparound.size() && pod.wraparound[a] != 0; };
  std::vector<std::size_t> axes;
  for (std::size_t a = 0; a < pod.shape.size(); ++a) {
    if (wrapped(a)) axes.push_back(a);
  }
  if (axes.empty()) return;
  const SourceLoc at = pod_key_loc(pod, "wraparound");
  if (generation == "v5e" || generation == "v6e") {
    for (const std::size_t a : axes) {
      if (pod.shape[a] == 16) continue;
      diags.error(at, prefix + "wraparound",
                  fmt::format("a {} slice wraps around only on axes of 16 chips; axis {} has {}", generation, a,
                              pod.shape[a]),
                  fmt::format("0 on axis {} (a mesh edge)", a), format_value(pod.wraparound),
                  generation == "v5e"
                      ? "docs/hardware.md, v5e [P] cloud-v5e: wraparound only on axes of length 16; shorter axes are "
                        "meshes"
                      : "docs/hardware.md, v6e [P] book: as on v5e, wraparound only on axes of length 16 (the pod's "
                        "16 x 16 torus); shorter axes are meshes");
      return;
    }
  }
  if (generation != "v4" && generation != "v5p") return;
  const std::string source = generation == "v4" ? "docs/hardware.md, v4 [P][S]" : "docs/hardware.md, v5p [P] "
                                                                                    "cloud-v5p, book";
  const bool whole_cubes = pod.shape.size() == 3 && std::all_of(pod.shape.begin(), pod.shape.end(), [](int n) {
                             return n % 4 == 0;
                           });
  if (!whole_cubes) {
    diags.error(at, prefix + "wraparound",
                fmt::format("a {} slice wraps around only when it is whole 4x4x4 cubes; [{}] is not", generation,
                            fmt::join(pod.shape, ", ")),
                fmt::format("wraparound [{}] (a mesh)", fmt::join(std::vector<int>(pod.shape.size(), 0), ", ")),
                format_value(pod.wraparound),
                source + ": a slice of whole cubes gets wraparound through the OCS; a smaller slice is a mesh");
  } else if (pod.cube.empty()) {
    diags.error(at, prefix + "cube",
                fmt::format("a {} slice's wraparound runs through the optical circuit switches", generation),
                "cube: [4, 4, 4] (the OCS between the 4x4x4 cubes)", "no cube (all links electrical, no OCS)",
                source + ": the links on a cube's faces are optical and pass through the OCS; or wraparound "
                         "[0, 0, 0] for a mesh");
  }
}

// Hosts of another size than the chip's: a host block holds chip.host.chips_per_host chips, or the whole slice
// when it is smaller than one host.
void check_hosts(const PodSpec& pod, const ChipSpec& chip, const std::string& prefix, Diagnostics& diags) {
  const int per_host = chip.host.chips_per_host;
  if (per_host <= 0 || pod.host_shape.size() != pod.shape.size()) return;
  const long long block = std::accumulate(pod.host_shape.begin(), pod.host_shape.end(), 1LL,
                                          [](long long a, int b) { return a * b; });
  if (block == per_host) return;
  long long slice = 1;
  for (int n : pod.shape) slice *= n;
  if (pod.host_shape == pod.shape && slice < per_host) return;  // the slice is part of one host
  diags.error(pod_key_loc(pod, "host_shape"), prefix + "host_shape",
              fmt::format("a host of chip {} has {} chips", chip.name, per_host),
              fmt::format("host blocks of {} chips (chip.host.chips_per_host), or the whole slice when it has "
                          "fewer",
                          per_host),
              fmt::format("{} = {} chip{} per host", format_value(pod.host_shape), block, block == 1 ? "" : "s"),
              "docs/hardware.md: the chips per host of each generation; for a host of another size, set "
              "chip.host.chips_per_host too");
}

}  // namespace

void check_pod_on_chip(const PodSpec& pod, const ChipSpec& chip, const std::string& prefix, Diagnostics& diags) {
  if (pod.shape.empty()) return;
  check_ici_ports(pod, chip, prefix, diags);
  const bool shape_ok = chip.published.generation != "v5p" || check_v5p_shape(pod, prefix, diags);
  if (shape_ok) check_wraparound(pod, chip, prefix, diags);
  check_hosts(pod, chip, prefix, diags);
}

std::optional<std::string> idle_ici_ports_note(const PodSpec& pod, const ChipSpec& chip) {
  const std::size_t most = pod.ici_ports_needed();  // a 2x2x1 cables fewer, but refuses a chip with fewer
  if (most == 0 || static_cast<std::size_t>(chip.ici.links) <= most) return std::nullopt;
  const std::string written = written_by_user(chip, BlockKind::ici, "links");
  if (written.empty()) return std::nullopt;
  return fmt::format("idle ICI ports: chip {} has {} ICI ports{}, but a slice of shape [{}] cables at most {} per "
                     "chip (two per axis); the other {} are idle and add no bandwidth",
                     chip.name, chip.ici.links, written, fmt::join(pod.shape, ", "), most,
                     static_cast<std::size_t>(chip.ici.links) - most);
}

ChipSpec load_chip_of_pod(const PodSpec& pod) {
  ChipSpec chip = load_chip(pod.chip);
  Diagnostics diags;
  check_pod_on_chip(pod, chip, "", diags);
  diags.throw_if_any();
  return chip;
}

}  // namespace tpusim
