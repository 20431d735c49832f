// A parallelism kind added by one call (core's add_mesh_axis) and nothing else: the catalogue derives its
// default sharding rules, its placement on the torus, its validation and its collectives follow, and the
// did-you-mean of a misspelt mesh axis knows it.
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/mesh_spec.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/kernels/sharding.h"

#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

// The test's own kind: replicas under another name, sharding the batch only (as data does).
MeshAxisInfo replica_kind() {
  MeshAxisInfo k;
  k.name = "replica";
  k.doc = "a test's replicas: the whole model on each, the batch split over them";
  k.shards = {"batch"};
  k.placement = 5;
  return k;
}

// Adds the kind for one test and takes it out again, so that no other test sees it.
struct AddedKind {
  explicit AddedKind(MeshAxisInfo k) : name(k.name) { add_mesh_axis(std::move(k)); }
  ~AddedKind() { remove_mesh_axis(name); }
  AddedKind(const AddedKind&) = delete;
  AddedKind& operator=(const AddedKind&) = delete;
  std::string name;
};

PodSpec ring(int chips) {
  PodSpec p;
  p.name = "test-pod";
  p.shape = {chips};
  return p;
}

// The two-block decoder of sharding_test.cpp (d 256, 4 heads, d_ff 1024, vocabulary 2048), training, batch 16.
WorkloadSpec small(const std::vector<std::pair<std::string, int>>& axes) {
  WorkloadSpec w = testing::training_step(testing::small_decoder("small", 2, 256, 4, 1024, 2048, 128), 16, 128);
  for (const auto& [name, size] : axes) w.mesh.axes.push_back(MeshAxisSpec{name, size, {}});
  return w;
}

std::string program_text(const WorkloadSpec& w, const PodSpec& pod) {
  const LoweredWorkload l = lower(w, testing::roomy(), pod);
  std::ostringstream out;
  write_program_json(l.programs, out);
  return out.str();
}

TEST(ParallelismKind, OneCallAddsAKindWhoseDefaultRulesShardWhatItNames) {
  const AddedKind added(replica_kind());
  ASSERT_NE(find_mesh_axis("replica"), nullptr);
  EXPECT_EQ(known_mesh_axis_names().back(), "replica");
  // The batch's default rule gains the kind after the built-in ones; no other logical axis names it.
  for (const LogicalAxisInfo& l : logical_axes()) {
    const auto& d = l.default_mesh_axes;
    const bool names_it = std::find(d.begin(), d.end(), "replica") != d.end();
    EXPECT_EQ(names_it, l.name == "batch") << l.name;
  }
  const auto& batch = logical_axes().front().default_mesh_axes;
  EXPECT_EQ(batch, (std::vector<std::string>{"data", "fsdp", "fsdp_transpose", "expert", "replica"}));

  const WorkloadSpec w = small({{"replica", 2}, {"fsdp", 2}});
  const ShardingPlan plan = make_sharding(w, ring(4));
  EXPECT_EQ(plan.shards(LogicalAxis::batch), 4);  // replica 2 x fsdp 2
  EXPECT_EQ(plan.shards(LogicalAxis::embed), 2);  // fsdp only
  EXPECT_EQ(shard_view(w, plan).batch, 4);        // 16 / 4
}

// The kind's collectives are data parallelism's: over replica 2 x fsdp 2 on a ring of 4 the step is the very
// program of data 2 x fsdp 2 (the gradients' all-reduce over the replicas included), placed the same way.
TEST(ParallelismKind, AnAddedKindLowersAsTheBuiltInKindItMirrors) {
  const AddedKind added(replica_kind());
  const std::string replicas = program_text(small({{"replica", 2}, {"fsdp", 2}}), ring(4));
  const std::string data = program_text(small({{"data", 2}, {"fsdp", 2}}), ring(4));
  EXPECT_EQ(replicas, data);
  EXPECT_NE(data.find("all_reduce"), std::string::npos);  // there is a gradient all-reduce to compare
}

TEST(ParallelismKind, WithoutTheKindItsAxisIsRefusedAndAMisspellingSuggestsIt) {
  const auto refusal = [](const std::string& axis) {
    return testing::config_error([&] { (void)make_sharding(small({{axis, 2}, {"fsdp", 2}}), ring(4)); });
  };
  EXPECT_EQ(refusal("replica").key_path, "workload.mesh.replica");
  {
    const AddedKind added(replica_kind());
    const Diagnostic d = refusal("replcia");
    EXPECT_EQ(d.key_path, "workload.mesh.replcia");
    EXPECT_EQ(d.hint, "did you mean 'replica'?");
  }
  EXPECT_EQ(find_mesh_axis("replica"), nullptr);  // taken out again
  EXPECT_EQ(refusal("replica").key_path, "workload.mesh.replica");
}

TEST(ParallelismKind, TheCatalogueRefusesANamelessDuplicateOrUnknownShardingKind) {
  MeshAxisInfo nameless = replica_kind();
  nameless.name.clear();
  EXPECT_THROW(add_mesh_axis(nameless), std::invalid_argument);
  MeshAxisInfo duplicate = replica_kind();
  duplicate.name = "tensor";
  EXPECT_THROW(add_mesh_axis(duplicate), std::invalid_argument);
  MeshAxisInfo unknown = replica_kind();
  unknown.shards = {"batch", "tokens"};
  EXPECT_THROW(add_mesh_axis(unknown), std::invalid_argument);
  EXPECT_EQ(find_mesh_axis("replica"), nullptr);
  EXPECT_FALSE(remove_mesh_axis("data"));  // a built-in kind stays
  EXPECT_NE(find_mesh_axis("data"), nullptr);
}

}  // namespace
}  // namespace tpusim::kernels
