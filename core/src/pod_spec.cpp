#include "tpusim/core/pod_spec.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

namespace tpusim {

const FieldTable<PodSpec>& pod_fields() {
  using S = PodSpec;
  static const FieldTable<PodSpec> table = [] {
    FieldTable<PodSpec> t;
    t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, std::nullopt, "pod or slice name");
    t.add<std::string>("chip", [](S& s) -> std::string& { return s.chip; }, std::nullopt,
                       "bundled chip name (configs/chips) or path to a chip YAML");
    t.add<std::vector<int>>("shape", [](S& s) -> std::vector<int>& { return s.shape; }, std::nullopt,
                            "chips per torus axis", positive_list(1, 3));
    t.add<std::vector<int>>("wraparound", [](S& s) -> std::vector<int>& { return s.wraparound; }, std::nullopt,
                            "per axis, 1 if the axis closes into a ring (torus; 3 chips or more), 0 for a mesh edge");
    t.add<bool>("twisted", [](S& s) -> bool& { return s.twisted; }, "false", "twisted 3D torus wiring");
    t.add<std::vector<int>>("cube", [](S& s) -> std::vector<int>& { return s.cube; }, "[]",
                            "block of chips with electrical links, joined to others by OCS; [] = no OCS");
    t.add<std::vector<int>>("host_shape", [](S& s) -> std::vector<int>& { return s.host_shape; }, std::nullopt,
                            "chips per host along each axis", positive_list(1, 3));
    t.add<Seconds>("ocs_reconfiguration", [](S& s) -> Seconds& { return s.ocs_reconfiguration; }, "100 ms",
                   "time to remap an optical circuit switch (assumption: not published reliably)",
                   non_negative<Seconds>());
    t.add<int>("pods", [](S& s) -> int& { return s.pods; }, "1", "slices joined by the data-center network",
               at_least(1));
    t.add<double>("host_jitter", [](S& s) -> double& { return s.host_jitter; }, "0",
                  "per-host step jitter: each host's step is late by a normal draw whose standard deviation is "
                  "this fraction of the step time, and a step that spans hosts waits for the slowest "
                  "(assumption, docs/calibration.md)",
                  [](const double& v) { return v >= 0 && v <= 0.5 ? std::string{} : std::string("a fraction in [0, 0.5]"); });
    t.add<double>("dcn_oversubscription", [](S& s) -> double& { return s.dcn_oversubscription; }, "1",
                  "oversubscription of each slice's uplink into the data-center fabric: the slice's host NICs "
                  "together carry this many times the uplink's bandwidth (1 = non-blocking, an assumption: "
                  "docs/calibration.md)",
                  [](const double& v) {
                    return v >= 1 && v <= 1024 ? std::string{} : std::string("a ratio in [1, 1024]");
                  });
    return t;
  }();
  return table;
}

PodSpec resolve_pod(const ConfigNode& root, const std::string& path, Diagnostics& diags) {
  PodSpec spec;
  const std::size_t before = diags.size();
  pod_fields().resolve(root, path, spec, diags, &spec.origins);
  if (diags.size() != before) return spec;

  auto err = [&](const std::string& key, const std::string& msg, const std::string& expected,
                 const std::string& found) {
    const auto it = spec.origins.find(key);
    diags.error(it != spec.origins.end() ? it->second.loc : root.loc(), path.empty() ? key : path + "." + key,
                msg, expected, found);
  };
  const std::size_t axes = spec.shape.size();
  if (spec.wraparound.size() != axes) {
    err("wraparound", "needs one entry per axis of shape", fmt::format("{} entries of 0 or 1", axes),
        format_value(spec.wraparound));
  }
  for (int w : spec.wraparound) {
    if (w != 0 && w != 1) err("wraparound", "entries must be 0 or 1", "0 or 1", format_value(spec.wraparound));
  }
  // A ring needs three chips: on an axis of two the wraparound cable would run beside the one link between them
  // (the routes and a bidirectional ring's reverse half took that link both ways, so the cable sat idle while the
  // ideal time counted it), and on an axis of one it would join the chip to itself.
  for (std::size_t a = 0; a < axes && a < spec.wraparound.size(); ++a) {
    if (spec.wraparound[a] == 1 && spec.shape[a] <= 2) {
      err("wraparound", fmt::format("axis {} has {} chip{}: a wraparound needs at least 3", a, spec.shape[a],
                                    spec.shape[a] == 1 ? "" : "s"),
          fmt::format("0 on axis {}", a), format_value(spec.wraparound));
    }
  }
  if (spec.host_shape.size() != axes) {
    err("host_shape", "needs one entry per axis of shape", fmt::format("{} entries", axes),
        format_value(spec.host_shape));
  } else {
    for (std::size_t i = 0; i < axes; ++i) {
      if (spec.shape[i] % spec.host_shape[i] != 0) {
        err("host_shape", "must divide the shape on every axis", fmt::format("a divisor of {}", spec.shape[i]),
            format_value(spec.host_shape));
        break;
      }
    }
  }
  if (!spec.cube.empty()) {
    if (spec.cube.size() != axes) {
      err("cube", "needs one entry per axis of shape", fmt::format("{} entries", axes), format_value(spec.cube));
    } else {
      for (std::size_t i = 0; i < axes; ++i) {
        if (spec.cube[i] < 1 || spec.shape[i] % spec.cube[i] != 0) {
          err("cube", "must divide the shape on every axis", fmt::format("divisors of {}", format_value(spec.shape)),
              format_value(spec.cube));
          break;
        }
      }
    }
  }
  if (spec.chip_count() > kMaxChips) {
    // Named where the shape was written (a scenario's override or --set, else the pod file).
    err("shape", "the pod has too many chips",
        fmt::format("at most {} chips (shape x pods)", kMaxChips),
        fmt::format("{} x {} pods{}", format_value(spec.shape), spec.pods,
                    spec.chip_count() == LLONG_MAX ? " (beyond 64 bits)" : ""));
  }
  if (spec.twisted && axes != 3) {
    err("twisted", "twisting applies to 3D tori only", "false", "true");
  } else if (spec.twisted && spec.wraparound.size() == axes) {
    // The twist rule (topology/topology.h): a k x k x 2k or k x 2k x 2k torus, wrapped on every axis.
    const int longest = *std::max_element(spec.shape.begin(), spec.shape.end());
    const bool wrapped = std::all_of(spec.wraparound.begin(), spec.wraparound.end(), [](int w) { return w != 0; });
    const bool halves = longest % 2 == 0 && std::all_of(spec.shape.begin(), spec.shape.end(), [&](int n) {
                          return n == longest || n == longest / 2;
                        }) && std::count(spec.shape.begin(), spec.shape.end(), longest / 2) > 0;
    if (!wrapped) {
      err("twisted", "a twisted torus wraps around on every axis", "wraparound [1, 1, 1] or twisted: false",
          fmt::format("true with wraparound {}", format_value(spec.wraparound)));
    } else if (!halves) {
      err("twisted", "a twisted torus is k x k x 2k or k x 2k x 2k",
          "a shape whose axes are the longest or half of it, at least one of each, or twisted: false",
          fmt::format("true with shape {}", format_value(spec.shape)));
    }
  }
  return spec;
}

}  // namespace tpusim
