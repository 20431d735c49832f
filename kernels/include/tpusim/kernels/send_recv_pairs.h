#pragma once
// Sends and recvs the simulator cannot pair. It pairs chip A's k-th send to chip B with B's k-th recv from A
// (models/src/net/point_to_point.cpp), and the recv's chip writes the bytes the send carries, so every send
// needs a recv of the same bytes at its destination naming its chip, and every recv a send. A peer is an
// offset along one axis (the first of mesh_axes, or a named group's first of size > 1), taken modulo its
// length by the simulator: an offset that names no other chip of the slice is reported too.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"

namespace tpusim::kernels {

struct PeerMismatch {
  // outside: the peer names no other chip of the slice (`why` says how); bytes: the recv (at `instruction`)
  // expects other bytes than its send (at `peer_instruction`) carries; no_recv: a send whose destination posts
  // fewer recvs from its chip; no_send: a recv whose source sends it fewer.
  enum class Kind : std::uint8_t { outside, bytes, no_recv, no_send };
  Kind kind = Kind::outside;
  ChipId chip, peer;  // the chip running `instruction`, and the other end (outside: unset)
  std::uint16_t role = 0, peer_role = 0;
  std::uint32_t instruction = 0;
  std::optional<std::uint32_t> peer_instruction;  // bytes: the send
  std::size_t position = 0;  // 0-based: which of the chip's sends to (recvs from) `peer` this is
  std::size_t peer_count = 0;  // no_recv / no_send: how many recvs (sends) the other end has for the pair
  std::string why;             // outside
  bool on_axis = false;        // outside: the axis (mesh_axes, or a group of one chip) names none, not the offset
};

// Every instruction with a peer outside the slice (once each, at the first chip it fails on), then, for the
// rest, the first mismatch of each ordered pair of chips, once per instruction reported. Named groups must
// tile the topology (check them first). Time: chips x the sends and recvs of their programs.
[[nodiscard]] std::vector<PeerMismatch> send_recv_mismatches(const ir::ProgramSet& programs, const Topology& topo);

}  // namespace tpusim::kernels
