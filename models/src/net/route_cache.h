#pragma once
// RouteCache: the transport's routes of every target from every chip, computed once per router (at
// elaboration and again after each timed cable fault) so that a send does not route anew. For target t and
// chip c the channels are links_[t][begin_[t][c] .. begin_[t][c + 1]). A target whose routes were not cached
// (beyond kRouteCacheEntries) is routed by the transport when a send starts.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpusim::models::net {

class RouteCache {
 public:
  // A view of one cached route.
  struct Span {
    const std::uint32_t* links;
    std::uint32_t hops;
  };

  [[nodiscard]] bool has(std::uint32_t target) const { return target < begin_.size() && !begin_[target].empty(); }
  // The route from `chip` under `target`, which has(target).
  [[nodiscard]] Span find(std::uint32_t target, std::uint32_t chip) const {
    const std::vector<std::uint32_t>& begin = begin_[target];
    return Span{links_[target].data() + begin[chip], begin[chip + 1] - begin[chip]};
  }

  // Makes room for `targets` targets (the ones already cached are kept).
  void resize(std::size_t targets) {
    begin_.resize(targets);
    links_.resize(targets);
  }
  // Caches the routes of `target` from chips 0 .. chips-1, each written by route(chip, out) into `out`
  // (cleared by route), unless it is cached already.
  template <class RouteFn>
  void fill(std::uint32_t target, std::uint32_t chips, RouteFn&& route) {
    std::vector<std::uint32_t>& begin = begin_[target];
    std::vector<std::uint32_t>& links = links_[target];
    if (!begin.empty()) return;
    std::vector<std::uint32_t> path;
    begin.reserve(chips + std::size_t{1});
    for (std::uint32_t c = 0; c < chips; ++c) {
      begin.push_back(static_cast<std::uint32_t>(links.size()));
      route(c, path);
      links.insert(links.end(), path.begin(), path.end());
    }
    begin.push_back(static_cast<std::uint32_t>(links.size()));
  }
  // Empties the cache for a new router. Transfers in flight keep pointing into the old routes, so their
  // storage is kept until the run ends.
  void retire() {
    retired_.push_back(std::move(links_));
    links_.clear();
    begin_.clear();
  }

 private:
  std::vector<std::vector<std::uint32_t>> begin_;  // [target][chip], chips + 1 entries
  std::vector<std::vector<std::uint32_t>> links_;  // [target]
  std::vector<std::vector<std::vector<std::uint32_t>>> retired_;
};

}  // namespace tpusim::models::net
