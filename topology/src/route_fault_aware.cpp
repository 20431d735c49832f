// The "fault_aware" router (contract in routing.h): DOR where the DOR route survives, BFS shortest paths on
// the surviving graph elsewhere.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "ici_graph.h"
#include "tpusim/topology/routing.h"

namespace tpusim {

void FaultSet::add_cable(const Topology& topo, LinkId link) {
  links.push_back(link);
  links.push_back(topo.link(link).reverse);
}

void FaultSet::add_ocs_port(const Topology& topo, OcsId ocs, PortId port) {
  const std::vector<LinkId> through = topo.links_through(ocs, port);
  links.insert(links.end(), through.begin(), through.end());
}

namespace {

class FaultAwareRouter final : public Router {
 public:
  FaultAwareRouter(const Topology& topo, const FaultSet& faults)
      : topo_(topo), link_alive_(topo.link_count(), true), chip_alive_(topo.chip_count(), true) {
    for (LinkId l : faults.links) {
      if (l.value() >= topo.link_count()) throw std::out_of_range("fault set names link " + std::to_string(l.value()));
      link_alive_[l.value()] = false;
    }
    for (ChipId c : faults.chips) {
      if (c.value() >= topo.chip_count()) throw std::out_of_range("fault set names chip " + std::to_string(c.value()));
      chip_alive_[c.value()] = false;
    }
    for (std::uint32_t i = 0; i < topo.link_count(); ++i) {
      const Link& l = topo.link(LinkId(i));
      if (!chip_alive_[l.src.value()] || !chip_alive_[l.dst.value()]) link_alive_[i] = false;
    }
    graph_ = detail::make_ici_graph(topo, &link_alive_);
  }

  std::optional<Path> route(ChipId src, ChipId dst) override {
    if (!chip_alive_[src.value()] || !chip_alive_[dst.value()]) return std::nullopt;
    if (auto dor = dor_route(topo_, src, dst)) {
      const bool intact =
          std::all_of(dor->begin(), dor->end(), [&](LinkId l) { return static_cast<bool>(link_alive_[l.value()]); });
      if (intact) return dor;
    }
    if (!tree_src_ || *tree_src_ != src) {
      detail::bfs(graph_, src, dist_, &pred_, color_);
      tree_src_ = src;
    }
    if (dist_[dst.value()] < 0) return std::nullopt;
    Path path(static_cast<std::size_t>(dist_[dst.value()]));
    ChipId at = dst;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      *it = LinkId(pred_[at.value()]);
      at = topo_.link(*it).src;
    }
    return path;
  }

  const char* name() const override { return "fault_aware"; }

 private:
  const Topology& topo_;
  std::vector<bool> link_alive_;
  std::vector<bool> chip_alive_;
  detail::IciGraph graph_;
  // BFS tree of the last source routed around a fault.
  std::optional<ChipId> tree_src_;
  std::vector<int> dist_;
  std::vector<std::uint32_t> pred_;
  std::vector<boost::default_color_type> color_;
};

}  // namespace

std::unique_ptr<Router> make_fault_aware_router(const Topology& topo, const FaultSet& faults) {
  return std::make_unique<FaultAwareRouter>(topo, faults);
}

}  // namespace tpusim
