// Collectives over groups that are not whole torus axes (kernels/README.md, "Groups"): the virtual shape a
// plan is made for, the closed forms with strides, the whole-axes group mesh_axes names, bad groups, and
// groups in the program file format.
#include <sstream>
#include <string>

#include "collective_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/topology/topology.h"
#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using namespace testing;  // collective_test_support.h: Algo, Kind, kB, kHop, kS, ring16, along, config_error
using test::make_chip;
using test::make_pod;

TEST(CollectiveGroup, MeshAxesNameTheWholeAxesAcrossEveryPod) {
  const Topology t = build_topology(make_pod({4, 2}, {1, 1}, {1, 1}, {}, 3), make_chip("c", 4, 45, 10));
  EXPECT_EQ(whole_axes_group(t, 0), group({4, 2, 1}, {1, 1, 1}, 3));
  EXPECT_EQ(whole_axes_group(t, 0b10), group({1, 2, 1}, {1, 1, 1}, 3));
  const Diagnostic d = config_error([&] { (void)whole_axes_group(t, 0b100); });
  EXPECT_EQ(d.key_path, "workload.model.axes");
}

// The plan over the whole-axes group is the plan over mesh_axes, step for step.
TEST(CollectiveGroup, TheWholeAxesGroupPlansAsMeshAxesDo) {
  const Topology t = torus8x8();
  const CollectivePlan a = plan_collective(t, Kind::all_reduce, 1 << 20, DType::bf16, 0b01, Algo::automatic);
  const CollectivePlan b =
      plan_collective(t, Kind::all_reduce, 1 << 20, DType::bf16, group({8, 1, 1}), Algo::automatic);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    ASSERT_EQ(a.steps[i].sends.size(), b.steps[i].sends.size());
    EXPECT_EQ(a.steps[i].reduce_elements, b.steps[i].reduce_elements);
    for (std::size_t k = 0; k < a.steps[i].sends.size(); ++k) {
      EXPECT_EQ(a.steps[i].sends[k].offset, b.steps[i].sends[k].offset);
      EXPECT_EQ(a.steps[i].sends[k].bytes, b.steps[i].sends[k].bytes);
    }
  }
  EXPECT_EQ(a.ideal_time.value(), b.ideal_time.value());
  EXPECT_EQ(b.participants, 8);
}

// A 4-chip segment of a 16-ring is planned as a ring of 4 (offsets in group space, +1 / -1) and timed as a
// mesh axis of 4: its members form a line, so the ring's wrap send goes back along it (rate B, not 2B).
TEST(CollectiveGroup, AContiguousSegmentIsALineOfItsSize) {
  const Topology t = ring16();
  const CollectivePlan p =
      plan_collective(t, Kind::all_reduce, 1ull << 30, DType::bf16, group({4, 1, 1}), Algo::ring_bidirectional);
  EXPECT_EQ(p.participants, 4);
  EXPECT_EQ(p.axes_mask, 1u);
  ASSERT_EQ(p.steps.size(), 6u);
  EXPECT_EQ(p.steps[0].sends[0].offset, along(0, 1));
  EXPECT_EQ(p.steps[0].sends[1].offset, along(0, -1));
  EXPECT_EQ(p.steps[0].sends[0].bytes, (1ull << 30) / 8);  // half of a quarter each way
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), 2.0 * 3 / 4 * kS / kB + 2 * 3 * kHop);
  const Topology line = build_topology(make_pod({4}, {0}, {1}), make_chip("c", 2, 45));
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), ideal_collective_time(line, Kind::all_reduce, 1ull << 30, 0).value());
}

// Every 4th chip of a 16-ring: a ring of 4 closed over the wraparound, each hop 4 links, and the 4 such
// groups interleave on every link: rate 2B / 4, 4 hop latencies per ring step.
TEST(CollectiveGroup, AStridedGroupSharesItsLinksWithTheOtherLanesOfItsBlock) {
  const Topology t = ring16();
  const ir::CollectiveGroup g = group({4, 1, 1}, {4, 1, 1});
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, g).value(),
                   2.0 * 3 / 4 * kS / (2 * kB / 4) + 2 * 3 * 4 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_gather, 1ull << 26, g).value(),
                   3.0 * (kS / 16) / (2 * kB / 4) + 3 * 4 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_to_all, 1ull << 30, g).value(),
                   4 * kS / (4 * 2 * kB / 4) + 2 * 4 * kHop);
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::permute, 1ull << 30, g).value(), 4 * kS / kB + 4 * kHop);
  // Every 2nd chip of the first 8 (size 4, stride 2, two blocks): a line, rate B / 2.
  EXPECT_DOUBLE_EQ(ideal_collective_time(t, Kind::all_reduce, 1ull << 30, group({4, 1, 1}, {2, 1, 1})).value(),
                   2.0 * 3 / 4 * kS / (kB / 2) + 2 * 3 * 2 * kHop);
  const CollectivePlan p = plan_collective(t, Kind::all_reduce, 1ull << 30, DType::bf16, g, Algo::automatic);
  EXPECT_EQ(p.participants, 4);
  EXPECT_EQ(p.steps[0].sends[0].offset, along(0, 1));  // one member on = 4 chips on: the network maps it
}

// A 4x4 sub-box of an 8x8 torus is a 4x4 mesh: two line axes, R = B + B.
TEST(CollectiveGroup, ASubBoxOverTwoAxesIsAMeshOfItsShape) {
  const CollectivePlan p = plan_collective(torus8x8(), Kind::all_reduce, 1ull << 30, DType::bf16, group({4, 4, 1}),
                                           Algo::ring_bidirectional);
  EXPECT_EQ(p.participants, 16);
  EXPECT_EQ(p.axes_mask, 3u);
  EXPECT_EQ(p.steps.size(), 12u);
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), 2.0 * 15 / 16 * kS / (2 * kB) + 2 * 6 * kHop);
}

// Across slices: the group of one chip and its counterparts in the other pods is a DCN-only collective.
TEST(CollectiveGroup, AGroupAcrossPodsAloneIsADcnRing) {
  const Topology t = build_topology(make_pod({4}, {1}, {2}, {}, 4), make_chip("c", 2, 45, 10));
  const CollectivePlan p =
      plan_collective(t, Kind::all_reduce, 8 << 20, DType::bf16, group({1, 1, 1}, {1, 1, 1}, 2), Algo::automatic);
  EXPECT_EQ(p.participants, 2);
  ASSERT_EQ(p.steps.size(), 2u);  // reduce-scatter and all-gather over 2 pods, one step each
  EXPECT_EQ(p.steps[0].sends[0].pod_offset, 1);
  EXPECT_EQ(p.steps[0].sends[0].bytes, 4u << 20);
  // 2 (M-1)/M x S over the per-chip DCN rate (chip.host.dcn_bandwidth, 10 GB/s; a host of 2 chips has 20).
  EXPECT_DOUBLE_EQ(p.ideal_time.value(), 2 * 0.5 * (8 << 20) / 10e9);
}

TEST(CollectiveGroup, GroupsThatDoNotTileThePodAreConfigErrorsNamingTheShape) {
  const Topology t = ring16();
  const auto plan = [&](const ir::CollectiveGroup& g) {
    return config_error([&] { (void)plan_collective(t, Kind::all_reduce, 1024, DType::bf16, g, Algo::automatic); });
  };
  const Diagnostic d = plan(group({3, 1, 1}));
  EXPECT_EQ(d.key_path, "group");
  EXPECT_NE(d.message.find("size x stride must divide the length"), std::string::npos) << d.message;
  EXPECT_EQ(d.found, "size 3x1x1, stride 1x1x1, 1 pod(s)");
  EXPECT_NE(plan(group({4, 1, 1}, {8, 1, 1})).message.find("4 members 8 apart"), std::string::npos);
  EXPECT_NE(plan(group({1, 2, 1})).message.find("axis 1, which the pod does not have"), std::string::npos);
  EXPECT_NE(plan(group({2, 1, 1}, {1, 1, 1}, 2)).message.find("over 2 pods of 1"), std::string::npos);
  EXPECT_NE(plan(group({0, 1, 1})).message.find("zero size"), std::string::npos);
}

TEST(CollectiveGroupFile, GroupsRoundTripAndReplaceMeshAxes) {
  ir::ProgramSet set;
  set.groups = {group({4, 1, 1}), group({4, 1, 1}, {4, 1, 1}, 2)};
  ir::Program p("groups");
  ir::Instruction ar;
  ar.kind = ir::OpKind::collective;
  ar.bytes = 4096;
  ar.comm.group = 1;
  p.add(ar, {}, "ar");
  ir::Instruction send;
  send.kind = ir::OpKind::send;
  send.bytes = 64;
  send.comm.peer = 1;
  send.comm.group = 0;
  p.add(send, {}, "send");
  ir::Instruction axes = ar;
  axes.comm.group = ir::kAxesGroup;
  axes.comm.mesh_axes = 0b1;
  p.add(axes, {}, "axes");
  set.programs.push_back(std::move(p));
  std::ostringstream out;
  ir::write_program_json(set, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("\"groups\": [\n    {\"size\":[4,1,1],\"stride\":[1,1,1],\"pods\":1},\n"
                      "    {\"size\":[4,1,1],\"stride\":[4,1,1],\"pods\":2}\n  ]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"bytes\":4096,\"group\":1,"), std::string::npos) << text;
  const ir::ProgramSet back = ir::parse_program_json(text, "groups.json");
  ASSERT_EQ(back.groups.size(), 2u);
  EXPECT_EQ(back.groups[1], set.groups[1]);
  EXPECT_EQ(back.programs[0][0].comm.group, 1);
  EXPECT_EQ(back.programs[0][1].comm.group, 0);
  EXPECT_EQ(back.programs[0][2].comm.group, ir::kAxesGroup);
  EXPECT_EQ(back.programs[0][2].comm.mesh_axes, 1u);
  std::ostringstream again;
  ir::write_program_json(back, again);
  EXPECT_EQ(again.str(), text);
}

TEST(CollectiveGroupFile, AFileWithoutGroupsIsWrittenAsBefore) {
  ir::ProgramSet set;
  ir::Program p("plain");
  ir::Instruction ar;
  ar.kind = ir::OpKind::collective;
  ar.bytes = 4096;
  p.add(ar, {}, "ar");
  set.programs.push_back(std::move(p));
  std::ostringstream out;
  ir::write_program_json(set, out);
  EXPECT_EQ(out.str().find("group"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"mesh_axes\":[]"), std::string::npos);
}

TEST(CollectiveGroupFile, BadGroupsAndReferencesAreAllReportedWithTheirPointers) {
  const std::string text = R"({"format": "tpusim-program", "version": 1, "role_of_chip": [],
    "groups": [{"size": [4, 0], "strid": [1]}, {"size": [2], "pods": 0}],
    "programs": [{"name": "p", "instructions": [
      {"op": "collective", "collective": "all_reduce", "dtype": "bf16", "bytes": 8, "group": 2, "deps": []},
      {"op": "collective", "collective": "all_reduce", "dtype": "bf16", "bytes": 8, "group": 0, "mesh_axes": [0],
       "deps": []},
      {"op": "recv", "bytes": 0, "peer": -1, "group": 1, "deps": []}]}]})";
  try {
    (void)ir::parse_program_json(text, "bad.json");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    std::string pointers;
    for (const Diagnostic& d : e.diagnostics()) pointers += d.key_path + " ";
    EXPECT_EQ(pointers,
              "/groups/0/strid /groups/0/size/1 /groups/1/pods /programs/0/instructions/0/group "
              "/programs/0/instructions/1/group ")
        << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean 'stride'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim::kernels
