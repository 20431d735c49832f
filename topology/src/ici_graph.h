#pragma once
// Internal: the ICI links of a Topology as a Boost.Graph, and a BFS over it. Kept out of the public headers
// so that users of the topology library never see Boost.
#include <cstdint>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "tpusim/topology/topology.h"

namespace tpusim::detail {

struct LinkEdge {
  std::uint32_t link = 0;  // LinkId value
};

// Vertex i is ChipId(i); edge properties carry the LinkId. Edges leave each vertex in LinkId order.
using IciGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, LinkEdge>;

// All links of `topo`, or only those with alive[link] when `alive` is given.
[[nodiscard]] IciGraph make_ici_graph(const Topology& topo, const std::vector<bool>* alive = nullptr);

inline constexpr std::uint32_t kNoPred = 0xffffffffU;

// Breadth-first search from `src`. On return dist[v] is the hop count to v (-1 if unreachable) and, when
// `pred_link` is given, pred_link[v] the LinkId value of the tree edge into v (kNoPred for src and
// unreachable vertices). Vectors are resized as needed; passing the same ones again avoids reallocation.
void bfs(const IciGraph& g, ChipId src, std::vector<int>& dist, std::vector<std::uint32_t>* pred_link,
         std::vector<boost::default_color_type>& color);

}  // namespace tpusim::detail
