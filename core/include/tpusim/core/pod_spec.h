#pragma once
// The resolved description of a pod or slice: which chip, the torus/mesh shape, wraparound per axis, optional
// twist, and the cube size joined through optical circuit switches (v4/v5p). Built from configs/pods/*.yaml.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "tpusim/core/checked.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/fields.h"

namespace tpusim {

struct PodSpec {
  std::string name;
  std::string chip;              // the chip's bundled name or path, as written
  std::vector<int> shape;        // chips per axis, 1 to 3 axes
  std::vector<int> wraparound;   // per axis: 1 = torus link closes the ring, 0 = mesh edge (bools as ints)
  bool twisted = false;          // twisted 3D torus wiring (v4 slices that allow it)
  std::vector<int> cube;         // OCS block shape (e.g. [4,4,4]); empty = all links electrical, no OCS
  std::vector<int> host_shape;   // chips per host along each axis (e.g. [2,2,1])
  Seconds ocs_reconfiguration;   // time to remap an OCS (not published; a parameter)
  int pods = 1;                  // multislice: number of such slices joined by the DCN
  double host_jitter = 0;        // per-host step delay: standard deviation / step time (an assumption)
  double dcn_oversubscription = 1;  // a slice's hosts' NIC bandwidth / its uplink into the DCN fabric
  std::map<std::string, FieldOrigin> origins;

  // Chips of all pods; saturates at LLONG_MAX for an absurd shape (resolve_pod rejects any above kMaxChips).
  [[nodiscard]] long long chip_count() const {
    long long n = 1;
    for (int d : shape) n = saturating_mul<long long>(n, d);
    return saturating_mul<long long>(n, pods);
  }
  // The ICI ports every chip needs to form one slice of this shape: two per axis (a torus or a line reaches
  // both neighbours along each axis), none for a slice of one chip.
  [[nodiscard]] std::size_t ici_ports_needed() const {
    for (int d : shape) {
      if (d != 1) return 2 * shape.size();
    }
    return 0;
  }
};

// Chip ids are 32-bit and chip indices are ints: a pod (all its slices) has at most this many chips. The
// resource guards refuse far smaller pods on real machines; this bound keeps the arithmetic exact.
inline constexpr long long kMaxChips = (1LL << 31) - 1;

[[nodiscard]] const FieldTable<PodSpec>& pod_fields();

// Cross-field rules: wraparound and host_shape have one entry per axis; a cube divides the shape.
[[nodiscard]] PodSpec resolve_pod(const ConfigNode& root, const std::string& path, Diagnostics& diags);

}  // namespace tpusim
