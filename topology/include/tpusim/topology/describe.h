#pragma once
// Human-readable views of a Topology: the text summary printed by `tpusim topo NAME`, and Graphviz DOT.
#include <cstddef>
#include <ostream>
#include <string>

#include "tpusim/topology/topology.h"

namespace tpusim {

// Multi-line summary: shape, chips, hosts, links by kind, OCS, diameter, bisection links and bandwidth, DCN.
[[nodiscard]] std::string describe_topology(const Topology& topo);

// Largest topology write_dot() accepts; a bigger graph is unreadable as a drawing.
inline constexpr std::size_t kDotChipLimit = 512;

// Writes an undirected DOT graph, one edge per cable (optical cables dashed, wraparound ones grey), nodes
// labelled with their coordinates, one cluster per pod. Throws std::invalid_argument above kDotChipLimit
// chips, before writing anything.
void write_dot(const Topology& topo, std::ostream& out);

}  // namespace tpusim
