// Sends and recvs must pair (kernels/send_recv_pairs.h): chip A's k-th send to B with B's k-th recv from A,
// of the same bytes, and every peer must name another chip of the slice.
#include <cstdint>
#include <vector>

#include "collective_test_support.h"
#include "tpusim/kernels/send_recv_pairs.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using Kind = PeerMismatch::Kind;

ir::Instruction p2p(ir::OpKind kind, std::uint64_t bytes, int peer, std::uint32_t mesh_axes = 0b1) {
  ir::Instruction ins;
  ins.kind = kind;
  ins.bytes = bytes;
  ins.comm.mesh_axes = mesh_axes;
  ins.comm.peer = peer;
  return ins;
}
ir::Instruction send(std::uint64_t bytes, int peer) { return p2p(ir::OpKind::send, bytes, peer); }
ir::Instruction recv(std::uint64_t bytes, int peer) { return p2p(ir::OpKind::recv, bytes, peer); }

// A line of four chips (no wraparound) and a ring of four.
Topology line4() { return build_topology(test::make_pod({4}, {0}, {1}), test::make_chip("c", 2, 45)); }
Topology ring4() { return build_topology(test::make_pod({4}, {1}, {1}), test::make_chip("c", 2, 45)); }

// Chip c runs program roles[c]; program p is programs[p].
ir::ProgramSet set_of(const std::vector<std::vector<ir::Instruction>>& programs, std::vector<std::uint16_t> roles) {
  ir::ProgramSet set;
  for (const auto& instructions : programs) {
    ir::Program p;
    for (const ir::Instruction& ins : instructions) p.add(ins, {}, "");
    set.programs.push_back(std::move(p));
  }
  set.role_of_chip = std::move(roles);
  return set;
}

TEST(SendRecvPairs, AStagePipelineWhoseSendsMeetTheirRecvsPasses) {
  // Stage 0 sends two activations to 1 and receives two gradients from it; the other chips idle.
  const ir::ProgramSet set = set_of({{send(1 << 20, 1), send(1 << 20, 1), recv(4096, 1), recv(4096, 1)},
                                     {recv(1 << 20, -1), send(4096, -1), recv(1 << 20, -1), send(4096, -1)},
                                     {}},
                                    {0, 1, 2, 2});
  EXPECT_TRUE(send_recv_mismatches(set, line4()).empty());
}

TEST(SendRecvPairs, ARecvOfOtherBytesThanItsSendIsFoundAtTheRecv) {
  const ir::ProgramSet set = set_of({{send(1 << 20, 1), send(1 << 20, 1)}, {recv(1 << 20, -1), recv(1 << 22, -1)}, {}},
                                    {0, 1, 2, 2});
  const std::vector<PeerMismatch> found = send_recv_mismatches(set, line4());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, Kind::bytes);
  EXPECT_EQ(found[0].chip, ChipId(1));
  EXPECT_EQ(found[0].peer, ChipId(0));
  EXPECT_EQ(found[0].role, 1);
  EXPECT_EQ(found[0].instruction, 1u);  // the second recv, paired with the second send
  EXPECT_EQ(found[0].peer_instruction, 1u);
  EXPECT_EQ(found[0].position, 1u);
}

TEST(SendRecvPairs, ASendWithoutARecvAndARecvWithoutASendAreFound) {
  const ir::ProgramSet unreceived = set_of({{send(1 << 20, 1)}, {}, {}}, {0, 1, 2, 2});
  std::vector<PeerMismatch> found = send_recv_mismatches(unreceived, line4());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, Kind::no_recv);
  EXPECT_EQ(found[0].chip, ChipId(0));
  EXPECT_EQ(found[0].peer, ChipId(1));
  EXPECT_EQ(found[0].peer_count, 0u);

  // Chip 1 waits for a second activation chip 0 never sends.
  const ir::ProgramSet unsent = set_of({{send(1 << 20, 1)}, {recv(1 << 20, -1), recv(1 << 20, -1)}, {}}, {0, 1, 2, 2});
  found = send_recv_mismatches(unsent, line4());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, Kind::no_send);
  EXPECT_EQ(found[0].chip, ChipId(1));
  EXPECT_EQ(found[0].instruction, 1u);
  EXPECT_EQ(found[0].position, 1u);
  EXPECT_EQ(found[0].peer_count, 1u);

  // On a ring with chips 0 and 3 in role 0, 1 and 2 in role 1: chip 2 receives from chip 1, which sends nothing,
  // and chip 3 sends to chip 0, which receives nothing.
  const ir::ProgramSet crossed = set_of({{send(1 << 20, 1)}, {recv(1 << 20, -1)}}, {0, 1, 1, 0});
  found = send_recv_mismatches(crossed, ring4());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].kind, Kind::no_send);
  EXPECT_EQ(found[0].chip, ChipId(2));
  EXPECT_EQ(found[0].peer, ChipId(1));
  EXPECT_EQ(found[1].kind, Kind::no_recv);
  EXPECT_EQ(found[1].chip, ChipId(3));
  EXPECT_EQ(found[1].peer, ChipId(0));
}

TEST(SendRecvPairs, OneProgramOnEveryChipPairsAsARingOnlyWhereTheAxisWraps) {
  // Every chip sends to +1 and receives from -1: a shift round the ring.
  const ir::ProgramSet shift = set_of({{send(1 << 20, 1), recv(1 << 20, -1)}}, {});
  EXPECT_TRUE(send_recv_mismatches(shift, ring4()).empty());
  // On a line, chip 3's +1 is past its end, and chip 0's -1 before its start.
  const std::vector<PeerMismatch> found = send_recv_mismatches(shift, line4());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].kind, Kind::outside);
  EXPECT_EQ(found[0].chip, ChipId(0));  // the recv from -1
  EXPECT_EQ(found[0].instruction, 1u);
  EXPECT_EQ(found[1].chip, ChipId(3));  // the send to +1
  EXPECT_EQ(found[1].instruction, 0u);
  // Without recvs, every chip's send is unreceived: found once, at the instruction.
  const ir::ProgramSet sends_only = set_of({{send(1 << 20, 1)}}, {});
  const std::vector<PeerMismatch> unreceived = send_recv_mismatches(sends_only, ring4());
  ASSERT_EQ(unreceived.size(), 1u);
  EXPECT_EQ(unreceived[0].kind, Kind::no_recv);
}

TEST(SendRecvPairs, APeerThatNamesNoOtherChipIsOutsideTheSlice) {
  const Topology t = ring4();
  for (const ir::Instruction& bad : {send(64, 4), send(64, 5), send(64, -4), p2p(ir::OpKind::send, 64, 1, 0b100)}) {
    const ir::ProgramSet set = set_of({{bad}}, {});
    const std::vector<PeerMismatch> found = send_recv_mismatches(set, t);
    ASSERT_EQ(found.size(), 1u) << bad.comm.peer;
    EXPECT_EQ(found[0].kind, Kind::outside);
    EXPECT_FALSE(found[0].why.empty());
  }
  // In a named group of one chip there is no peer at all.
  ir::ProgramSet lone = set_of({{send(64, 1)}}, {});
  lone.groups = {ir::CollectiveGroup{}};
  ir::Instruction in_group = send(64, 1);
  in_group.comm.group = 0;
  lone.programs[0] = ir::Program();
  lone.programs[0].add(in_group, {}, "");
  const std::vector<PeerMismatch> found = send_recv_mismatches(lone, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].why, "its group has one chip");
}

TEST(SendRecvPairs, AGroupThatIsASegmentOfARingIsALine) {
  // Groups of two along a ring of four: member 1's +1 would wrap inside the segment.
  ir::ProgramSet set = set_of({{}}, {});
  set.groups = {ir::CollectiveGroup{{2, 1, 1}, {1, 1, 1}, 1}};
  ir::Instruction out = send(64, 1), in = recv(64, -1);
  out.comm.group = in.comm.group = 0;
  set.programs[0].add(out, {}, "");
  set.programs[0].add(in, {}, "");
  const std::vector<PeerMismatch> found = send_recv_mismatches(set, ring4());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].chip, ChipId(0));  // member 0's recv from -1
  EXPECT_EQ(found[1].chip, ChipId(1));  // member 1's send to +1
}

}  // namespace
}  // namespace tpusim::kernels
