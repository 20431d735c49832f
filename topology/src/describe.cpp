#include "tpusim/topology/describe.h"

#include <stdexcept>

#include <fmt/format.h>

namespace tpusim {

namespace {

std::string join_axes(const std::array<int, kMaxAxes>& v, int axes, const char* sep) {
  std::string s;
  for (int a = 0; a < axes; ++a) {
    if (a > 0) s += sep;
    s += std::to_string(v[static_cast<std::size_t>(a)]);
  }
  return s;
}

std::string kind_of(const Topology& topo) {
  int wrapped = 0;
  int moving = 0;  // axes longer than 1
  for (int a = 0; a < topo.axes(); ++a) {
    if (topo.shape()[static_cast<std::size_t>(a)] == 1) continue;
    ++moving;
    wrapped += topo.wraps(a) ? 1 : 0;
  }
  const std::string dims = fmt::format("{}D", moving);
  if (topo.twisted()) return dims + " twisted torus";
  if (wrapped == 0) return dims + " mesh";
  if (wrapped == moving) return dims + " torus";
  return dims + " torus/mesh (wraparound on some axes)";
}

}  // namespace

std::string describe_topology(const Topology& topo) {
  const int axes = topo.axes();
  std::array<int, kMaxAxes> wrap{};
  for (int a = 0; a < axes; ++a) wrap[static_cast<std::size_t>(a)] = topo.wraps(a) ? 1 : 0;
  std::string s;
  s += fmt::format("topology {} (chip {}): {} {}, wraparound [{}]\n", topo.name(), topo.chip_name(),
                   join_axes(topo.shape(), axes, "x"), kind_of(topo), join_axes(wrap, axes, ","));
  s += fmt::format("chips: {} ({} pod{} of {})\n", topo.chip_count(), topo.pods(), topo.pods() == 1 ? "" : "s",
                   topo.chips_per_pod());
  s += fmt::format("hosts: {} ({} chips per host, {})\n", topo.host_count(), topo.chips_per_host(),
                   join_axes(topo.host_shape(), axes, "x"));
  const std::size_t optical = topo.link_count(LinkKind::optical);
  s += fmt::format("links: {} directed ({} cables): {} electrical, {} optical\n", topo.link_count(),
                   topo.link_count() / 2, topo.link_count() - optical, optical);
  s += fmt::format("link: {} per direction, {} per hop\n", format_bandwidth(topo.link_bandwidth()),
                   format_time(topo.hop_latency()));
  if (!topo.cube().empty()) {
    std::array<int, kMaxAxes> cube{1, 1, 1};
    for (int a = 0; a < axes; ++a) cube[static_cast<std::size_t>(a)] = topo.cube()[static_cast<std::size_t>(a)];
    s += fmt::format("cubes: {} (OCS: {} switches, {} ports used each)\n", join_axes(cube, axes, "x"),
                     topo.ocs_count(), topo.ocs_ports_used());
  }
  s += fmt::format("diameter: {} hops\n", diameter(topo));
  const Bisection b = bisection(topo);
  s += fmt::format("bisection: {} links one way across axis {} = {}\n", b.links, b.axis,
                   format_bandwidth(b.bandwidth));
  if (topo.pods() > 1) {
    s += fmt::format("DCN: {} per host, {} hosts\n", format_bandwidth(topo.dcn_bandwidth_per_host()),
                     topo.host_count());
    if (topo.dcn_oversubscription() > 1) {
      s += fmt::format("DCN fabric: one uplink per slice of {} ({:g}:1 oversubscribed)\n",
                       format_bandwidth(topo.dcn_uplink_bandwidth()), topo.dcn_oversubscription());
    }
  }
  return s;
}

void write_dot(const Topology& topo, std::ostream& out) {
  if (topo.chip_count() > kDotChipLimit) {
    throw std::invalid_argument(fmt::format("write_dot: topology {} has {} chips; DOT output is limited to {} "
                                            "(use describe_topology for large pods)",
                                            topo.name(), topo.chip_count(), kDotChipLimit));
  }
  const int axes = topo.axes();
  out << "graph \"" << topo.name() << "\" {\n  node [shape=box, fontsize=10];\n";
  for (int p = 0; p < topo.pods(); ++p) {
    out << "  subgraph cluster_pod" << p << " {\n    label=\"pod " << p << "\";\n";
    for (std::size_t i = 0; i < topo.chips_per_pod(); ++i) {
      const ChipId c(static_cast<std::uint32_t>(static_cast<std::size_t>(p) * topo.chips_per_pod() + i));
      out << "    c" << c.value() << " [label=\"" << c.value() << "\\n(" << join_axes(topo.coord(c).pos, axes, ",")
          << ")\"];\n";
    }
    out << "  }\n";
  }
  // Even link ids are the + direction of each cable: one edge per cable.
  for (std::uint32_t i = 0; i < topo.link_count(); i += 2) {
    const Link& l = topo.link(LinkId(i));
    out << "  c" << l.src.value() << " -- c" << l.dst.value();
    std::string attrs;
    if (l.kind == LinkKind::optical) {
      attrs += fmt::format("style=dashed, label=\"ocs{}:{}-{}\"", l.ocs->ocs.value(), l.ocs->src_port.value(),
                           l.ocs->dst_port.value());
    }
    if (l.wraparound) attrs += std::string(attrs.empty() ? "" : ", ") + "color=grey";
    if (!attrs.empty()) out << " [" << attrs << "]";
    out << ";\n";
  }
  out << "}\n";
}

}  // namespace tpusim
