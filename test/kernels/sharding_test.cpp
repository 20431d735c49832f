// Device meshes on the torus, sharding rules, per-chip shard shapes and the collectives the sharding implies,
// against hand counts.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/mesh.h"
#include "tpusim/kernels/model_params.h"
#include "tpusim/kernels/program_io.h"
#include "tpusim/kernels/sharding.h"

#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using testing::group;

using testing::v4_like;

PodSpec pod(std::vector<int> shape, int pods = 1) {
  PodSpec p;
  p.name = "test-pod";
  p.shape = std::move(shape);
  p.pods = pods;
  return p;
}

MeshSpec mesh(const std::vector<std::pair<std::string, int>>& axes) {
  MeshSpec m;
  for (const auto& [name, size] : axes) m.axes.push_back(MeshAxisSpec{name, size, {}});
  return m;
}


TEST(Mesh, TheHeaviestAxisTakesContiguousChipsAndShorterAxesTakeSegments) {
  // A 16-ring: tensor 4 on chips 0-3 (a segment), data 4 on every 4th chip.
  const DeviceMesh ring = build_mesh(mesh({{"data", 4}, {"tensor", 4}}), pod({16}));
  EXPECT_EQ(ring.axes()[1].group, group({4, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(ring.axes()[0].group, group({4, 1, 1}, {4, 1, 1}));
  // A 4x4x4 cube: tensor on x, fsdp on y, data on z.
  const DeviceMesh cube = build_mesh(mesh({{"data", 4}, {"fsdp", 4}, {"tensor", 4}}), pod({4, 4, 4}));
  EXPECT_EQ(cube.axes()[2].group, group({4, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(cube.axes()[1].group, group({1, 4, 1}, {1, 1, 1}));
  EXPECT_EQ(cube.axes()[0].group, group({1, 1, 4}, {1, 1, 1}));
  // An axis longer than what is left of a torus axis continues on the next: data 8 on a 4x4 after tensor 2.
  const DeviceMesh spill = build_mesh(mesh({{"data", 8}, {"tensor", 2}}), pod({4, 4}));
  EXPECT_EQ(spill.axes()[1].group, group({2, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(spill.axes()[0].group, group({2, 4, 1}, {2, 1, 1}));
}

TEST(Mesh, UnmappedAxesArePlacedInTheCataloguesOrderAndUnknownNamesLast) {
  // The catalogue (core's known_mesh_axes) ranks tensor < expert < fsdp < data; a name outside it ranks after
  // every one in it. On a ring of 16 chips the first axis placed takes neighbouring chips (stride 1).
  EXPECT_LT(find_mesh_axis("tensor")->placement, find_mesh_axis("expert")->placement);
  EXPECT_LT(find_mesh_axis("expert")->placement, find_mesh_axis("fsdp")->placement);
  EXPECT_LT(find_mesh_axis("fsdp")->placement, find_mesh_axis("data")->placement);
  EXPECT_EQ(find_mesh_axis("replicas"), nullptr);
  const DeviceMesh d = build_mesh(mesh({{"replicas", 2}, {"data", 2}, {"fsdp", 2}, {"expert", 2}}), pod({16}));
  EXPECT_EQ(d.axes()[3].group, group({2, 1, 1}, {1, 1, 1}));  // expert first: chips 0, 1
  EXPECT_EQ(d.axes()[2].group, group({2, 1, 1}, {2, 1, 1}));  // then fsdp: stride 2
  EXPECT_EQ(d.axes()[1].group, group({2, 1, 1}, {4, 1, 1}));  // data: stride 4
  EXPECT_EQ(d.axes()[0].group, group({2, 1, 1}, {8, 1, 1}));  // the unknown name last: stride 8
}

TEST(Mesh, NoMeshIsDataParallelOverEveryChip) {
  const DeviceMesh m = build_mesh(MeshSpec{}, pod({2, 2, 2}));
  ASSERT_EQ(m.axes().size(), 1U);
  EXPECT_EQ(m.axes()[0].name, "data");
  EXPECT_EQ(m.axes()[0].group, group({2, 2, 2}, {1, 1, 1}));
}

TEST(Mesh, AnExplicitMappingPlacesItsAxesFirst) {
  MeshSpec m = mesh({{"data", 4}, {"tensor", 4}});
  m.mapping.push_back(MeshMappingSpec{"data", {0}, {}});
  const DeviceMesh d = build_mesh(m, pod({4, 4}));
  EXPECT_EQ(d.axes()[0].group, group({4, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(d.axes()[1].group, group({1, 4, 1}, {1, 1, 1}));
}

TEST(Mesh, MultisliceSlicesGoToTheDataAxis) {
  // Two 4x2 slices: tensor 4 on x, data 4 = 2 on y x 2 slices.
  const DeviceMesh d = build_mesh(mesh({{"data", 4}, {"tensor", 4}}), pod({4, 2}, 2));
  EXPECT_EQ(d.axes()[1].group, group({4, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(d.axes()[0].group, group({1, 2, 1}, {1, 1, 1}, 2));
  EXPECT_EQ(d.coordinate(8 + 4, 0), 1 + 1 * 2);  // chip 4 of slice 1: y = 1, slice 1
}

TEST(Mesh, AnAxisThatCannotBePlacedIsBadInput) {
  EXPECT_THROW((void)build_mesh(mesh({{"data", 2}, {"tensor", 3}}), pod({2, 3})), ConfigError);
  try {
    (void)build_mesh(mesh({{"data", 2}, {"tensor", 3}}), pod({2, 3}));
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().front().key_path, "workload.mesh.tensor");
  }
}

TEST(Mesh, AdjacentAxesCombineIntoOneGroupOthersRunOnePerAxis) {
  // 16-ring, tensor 4 (stride 1), fsdp 2 (stride 4), data 2 (stride 8).
  const DeviceMesh d = build_mesh(mesh({{"data", 2}, {"fsdp", 2}, {"tensor", 4}}), pod({16}));
  const auto both = d.groups({0, 1});
  ASSERT_EQ(both.size(), 1U);
  EXPECT_EQ(both[0], group({4, 1, 1}, {4, 1, 1}));
  EXPECT_EQ(d.groups({0, 2}).size(), 2U);  // data and tensor are not adjacent factors
  EXPECT_TRUE(d.groups({}).empty());
}

TEST(Mesh, ChipCoordinatesFollowTheGroups) {
  const DeviceMesh d = build_mesh(mesh({{"data", 4}, {"tensor", 4}}), pod({16}));
  EXPECT_EQ(d.coordinate(6, 1), 2);  // tensor: 6 mod 4
  EXPECT_EQ(d.coordinate(6, 0), 1);  // data: 6 / 4
  EXPECT_EQ(d.coordinate(15, 0), 3);
}

// ---- sharded lowering ----

using testing::roomy;

// Two blocks: d 256, 4 heads of 64, d_ff 1024, vocabulary 2048, no biases, RMSNorm, ReLU, tied embeddings.
WorkloadSpec small(std::int64_t batch, const MeshSpec& m) {
  WorkloadSpec w = testing::training_step(testing::small_decoder("small", 2, 256, 4, 1024, 2048, 128), batch, 128);
  w.mesh = m;
  return w;
}

// Bytes of the collectives whose label ends with `suffix`, and their count.
std::pair<double, int> collectives(const ir::Program& p, const std::string& suffix) {
  double bytes = 0;
  int n = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (ins.kind == ir::OpKind::collective && l.size() >= suffix.size() &&
        l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0) {
      bytes += static_cast<double>(ins.bytes);
      ++n;
    }
  }
  return {bytes, n};
}

TEST(Sharding, ShardShapesFollowTheRules) {
  const WorkloadSpec w = small(16, mesh({{"data", 2}, {"fsdp", 2}, {"tensor", 2}}));
  const ShardingPlan plan = make_sharding(w, pod({2, 2, 2}));
  const ShardView s = shard_view(w, plan);
  EXPECT_EQ(s.batch, 4);  // 16 / (data 2 x fsdp 2)
  EXPECT_EQ(s.heads, 2);
  EXPECT_EQ(s.kv_heads, 2);
  EXPECT_EQ(s.d_ff, 512);
  EXPECT_EQ(s.vocab.rows, 1024);
  EXPECT_EQ(s.weight_shards, 2);
  EXPECT_EQ(s.seq_len, 128);
}

// MaxText's fsdp_transpose is a second FSDP axis: it splits the batch and the weights' storage, and each layer
// gathers its weights (and reduce-scatters their gradients) over it and fsdp together. Its MLP weights split
// d_ff rather than d_model there, which moves the same bytes, so the step is FSDP over both axes' chips: on a
// 2x2x2 torus, {data 2, fsdp 2, fsdp_transpose 2} lowers to the very program of {data 2, fsdp 4} (fsdp on x,
// fsdp_transpose on y: the 2x2 group fsdp 4 takes).
TEST(Sharding, FsdpTransposeIsASecondFsdpAxisOverTheBatchAndTheWeights) {
  const WorkloadSpec w = small(16, mesh({{"data", 2}, {"fsdp", 2}, {"fsdp_transpose", 2}}));
  const ShardingPlan plan = make_sharding(w, pod({2, 2, 2}));
  const ShardView s = shard_view(w, plan);
  EXPECT_EQ(s.batch, 2);          // 16 / (data 2 x fsdp 2 x fsdp_transpose 2)
  EXPECT_EQ(s.weight_shards, 4);  // fsdp 2 x fsdp_transpose 2
  EXPECT_EQ(s.d_ff, 1024);        // d_ff is not split for the matmuls: they run on the gathered weights
  EXPECT_EQ(plan.shards(LogicalAxis::batch), 8);
  EXPECT_EQ(plan.shards(LogicalAxis::embed), 4);
  EXPECT_EQ(plan.shards(LogicalAxis::mlp), 1);

  auto text = [](const WorkloadSpec& spec) {
    const LoweredWorkload l = lower(spec, roomy(), pod({2, 2, 2}));
    std::ostringstream out;
    write_program_json(l.programs, out);
    return std::pair{out.str(), l.memory->total().as_double()};
  };
  const auto [transposed, transposed_bytes] = text(w);
  const auto [fsdp, fsdp_bytes] = text(small(16, mesh({{"data", 2}, {"fsdp", 4}})));
  EXPECT_EQ(transposed, fsdp);
  EXPECT_EQ(transposed_bytes, fsdp_bytes);
  EXPECT_NE(transposed.find("fsdp"), std::string::npos);  // the program has FSDP gathers to compare
}

// workload.async_collectives without reduce_scatter: each FSDP gradient reduce-scatter waits for the last
// instruction of both TensorCores before it, and the first instruction of each after it waits for it. With the
// default (every kind asynchronous) the next layer's backward does not wait for it, and the program is the same
// as with the list written out.
TEST(Sharding, ASynchronousReduceScatterWaitsForBothTensorCoresAndHoldsTheirLaterWork) {
  WorkloadSpec w = small(16, mesh({{"fsdp", 4}}));
  auto lowered = [](const WorkloadSpec& spec) { return lower(spec, roomy(), pod({4})).programs; };
  const ir::ProgramSet async_set = lowered(w);
  const ir::Program& async = async_set.programs.at(0);
  w.schedule.async_collectives = {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::all_to_all,
                         CollectiveKind::permute};
  const ir::ProgramSet sync_set = lowered(w);
  const ir::Program& sync = sync_set.programs.at(0);
  ASSERT_EQ(async.size(), sync.size());  // the same instructions; only their dependencies differ

  auto depends = [](const ir::Program& p, std::size_t i, std::size_t on) {
    const ir::Instruction& ins = p[i];
    const std::uint32_t* d = p.deps_of(ins);
    return std::find(d, d + ins.deps.count, static_cast<std::uint32_t>(on)) != d + ins.deps.count;
  };
  auto compute = [](const ir::Instruction& ins) {
    return ins.kind == ir::OpKind::matmul || ins.kind == ir::OpKind::vector;
  };
  int scatters = 0, async_waits = 0;
  for (std::size_t i = 0; i < sync.size(); ++i) {
    if (sync.label_of(sync[i]).find("fsdp_reduce_scatter") == std::string::npos) continue;
    ++scatters;
    for (int core = 0; core < 2; ++core) {
      std::optional<std::size_t> before, after;
      for (std::size_t j = 0; j < i; ++j) {
        if (compute(sync[j]) && sync[j].core == core) before = j;
      }
      for (std::size_t j = sync.size(); j-- > i + 1;) {
        if (compute(sync[j]) && sync[j].core == core) after = j;
      }
      ASSERT_TRUE(before && after) << "core " << core;
      EXPECT_TRUE(depends(sync, i, *before)) << sync.label_of(sync[i]) << " core " << core;
      EXPECT_TRUE(depends(sync, *after, i)) << sync.label_of(sync[*after]) << " core " << core;
      async_waits += depends(async, *after, i) ? 1 : 0;
    }
  }
  EXPECT_EQ(scatters, 3);  // the two blocks and the embedding, tied with the output projection
  // Asynchronous, only the optimizer's update of a shard reads the scatter's output.
  EXPECT_LT(async_waits, 2 * scatters);

  w.schedule.async_collectives.push_back(CollectiveKind::reduce_scatter);
  std::ostringstream a, b;
  write_program_json(async_set, a);
  write_program_json(lowered(w), b);
  EXPECT_EQ(a.str(), b.str());
}

TEST(Sharding, FewerKvHeadsThanTheTensorAxisAreReplicated) {
  WorkloadSpec w = small(8, mesh({{"tensor", 4}}));
  w.model.transformer.kv_heads = 2;
  const ShardView s = shard_view(w, make_sharding(w, pod({4})));
  EXPECT_EQ(s.heads, 1);
  EXPECT_EQ(s.kv_heads, 1);
}

TEST(Sharding, ABatchThatDoesNotSplitIsBadInput) {
  const WorkloadSpec w = small(6, mesh({{"data", 4}}));
  EXPECT_THROW((void)shard_view(w, make_sharding(w, pod({4}))), ConfigError);
}

// The does-not-fit hint tries microbatch counts that divide the batch per chip (36 over fsdp 4: 9, so 3 and 9),
// not the global batch: before, it tried 2 (a divisor of 36, not of 9), whose plan refused it as a wrong
// microbatch count, and the user got that error instead of the step's real cause.
TEST(Sharding, TheDoesNotFitHintTriesMicrobatchesThatDivideTheBatchPerChip) {
  WorkloadSpec w = small(36, mesh({{"fsdp", 4}}));
  const PodSpec four = pod({4});
  const MemoryPlan one = *lower(w, roomy(), four).memory;
  w.memory.microbatches = 3;
  const MemoryPlan three = *lower(w, roomy(), four).memory;
  w.memory.microbatches = 2;
  EXPECT_THROW((void)lower(w, roomy(), four), ConfigError);  // 9 sequences per chip do not split in two
  w.memory.microbatches = 1;
  ASSERT_LT(three.total().as_double(), one.total().as_double());
  ChipSpec chip = roomy();
  chip.hbm.capacity = Bytes((three.total().count() + one.total().count()) / 2);  // three microbatches fit, one not
  try {
    (void)lower(w, chip, four);
    FAIL() << "the step fit";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.key_path, "workload") << d.message;
    EXPECT_NE(d.message.find("does not fit in HBM"), std::string::npos) << d.message;
    EXPECT_NE(d.hint.find(fmt::format("microbatches: 3 ({})", format_bytes_approx(three.total()))), std::string::npos)
        << d.hint;
  }
}

// A step whose state already fits beside full remat's activations on its mesh: the hint says remat: full and
// no mesh (it suggested "a mesh with fsdp: 4, with remat: full" for the fsdp 4 mesh the step already had).
TEST(Sharding, TheDoesNotFitHintNeverSuggestsTheMeshTheStepHas) {
  WorkloadSpec w = small(16, mesh({{"fsdp", 4}}));
  const PodSpec four = pod({4});
  const MemoryPlan none = *lower(w, roomy(), four).memory;
  w.memory.remat = Remat::full;
  const MemoryPlan full = *lower(w, roomy(), four).memory;
  w.memory.remat = Remat::none;
  ASSERT_LT(full.total().as_double(), none.total().as_double());
  ChipSpec chip = roomy();
  chip.hbm.capacity = Bytes((full.total().count() + none.total().count()) / 2);  // full remat fits, none not
  try {
    (void)lower(w, chip, four);
    FAIL() << "the step fit";
  } catch (const ConfigError& e) {
    const Diagnostic& d = e.diagnostics().at(0);
    EXPECT_NE(d.hint.find(fmt::format("remat: full ({})", format_bytes_approx(full.total()))), std::string::npos)
        << d.hint;
    EXPECT_EQ(d.hint.find("fsdp: 4"), std::string::npos) << d.hint;
  }
}

TEST(Sharding, PipelinesAcrossTorusAxesAreRefused) {
  EXPECT_THROW((void)make_sharding(small(8, mesh({{"pipeline", 4}})), pod({2, 2})), ConfigError);
}

TEST(Sharding, PipelineStagesAreRolesThatSendActivationsForwardAndGradientsBack) {
  WorkloadSpec w = small(4, mesh({{"pipeline", 2}, {"data", 2}}));
  w.memory.microbatches = 2;
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  ASSERT_EQ(l.programs.programs.size(), 2U);
  // data on chips {0, 1} and {2, 3} (stride 1), pipeline on {0, 2} and {1, 3}.
  EXPECT_EQ(l.programs.role_of_chip, (std::vector<std::uint16_t>{0, 0, 1, 1}));
  const ShardingPlan plan = make_sharding(w, pod({4}));
  const ShardView s1 = shard_view(w, plan, 1);
  EXPECT_EQ(s1.pipeline.first_layer, 1);
  EXPECT_EQ(s1.pipeline.layers, 1);
  EXPECT_FALSE(s1.pipeline.embedding);
  EXPECT_TRUE(s1.pipeline.head);
  EXPECT_EQ(s1.batch, 2);  // 4 over data 2; the pipeline is not a batch axis
  // Per microbatch (1 sequence of 128 tokens x d 256, bf16): stage 0 sends its activations and receives their
  // gradient, stage 1 the reverse.
  auto count = [](const ir::Program& p, ir::OpKind kind, std::int32_t peer) {
    int n = 0;
    for (const auto& ins : p.instructions()) {
      if (ins.kind == kind && ins.comm.peer == peer) {
        EXPECT_EQ(ins.bytes, 128U * 256 * 2);
        ++n;
      }
    }
    return n;
  };
  EXPECT_EQ(count(l.programs.programs[0], ir::OpKind::send, +1), 2);
  EXPECT_EQ(count(l.programs.programs[0], ir::OpKind::recv, +1), 2);
  EXPECT_EQ(count(l.programs.programs[1], ir::OpKind::recv, -1), 2);
  EXPECT_EQ(count(l.programs.programs[1], ir::OpKind::send, -1), 2);
}

// Every pipeline stage keeps its own memory timeline (the tools follow each stage's first chip over the step):
// one per program, each naming only its own program's instructions, freeing what it allocates, and the fullest
// stage's program-order sweep is the memory plan's total (the plan the lowering reports is the fullest stage's).
TEST(Sharding, EveryPipelineStageKeepsItsOwnMemoryTimeline) {
  WorkloadSpec w = small(4, mesh({{"pipeline", 2}, {"data", 2}}));
  w.memory.microbatches = 2;
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  ASSERT_EQ(l.programs.programs.size(), 2U);
  ASSERT_EQ(l.memory_timelines.size(), 2U);
  ASSERT_TRUE(l.memory.has_value());
  double fullest = 0;
  std::vector<double> persistent;
  for (std::size_t s = 0; s < 2; ++s) {
    const MemoryTimeline& t = l.memory_timelines[s];
    const std::size_t size = l.programs.programs[s].size();
    double held = 0, peak = 0, allocated = 0, freed = 0;
    EXPECT_FALSE(t.uses.empty()) << "stage " << s;
    for (const ActivationUse& u : t.uses) {
      for (const std::uint32_t i : u.instructions) ASSERT_LT(i, size) << "stage " << s;
      held += u.allocated;
      peak = std::max(peak, held);
      held -= u.freed;
      allocated += u.allocated;
      freed += u.freed;
    }
    EXPECT_EQ(allocated, freed) << "stage " << s;
    EXPECT_GT(peak, 0) << "stage " << s;
    persistent.push_back(t.persistent.as_double());
    fullest = std::max(fullest, t.persistent.as_double() + peak);
  }
  // Stage 0 holds the embedding, stage 1 the head and its norm: their persistent bytes differ.
  EXPECT_NE(persistent[0], persistent[1]);
  EXPECT_NEAR(fullest, l.memory->total().as_double(), 2.0);
}

TEST(Sharding, ADataParallelGradientAllReduceCarriesTheParameterBytes) {
  const WorkloadSpec w = small(8, mesh({{"data", 4}}));
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const auto [bytes, count] = collectives(p, "dp_all_reduce");
  // f32 gradients of every parameter: 2 blocks + the embedding and final norm, one all-reduce each.
  EXPECT_DOUBLE_EQ(bytes, 4.0 * parameter_count(w.model));
  EXPECT_EQ(count, 3);
  ASSERT_EQ(l.programs.groups.size(), 1U);
  EXPECT_EQ(l.programs.groups[0], group({4, 1, 1}, {1, 1, 1}));
  EXPECT_EQ(collectives(p, "tp_all_reduce").second, 0);
  EXPECT_DOUBLE_EQ(l.work.examples, 8);  // the global batch
}

TEST(Sharding, TensorParallelAllReducesCarryTheActivations) {
  const WorkloadSpec w = small(4, mesh({{"data", 2}, {"tensor", 2}}));
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const double tokens = 2 * 128, act = tokens * 256 * 2;  // batch per chip 2, bf16 [tokens, d]
  // Per block: attention output and MLP down (forward), their input gradients (backward); the embedding
  // lookup and the head's input gradient (vocabulary parallel).
  const auto [bytes, count] = collectives(p, "tp_all_reduce");
  EXPECT_EQ(count, 2 * 4 + 2);
  EXPECT_DOUBLE_EQ(bytes, (2 * 4 + 2) * act);
  // Gradients are reduced over data only (tensor shards differ), each chip's shard: half the matmul weights.
  // Per block: norms 2 x 256, qkv 256 x 3 x 2 x 64, out 128 x 256, up 256 x 512, down 512 x 256; the
  // embedding 1024 x 256 rows of the vocabulary and the final norm 256.
  const double per_block = 2 * 256 + 256 * 384 + 128 * 256 + 256 * 512 + 512 * 256;
  const double per_chip_params = 2 * per_block + 1024 * 256 + 256;
  EXPECT_DOUBLE_EQ(collectives(p, "dp_all_reduce").first, 4.0 * per_chip_params);
}


// ---- sequence parallelism, the vocabulary-parallel loss, the FSDP embedding ----

// The groups the collectives whose label ends with `suffix` run over.
std::vector<ir::CollectiveGroup> groups_of(const LoweredWorkload& l, const std::string& suffix) {
  std::vector<ir::CollectiveGroup> out;
  const ir::Program& p = l.programs.programs[0];
  for (const auto& ins : p.instructions()) {
    const std::string& label = p.label_of(ins);
    if (ins.kind == ir::OpKind::collective && label.size() >= suffix.size() &&
        label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(l.programs.groups.at(ins.comm.group));
    }
  }
  return out;
}

TEST(Sharding, SequenceParallelismTurnsEachTensorAllReduceIntoAReduceScatterAndAnAllGatherOfTheSameBytes) {
  // 2 sequences of 128 tokens per chip; tensor parallel over 2 chips, without and with sequence parallelism.
  const LoweredWorkload tp = lower(small(4, mesh({{"data", 2}, {"tensor", 2}})), roomy(), pod({4}));
  const LoweredWorkload sp = lower(small(4, mesh({{"data", 2}, {"tensor_sequence", 2}})), roomy(), pod({4}));
  const ir::Program& p = sp.programs.programs[0];
  const double act = 2 * 128 * 256 * 2;  // [tokens, d] in bf16
  // Per block the attention output and MLP down projections (forward) and the QKV and up input gradients
  // (backward), and the embedding lookup and the head's input gradient: all-reduced without, reduce-scattered
  // (the same input) with sequence parallelism.
  EXPECT_EQ(collectives(tp.programs.programs[0], "tp_all_reduce"), (std::pair<double, int>{10 * act, 10}));
  EXPECT_EQ(collectives(p, "tp_all_reduce").second, 0);
  EXPECT_EQ(collectives(p, "tp_reduce_scatter"), (std::pair<double, int>{10 * act, 10}));
  // Forward: the norm outputs (this chip's half of the tokens) all-gathered before the QKV and up projections,
  // and before the head's projection.
  EXPECT_EQ(collectives(p, "fwd.tp_all_gather"), (std::pair<double, int>{5 * act / 2, 5}));
  // So a forward pair carries the all-reduce's bytes over the links: all-gather of S/2 + reduce-scatter of S.
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::all_gather, 2) * act / 2 + bus_factor(CollectiveKind::reduce_scatter, 2) * act,
                   bus_factor(CollectiveKind::all_reduce, 2) * act);
  // Backward, per block: the output gradients of the MLP and of the attention gathered, and the two norm outputs
  // gathered again for the weight gradients (only the shards were kept); the head's input again for its weight
  // gradient, and the embedding's input gradient for the vocabulary-parallel table.
  EXPECT_EQ(collectives(p, "bwd.tp_all_gather"), (std::pair<double, int>{10 * act / 2, 10}));
  // Every one over the tensor pair (chips 0-1 and 2-3).
  for (const char* kind : {"tp_reduce_scatter", "tp_all_gather"}) {
    for (const ir::CollectiveGroup& g : groups_of(sp, kind)) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  }
  // The norm gains' gradients are partial sums over the pair's tokens: all-reduced over it (f32, 2 x 256 per
  // block, 256 for the final norm).
  EXPECT_EQ(collectives(p, "tp_norm_all_reduce"), (std::pair<double, int>{(2 * 2 * 256 + 256) * 4.0, 3}));
  EXPECT_EQ(collectives(tp.programs.programs[0], "tp_norm_all_reduce").second, 0);
}

TEST(Sharding, CollectiveMatmulTurnsEachSequenceGatherIntoRingPermutesAndSplitsTheMatmulsItFeeds) {
  // As above (tensor_sequence 2, 2 sequences of 128 tokens per chip), with collective matmul: each of the 15
  // all-gathers (5 forward, 10 backward) becomes sp - 1 = 1 permute of this chip's shard to its neighbour.
  const WorkloadSpec off = small(4, mesh({{"data", 2}, {"tensor_sequence", 2}}));
  WorkloadSpec on = off;
  on.schedule.collective_matmul = ::tpusim::CollectiveMatmul::on;
  const LoweredWorkload lo = lower(off, roomy(), pod({4})), ln = lower(on, roomy(), pod({4}));
  const ir::Program& p = ln.programs.programs[0];
  const double act = 2 * 128 * 256 * 2;  // [tokens, d] in bf16
  EXPECT_EQ(collectives(p, "tp_all_gather").second, 0);
  EXPECT_EQ(collectives(p, "tp_ring_permute"), (std::pair<double, int>{15 * act / 2, 15}));
  EXPECT_EQ(collectives(lo.programs.programs[0], "tp_all_gather"), (std::pair<double, int>{15 * act / 2, 15}));
  for (const ir::CollectiveGroup& g : groups_of(ln, "tp_ring_permute")) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  // The matmuls whose rows are the gathered tokens run as 2 partials of half the rows: per block the QKV and
  // MLP up projections (forward) and the MLP down and attention output projections' input gradients
  // (backward), and the head's projection: 9 matmuls; with them the weight gradients that read the gathered
  // gradient along their tokens (per block the MLP down and attention output projections': 4). 13, each a
  // step0 and a step1 with the same MXU FLOPs in all.
  int step1 = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (l.size() > 6 && l.compare(l.size() - 6, 6, ".step1") == 0) ++step1;
  }
  EXPECT_EQ(step1, 13 * p.cores_used());  // one instruction per TensorCore and op
  EXPECT_EQ(p.cores_used(), 2);
  EXPECT_DOUBLE_EQ(p.model_flops(), lo.programs.programs[0].model_flops());
  // The reduce-scatter side: the 8 block outputs reduce-scattered (per block attention out and MLP down
  // forward, QKV and MLP up input gradients backward) become, for N = 2, one +1 step each of the half this chip
  // does not keep; the embedding's and the head's stay reduce-scatters of the whole partial.
  EXPECT_EQ(collectives(lo.programs.programs[0], "tp_reduce_scatter"), (std::pair<double, int>{10 * act, 10}));
  EXPECT_EQ(collectives(p, "tp_reduce_scatter"), (std::pair<double, int>{2 * act, 2}));
  EXPECT_EQ(collectives(p, "tp_ring_scatter"), (std::pair<double, int>{8 * act / 2, 8}));
  int ring1 = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (l.size() > 6 && l.compare(l.size() - 6, 6, ".ring1") == 0) ++ring1;
  }
  EXPECT_EQ(ring1, 8 * p.cores_used());
}

TEST(Sharding, CollectiveMatmulAutoDecomposesWhereTheGatheredResidualReachesXlasThreshold) {
  // data 2 x tensor_sequence 2, 2 sequences per chip, d_model 256 in bf16: the residual stream gathered on a
  // chip is 2 x seq x 256 x 2 B, 1 KiB per position of the two sequences; XLA's 256 MiB threshold
  // (kWindowedEinsumThreshold, 2^28 B) is reached at seq = 2^18 = 262,144.
  WorkloadSpec at = small(4, mesh({{"data", 2}, {"tensor_sequence", 2}}));
  ASSERT_EQ(at.schedule.collective_matmul, ::tpusim::CollectiveMatmul::automatic);  // the default
  at.tokens.seq_len = at.tokens.decoder_seq_len = at.tokens.context = at.model.transformer.context = 262144;
  WorkloadSpec below = at;
  below.tokens.seq_len = below.tokens.decoder_seq_len = below.tokens.context = 262144 - 128;
  const LoweredWorkload la = lower(at, roomy(), pod({4})), lb = lower(below, roomy(), pod({4}));
  EXPECT_EQ(collectives(la.programs.programs[0], "tp_ring_permute").second, 15);
  EXPECT_EQ(collectives(la.programs.programs[0], "tp_all_gather").second, 0);
  EXPECT_EQ(collectives(lb.programs.programs[0], "tp_ring_permute").second, 0);
  EXPECT_EQ(collectives(lb.programs.programs[0], "tp_all_gather").second, 15);
  // With nothing to decompose (a tensor group that does not split the residual stream) auto is off without
  // a word, where on is refused.
  WorkloadSpec tp = small(4, mesh({{"data", 2}, {"tensor", 2}}));
  EXPECT_NO_THROW((void)lower(tp, roomy(), pod({4})));
  tp.schedule.collective_matmul = ::tpusim::CollectiveMatmul::on;
  EXPECT_THROW((void)lower(tp, roomy(), pod({4})), ConfigError);
}

TEST(Sharding, CollectiveMatmulOverFourChipsRunsBothWaysRoundTheRingInTwoSteps) {
  // tensor_sequence 4 on a 4-ring, 2 sequences of 128 tokens per chip: each chip holds 64 of the 256 tokens,
  // a shard of act / 4. Each of the 15 gathers (5 forward, 10 backward) is N/2 = 2 bidirectional exchanges:
  // step 1 sends this chip's shard both ways (2 shards' bytes, 1 each way), step 2 the opposite chip's shard,
  // half from each side (1 shard's bytes): 3 shards per gather, the all-gather's (N - 1) shards.
  const WorkloadSpec off = small(2, mesh({{"tensor_sequence", 4}}));
  WorkloadSpec on = off;
  on.schedule.collective_matmul = ::tpusim::CollectiveMatmul::on;
  const LoweredWorkload lo = lower(off, roomy(), pod({4})), ln = lower(on, roomy(), pod({4}));
  const ir::Program& p = ln.programs.programs[0];
  const double shard = 2 * 128 * 256 * 2 / 4.0;  // [64 tokens, d] in bf16
  EXPECT_EQ(collectives(lo.programs.programs[0], "tp_all_gather"), (std::pair<double, int>{15 * shard, 15}));
  EXPECT_EQ(collectives(p, "tp_all_gather").second, 0);
  EXPECT_EQ(collectives(p, "tp_ring_permute"), (std::pair<double, int>{15 * 3 * shard, 30}));
  int two = 0, one = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (ins.kind != ir::OpKind::collective || l.find("tp_ring_permute") == std::string::npos) continue;
    EXPECT_EQ(ins.comm.algorithm, static_cast<std::uint8_t>(CollectiveAlgorithm::ring_bidirectional));
    (ins.bytes == static_cast<std::uint64_t>(2 * shard) ? two : one) += 1;
  }
  EXPECT_EQ(two, 15);
  EXPECT_EQ(one, 15);
  for (const ir::CollectiveGroup& g : groups_of(ln, "tp_ring_permute")) EXPECT_EQ(g, group({4, 1, 1}, {1, 1, 1}));
  // The 9 matmuls fed by a gather (as with 2 chips) run as 4 partials of 64 rows each, one per shard, and the
  // 4 weight gradients reading a gathered gradient as 4 partials of 64 tokens each.
  int step3 = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (l.size() > 6 && l.compare(l.size() - 6, 6, ".step3") == 0) ++step3;
  }
  EXPECT_EQ(step3, 13 * p.cores_used());
  // The reduce-scatter side: each of the 8 block reductions (of act = 4 shards) is floor(N/2) = 2 steps:
  // step 1 one block each way (2 shards' bytes), step 2 one block, half each way (half of every block's rows
  // take the mirror image of the chains), both bidirectional; the 4 row blocks' partial matmuls are ring0 ..
  // ring3. The embedding's and the head's stay reduce-scatters.
  EXPECT_EQ(collectives(lo.programs.programs[0], "tp_reduce_scatter"), (std::pair<double, int>{10 * 4 * shard, 10}));
  EXPECT_EQ(collectives(p, "tp_reduce_scatter"), (std::pair<double, int>{2 * 4 * shard, 2}));
  EXPECT_EQ(collectives(p, "tp_ring_scatter"), (std::pair<double, int>{8 * 3 * shard, 16}));
  int two_blocks = 0, one_block = 0, ring3 = 0;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (l.find("tp_ring_scatter") != std::string::npos) {
      EXPECT_EQ(ins.comm.algorithm, static_cast<std::uint8_t>(CollectiveAlgorithm::ring_bidirectional));
      (ins.bytes == static_cast<std::uint64_t>(2 * shard) ? two_blocks : one_block) += 1;
    }
    if (l.size() > 6 && l.compare(l.size() - 6, 6, ".ring3") == 0) ++ring3;
  }
  EXPECT_EQ(two_blocks, 8);
  EXPECT_EQ(one_block, 8);
  EXPECT_EQ(ring3, 8 * p.cores_used());
  EXPECT_DOUBLE_EQ(p.model_flops(), lo.programs.programs[0].model_flops());
  EXPECT_DOUBLE_EQ(p.hardware_flops(), lo.programs.programs[0].hardware_flops());
}

TEST(Sharding, CollectiveMatmulRunsTheWeightGradientOfAGatheredGradientChunkByChunkAccumulatingInPlace) {
  // tensor_sequence 4 on a 4-ring, 2 sequences of 128 tokens per chip: the backward gathers the gradient at
  // each block's output (and at its attention output) over the 4 chips, and the MLP down projection's weight
  // gradient dW = G^T dY, [d_ff / 4 = 256 x 256 tokens] x [256 tokens x d = 256], reads it along its tokens.
  // With collective matmul it runs as 4 partials of 64 tokens each, partial i right after the input gradient's
  // partial i (both on chunk i), each writing the whole f32 dW and every one after the first reading it back
  // to add its own: 3 more reads and writes of dW (this model has no biases) and 3 adds of each element.
  const WorkloadSpec off = small(2, mesh({{"tensor_sequence", 4}}));
  WorkloadSpec on = off;
  on.schedule.collective_matmul = ::tpusim::CollectiveMatmul::on;
  const LoweredWorkload lo = lower(off, roomy(), pod({4})), ln = lower(on, roomy(), pod({4}));
  const ir::Program& a = lo.programs.programs[0];
  const ir::Program& b = ln.programs.programs[0];
  const std::string dw = "layer0.bwd.down.dw";
  double whole_flops = 0, whole_read = 0, whole_written = 0, whole_vpu = 0;
  int whole_count = 0;
  for (const auto& ins : a.instructions()) {
    if (a.label_of(ins) != dw) continue;
    ++whole_count;
    whole_flops += ins.flops.hardware, whole_read += static_cast<double>(ins.stream.hbm_read);
    whole_written += static_cast<double>(ins.stream.hbm_written), whole_vpu += static_cast<double>(ins.vector.elements);
  }
  ASSERT_EQ(whole_count, a.cores_used());
  const double grads = 256.0 * 256 * 4 / a.cores_used();  // the f32 dW, per core
  EXPECT_DOUBLE_EQ(whole_written, a.cores_used() * grads);
  double flops = 0, read = 0, written = 0, vpu = 0;
  int parts = 0;
  std::vector<std::string> order;
  for (const auto& ins : b.instructions()) {
    const std::string& l = b.label_of(ins);
    if (l.rfind("layer0.bwd.down.d", 0) == 0 && l.find(".step") != std::string::npos && ins.kind == ir::OpKind::matmul) {
      if (order.empty() || order.back() != l) order.push_back(l);
    }
    if (l.rfind(dw + ".step", 0) != 0) continue;
    ++parts;
    EXPECT_EQ(ins.shape.k, 64);
    flops += ins.flops.hardware, read += static_cast<double>(ins.stream.hbm_read),
        written += static_cast<double>(ins.stream.hbm_written);
    vpu += static_cast<double>(ins.vector.elements);
  }
  EXPECT_EQ(parts, 4 * b.cores_used());
  EXPECT_DOUBLE_EQ(flops, whole_flops);
  EXPECT_DOUBLE_EQ(written, 4 * whole_written);
  EXPECT_DOUBLE_EQ(read, whole_read + 3 * whole_written);
  EXPECT_DOUBLE_EQ(vpu, whole_vpu + 3 * 256.0 * 256);
  EXPECT_EQ(order, (std::vector<std::string>{"layer0.bwd.down.dx.step0", dw + ".step0", "layer0.bwd.down.dx.step1",
                                             dw + ".step1", "layer0.bwd.down.dx.step2", dw + ".step2",
                                             "layer0.bwd.down.dx.step3", dw + ".step3"}));
  EXPECT_DOUBLE_EQ(b.model_flops(), a.model_flops());
  EXPECT_DOUBLE_EQ(b.hardware_flops(), a.hardware_flops());
}

TEST(Sharding, ADModelSplitAllReducesEachNormsStatisticsOverTheTensorGroup) {
  // activation_embed over tensor 4, 2 sequences of 128 tokens per chip: each chip holds a quarter of d_model
  // of every token, so every RMSNorm sums its tokens' squares over the group (256 tokens x 4 B, f32), forward
  // (2 per block and the final norm) and backward (as many): 10 all-reduces. Splitting the tokens instead
  // (tensor_sequence) needs none.
  WorkloadSpec embed = small(2, mesh({{"tensor", 4}}));
  embed.mesh.rules.push_back(ShardingRuleSpec{"activation_embed", {"tensor"}, {}});
  const LoweredWorkload e = lower(embed, roomy(), pod({4}));
  const LoweredWorkload sp = lower(small(2, mesh({{"tensor_sequence", 4}})), roomy(), pod({4}));
  EXPECT_EQ(collectives(e.programs.programs[0], "tp_stats_all_reduce"), (std::pair<double, int>{10 * 256 * 4.0, 10}));
  EXPECT_EQ(collectives(sp.programs.programs[0], "tp_stats_all_reduce").second, 0);
  for (const ir::CollectiveGroup& g : groups_of(e, "tp_stats_all_reduce")) EXPECT_EQ(g, group({4, 1, 1}, {1, 1, 1}));
  // Each gather of a norm's output (or of the residual add after a norm's backward) waits for that norm's
  // statistics: 5 forward and 5 backward gathers depend on an all-reduce of statistics.
  const ir::Program& p = e.programs.programs[0];
  int waiting = 0;
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins).find("tp_all_gather") == std::string::npos) continue;
    const std::uint32_t* deps = p.deps_of(ins);
    for (std::uint32_t d = 0; d < ins.deps.count; ++d) {
      if (p.label_of(p.instructions()[deps[d]]).find("tp_stats_all_reduce") != std::string::npos) ++waiting;
    }
  }
  EXPECT_EQ(waiting, 10);
}

TEST(Sharding, SequenceParallelismDividesTheActivationsOutsideTheBlocksByTheTensorSize) {
  // Full rematerialization keeps each block's input, the head's input, its norm output and statistics (RMSNorm:
  // 1 f32 per token) and the logits' gradient (every token, this chip's 1024 vocabulary rows).
  WorkloadSpec tp = small(4, mesh({{"data", 2}, {"tensor", 2}}));
  WorkloadSpec sp = small(4, mesh({{"data", 2}, {"tensor_sequence", 2}}));
  tp.memory.remat = sp.memory.remat = Remat::full;
  const double tokens = 2 * 128, act = tokens * 256 * 2, dlogits = tokens * 1024 * 2;
  const auto tp_plan = plan_memory(tp, roomy(), pod({4}));
  const auto sp_plan = plan_memory(sp, roomy(), pod({4}));
  ASSERT_TRUE(tp_plan && sp_plan);
  EXPECT_DOUBLE_EQ(tp_plan->activations.as_double(), 4 * act + tokens * 4 + dlogits);
  EXPECT_DOUBLE_EQ(sp_plan->activations.as_double(), (4 * act + tokens * 4) / 2 + dlogits);
  EXPECT_EQ(sp_plan->weights, tp_plan->weights);
}

// The key path of the first error a workload's sharding raises, or "accepted".
std::string key_of(const WorkloadSpec& w, const PodSpec& p) {
  try {
    (void)shard_view(w, make_sharding(w, p));
  } catch (const ConfigError& e) {
    return e.diagnostics().front().key_path;
  }
  return "accepted";
}

TEST(Sharding, SequenceParallelismNeedsTheTensorGroupAndWholeSequences) {
  MeshSpec other = mesh({{"data", 2}, {"tensor", 2}});
  other.rules.push_back(ShardingRuleSpec{"norm_length", {"data"}, {}});
  EXPECT_EQ(key_of(small(4, other), pod({4})), "workload.sharding.norm_length");
  MeshSpec on_tensor = mesh({{"data", 2}, {"tensor", 2}});
  on_tensor.rules.push_back(ShardingRuleSpec{"norm_length", {"tensor"}, {}});
  EXPECT_EQ(key_of(small(4, on_tensor), pod({4})), "accepted");
  EXPECT_EQ(shard_view(small(4, on_tensor), make_sharding(small(4, on_tensor), pod({4}))).sequence_shards, 2);
  WorkloadSpec decode = small(4, mesh({{"data", 2}, {"tensor_sequence", 2}}));
  decode.step = StepKind::decode;
  EXPECT_EQ(key_of(decode, pod({4})), "workload.mesh.tensor_sequence");
  WorkloadSpec odd = small(2, mesh({{"data", 2}, {"tensor_sequence", 2}}));  // 1 sequence of 127 tokens per chip
  odd.tokens.seq_len = 127;
  EXPECT_EQ(key_of(odd, pod({4})), "workload.seq_len");
}

// MaxText's activation_embed (base.yml maps it to tensor): the residual stream between the blocks split along
// d_model over the tensor group. Opt-in here; the same bytes kept and moved as sequence parallelism.
MeshSpec embed_split(const std::vector<std::string>& axes) {
  MeshSpec m = mesh({{"data", 2}, {"tensor", 2}});
  m.rules.push_back(ShardingRuleSpec{"activation_embed", axes, {}});
  return m;
}

TEST(ActivationEmbed, TheResidualStreamSplitAlongDModelKeepsHalfTheActivationsOutsideTheBlocks) {
  // Full remat, 2 sequences of 128 tokens per chip, d 256 in bf16 over a tensor pair: each block's input
  // (2 blocks), the head's input and its norm output are [256 tokens, 128 of d] per chip, the RMSNorm
  // statistics (1 f32 per token) are counted halved as sequence parallelism counts them, and the logits'
  // gradient (every token, this chip's 1024 vocabulary rows) is not split.
  WorkloadSpec w = small(4, embed_split({"tensor"}));
  w.memory.remat = Remat::full;
  const double tokens = 2 * 128, act = tokens * 256 * 2, dlogits = tokens * 1024 * 2;
  const auto plan = plan_memory(w, roomy(), pod({4}));
  ASSERT_TRUE(plan);
  EXPECT_DOUBLE_EQ(plan->activations.as_double(), (4 * act + tokens * 4) / 2 + dlogits);
  WorkloadSpec tp = small(4, mesh({{"data", 2}, {"tensor", 2}}));
  tp.memory.remat = Remat::full;
  const auto tp_plan = plan_memory(tp, roomy(), pod({4}));
  ASSERT_TRUE(tp_plan);
  EXPECT_DOUBLE_EQ(tp_plan->activations.as_double(), 4 * act + tokens * 4 + dlogits);
  EXPECT_EQ(plan->weights, tp_plan->weights);
  EXPECT_EQ(shard_view(w, make_sharding(w, pod({4}))).sequence_shards, 2);
}

TEST(ActivationEmbed, EachTensorAllReduceBecomesAReduceScatterAndAnAllGatherOverTheTensorPair) {
  const LoweredWorkload l = lower(small(4, embed_split({"tensor"})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const double act = 2 * 128 * 256 * 2;  // [tokens, d] in bf16, 2 sequences of 128 tokens per chip
  // Per block the attention output and MLP down (forward), the QKV and up input gradients (backward), the
  // embedding lookup and the head's input gradient: reduce-scattered into this chip's half of d_model.
  EXPECT_EQ(collectives(p, "tp_all_reduce").second, 0);
  EXPECT_EQ(collectives(p, "tp_reduce_scatter"), (std::pair<double, int>{10 * act, 10}));
  // The halves all-gathered before the QKV, up and head projections (forward: 2 per block + 1), and in the
  // backward the MLP's and attention's output gradients and the two norm outputs per block, the head's input
  // and the embedding's input gradient.
  EXPECT_EQ(collectives(p, "fwd.tp_all_gather"), (std::pair<double, int>{5 * act / 2, 5}));
  EXPECT_EQ(collectives(p, "bwd.tp_all_gather"), (std::pair<double, int>{10 * act / 2, 10}));
  for (const char* kind : {"tp_reduce_scatter", "tp_all_gather"}) {
    for (const ir::CollectiveGroup& g : groups_of(l, kind)) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  }
}

TEST(ActivationEmbed, NeedsTheTensorGroupADModelThatSplitsAndNoTokenSplitBesides) {
  EXPECT_EQ(key_of(small(4, embed_split({"data"})), pod({4})), "workload.sharding.activation_embed");
  EXPECT_EQ(key_of(small(4, embed_split({"tensor"})), pod({4})), "accepted");
  MeshSpec both = embed_split({"tensor"});
  both.rules.push_back(ShardingRuleSpec{"norm_length", {"tensor"}, {}});
  EXPECT_EQ(key_of(small(4, both), pod({4})), "workload.sharding.norm_length");  // one axis, two dims
  WorkloadSpec decode = small(4, embed_split({"tensor"}));
  decode.step = StepKind::decode;
  EXPECT_EQ(key_of(decode, pod({4})), "workload.sharding.activation_embed");
  // The tokens need not split: 1 sequence of 127 tokens per chip is accepted.
  WorkloadSpec odd = small(2, embed_split({"tensor"}));
  odd.tokens.seq_len = odd.tokens.decoder_seq_len = odd.tokens.context = 127;
  EXPECT_EQ(key_of(odd, pod({4})), "accepted");
}

TEST(Sharding, AVocabularyParallelCrossEntropyAllReducesItsRowStatistics) {
  // Per token, f32: the row max, then the sum of exponentials and the target logit, over the tensor pair.
  const LoweredWorkload tp = lower(small(4, mesh({{"data", 2}, {"tensor", 2}})), roomy(), pod({4}));
  const ir::Program& p = tp.programs.programs[0];
  const double tokens = 2 * 128;
  for (const char* stat : {"loss_max_all_reduce", "loss_sum_exp_all_reduce", "loss_target_all_reduce"}) {
    EXPECT_EQ(collectives(p, stat), (std::pair<double, int>{tokens * 4, 1})) << stat;
    for (const ir::CollectiveGroup& g : groups_of(tp, stat)) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  }
  // A whole vocabulary on every chip: one fused pass, no collective.
  const LoweredWorkload dp = lower(small(8, mesh({{"data", 4}})), roomy(), pod({4}));
  EXPECT_EQ(collectives(dp.programs.programs[0], "loss_max_all_reduce").second, 0);
}

TEST(Sharding, FsdpGathersTheEmbeddingTableBeforeTheLookupAndReduceScattersItsGradient) {
  const LoweredWorkload l = lower(small(8, mesh({{"fsdp", 4}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const double table_shard = 2048.0 * 256 / 4;  // elements of the (tied) table each chip stores
  // Forward: the table gathered for the lookup and for the head's projection (bf16); backward: for the
  // projection's input gradient.
  EXPECT_EQ(collectives(p, "head.fwd.fsdp_all_gather"), (std::pair<double, int>{2 * table_shard * 2, 2}));
  EXPECT_EQ(collectives(p, "head.bwd.fsdp_all_gather"), (std::pair<double, int>{table_shard * 2, 1}));
  // The lookup reads the gathered table: it waits for the first collective of the step.
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "embedding.fwd.lookup") continue;
    bool after_gather = false;
    for (std::uint32_t d = 0; d < ins.deps.count; ++d) {
      after_gather |= p.label_of(p[p.deps_of(ins)[d]]) == "head.fwd.fsdp_all_gather";
    }
    EXPECT_TRUE(after_gather);
  }
  // The embedding and final-norm gradients (f32, full size) reduce-scattered into each chip's quarter.
  EXPECT_EQ(collectives(p, "head.bwd.fsdp_reduce_scatter"), (std::pair<double, int>{4.0 * (2048 * 256 + 256), 1}));
}

// The weight casts whose label ends with `suffix`, summed over their instructions (one per TensorCore).
struct CastTotals {
  double read = 0, written = 0, elements = 0;
  int count = 0;
};
CastTotals casts(const ir::Program& p, const std::string& suffix) {
  CastTotals t;
  for (const auto& ins : p.instructions()) {
    const std::string& l = p.label_of(ins);
    if (ins.kind != ir::OpKind::vector || l.size() < suffix.size() ||
        l.compare(l.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    t.read += static_cast<double>(ins.stream.hbm_read);
    t.written += static_cast<double>(ins.stream.hbm_written);
    t.elements += static_cast<double>(ins.vector.elements);
    ++t.count;
  }
  return t;
}

TEST(Sharding, FsdpCastsEachF32WeightShardToBf16InAFusionOfItsOwnBeforeGatheringIt) {
  const LoweredWorkload l = lower(small(8, mesh({{"fsdp", 4}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  // The tied table's shard, 2048 x 256 / 4 elements, cast for each of its two forward gathers (the lookup, the
  // head's projection): read in f32, written in bf16, one VPU op per element, split over the 2 TensorCores.
  const double table_shard = 2048.0 * 256 / 4;
  const CastTotals head = casts(p, "head.fwd.fsdp_cast");
  EXPECT_EQ(head.count, 2 * 2);
  EXPECT_EQ(head.read, 2 * table_shard * 4);
  EXPECT_EQ(head.written, 2 * table_shard * 2);
  EXPECT_EQ(head.elements, 2 * table_shard);
  // Layer 0's forward: qkv 256 x 3 x 256 (4 heads of 64), out 256 x 256, up 256 x 1024 and down 1024 x 256,
  // each a quarter.
  const double layer_shard = (256.0 * 768 + 256 * 256 + 256 * 1024 + 1024 * 256) / 4;
  const CastTotals layer = casts(p, "layer0.fwd.fsdp_cast");
  EXPECT_EQ(layer.count, 4 * 2);
  EXPECT_EQ(layer.read, layer_shard * 4);
  EXPECT_EQ(layer.written, layer_shard * 2);
  // Every gather of the step has its cast: the casts write exactly the bytes the gathers send.
  EXPECT_EQ(casts(p, "fsdp_cast").written, collectives(p, "fsdp_all_gather").first);
  // bf16 master weights are gathered as stored: nothing to cast.
  WorkloadSpec bf16 = small(8, mesh({{"fsdp", 4}}));
  bf16.numerics.weight_dtype = DType::bf16;
  EXPECT_EQ(casts(lower(bf16, roomy(), pod({4})).programs.programs[0], "fsdp_cast").count, 0);
}

TEST(Sharding, AnFsdpCastWaitsForItsTensorCoresPreviousFusionAndNoGatherWaitsForACast) {
  // One fusion at a time per TensorCore: each cast depends on the compute instruction its core ran before it;
  // the gathers, started a layer ahead, read the stored shard and do not wait for the casts.
  const LoweredWorkload l = lower(small(8, mesh({{"fsdp", 4}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const auto is_cast = [&](const ir::Instruction& ins) { return p.label_of(ins).find("fsdp_cast") != std::string::npos; };
  std::map<int, std::uint32_t> last_compute;  // by TensorCore
  int chained = 0, casts_seen = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const ir::Instruction& ins = p[i];
    const std::uint32_t* deps = p.deps_of(ins);
    if (ins.kind == ir::OpKind::collective) {
      for (std::uint32_t d = 0; d < ins.deps.count; ++d) EXPECT_FALSE(is_cast(p[deps[d]])) << p.label_of(ins);
      continue;
    }
    if (ins.kind != ir::OpKind::matmul && ins.kind != ir::OpKind::vector) continue;
    if (is_cast(ins)) {
      ++casts_seen;
      const auto prev = last_compute.find(ins.core);
      if (prev != last_compute.end()) {
        bool after_prev = false;
        for (std::uint32_t d = 0; d < ins.deps.count; ++d) after_prev |= deps[d] == prev->second;
        EXPECT_TRUE(after_prev) << p.label_of(ins) << " on core " << static_cast<int>(ins.core);
        chained += after_prev ? 1 : 0;
      }
    }
    last_compute[ins.core] = i;
  }
  EXPECT_GT(casts_seen, 0);
  EXPECT_GT(chained, 0);
}

TEST(Sharding, TensorParallelExpertMlpsReduceTheirPartialSumsLikeDenseOnesWithAndWithoutSequenceParallelism) {
  // Every block a mixture of 4 experts (top 2) over a tensor pair: the expert down projections are row
  // parallel, so the combined output (forward) and the input gradient of the expert branch (backward) are
  // all-reduced as the dense MLP's are, and so are the gates' gradients (dot products with the partial expert
  // outputs: tokens x top 2 in f32).
  WorkloadSpec w = small(4, mesh({{"data", 2}, {"tensor", 2}}));
  w.model.transformer.moe.experts = 4;
  w.model.transformer.moe.top_k = 2;
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  const double act = 2 * 128 * 256 * 2, dgates = 2 * 128 * 2 * 4;
  EXPECT_EQ(collectives(l.programs.programs[0], "tp_all_reduce"),
            (std::pair<double, int>{10 * act + 2 * dgates, 12}));
  // With sequence parallelism the [tokens, d] reductions become reduce-scatters and the norm outputs are
  // gathered as in a dense block; the gates' gradients stay all-reduced (the router's backward reads every
  // token's).
  w.mesh = mesh({{"data", 2}, {"tensor_sequence", 2}});
  const LoweredWorkload sp = lower(w, roomy(), pod({4}));
  const ir::Program& p = sp.programs.programs[0];
  EXPECT_EQ(collectives(p, "tp_reduce_scatter"), (std::pair<double, int>{10 * act, 10}));
  EXPECT_EQ(collectives(p, "tp_all_reduce"), (std::pair<double, int>{2 * dgates, 2}));
  EXPECT_EQ(collectives(p, "fwd.tp_all_gather"), (std::pair<double, int>{5 * act / 2, 5}));
  EXPECT_EQ(collectives(p, "bwd.tp_all_gather"), (std::pair<double, int>{10 * act / 2, 10}));
}


// ---- context parallelism (a sequence axis) ----

// Model FLOPs of the instructions of class `cls`.
double flops_of(const ir::Program& p, ir::OpClass cls) {
  double f = 0;
  for (const auto& ins : p.instructions()) f += ins.op_class == cls ? ins.flops.model : 0;
  return f;
}

TEST(ContextParallelism, EachChipHoldsItsPartOfEverySequence) {
  const WorkloadSpec w = small(8, mesh({{"data", 2}, {"sequence", 2}}));
  const ShardView s = shard_view(w, make_sharding(w, pod({4})));
  EXPECT_EQ(s.batch, 4);   // 8 over data 2; the sequence axis does not split the batch
  EXPECT_EQ(s.seq_len, 64);  // 128 over sequence 2
  EXPECT_EQ(s.context_shards, 2);
  EXPECT_EQ(s.heads, 4);
}

TEST(ContextParallelism, KeysAndValuesAreGatheredOverTheSequenceGroupAndTheirGradientsReduceScattered) {
  // 4 sequences of 64 of 128 tokens per chip, 4 kv heads of 64, bf16: K and V of this chip's positions are
  // 4 x 64 x 256 x 2 bytes each; the gradients of every position's, 4 x 128 x 256 x 2 bytes each.
  const LoweredWorkload l = lower(small(8, mesh({{"data", 2}, {"sequence", 2}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  const double kv = 4 * 64 * 256 * 2, dkv = 4 * 128 * 256 * 2;
  // Per block: gathered before the attention (forward), and again for its backward (only this chip's part was
  // kept); the gradients reduce-scattered after it.
  EXPECT_EQ(collectives(p, "fwd.cp_all_gather"), (std::pair<double, int>{2 * 2 * kv, 2}));
  EXPECT_EQ(collectives(p, "bwd.cp_all_gather"), (std::pair<double, int>{2 * 2 * kv, 2}));
  EXPECT_EQ(collectives(p, "bwd.cp_reduce_scatter"), (std::pair<double, int>{2 * 2 * dkv, 2}));
  // Over the sequence pair: the most communication-heavy axis here, on neighbouring chips (0-1, 2-3).
  for (const char* kind : {"cp_all_gather", "cp_reduce_scatter"}) {
    for (const ir::CollectiveGroup& g : groups_of(l, kind)) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  }
  // The attention reads every position's keys: 64 queries by 128 keys per product.
  bool seen = false;
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "layer0.fwd.attention.qk") continue;
    EXPECT_EQ(ins.shape.m, 64);
    EXPECT_EQ(ins.shape.n, 128);
    seen = true;
  }
  EXPECT_TRUE(seen);
  // Full rematerialization gathers them for the recomputed forward instead.
  WorkloadSpec full = small(8, mesh({{"data", 2}, {"sequence", 2}}));
  full.memory.remat = Remat::full;
  const LoweredWorkload lf = lower(full, roomy(), pod({4}));
  const ir::Program& q = lf.programs.programs[0];
  EXPECT_EQ(collectives(q, "remat.cp_all_gather"), (std::pair<double, int>{2 * 2 * kv, 2}));
  EXPECT_EQ(collectives(q, "bwd.cp_all_gather").second, 0);
}

TEST(ContextParallelism, GradientsAreReducedOverTheSequenceGroupLikeDataParallelism) {
  // Replicated parameters: every f32 gradient all-reduced over data x sequence (adjacent: one group of 4).
  const WorkloadSpec w = small(8, mesh({{"data", 2}, {"sequence", 2}}));
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  EXPECT_EQ(collectives(l.programs.programs[0], "dp_all_reduce"),
            (std::pair<double, int>{4.0 * parameter_count(w.model), 3}));
  for (const ir::CollectiveGroup& g : groups_of(l, "dp_all_reduce")) EXPECT_EQ(g, group({4, 1, 1}, {1, 1, 1}));
  // With FSDP: reduce-scattered over fsdp, then the shards all-reduced over the sequence pair.
  const LoweredWorkload f = lower(small(8, mesh({{"fsdp", 2}, {"sequence", 2}})), roomy(), pod({4}));
  EXPECT_EQ(collectives(f.programs.programs[0], "fsdp_reduce_scatter"),
            (std::pair<double, int>{4.0 * parameter_count(w.model), 3}));
  EXPECT_EQ(collectives(f.programs.programs[0], "dp_all_reduce"),
            (std::pair<double, int>{4.0 * parameter_count(w.model) / 2, 3}));
  for (const ir::CollectiveGroup& g : groups_of(f, "dp_all_reduce")) EXPECT_EQ(g, group({2, 1, 1}, {1, 1, 1}));
  // Named in the embed rule too, the sequence axis shards the parameters (FSDP over it): no all-reduce left.
  MeshSpec fsdp_cp = mesh({{"sequence", 4}});
  fsdp_cp.rules.push_back(ShardingRuleSpec{"embed", {"sequence"}, {}});
  const LoweredWorkload z = lower(small(8, fsdp_cp), roomy(), pod({4}));
  EXPECT_EQ(collectives(z.programs.programs[0], "fsdp_reduce_scatter"),
            (std::pair<double, int>{4.0 * parameter_count(w.model), 3}));
  EXPECT_EQ(collectives(z.programs.programs[0], "dp_all_reduce").second, 0);
}

TEST(ContextParallelism, EachChipDoesOneCthOfTheAttentionAndOfEveryMatmul) {
  // One chip with 8 whole sequences, and 4 chips with a quarter of each. Attention model FLOPs of a training
  // step: 2 blocks x 3 x (Q K^T and P V: 2 x 2 b h s s d_head) = 2 x 12 x 8 x 4 x 128 x 128 x 64 on the one
  // chip. (Causal masking skips nothing in tpusim's count, so a chip's 32 queries by 128 keys are a quarter
  // whichever positions it holds.)
  const LoweredWorkload one = lower(small(8, MeshSpec{}), roomy(), pod({1}));
  const LoweredWorkload cp = lower(small(8, mesh({{"sequence", 4}})), roomy(), pod({4}));
  const double attention = 2 * 12.0 * 8 * 4 * 128 * 128 * 64;
  EXPECT_DOUBLE_EQ(flops_of(one.programs.programs[0], ir::OpClass::attention), attention);
  EXPECT_DOUBLE_EQ(flops_of(cp.programs.programs[0], ir::OpClass::attention), attention / 4);
  EXPECT_DOUBLE_EQ(cp.programs.programs[0].model_flops(), one.programs.programs[0].model_flops() / 4);
  EXPECT_DOUBLE_EQ(4 * cp.programs.programs[0].model_flops(), cp.closed_form_model_flops);  // the job's
  EXPECT_DOUBLE_EQ(cp.work.tokens, 8 * 128);  // the job's tokens
}

TEST(ContextParallelism, ActivationsPerChipDivideByTheSequenceAxis) {
  // Only this chip's positions are kept (the gathered keys and values die after the forward attention), so a
  // chip holds what data parallelism holds at the same tokens per chip, for flash and unfused attention (its
  // probabilities: 64 queries x 128 keys, as 1 sequence's 128 x 128 over 2), a quarter of one chip's.
  for (const AttentionImpl impl : {AttentionImpl::flash, AttentionImpl::unfused}) {
    WorkloadSpec one = small(4, MeshSpec{}), cp = small(4, mesh({{"sequence", 4}})), dp = small(4, mesh({{"data", 4}}));
    one.kernels.attention = cp.kernels.attention = dp.kernels.attention = impl;
    const auto a = plan_memory(one, roomy(), pod({1}));
    const auto c = plan_memory(cp, roomy(), pod({4}));
    const auto d = plan_memory(dp, roomy(), pod({4}));
    ASSERT_TRUE(a && c && d);
    EXPECT_DOUBLE_EQ(c->activations.as_double(), d->activations.as_double());
    EXPECT_DOUBLE_EQ(c->activations.as_double(), a->activations.as_double() / 4);
    EXPECT_EQ(c->weights, a->weights);
  }
  // By hand, under full rematerialization (kept: each block's input, the head's input, its norm output and
  // RMSNorm statistics, and the logits' gradient; 4 x 32 tokens per chip).
  WorkloadSpec full = small(4, mesh({{"sequence", 4}}));
  full.memory.remat = Remat::full;
  const double tokens = 4 * 32, act = tokens * 256 * 2, dlogits = tokens * 2048 * 2;
  EXPECT_DOUBLE_EQ(plan_memory(full, roomy(), pod({4}))->activations.as_double(), 4 * act + tokens * 4 + dlogits);
}

TEST(ContextParallelism, NeedsWholeSequencesThatSplit) {
  EXPECT_EQ(key_of(small(8, mesh({{"sequence", 4}})), pod({4})), "accepted");
  WorkloadSpec decode = small(8, mesh({{"sequence", 4}}));
  decode.step = StepKind::decode;
  EXPECT_EQ(key_of(decode, pod({4})), "workload.mesh.sequence");
  WorkloadSpec odd = small(8, mesh({{"sequence", 4}}));
  odd.tokens.seq_len = odd.tokens.decoder_seq_len = 126;
  EXPECT_EQ(key_of(odd, pod({4})), "workload.seq_len");
  // Combined with sequence parallelism on a tensor pair: the tensor group splits this chip's part again.
  const WorkloadSpec both = small(8, mesh({{"sequence", 2}, {"tensor_sequence", 2}}));
  const ShardView s = shard_view(both, make_sharding(both, pod({4})));
  EXPECT_EQ(s.seq_len, 64);
  EXPECT_EQ(s.sequence_shards, 2);
}


// ---- the whole weight gradient under FSDP ----

// Bytes the instructions labelled `label` write to HBM (over the TensorCores).
double written(const ir::Program& p, const std::string& label) {
  double b = 0;
  for (const auto& ins : p.instructions()) {
    b += p.label_of(ins) == label ? static_cast<double>(ins.stream.hbm_written) : 0;
  }
  return b;
}

TEST(FsdpGradients, TheWeightGradientMatmulWritesTheWholeGradientThatTheReduceScatterReads) {
  // A chip computes the gradient of the whole gathered weight: the QKV projection's is 256 x 768 f32 values,
  // written whole under FSDP as under data parallelism (it used to count the quarter the chip stores).
  const LoweredWorkload f = lower(small(8, mesh({{"fsdp", 4}})), roomy(), pod({4}));
  const LoweredWorkload d = lower(small(8, mesh({{"data", 4}})), roomy(), pod({4}));
  const ir::Program& p = f.programs.programs[0];
  EXPECT_DOUBLE_EQ(written(p, "layer0.bwd.qkv.dw"), 256.0 * 768 * 4);
  EXPECT_DOUBLE_EQ(written(d.programs.programs[0], "layer0.bwd.qkv.dw"), 256.0 * 768 * 4);
  // The block's reduce-scatter waits for that matmul (it reads the whole gradient).
  std::vector<std::uint32_t> dw;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (p.label_of(p[i]) == "layer0.bwd.qkv.dw") dw.push_back(i);
  }
  ASSERT_FALSE(dw.empty());
  bool waits = false;
  for (const auto& ins : p.instructions()) {
    if (p.label_of(ins) != "layer0.bwd.fsdp_reduce_scatter") continue;
    for (std::uint32_t k = 0; k < ins.deps.count; ++k) {
      waits |= std::find(dw.begin(), dw.end(), p.deps_of(ins)[k]) != dw.end();
    }
  }
  EXPECT_TRUE(waits);
}

TEST(FsdpGradients, EachMicrobatchReduceScattersItsWholeGradientIntoTheShard) {
  // Two microbatches: the shard accumulates (ZeRO-3, MaxText's sharded accumulator), so each microbatch's
  // whole f32 gradients are reduce-scattered: 2 x (2 blocks + embedding and head), 4 bytes per parameter each.
  WorkloadSpec w = small(8, mesh({{"data", 2}, {"fsdp", 2}}));
  w.memory.microbatches = 2;
  const LoweredWorkload l = lower(w, roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  EXPECT_EQ(collectives(p, "fsdp_reduce_scatter"), (std::pair<double, int>{2 * 4.0 * parameter_count(w.model), 6}));
  // The data-parallel all-reduce of the accumulated shards, once, after the last microbatch.
  EXPECT_EQ(collectives(p, "dp_all_reduce"), (std::pair<double, int>{4.0 * parameter_count(w.model) / 2, 3}));
  // Without FSDP, one all-reduce of the accumulated gradients, as before.
  WorkloadSpec dp = small(8, mesh({{"data", 4}}));
  dp.memory.microbatches = 2;
  const LoweredWorkload ld = lower(dp, roomy(), pod({4}));
  EXPECT_EQ(collectives(ld.programs.programs[0], "dp_all_reduce"),
            (std::pair<double, int>{4.0 * parameter_count(w.model), 3}));
}

TEST(FsdpGradients, ABlocksDataParallelAllReduceIsIssuedAfterTheNextBlocksGathers) {
  // A chip issues its collectives in program order. The all-reduce of layer 1's shards waits for their
  // reduce-scatter, so it comes after layer 0's backward gathers (which it would otherwise hold back) and
  // before layer 0's scatter; layer 0's own all-reduce comes before the optimizer reads the gradients.
  const LoweredWorkload l = lower(small(8, mesh({{"data", 2}, {"fsdp", 2}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  std::map<std::string, std::vector<std::uint32_t>> at;
  for (std::uint32_t i = 0; i < p.size(); ++i) at[std::string(p.label_of(p[i]))].push_back(i);
  auto first = [&](const std::string& label) {
    EXPECT_FALSE(at[label].empty()) << label;
    return at[label].empty() ? 0U : at[label].front();
  };
  auto last = [&](const std::string& label) { return at[label].empty() ? 0U : at[label].back(); };
  const std::uint32_t all_reduce1 = first("layer1.bwd.dp_all_reduce");
  EXPECT_LT(first("layer1.bwd.fsdp_reduce_scatter"), first("layer0.bwd.fsdp_all_gather"));
  EXPECT_LT(last("layer0.bwd.fsdp_all_gather"), all_reduce1);
  EXPECT_LT(all_reduce1, first("layer0.bwd.fsdp_reduce_scatter"));
  EXPECT_LT(first("layer0.bwd.fsdp_reduce_scatter"), first("layer0.bwd.dp_all_reduce"));
  std::uint32_t first_update = p.size();
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (p.label_of(p[i]).find(".update.") != std::string::npos) first_update = std::min(first_update, i);
  }
  EXPECT_LT(first("layer0.bwd.dp_all_reduce"), first_update);
  // Without FSDP nothing is scattered first: the all-reduce follows its block's backward at once.
  const LoweredWorkload d = lower(small(8, mesh({{"data", 4}})), roomy(), pod({4}));
  const ir::Program& q = d.programs.programs[0];
  std::uint32_t dw0 = 0, all_reduce0 = 0;
  for (std::uint32_t i = 0; i < q.size(); ++i) {
    if (q.label_of(q[i]).rfind("layer0.bwd.", 0) == 0 && q.label_of(q[i]).find(".dw") != std::string::npos) dw0 = i;
    if (q.label_of(q[i]) == "layer0.bwd.dp_all_reduce") all_reduce0 = i;
  }
  EXPECT_GT(all_reduce0, dw0);
  for (std::uint32_t i = dw0; i < all_reduce0; ++i) EXPECT_EQ(q.label_of(q[i]).rfind("layer0.bwd.", 0), 0U) << i;
}

TEST(FsdpGradients, SequenceParallelNormGainsAreAllReducedAfterTheNextBlocksGathersToo) {
  // Under FSDP the norm gains' gradient shards come out of the block's reduce-scatter; their all-reduce over the
  // tensor group waits for it, so it too is issued after the next block's gathers.
  const LoweredWorkload l = lower(small(4, mesh({{"fsdp", 2}, {"tensor_sequence", 2}})), roomy(), pod({4}));
  const ir::Program& p = l.programs.programs[0];
  std::uint32_t norm1 = 0, gather0 = 0, scatter0 = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const std::string label(p.label_of(p[i]));
    if (label == "layer1.bwd.tp_norm_all_reduce") norm1 = i;
    if (label == "layer0.bwd.fsdp_all_gather") gather0 = i;
    if (label == "layer0.bwd.fsdp_reduce_scatter" && scatter0 == 0) scatter0 = i;
  }
  ASSERT_GT(norm1, 0U);
  ASSERT_GT(gather0, 0U);
  EXPECT_LT(gather0, norm1);
  EXPECT_LT(norm1, scatter0);
}

TEST(FsdpGradients, ABlocksWholeGradientLivesInTheMemoryPlanUntilItsReduceScatter) {
  // 1 sequence of 8 tokens per chip and SGD, so the whole gradients dominate the step's live memory: at the
  // last block's reduce-scatter its whole f32 gradients (norms 2 x 256, qkv 256 x 768, out 256 x 256, up and
  // down 256 x 1024 each) and the tied table's (2048 x 256, written by the head's weight gradient, reduced at
  // the end of the step) are live together. Bounds: at least those two; at most those, the data-parallel
  // chip's whole peak and one block's gathered bf16 weights.
  auto peak = [](const std::string& axis) {
    WorkloadSpec w = small(4, mesh({{axis, 4}}));
    w.tokens.seq_len = w.tokens.decoder_seq_len = 8;
    w.optimizer = Optimizer::sgd;
    const auto plan = plan_memory(w, roomy(), pod({4}));
    return plan->activations.as_double() + plan->workspace.as_double();
  };
  const double block = 2 * 256 + 256 * 768 + 256 * 256 + 2 * 256 * 1024, table = 2048 * 256;
  const double whole = 4 * (block + table);
  EXPECT_GE(peak("fsdp"), whole);
  EXPECT_LE(peak("fsdp"), whole + peak("data") + 2 * block);
}


// ---- rules checked before lowering ----

using testing::config_error;
using testing::mlp;

WorkloadSpec with_rules(const MeshSpec& m, const std::vector<std::pair<std::string, std::vector<std::string>>>& rules) {
  WorkloadSpec w = small(8, m);
  for (const auto& [logical, axes] : rules) {
    ShardingRuleSpec r;
    r.logical = logical;
    r.mesh_axes = axes;
    r.loc = SourceLoc{"s.yaml", 9, 3};
    w.mesh.rules.push_back(r);
  }
  return w;
}

TEST(ShardingRules, OneMeshAxisOnTwoDimensionsOfOneTensorIsRefusedAtTheRule) {
  // batch over data and tensor while heads are over tensor: the attention activations would lose half their
  // heads on every chip.
  const WorkloadSpec w = with_rules(mesh({{"data", 2}, {"tensor", 2}}), {{"batch", {"data", "tensor"}}});
  const Diagnostic d = config_error([&] { (void)make_sharding(w, pod({4})); });
  EXPECT_EQ(d.key_path, "workload.sharding.batch");
  EXPECT_EQ(d.loc.line, 9);
  EXPECT_EQ(d.expected, "each mesh axis at most once per tensor");
  EXPECT_NE(d.message.find("mesh axis tensor shards two dimensions"), std::string::npos) << d.message;
  // The same mesh axis on a weight's two dimensions (embed and mlp), and twice in one rule.
  EXPECT_THROW((void)make_sharding(with_rules(mesh({{"data", 2}, {"tensor", 2}}), {{"embed", {"tensor"}}}), pod({4})),
               ConfigError);
  const Diagnostic twice = config_error(
      [&] { (void)make_sharding(with_rules(mesh({{"data", 4}}), {{"batch", {"data", "data"}}}), pod({4})); });
  EXPECT_EQ(twice.message, "a mesh axis listed twice in one rule");
}

TEST(ShardingRules, FsdpShardsTheBatchAndTheWeightsEmbedOverOneAxisAsTheDefaultsDo) {
  // batch and embed name fsdp together, but no tensor has both dimensions.
  const ShardingPlan plan = make_sharding(with_rules(mesh({{"data", 2}}), {{"embed", {"data"}}}), pod({2}));
  EXPECT_EQ(plan.shards(LogicalAxis::embed), 2);
  EXPECT_EQ(plan.shards(LogicalAxis::batch), 2);
}

// MaxText's own rule for fsdp_transpose (mlp: [fsdp_transpose, tensor]) splits the MLP activations' batch and
// d_ff over one axis here, where one mlp rule serves the weights and the activations: refused at the rule, with
// a hint that the defaults already shard the weights' storage over the axis.
TEST(ShardingRules, MaxTextsMlpRuleForFsdpTransposeIsRefusedWithWhatTheDefaultsDoInstead) {
  const WorkloadSpec w = with_rules(mesh({{"fsdp", 2}, {"fsdp_transpose", 2}}), {{"mlp", {"fsdp_transpose"}}});
  const Diagnostic d = config_error([&] { (void)make_sharding(w, pod({4})); });
  EXPECT_EQ(d.key_path, "workload.sharding.mlp");
  EXPECT_EQ(d.loc.line, 9);
  EXPECT_NE(d.message.find("mesh axis fsdp_transpose shards two dimensions"), std::string::npos) << d.message;
  EXPECT_NE(d.hint.find("drop fsdp_transpose from the mlp rule"), std::string::npos) << d.hint;
  // Another axis on two dimensions keeps the general hint.
  const Diagnostic other = config_error(
      [&] { (void)make_sharding(with_rules(mesh({{"data", 2}, {"tensor", 2}}), {{"embed", {"tensor"}}}), pod({4})); });
  EXPECT_EQ(other.hint, "keep tensor in one of these rules (workload.sharding)");
}

// A catalogue entry's foreign rule names a logical axis and carries a hint (else the clash check would look up
// an axis that does not exist); fsdp_transpose's is MaxText's mlp rule.
TEST(ShardingRules, EveryForeignRuleInTheMeshAxisCatalogueNamesALogicalAxisAndAHint) {
  int foreign = 0;
  for (const MeshAxisInfo& a : known_mesh_axes()) {
    if (a.foreign_rule.empty()) {
      EXPECT_TRUE(a.foreign_rule_hint.empty()) << a.name;
      continue;
    }
    ++foreign;
    const auto& names = logical_axis_names();
    EXPECT_NE(std::find(names.begin(), names.end(), a.foreign_rule), names.end()) << a.name;
    EXPECT_FALSE(a.foreign_rule_hint.empty()) << a.name;
  }
  EXPECT_EQ(foreign, 1);
  EXPECT_EQ(find_mesh_axis("fsdp_transpose")->foreign_rule, "mlp");
}

TEST(ShardingRules, AMeshAxisNoRuleUsesIsRefusedWithADidYouMean) {
  WorkloadSpec w = small(8, mesh({{"data", 2}, {"fsdpp", 2}}));
  w.mesh.axes[1].loc = SourceLoc{"s.yaml", 3, 20};
  const Diagnostic d = config_error([&] { (void)make_sharding(w, pod({4})); });
  EXPECT_EQ(d.key_path, "workload.mesh.fsdpp");
  EXPECT_EQ(d.loc.column, 20);
  EXPECT_EQ(d.hint, "did you mean 'fsdp'?");
  // A rule naming it makes it a real axis; an axis of one chip changes nothing.
  EXPECT_NO_THROW((void)make_sharding(with_rules(mesh({{"data", 2}, {"fsdpp", 2}}), {{"embed", {"fsdpp"}},
                                                                                       {"batch", {"data", "fsdpp"}}}),
                                      pod({4})));
  EXPECT_NO_THROW((void)make_sharding(small(8, mesh({{"data", 4}, {"replica", 1}})), pod({4})));
}

TEST(ShardingRules, APipelineAxisShardsTheLayersAlone) {
  // layers over fsdp, which the batch and embed rules use too (before: a deadlock in the simulation).
  const Diagnostic d = config_error(
      [&] { (void)make_sharding(with_rules(mesh({{"data", 2}, {"fsdp", 2}}), {{"layers", {"fsdp"}}}), pod({4})); });
  EXPECT_EQ(d.key_path, "workload.sharding.layers");
  EXPECT_EQ(d.expected, "a pipeline axis that shards the layers alone");
}

TEST(ShardingRules, KvHeadsShardOverTheHeadsAxes) {
  // heads over tensor, kv heads replicated (before: "gemm 0x128x2048: empty" in the lowering).
  const Diagnostic d = config_error(
      [&] { (void)make_sharding(with_rules(mesh({{"data", 2}, {"tensor", 2}}), {{"kv_heads", {}}}), pod({4})); });
  EXPECT_EQ(d.key_path, "workload.sharding.kv_heads");
  EXPECT_EQ(d.expected, "kv_heads over the heads axes (tensor)");
  EXPECT_EQ(d.found, "none");
}

TEST(ShardingRules, AWorkloadThatIsNotShardedTakesNoMesh) {
  WorkloadSpec w = mlp({256, 256}, 64, StepKind::train);
  w.mesh = mesh({{"data", 4}});
  w.mesh.loc = SourceLoc{"s.yaml", 3, 31};
  const Diagnostic d = config_error([&] { check_sharding(w, pod({4})); });
  EXPECT_EQ(d.key_path, "workload.mesh");
  EXPECT_EQ(d.found, "a model of kind mlp");
  EXPECT_NO_THROW(check_sharding(mlp({256, 256}, 64, StepKind::train), pod({4})));
  EXPECT_NO_THROW(check_sharding(small(8, mesh({{"data", 2}, {"tensor", 2}})), pod({4})));
}

TEST(ShardingRules, CheckShardingRefusesSizesThatDoNotDivide) {
  EXPECT_THROW(check_sharding(small(6, mesh({{"data", 4}})), pod({4})), ConfigError);
}

// ---- checkpoints of a sharded model ----

// small() has per block 4 x 256^2 attention weights, 2 x 256 x 1024 MLP weights and two RMSNorm vectors of
// 256; the tied table 2048 x 256 and a final norm of 256: 2 x 786,944 + 524,288 + 256 = 2,098,432 parameters,
// each f32 (training) with two f32 Adam moments: 12 bytes a parameter.
constexpr std::uint64_t kSmallParams = 2 * (4 * 256 * 256 + 2 * 256 * 1024 + 2 * 256) + 2048 * 256 + 256;

HostStepCosts checkpoint_of(const std::string& axis) {
  WorkloadSpec w = small(8, mesh({{axis, 4}}));
  w.host.checkpoint.every_steps = 1;
  ChipSpec chip = roomy();
  chip.host.chips_per_host = 4;
  chip.host.storage_bandwidth = BytesPerSecond(1e9);
  return host_step_costs(w, chip, pod({4}));
}

TEST(ShardedCheckpoint, DataParallelChipsHoldTheWholeStateAndOneOfThemWritesIt) {
  const HostStepCosts c = checkpoint_of("data");
  EXPECT_EQ(kSmallParams, 2'098'432U);
  EXPECT_EQ(c.checkpoint_bytes, kSmallParams * 12);
  // The 4 replicas are identical: chip 0 alone writes the state, at 1 GB/s (before: the host wrote all 4).
  EXPECT_DOUBLE_EQ(c.checkpoint_seconds, 1.0 * kSmallParams * 12 / 1e9);
}

// Checkpoint writers on 64 chips (4x4x4, hosts of 2x2x1). The state S = kSmallParams x 12 B. Each distinct
// shard is written once, by the chips at data coordinate 0 (mesh.h places fsdp and tensor before data).
//   fsdp 64:           every chip holds S/64 and writes it: 4 writers a host, 4 x S/64 / 1 GB/s
//   data 4 x fsdp 16:  fsdp on x and y, data on z; the 16 chips of z = 0 write (4 hosts of 4): 4 x S/16
//   data 16 x tensor 4: tensor on x, data on y and z; the 4 chips of y = z = 0 write, 2 on each of 2 hosts:
//                      2 x (its shard of the matmuls and table + the 5 norms)
//   data 4 x fsdp 2 on 8 chips in a row, 4 a host: fsdp on chips 0 and 1, both on host 0: 2 x S/2 = S
TEST(ShardedCheckpoint, EachDistinctShardIsWrittenOnceByTheHostsOfDataReplicaZero) {
  ChipSpec chip = roomy();
  chip.host.chips_per_host = 4;
  chip.host.storage_bandwidth = BytesPerSecond(1e9);
  PodSpec cube = pod({4, 4, 4});
  cube.host_shape = {2, 2, 1};
  auto costs = [&](const MeshSpec& m, const PodSpec& p) {
    WorkloadSpec w = small(64, m);
    w.host.checkpoint.every_steps = 1;
    return host_step_costs(w, chip, p);
  };
  const double state = kSmallParams * 12.0;
  const HostStepCosts fsdp = costs(mesh({{"fsdp", 64}}), cube);
  EXPECT_EQ(fsdp.checkpoint_bytes, kSmallParams / 64 * 12);
  EXPECT_DOUBLE_EQ(fsdp.checkpoint_seconds, 4 * (state / 64) / 1e9);
  const HostStepCosts dxf = costs(mesh({{"data", 4}, {"fsdp", 16}}), cube);
  EXPECT_EQ(dxf.checkpoint_bytes, kSmallParams / 16 * 12);
  EXPECT_DOUBLE_EQ(dxf.checkpoint_seconds, 4 * (state / 16) / 1e9);
  const std::uint64_t norms = 5 * 256;
  const std::uint64_t tensor_chip = ((kSmallParams - norms) / 4 + norms) * 12;
  const HostStepCosts dxt = costs(mesh({{"data", 16}, {"tensor", 4}}), cube);
  EXPECT_EQ(dxt.checkpoint_bytes, tensor_chip);
  EXPECT_DOUBLE_EQ(dxt.checkpoint_seconds, 2.0 * static_cast<double>(tensor_chip) / 1e9);
  const HostStepCosts row = costs(mesh({{"data", 4}, {"fsdp", 2}}), pod({8}));
  EXPECT_EQ(row.checkpoint_bytes, kSmallParams / 2 * 12);
  EXPECT_DOUBLE_EQ(row.checkpoint_seconds, 2 * (state / 2) / 1e9);
}

TEST(ShardedCheckpoint, AnFsdpChipWritesAQuarterOfEveryParameter) {
  const HostStepCosts c = checkpoint_of("fsdp");
  EXPECT_EQ(c.checkpoint_bytes, kSmallParams / 4 * 12);  // 524,608 parameters: every one divides by 4
  EXPECT_DOUBLE_EQ(c.checkpoint_seconds, 4.0 * (kSmallParams / 4) * 12 / 1e9);
}

TEST(ShardedCheckpoint, ATensorParallelChipWritesItsShardAndTheReplicatedNorms) {
  // Attention, MLP and the vocabulary-parallel table split 4 ways; the five norm vectors are on every chip.
  const std::uint64_t norms = 5 * 256;
  const std::uint64_t per_chip = (kSmallParams - norms) / 4 + norms;
  const HostStepCosts c = checkpoint_of("tensor");
  EXPECT_EQ(c.checkpoint_bytes, per_chip * 12);
  EXPECT_DOUBLE_EQ(c.checkpoint_seconds, 4.0 * per_chip * 12 / 1e9);
}

TEST(ShardedCheckpoint, EachPipelineStageCheckpointsItsOwnLayers) {
  // Two stages of one block each; the first also holds the table, the last the final norm and the head: each
  // stage's program checkpoints its own state.
  WorkloadSpec w = small(4, mesh({{"pipeline", 2}, {"data", 2}}));
  w.host.checkpoint.every_steps = 1;
  ChipSpec chip = roomy();
  chip.host.chips_per_host = 4;
  chip.host.storage_bandwidth = BytesPerSecond(1e9);
  const LoweredWorkload l = lower(w, chip, pod({2, 2}));
  ASSERT_EQ(l.programs.programs.size(), 2U);
  std::vector<std::uint64_t> bytes;
  for (const ir::Program& p : l.programs.programs) {
    for (const auto& ins : p.instructions()) {
      if (p.label_of(ins) == "host.checkpoint") bytes.push_back(ins.bytes);
    }
  }
  ASSERT_EQ(bytes.size(), 2U);
  const std::uint64_t block = 4 * 256 * 256 + 2 * 256 * 1024 + 2 * 256;
  EXPECT_EQ(bytes[0], (block + 2048 * 256) * 12);
  EXPECT_EQ(bytes[1], (block + 256 + 2048 * 256) * 12);  // the head's copy of the tied table
  // The job's checkpoint is the fullest stage's: its host finishes writing last.
  EXPECT_EQ(host_step_costs(w, chip, pod({2, 2})).checkpoint_bytes, bytes[1]);
}

}  // namespace
}  // namespace tpusim::kernels
