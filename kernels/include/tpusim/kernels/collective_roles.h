#pragma once
// Collectives that the chips of one group run differently. The simulator pairs each chip's k-th collective
// over a group shape with the k-th collective over that shape of the other members of its group
// (models/src/net/collective_engine.h, "Matching"), so the members must run the same collectives over the
// group (kind, bytes, dtype, algorithm) in the same order. Every chip of a role runs the same program, so only
// groups whose members have different roles can differ: a program set without roles has nothing to compare.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/kernels/program.h"
#include "tpusim/topology/topology.h"

namespace tpusim::kernels {

// The first difference between two roles that share a group: collective `position` (0-based, in program
// order) over the group shape `group`, as the group's first member `first` (role `first_role`) and a member
// of another role, `other`, run it; an instruction is missing where that role's program has fewer
// collectives over the shape.
struct RoleMismatch {
  ir::CollectiveGroup group;
  std::size_t position = 0;
  ChipId first, other;
  std::uint16_t first_role = 0, other_role = 0;
  std::optional<std::uint32_t> first_instruction, other_instruction;
};

// The first mismatch of each pair of roles sharing a group of each shape that an instruction names (a named
// group, or the whole axes of mesh_axes), shapes in order of first use. Every group must fit the topology
// (plan_collective would throw otherwise: check that first). Time: chips x shapes, plus each compared pair of
// roles' collectives over the shape.
[[nodiscard]] std::vector<RoleMismatch> collective_role_mismatches(const ir::ProgramSet& programs,
                                                                   const Topology& topo);

// "all_reduce of 67108864 bytes of bf16 (algorithm auto)", for messages.
[[nodiscard]] std::string describe_collective(const ir::Instruction& ins);

}  // namespace tpusim::kernels
