#pragma once
// The pod graph: chips with torus coordinates, hosts, and directed ICI links (electrical, or optical through an
// optical circuit switch), plus the structural queries collectives and the SystemC pod are built from.
//
// Built once from resolved specs by build_topology(); immutable afterwards (faults do not edit the topology,
// they are a FaultSet handed to a router, see routing.h). Memory is O(chips + links): coordinates and hosts
// are computed from ids, and no route is stored.
//
// Modelling decisions (each is a simplification of published descriptions; see tpu-specs.md for sources):
//
// - Ids. ChipId = pod * chips_per_pod + x + X * (y + Y * z) (axis 0 varies fastest). Every physical cable is
//   two directed links with consecutive ids: 2c runs in the + direction of its axis, 2c + 1 is its reverse.
//   Cables are numbered by their + end chip, then by axis.
// - Rings. Along an axis of length L >= 3, a torus axis has L cables per ring and a mesh axis L - 1. An axis
//   of length 2 with wraparound has TWO cables between its two chips (the + port of each chip is cabled to the
//   - port of the other; the one from coordinate 1 back to 0 is the wraparound cable), so every chip still
//   uses two ports per axis and the pair gets twice the bandwidth of a mesh pair. An axis of length 1 has no
//   links, with or without wraparound.
// - Optical links (PodSpec::cube non-empty, v4/v5p): a link whose ends lie in different cubes, and every
//   wraparound link, leaves the cube through a face and goes through an OCS; all other links are electrical.
//   OCS mapping (simplified after Jouppi et al., ISCA'23, where 64 cubes x 96 face links meet 48 OCS of 136
//   ports with 128 used): there is one OCS per (axis, position on the cube face perpendicular to that axis),
//   so a 4x4x4 cube gives 3 x 16 = 48 OCS per pod. Each cube has two ports on each OCS: port 2 * cube for its
//   + face and 2 * cube + 1 for its - face (cube = linear cube index in the pod, axis 0 fastest). A cable from
//   cube A's + face to cube B's - face is the circuit (port 2A) <-> (port 2B + 1) of the OCS of its axis and
//   face position; both directed links of the cable record that OCS and both ports. A full v4 pod uses 128
//   ports of each of its 48 OCS, as published; the spare ports are not modelled. For larger pods (v5p,
//   140 cubes) the model needs 280 ports per logical OCS; the real v5p OCS layout is not published. Each
//   pod of a multislice has its own OCS set (OcsId = pod * ocs_per_pod + local index).
// - Twisted torus (PodSpec::twisted; Jouppi et al., ISCA'23, after Camara et al., "Twisted Torus Topologies
//   for Enhanced Interconnection Networks", IEEE TPDS 2010): allowed when every axis wraps and has length L
//   or L/2, where L is the longest axis (k x k x 2k and k x 2k x 2k, e.g. 4x4x8 and 4x8x8). Rule: the
//   wraparound link of every short axis (length L/2) also moves L/2 along every long axis (length L): the
//   + wraparound from (x = k-1, y, z) of a 4x4x8 slice lands on (0, y, (z + 4) mod 8). All other links are as
//   in the plain torus. The result is a Cayley graph of an abelian group, so it stays vertex-transitive.
// - Hosts: each host owns a host_shape block of chips; HostId = pod * hosts_per_pod + linear block index.
// - Multislice (pods > 1): the pods are identical and share no ICI link. Each host has a DCN attachment of
//   chips_per_host x ChipSpec::host.dcn_bandwidth, and each pod's hosts reach the data-center fabric through
//   one uplink of their NICs' bandwidth / PodSpec::dcn_oversubscription; the DCN itself is modelled
//   elsewhere (models/src/net/README.md "DCN"), not as links here.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/ids.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/core/units.h"

namespace tpusim {

inline constexpr int kMaxAxes = 3;

enum class LinkKind : std::uint8_t { electrical, optical };

[[nodiscard]] const char* link_kind_name(LinkKind k);

// A chip's place: which pod of a multislice, and its coordinate per axis (unused axes are 0).
struct ChipCoord {
  int pod = 0;
  std::array<int, kMaxAxes> pos{};
  bool operator==(const ChipCoord& o) const { return pod == o.pod && pos == o.pos; }
};

// Where an optical link passes through an OCS: the switch, the port of the source-side cube face and the port
// of the destination-side cube face. The OCS holds the circuit src_port <-> dst_port.
struct OcsAttachment {
  OcsId ocs;
  PortId src_port;
  PortId dst_port;
};

// One direction of one cable.
struct Link {
  ChipId src;
  ChipId dst;
  LinkId reverse;             // the other direction of the same cable
  LinkKind kind = LinkKind::electrical;
  std::int8_t axis = 0;
  std::int8_t direction = 1;  // +1 or -1 along `axis`
  bool wraparound = false;    // closes the ring (crosses from coordinate L-1 to 0 or back)
  BytesPerSecond bandwidth;   // this direction only
  Seconds latency;            // per hop
  std::optional<OcsAttachment> ocs;  // set exactly for optical links
};

class Topology;

// Throws std::invalid_argument (message names the field) for specs it cannot build: 1 to 3 axes, positive
// lengths, one wraparound/host_shape entry per axis, host_shape and cube dividing the shape, more axes than
// the chip has link pairs, a twist on a shape the twist rule does not cover.
[[nodiscard]] Topology build_topology(const PodSpec& pod, const ChipSpec& chip);

class Topology {
 public:
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& chip_name() const { return chip_name_; }
  [[nodiscard]] int axes() const { return axes_; }
  // Length per axis; entries past axes() are 1.
  [[nodiscard]] const std::array<int, kMaxAxes>& shape() const { return shape_; }
  [[nodiscard]] bool wraps(int axis) const { return wrap_[static_cast<std::size_t>(axis)]; }
  [[nodiscard]] bool twisted() const { return twisted_; }
  // Cube (OCS block) per axis; empty when the pod has no OCS.
  [[nodiscard]] const std::vector<int>& cube() const { return cube_; }
  [[nodiscard]] int pods() const { return pods_; }

  [[nodiscard]] std::size_t chips_per_pod() const { return chips_per_pod_; }
  [[nodiscard]] std::size_t chip_count() const { return chips_per_pod_ * static_cast<std::size_t>(pods_); }
  [[nodiscard]] ChipCoord coord(ChipId chip) const;
  // `c` must lie inside the pod shape and pod count.
  [[nodiscard]] ChipId chip_at(const ChipCoord& c) const;

  [[nodiscard]] const std::array<int, kMaxAxes>& host_shape() const { return host_shape_; }
  [[nodiscard]] int chips_per_host() const { return host_shape_[0] * host_shape_[1] * host_shape_[2]; }
  [[nodiscard]] std::size_t host_count() const { return chip_count() / static_cast<std::size_t>(chips_per_host()); }
  [[nodiscard]] HostId host_of(ChipId chip) const;
  [[nodiscard]] std::vector<ChipId> chips_of(HostId host) const;  // ascending ChipId
  // Bandwidth of one host's DCN attachment (each direction); the DCN joins pods of a multislice.
  [[nodiscard]] BytesPerSecond dcn_bandwidth_per_host() const { return rates_.dcn_per_host; }
  // A pod's hosts' NIC bandwidth over its uplink into the data-center fabric (1: the uplink never binds).
  [[nodiscard]] double dcn_oversubscription() const { return rates_.dcn_oversubscription; }
  // Bandwidth of one pod's uplink into the fabric (each direction).
  [[nodiscard]] BytesPerSecond dcn_uplink_bandwidth() const {
    return dcn_bandwidth_per_host() * (static_cast<double>(host_count()) / pods_ / rates_.dcn_oversubscription);
  }
  // Each chip's DCN rate when every chip of its pod sends off the pod at once (each direction): its share of
  // its host's NIC, or of its pod's uplink when that is oversubscribed.
  [[nodiscard]] BytesPerSecond dcn_bandwidth_per_chip() const {
    return dcn_bandwidth_per_host() / (static_cast<double>(chips_per_host()) * rates_.dcn_oversubscription);
  }

  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] std::size_t link_count(LinkKind kind) const;
  [[nodiscard]] const Link& link(LinkId id) const { return links_[id]; }
  [[nodiscard]] const IdVector<LinkId, Link>& links() const { return links_; }
  // The link leaving `chip` along `axis` in `direction` (+1/-1), if the chip has one there.
  [[nodiscard]] std::optional<LinkId> out_link(ChipId chip, int axis, int direction) const;
  [[nodiscard]] std::vector<LinkId> out_links(ChipId chip) const;  // by axis, + before -
  // Distinct chips one link away, ascending.
  [[nodiscard]] std::vector<ChipId> neighbours(ChipId chip) const;

  [[nodiscard]] BytesPerSecond link_bandwidth() const { return rates_.link_bandwidth; }
  [[nodiscard]] Seconds hop_latency() const { return rates_.hop_latency; }

  // OCS: count over all pods, and ports each OCS uses (two per cube). Zero when the pod has no cube.
  [[nodiscard]] int ocs_count() const { return ocs_.per_pod * pods_; }
  [[nodiscard]] int ocs_ports_used() const { return ocs_.ports; }
  // The directed links whose circuit uses `port` of `ocs` (two per cable; empty for an unused port).
  [[nodiscard]] std::vector<LinkId> links_through(OcsId ocs, PortId port) const;

 private:
  friend Topology build_topology(const PodSpec& pod, const ChipSpec& chip);
  static constexpr std::size_t kSlots = 2 * kMaxAxes;  // out port slot = 2 * axis + (direction < 0)

  Topology() = default;

  std::string name_;
  std::string chip_name_;
  int axes_ = 0;
  std::array<int, kMaxAxes> shape_{1, 1, 1};
  std::array<bool, kMaxAxes> wrap_{};
  bool twisted_ = false;
  std::vector<int> cube_;
  int pods_ = 1;
  std::size_t chips_per_pod_ = 0;
  std::array<int, kMaxAxes> host_shape_{1, 1, 1};
  struct Rates {  // the chip's figures every link (and every host's DCN NIC) is built with
    BytesPerSecond link_bandwidth;
    Seconds hop_latency;
    BytesPerSecond dcn_per_host;
    double dcn_oversubscription = 1;
  } rates_;
  struct Switches {  // the optical circuit switches of a pod with cubes
    int per_pod = 0;
    int ports = 0;  // OCS ports in use
  } ocs_;
  IdVector<LinkId, Link> links_;
  IdVector<ChipId, std::array<LinkId, kSlots>> out_;  // kNoLink where the chip has no link
  static constexpr LinkId kNoLink{0xffffffffU};
};

// Longest shortest path in hops between two chips of one pod (pods share no ICI link, so the whole
// multislice has the diameter of one pod). Exact: BFS from every chip for pods up to kDiameterBfsLimit chips,
// the closed form above that; a twisted torus is vertex-transitive, so one BFS is exact at any size.
inline constexpr std::size_t kDiameterBfsLimit = 1024;
[[nodiscard]] int diameter(const Topology& topo);
// BFS from every chip of pod 0 (cost O(chips x links)); for tests and small pods.
[[nodiscard]] int diameter_bfs(const Topology& topo);
// Sum over axes of floor(L/2) for a wrapped axis and L - 1 for a mesh axis. nullopt for a twisted torus,
// which has no closed form here.
[[nodiscard]] std::optional<int> diameter_closed_form(const Topology& topo);

// Bisection: the narrowest of the cuts that halve one axis. The cut across axis a puts the chips with
// coordinate < floor(L_a/2) on one side (the smaller one when L_a is odd); `links` counts directed links
// crossing from the low half to the high half (one direction), in one pod: on a torus axis the middle cut plus
// the wraparound cut (2 x cross-section), on a twisted torus also the other axes' wraparound links that the
// twist carries across. bandwidth = sum of those links' bandwidths. Over the axes of two chips or more the
// least bandwidth wins, then the fewest links, then the longest axis, then the first; `axis` names it.
struct Bisection {
  int axis = 0;
  std::size_t links = 0;
  BytesPerSecond bandwidth;
};
[[nodiscard]] Bisection bisection(const Topology& topo);

}  // namespace tpusim
