// The chips of one collective group must run the same collectives over it (kernels/collective_roles.h): which
// pairs of roles share a group, the first difference between them, and what counts as the same collective.
#include <cstdint>
#include <vector>

#include "collective_test_support.h"
#include "tpusim/kernels/collective_roles.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using namespace testing;  // collective_test_support.h: Kind, Algo
using test::make_chip;
using test::make_pod;

ir::Instruction collective(Kind kind, std::uint64_t bytes, std::uint32_t mesh_axes) {
  ir::Instruction ins;
  ins.kind = ir::OpKind::collective;
  ins.comm.collective = kind;
  ins.bytes = bytes;
  ins.comm.mesh_axes = mesh_axes;
  return ins;
}

ir::Program program(const std::vector<ir::Instruction>& instructions) {
  ir::Program p;
  for (const ir::Instruction& ins : instructions) p.add(ins, {}, "");
  return p;
}

// Role 0 on the chips with x < 4, role 1 on the others: a group along y stays in one role, one along x spans
// both.
ir::ProgramSet halves(const Topology& t, std::vector<ir::Instruction> left, std::vector<ir::Instruction> right) {
  ir::ProgramSet set;
  set.programs = {program(left), program(right)};
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    set.role_of_chip.push_back(t.coord(ChipId(c)).pos[0] < 4 ? 0 : 1);
  }
  return set;
}

TEST(CollectiveRoles, RolesThatShareNoGroupMayRunAnything) {
  const Topology t = torus8x8();
  const ir::ProgramSet set = halves(t, {collective(Kind::all_reduce, 1 << 20, 0b10)},
                                    {collective(Kind::all_gather, 1 << 10, 0b10)});
  EXPECT_TRUE(collective_role_mismatches(set, t).empty());
}

TEST(CollectiveRoles, TheFirstDifferenceOverAGroupSpanningRolesIsFound) {
  const Topology t = torus8x8();
  const ir::Instruction same = collective(Kind::all_reduce, 1 << 20, 0b01);
  const ir::ProgramSet set = halves(t, {same, collective(Kind::all_reduce, 1 << 26, 0b01)},
                                    {same, collective(Kind::all_reduce, 1 << 10, 0b01)});
  const std::vector<RoleMismatch> found = collective_role_mismatches(set, t);
  ASSERT_EQ(found.size(), 1u);  // one per pair of roles and group shape, however many groups differ
  const RoleMismatch& m = found[0];
  EXPECT_EQ(m.group, group({8, 1, 1}));
  EXPECT_EQ(m.position, 1u);
  EXPECT_EQ(t.coord(m.first).pos[0], 0);
  EXPECT_EQ(t.coord(m.other).pos[0], 4);
  EXPECT_EQ(t.coord(m.other).pos[1], t.coord(m.first).pos[1]);
  EXPECT_EQ(m.first_role, 0);
  EXPECT_EQ(m.other_role, 1);
  EXPECT_EQ(m.first_instruction, 1u);
  EXPECT_EQ(m.other_instruction, 1u);
  EXPECT_EQ(describe_collective(set.programs[1][1]), "all_reduce of 1024 bytes of bf16 (algorithm auto)");
}

TEST(CollectiveRoles, ACollectiveOneRoleLacksIsADifference) {
  const Topology t = torus8x8();
  ir::Instruction ring = collective(Kind::all_gather, 4096, 0b01);
  ring.comm.algorithm = static_cast<std::uint8_t>(Algo::ring_unidirectional);
  const ir::ProgramSet set = halves(t, {collective(Kind::all_gather, 4096, 0b10), ring}, {});
  const std::vector<RoleMismatch> found = collective_role_mismatches(set, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].position, 0u);
  EXPECT_EQ(found[0].first_instruction, 1u);  // the collective over y is no one else's business
  EXPECT_FALSE(found[0].other_instruction.has_value());
  // The algorithm alone makes a collective another one.
  ir::Instruction automatic = ring;
  automatic.comm.algorithm = 0;
  EXPECT_EQ(collective_role_mismatches(halves(t, {ring}, {automatic}), t).size(), 1u);
  EXPECT_TRUE(collective_role_mismatches(halves(t, {ring}, {ring}), t).empty());
}

// A named group of the same shape as mesh_axes' whole axes is the same group to the simulator.
TEST(CollectiveRoles, ANamedGroupAndTheSameWholeAxesAreOneGroup) {
  const Topology t = torus8x8();
  ir::Instruction named = collective(Kind::all_reduce, 1 << 20, 0);
  named.comm.group = 0;
  ir::ProgramSet set = halves(t, {named}, {collective(Kind::all_reduce, 1 << 20, 0b01)});
  set.groups = {group({8, 1, 1})};
  EXPECT_TRUE(collective_role_mismatches(set, t).empty());
  set.groups = {group({4, 1, 1})};  // each group of 4 along x lies in one role: two shapes, nothing shared
  EXPECT_EQ(collective_role_mismatches(set, t).size(), 1u);  // mesh_axes' x groups: role 1 has it, 0 not
  set.programs[1] = program({named});
  EXPECT_TRUE(collective_role_mismatches(set, t).empty());
}

TEST(CollectiveRoles, ASetWithoutRolesHasNothingToCompare) {
  const Topology t = torus8x8();
  ir::ProgramSet set = halves(t, {collective(Kind::all_reduce, 1, 0)}, {collective(Kind::all_gather, 2, 0)});
  set.role_of_chip.clear();
  EXPECT_TRUE(collective_role_mismatches(set, t).empty());
}

}  // namespace
}  // namespace tpusim::kernels
