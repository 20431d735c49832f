// Every bundled pod (configs/pods/*.yaml) built from its YAML, against closed forms of its shape, one test
// instance per pod. With L_a the length of axis a, w_a its wraparound, P the product of the lengths, M pods:
//   chips            P x M
//   cables per ring  0 for L = 1; L with wraparound (2 for L = 2: two cables, topology.h); L - 1 without
//   directed links   2 x M x sum_a cables_per_ring(a) x P / L_a        (every cable is two directed links)
//   neighbours       per axis: 0 for L = 1, 1 for L = 2, 2 on a ring of L >= 3, and on a line of L >= 3
//                    1 at either end and 2 inside; out-links likewise, except 2 on a wrapped axis of L = 2
//   diameter         sum_a (w_a ? floor(L_a / 2) : L_a - 1)
//   bisection        the narrowest of the cuts halving an axis, directed links one way: the least over the
//                    axes of L >= 2 of (w ? 2 : 1) x P / L (a torus is also cut at the wraparound), 0 for one chip
//   optical links    cubed pods (cube C_a): 2 x M x sum_a (w_a ? L_a / C_a : L_a / C_a - 1) x P / L_a (every
//                    cube-face crossing, wraparound included); 0 without a cube
//   OCS              M x sum_a P_C / C_a switches (one per axis and face position, P_C = cube size), using
//                    2 x (number of cubes) ports each
// The table below holds the numbers the closed forms give, so a reader sees them and a change to a pod file
// (or a new pod) has to update them; a pod missing from the table fails its instance.
#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tpusim/core/data_paths.h"
#include "tpusim/core/fault_plan.h"
#include "tpusim/core/scenario.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim {
namespace {

struct Expected {
  std::size_t chips;
  std::size_t links;
  std::size_t optical;
  int diameter;
  std::size_t bisection_links;
  int ocs;
  int ocs_ports;
};

const std::map<std::string, Expected>& expected_by_pod() {
  static const std::map<std::string, Expected> table = {
      {"v2-16x16", {256, 1024, 0, 16, 32, 0, 0}},
      {"v2-1x1", {1, 0, 0, 0, 0, 0, 0}},
      {"v2-2x2", {4, 8, 0, 2, 2, 0, 0}},
      {"v2-4x4", {16, 48, 0, 6, 4, 0, 0}},
      {"v3-32x32", {1024, 4096, 0, 32, 64, 0, 0}},
      {"v3-1x1", {1, 0, 0, 0, 0, 0, 0}},
      {"v3-4x4", {16, 48, 0, 6, 4, 0, 0}},
      {"v4-16x16x16", {4096, 24576, 6144, 24, 512, 48, 128}},
      {"v4-1x1x1", {1, 0, 0, 0, 0, 0, 0}},
      {"v4-2x2x1", {4, 8, 0, 2, 2, 0, 0}},
      {"v4-2x2x4", {16, 56, 0, 5, 4, 0, 0}},
      {"v4-4x4x4", {64, 384, 96, 6, 32, 48, 2}},
      {"v4-8x8x8", {512, 3072, 768, 12, 128, 48, 16}},
      {"v5e-16x16", {256, 1024, 0, 16, 32, 0, 0}},
      {"v5e-1x1", {1, 0, 0, 0, 0, 0, 0}},
      {"v5e-2x2", {4, 8, 0, 2, 2, 0, 0}},
      {"v5e-4x4", {16, 48, 0, 6, 4, 0, 0}},
      {"v5e-8x16", {128, 480, 0, 15, 16, 0, 0}},
      {"v5p-16x16x24", {6144, 36864, 9216, 28, 512, 48, 192}},
      {"v5p-16x20x28", {8960, 53760, 13440, 32, 640, 48, 280}},
      {"v5p-2x2x1", {4, 8, 0, 2, 2, 0, 0}},
      {"v5p-4x4x4", {64, 384, 96, 6, 32, 48, 2}},
      {"v5p-8x8x8", {512, 3072, 768, 12, 128, 48, 16}},
      {"v6e-16x16", {256, 1024, 0, 16, 32, 0, 0}},
      {"v6e-1x1", {1, 0, 0, 0, 0, 0, 0}},
      {"v6e-2x2", {4, 8, 0, 2, 2, 0, 0}},
  };
  return table;
}

// The closed forms of the header comment, from the spec alone.
struct ClosedForm {
  explicit ClosedForm(const PodSpec& p) : pod(p) {}
  const PodSpec& pod;

  [[nodiscard]] std::size_t axes() const { return pod.shape.size(); }
  [[nodiscard]] std::size_t len(std::size_t a) const { return static_cast<std::size_t>(pod.shape[a]); }
  [[nodiscard]] bool wraps(std::size_t a) const { return pod.wraparound[a] != 0; }
  [[nodiscard]] std::size_t per_pod() const {
    std::size_t n = 1;
    for (std::size_t a = 0; a < axes(); ++a) n *= len(a);
    return n;
  }
  [[nodiscard]] std::size_t pods() const { return static_cast<std::size_t>(pod.pods); }
  [[nodiscard]] std::size_t chips() const { return per_pod() * pods(); }
  [[nodiscard]] std::size_t cables_per_ring(std::size_t a) const {
    if (len(a) == 1) return 0;
    return wraps(a) ? len(a) : len(a) - 1;
  }
  [[nodiscard]] std::size_t links() const {
    std::size_t cables = 0;
    for (std::size_t a = 0; a < axes(); ++a) cables += cables_per_ring(a) * (per_pod() / len(a));
    return 2 * cables * pods();
  }
  [[nodiscard]] std::size_t neighbours(const ChipCoord& c) const {
    std::size_t n = 0;
    for (std::size_t a = 0; a < axes(); ++a) {
      const std::size_t l = len(a);
      const bool end = c.pos[a] == 0 || static_cast<std::size_t>(c.pos[a]) == l - 1;
      if (l == 2) n += 1;
      else if (l >= 3) n += wraps(a) || !end ? 2 : 1;
    }
    return n;
  }
  [[nodiscard]] std::size_t out_links(const ChipCoord& c) const {
    std::size_t n = neighbours(c);
    for (std::size_t a = 0; a < axes(); ++a) n += len(a) == 2 && wraps(a) ? 1 : 0;  // two cables to one chip
    return n;
  }
  [[nodiscard]] int diameter() const {
    int d = 0;
    for (std::size_t a = 0; a < axes(); ++a) d += static_cast<int>(wraps(a) ? len(a) / 2 : len(a) - 1);
    return d;
  }
  [[nodiscard]] std::size_t bisection_links() const {
    std::size_t least = 0;
    for (std::size_t a = 0; a < axes(); ++a) {
      if (len(a) == 1) continue;
      const std::size_t cut = (wraps(a) ? 2 : 1) * (per_pod() / len(a));
      if (least == 0 || cut < least) least = cut;
    }
    return least;
  }
  [[nodiscard]] std::size_t optical() const {
    if (pod.cube.empty()) return 0;
    std::size_t cables = 0;
    for (std::size_t a = 0; a < axes(); ++a) {
      const std::size_t blocks = len(a) / static_cast<std::size_t>(pod.cube[a]);
      cables += (wraps(a) ? blocks : blocks - 1) * (per_pod() / len(a));
    }
    return 2 * cables * pods();
  }
  [[nodiscard]] int ocs() const {
    if (pod.cube.empty()) return 0;
    int cube_chips = 1;
    for (int c : pod.cube) cube_chips *= c;
    int n = 0;
    for (int c : pod.cube) n += cube_chips / c;
    return n * pod.pods;
  }
  [[nodiscard]] int ocs_ports() const {
    if (pod.cube.empty()) return 0;
    int cubes = 1;
    for (std::size_t a = 0; a < axes(); ++a) cubes *= pod.shape[a] / pod.cube[a];
    return 2 * cubes;
  }
};

// Eccentricity of `src` by BFS over neighbours() (pod 0 only).
int eccentricity(const Topology& t, ChipId src) {
  std::vector<int> dist(t.chips_per_pod(), -1);
  std::deque<ChipId> queue{src};
  dist[src.value()] = 0;
  int far = 0;
  while (!queue.empty()) {
    const ChipId c = queue.front();
    queue.pop_front();
    for (const ChipId n : t.neighbours(c)) {
      if (dist[n.value()] >= 0) continue;
      dist[n.value()] = dist[c.value()] + 1;
      far = std::max(far, dist[n.value()]);
      queue.push_back(n);
    }
  }
  EXPECT_TRUE(std::none_of(dist.begin(), dist.end(), [](int d) { return d < 0; })) << "pod 0 is not connected";
  return far;
}

class BundledPod : public ::testing::TestWithParam<std::string> {};

TEST_P(BundledPod, StructureMatchesTheClosedFormsOfItsShape) {
  const PodSpec pod = load_pod(GetParam());
  const ChipSpec chip = load_chip(pod.chip);
  const Topology t = build_topology(pod, chip);
  const ClosedForm f(pod);
  ASSERT_FALSE(t.twisted()) << "no closed form here for a twisted torus; add one with the pod";

  const auto row = expected_by_pod().find(GetParam());
  ASSERT_NE(row, expected_by_pod().end()) << "add " << GetParam() << " to the table of expected numbers";
  const Expected& e = row->second;
  // The table is the closed forms' output ...
  EXPECT_EQ(f.chips(), e.chips);
  EXPECT_EQ(f.links(), e.links);
  EXPECT_EQ(f.optical(), e.optical);
  EXPECT_EQ(f.diameter(), e.diameter);
  EXPECT_EQ(f.bisection_links(), e.bisection_links);
  EXPECT_EQ(f.ocs(), e.ocs);
  EXPECT_EQ(f.ocs_ports(), e.ocs_ports);

  // ... and the built topology has exactly those numbers.
  EXPECT_EQ(t.chip_count(), e.chips);
  EXPECT_EQ(t.link_count(), e.links);
  EXPECT_EQ(t.link_count(LinkKind::optical), e.optical);
  EXPECT_EQ(t.link_count(LinkKind::electrical), e.links - e.optical);
  EXPECT_EQ(t.ocs_count(), e.ocs);
  EXPECT_EQ(t.ocs_ports_used(), e.ocs_ports);
  // The fault plan's check that a rate has components to strike (core/fault_plan.h) agrees with the pod built.
  EXPECT_EQ(pod_has_components(pod, FaultComponent::link), e.links > 0);
  EXPECT_EQ(pod_has_components(pod, FaultComponent::ocs_link), e.optical > 0);
  const Bisection b = bisection(t);
  EXPECT_EQ(b.links, e.bisection_links);
  EXPECT_DOUBLE_EQ(b.bandwidth.value(), static_cast<double>(e.bisection_links) * chip.ici.link_bandwidth.value());

  std::size_t wrong_neighbours = 0, wrong_out_links = 0;
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    const ChipCoord at = t.coord(ChipId(c));
    wrong_neighbours += t.neighbours(ChipId(c)).size() != f.neighbours(at) ? 1 : 0;
    wrong_out_links += t.out_links(ChipId(c)).size() != f.out_links(at) ? 1 : 0;
  }
  EXPECT_EQ(wrong_neighbours, 0u);
  EXPECT_EQ(wrong_out_links, 0u);

  // Diameter by search, not by the library's closed form: BFS from every chip up to kDiameterBfsLimit chips;
  // above that every bundled pod is a full torus, which is vertex-transitive, so one BFS is exact.
  if (t.chips_per_pod() <= kDiameterBfsLimit) {
    EXPECT_EQ(diameter_bfs(t), e.diameter);
  } else {
    for (std::size_t a = 0; a < f.axes(); ++a) ASSERT_TRUE(f.wraps(a)) << "a large mesh needs every BFS";
    EXPECT_EQ(eccentricity(t, ChipId(0)), e.diameter);
  }
  EXPECT_EQ(diameter(t), e.diameter);
}

TEST(BundledPods, TheTableListsOnlyBundledPods) {
  const std::vector<std::string> names = bundled_names("configs/pods");
  for (const auto& [name, row] : expected_by_pod()) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " is not bundled any more";
  }
}

// Test names must be alphanumeric or '_': "v4-4x4x4" -> "v4_4x4x4".
std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(EveryBundledPod, BundledPod, ::testing::ValuesIn(bundled_names("configs/pods")), param_name);

}  // namespace
}  // namespace tpusim
