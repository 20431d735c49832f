#include "ici_graph.h"

#include <algorithm>
#include <utility>

#include <boost/graph/breadth_first_search.hpp>

namespace tpusim::detail {

IciGraph make_ici_graph(const Topology& topo, const std::vector<bool>* alive) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  std::vector<LinkEdge> props;
  edges.reserve(topo.link_count());
  props.reserve(topo.link_count());
  for (std::uint32_t i = 0; i < topo.link_count(); ++i) {
    if (alive && !(*alive)[i]) continue;
    const Link& l = topo.link(LinkId(i));
    edges.emplace_back(l.src.value(), l.dst.value());
    props.push_back(LinkEdge{i});
  }
  // The unsorted constructor sorts edges by source with a stable counting sort, so per-vertex edge order
  // stays LinkId order and BFS tie-breaking is deterministic.
  return IciGraph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), props.begin(),
                  topo.chip_count());
}

namespace {

class Recorder : public boost::default_bfs_visitor {
 public:
  Recorder(std::vector<int>& dist, std::vector<std::uint32_t>* pred) : dist_(&dist), pred_(pred) {}
  template <class Edge, class Graph>
  void tree_edge(Edge e, const Graph& g) const {
    const auto u = boost::source(e, g);
    const auto v = boost::target(e, g);
    (*dist_)[v] = (*dist_)[u] + 1;
    if (pred_) (*pred_)[v] = g[e].link;
  }

 private:
  std::vector<int>* dist_;
  std::vector<std::uint32_t>* pred_;
};

}  // namespace

void bfs(const IciGraph& g, ChipId src, std::vector<int>& dist, std::vector<std::uint32_t>* pred_link,
         std::vector<boost::default_color_type>& color) {
  const std::size_t n = boost::num_vertices(g);
  dist.assign(n, -1);
  if (pred_link) pred_link->assign(n, kNoPred);
  color.assign(n, boost::white_color);
  dist[src.value()] = 0;
  auto color_map = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  boost::breadth_first_search(g, src.value(), boost::visitor(Recorder(dist, pred_link)).color_map(color_map));
}

}  // namespace tpusim::detail
