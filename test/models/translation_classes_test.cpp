// Translation classes (mirror/translation_classes.h) on small meshes, against hand counts: the periods per
// axis, the number of classes, and which chip represents which.
#include <gtest/gtest.h>

#include "collective_test_support.h"
#include "mirror/translation_classes.h"

namespace tpusim::models {
namespace {

using net::nettest::pod_scenario;

ir::Instruction classes_test_collective(std::uint16_t group) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.comm.collective = CollectiveKind::all_reduce;
  ins.bytes = 1 << 20;
  ins.dtype = DType::bf16;
  ins.comm.group = group;
  return ins;
}

// One program with a collective over each group.
ir::ProgramSet program_over_groups(const std::vector<ir::CollectiveGroup>& groups) {
  ir::ProgramSet set;
  ir::Program p("p");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    p.add(classes_test_collective(static_cast<std::uint16_t>(g)), {}, "c");
  }
  set.programs.push_back(std::move(p));
  set.groups = groups;
  return set;
}

ir::CollectiveGroup shaped_group(std::array<std::uint32_t, 3> size, std::array<std::uint32_t, 3> stride) {
  ir::CollectiveGroup g;
  g.size = size;
  g.stride = stride;
  return g;
}

// The classes of a pod of `shape` (wraparound on every axis when `wrap`) running one program with a collective
// over each of `groups`.
TranslationClasses classes_on(std::vector<int> shape, bool wrap, const std::vector<ir::CollectiveGroup>& groups) {
  const Scenario s = pod_scenario(std::move(shape), wrap);
  return translation_classes(build_topology(s.pod, s.chip), program_over_groups(groups));
}

// Tensor 4 on x of a 4x4x4 torus, the rest of the cube (y, z) whole: a whole wrapping axis is rotated freely,
// so every chip is one class.
TEST(TranslationClasses, WholeAxesOfATorusAreOneClass) {
  const TranslationClasses tc =
      classes_on({4, 4, 4}, true, {shaped_group({4, 1, 1}, {1, 1, 1}), shaped_group({1, 4, 4}, {1, 1, 1})});
  EXPECT_EQ(tc.period, (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(tc.classes, 1u);
  for (std::uint32_t c = 0; c < 64; ++c) EXPECT_EQ(tc.representative[c], 0u);
}

// Tensor on 4-chip segments of x of an 8x4x4 torus: the segment must stay whole (period 4 along x), so 4
// classes, one per position in the segment; x = 5 is represented by x = 1.
TEST(TranslationClasses, SegmentsOfARingKeepTheirMembersApart) {
  const TranslationClasses tc =
      classes_on({8, 4, 4}, true, {shaped_group({4, 1, 1}, {1, 1, 1}), shaped_group({2, 4, 4}, {4, 1, 1})});
  const Scenario s = pod_scenario({8, 4, 4}, true);
  EXPECT_EQ(tc.period, (std::array<int, 3>{4, 1, 1}));
  EXPECT_EQ(tc.classes, 4u);
  const Topology topo = build_topology(s.pod, s.chip);
  ChipCoord at;
  at.pos = {5, 2, 3};
  ChipCoord rep;
  rep.pos = {1, 0, 0};
  EXPECT_EQ(tc.representative[topo.chip_at(at).value()], topo.chip_at(rep).value());
}

// Data on 2-chip segments of z (4x4x4): period 2 along z, 2 classes.
TEST(TranslationClasses, DataOnSegmentsOfZ) {
  const TranslationClasses tc =
      classes_on({4, 4, 4}, true, {shaped_group({1, 1, 2}, {1, 1, 1}), shaped_group({4, 4, 1}, {1, 1, 1})});
  EXPECT_EQ(tc.period, (std::array<int, 3>{1, 1, 2}));
  EXPECT_EQ(tc.classes, 2u);
}

// A strided group spanning the whole axis (stride 2, size 4 on an 8-ring): rotations by the stride keep the
// lanes, so period 2.
TEST(TranslationClasses, StridedWholeAxisRotatesByItsStride) {
  const TranslationClasses tc = classes_on({8, 4}, true, {shaped_group({4, 4, 1}, {2, 1, 1})});
  EXPECT_EQ(tc.period, (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(tc.classes, 2u);
}

// Without wraparound an axis has no symmetry: every chip is its own class.
TEST(TranslationClasses, AMeshHasNoSymmetry) {
  const TranslationClasses tc = classes_on({4, 4}, false, {shaped_group({4, 4, 1}, {1, 1, 1})});
  EXPECT_EQ(tc.period, (std::array<int, 3>{4, 4, 1}));
  EXPECT_EQ(tc.classes, 16u);
}

// Roles break the symmetry: two programs alternating along x of a 4x4 torus give period 2 along x.
TEST(TranslationClasses, RolesMustMapOntoTheSameRole) {
  const Scenario s = pod_scenario({4, 4}, true);
  ir::ProgramSet set = program_over_groups({shaped_group({4, 4, 1}, {1, 1, 1})});
  set.programs.push_back(set.programs[0]);
  const Topology topo = build_topology(s.pod, s.chip);
  for (std::uint32_t c = 0; c < 16; ++c) {
    set.role_of_chip.push_back(static_cast<std::uint16_t>(topo.coord(ChipId(c)).pos[0] % 2));
  }
  const TranslationClasses tc = translation_classes(topo, set);
  EXPECT_EQ(tc.period, (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(tc.classes, 2u);
}

}  // namespace
}  // namespace tpusim::models
