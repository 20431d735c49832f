// Sharded steps through the tpusim binary: overlap against the serialized baseline, the same per-chip compute
// on one chip and on a data-parallel slice, global metrics, sequence parallelism against plain tensor
// parallelism, the layout search, pipelines, and bad meshes as bad input.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace {

using tpusim::test::CliTest;
using tpusim::test::Outcome;
using tpusim::test::slurp;

class ShardCli : public CliTest {
 protected:
  nlohmann::json summary(const std::string& args, const std::string& name) {
    const Outcome o = tpusim("run " + args + " -q -o " + (dir_ / name).string());
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return nlohmann::json::parse(slurp(dir_ / name / "summary.json"));
  }
};

// GPT-3 XL cut to 4 blocks, fsdp 2 x tensor 2 on a v4 2x2x1 slice.
constexpr const char* kSharded = "gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.model.layers=4";

std::string fmt_args(const std::string& scenario, int microbatches) {
  const std::string m = std::to_string(microbatches);
  return scenario + " --set workload.batch=" + m + " --set workload.microbatches=" + m;
}

TEST_F(ShardCli, OverlapIsFasterThanTheSerializedBaselineAndNeverFasterThanComputeOrCommunicationAlone) {
  const auto on = summary(kSharded, "on");
  const auto off = summary(std::string(kSharded) + " --set workload.overlap=off", "off");
  const double t_on = on["metrics"]["step_time_s"], t_off = off["metrics"]["step_time_s"];
  // Serialized, nothing overlaps: the compute and the collectives' exposed time add up to the step (the rest is
  // HBM streams), so each is what that part takes on its own.
  const double compute = off["breakdown"]["compute_s"], communication = off["breakdown"]["communication_s"];
  EXPECT_GT(communication, 0.1 * t_off);
  EXPECT_LT(t_on, 0.95 * t_off);
  EXPECT_GE(t_on, std::max(compute, communication));
  // The same work either way.
  EXPECT_DOUBLE_EQ(on["metrics"]["model_flops"].get<double>(), off["metrics"]["model_flops"].get<double>());
}

TEST_F(ShardCli, TheFsdpWeightCastsTakeTheirBytesAtTheHbmRateInTheStepsOtherClass) {
  // The casts (op class other, nothing else in this step) read each f32 shard and write it in bf16; both
  // TensorCores cast their halves at once, sharing HBM, so together they take the bytes at v4's 1200 GB/s x
  // the 0.9 efficiency (configs/chips/v4.yaml, chip.hbm.efficiency), their HBM latency hidden behind the other
  // core's stream. The whole 24-block model: 584 cast instructions. With workload.overlap off: overlapped, the
  // FSDP all-gathers and reduce-scatters move their own bytes through the same HBM beside the casts
  // (net/collective_engine.h), and the casts then take longer than their bytes alone at the HBM rate.
  const std::string scenario = "gpt3-1.3b-fsdp-tensor-v4-2x2x1";
  ASSERT_EQ(tpusim("lower " + scenario + " -o " + (dir_ / "p.json").string()).exit_code, 0);
  const auto program = nlohmann::json::parse(slurp(dir_ / "p.json"));
  double bytes = 0;
  int casts = 0;
  for (const auto& ins : program["programs"][0]["instructions"]) {
    if (ins["label"].get<std::string>().find("fsdp_cast") == std::string::npos) continue;
    bytes += ins.value("hbm_read", 0.0) + ins.value("hbm_written", 0.0);
    ++casts;
  }
  ASSERT_EQ(casts, 584);
  const auto s = summary(scenario + " --set workload.overlap=off", "run");
  const auto& other = s["op_classes"]["other"];
  EXPECT_EQ(other["instructions"].get<int>(), casts);
  const double closed_form = bytes / (1200e9 * 0.9);
  EXPECT_NEAR(other["time_s"].get<double>(), closed_form, 1e-4 * closed_form);
  // bf16 master weights are gathered as stored: nothing to cast.
  const auto bf16 = summary(scenario + " --set workload.weight_dtype=bf16", "bf16");
  EXPECT_FALSE(bf16["op_classes"].contains("other"));
}

TEST_F(ShardCli, CollectiveMatmulIsFasterAndNeverFasterThanItsMatmulsOrItsRingStepsAlone) {
  // The bundled sequence-parallel Llama 2 70B cut to 2 blocks: v5p 4x4x4, fsdp 16 x tensor_sequence 4 (the
  // tensor axis a wrapped 4-ring), every block's norm outputs all-gathered before the matmuls, the row-parallel
  // outputs reduce-scattered.
  const std::string tp = "llama2-70b-fsdp-sp-v5p --set workload.model.layers=2";
  const auto off = summary(tp + " --set workload.collective_matmul=off", "cm_off");
  const auto on = summary(tp + " --set workload.collective_matmul=on", "cm_on");
  const double t_on = on["metrics"]["step_time_s"], t_off = off["metrics"]["step_time_s"];
  EXPECT_LT(t_on, t_off);
  // The same work either way.
  EXPECT_DOUBLE_EQ(on["metrics"]["model_flops"].get<double>(), off["metrics"]["model_flops"].get<double>());
  // Lower bounds the step cannot beat: the MXU's busy time (the partial matmuls with the rest), and the ring
  // steps' bytes from the lowered program over one link direction (90 GB/s, configs/chips/v5p.yaml; a
  // ring_bidirectional permute sends half its bytes each way).
  ASSERT_EQ(tpusim("lower " + tp + " --set workload.collective_matmul=on -o " + (dir_ / "p.json").string()).exit_code, 0);
  const auto program = nlohmann::json::parse(slurp(dir_ / "p.json"));
  double ring_s = 0, partials = 0;
  for (const auto& ins : program["programs"][0]["instructions"]) {
    const std::string label = ins["label"];
    if (label.find("tp_ring_") != std::string::npos) {
      const double bytes = ins["bytes"];
      ring_s += (ins.value("algorithm", std::string("auto")) == "ring_bidirectional" ? bytes / 2 : bytes) / 90e9;
    }
    if (label.find(".step") != std::string::npos || label.find(".ring") != std::string::npos) ++partials;
  }
  EXPECT_GT(ring_s, 0.0);
  EXPECT_GT(partials, 0);
  EXPECT_GE(t_on, ring_s);
  const double mxu = on["units"]["mxu"]["busy_s"]["max"];
  EXPECT_GE(t_on, mxu);
}

TEST_F(ShardCli, CollectiveMatmulOverATwoAxisTensorGroupIsFasterAndNeverFasterThanItsMatmulsOrItsLinks) {
  // Calibration C6 cut to 2 blocks: v5p 8x8x8, fsdp 32 x tensor 16, activation_embed over tensor. The tensor
  // group is a ring of 8 along x by a pair along y, 3 links per chip, and each ring step shares its bytes over
  // all three (kernels/README.md "Where the ring lies"): a step of S bytes puts S / 3 on every directed link
  // of the group, so the ring's bytes / 3 at 90 GB/s (configs/chips/v5p.yaml) bound the step from below, as
  // does the MXU's busy time.
  const std::string c6 =
      std::string(TPUSIM_SOURCE_DIR) + "/calibration/scenarios/c6-maxtext-512b-v5p-1024.yaml --set workload.model.layers=2";
  const auto off = summary(c6 + " --set workload.collective_matmul=off", "c6_off");
  const auto on = summary(c6 + " --set workload.collective_matmul=on", "c6_on");
  const double t_on = on["metrics"]["step_time_s"], t_off = off["metrics"]["step_time_s"];
  EXPECT_LT(t_on, t_off);
  EXPECT_DOUBLE_EQ(on["metrics"]["model_flops"].get<double>(), off["metrics"]["model_flops"].get<double>());
  ASSERT_EQ(tpusim("lower " + c6 + " --set workload.collective_matmul=on -o " + (dir_ / "c6.json").string()).exit_code, 0);
  const auto program = nlohmann::json::parse(slurp(dir_ / "c6.json"));
  double ring_s = 0;
  for (const auto& ins : program["programs"][0]["instructions"]) {
    if (ins["label"].get<std::string>().find("tp_ring_") == std::string::npos) continue;
    EXPECT_EQ(ins.value("algorithm", std::string("auto")), "ring_bidirectional");
    ring_s += ins["bytes"].get<double>() / 3 / 90e9;
  }
  EXPECT_GT(ring_s, 0.0);
  EXPECT_GE(t_on, ring_s);
  EXPECT_GE(t_on, on["units"]["mxu"]["busy_s"]["max"].get<double>());
}

// `batch: []` on fsdp 4: every chip runs all 4 sequences (the weights still sharded), four times the hardware
// FLOPs of the batch split over fsdp, for the same model: the model FLOPs stay the model's (a 2-block GPT-3 XL,
// 4 x 2048 tokens), and the longer step lowers MFU while HFU counts the copies.
TEST_F(ShardCli, ABatchReplicatedOverFsdpKeepsTheModelFlopsSoMfuFallsAsTheStepLengthens) {
  const std::string base = "gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.model.layers=2 --set workload.batch=4 "
                           "--set 'workload.mesh={fsdp: 4}'";
  const auto plain = summary(base, "plain");
  const auto replicated = summary(base + " --set 'workload.sharding={batch: []}'", "replicated");
  const double layers = 2, d = 2048, tokens = 4 * 2048;
  const double by_hand = (6 * (12 * layers * d * d + 50257 * d) + 12 * layers * d * 2048) * tokens;
  EXPECT_NEAR(plain["metrics"]["model_flops"].get<double>() / by_hand, 1.0, 1e-12);
  EXPECT_NEAR(replicated["metrics"]["model_flops"].get<double>() / by_hand, 1.0, 1e-12);
  const double t_plain = plain["metrics"]["step_time_s"], t_replicated = replicated["metrics"]["step_time_s"];
  EXPECT_GT(t_replicated, 2 * t_plain);
  EXPECT_LT(replicated["metrics"]["mfu"].get<double>(), plain["metrics"]["mfu"].get<double>());
  EXPECT_NEAR(replicated["metrics"]["mfu"].get<double>() / plain["metrics"]["mfu"].get<double>(),
              t_plain / t_replicated, 1e-9);
  EXPECT_GT(replicated["metrics"]["hfu"].get<double>(), 3 * replicated["metrics"]["mfu"].get<double>());
}

TEST_F(ShardCli, ADataParallelSliceRunsTheOneChipComputeOnEveryChip) {
  const std::string model = "gpt3-1.3b-train-v4 --set workload.model.layers=2";
  const auto one = summary(model + " --set workload.batch=2", "one");
  const auto dp = summary(model + " --set workload.batch=8 --set pod=v4-2x2x1 --set 'workload.mesh={data: 4}'",
                          "dp");
  // The same matmuls per chip: MXU busy time identical on every chip, 4 x the model FLOPs, 4 x the examples.
  const double mxu_one = one["units"]["mxu"]["busy_s"]["mean"], mxu_dp = dp["units"]["mxu"]["busy_s"]["mean"];
  EXPECT_NEAR(mxu_dp / mxu_one, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(dp["units"]["mxu"]["busy_s"]["min"].get<double>(), dp["units"]["mxu"]["busy_s"]["max"].get<double>());
  EXPECT_NEAR(dp["metrics"]["model_flops"].get<double>() / one["metrics"]["model_flops"].get<double>(), 4.0, 1e-12);
  const double step = dp["metrics"]["step_time_s"];
  EXPECT_DOUBLE_EQ(dp["metrics"]["examples_per_s"].get<double>(), 8 / step);
  EXPECT_DOUBLE_EQ(dp["metrics"]["tokens_per_s"].get<double>(), 8 * 2048 / step);
  // MFU over all chips: model FLOPs / (step x 4 chips x peak).
  EXPECT_NEAR(dp["metrics"]["mfu"].get<double>(),
              dp["metrics"]["model_flops"].get<double>() / (step * 4 * 275e12), 1e-9);
  // The gradient all-reduce is exposed only after the last block's backward: the data-parallel step is longer.
  EXPECT_GT(step, one["metrics"]["step_time_s"].get<double>());
  EXPECT_GT(dp["exposed_communication"]["all_reduce_s"].get<double>(), 0.0);
  EXPECT_EQ(dp["chip_spread"]["slowest_excess_in"], "none");  // every chip does the same
}

TEST_F(ShardCli, AMeshThatDoesNotCoverThePodIsBadInputWithItsLocation) {
  write("s.yaml", R"(name: s
pod: v4-2x2x1
workload:
  model: gpt3-1.3b
  batch: 8
  mesh: {data: 2, tensor: 4}
  sharding: {bach: [data]}
)");
  const Outcome o = tpusim("validate " + (dir_ / "s.yaml").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("s.yaml:6:9: error: workload.mesh: the mesh does not cover the pod"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("found:    data 2 x tensor 4 = 8"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("workload.sharding.bach: unknown logical axis"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("did you mean 'batch'?"), std::string::npos) << o.err;
}

TEST_F(ShardCli, ABatchThatDoesNotSplitOverTheDataAxesIsBadInput) {
  const Outcome o = tpusim("run gpt3-1.3b-fsdp-tensor-v4-2x2x1 --set workload.batch=7 -o " + (dir_ / "x").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("workload.batch: the batch does not split evenly over mesh axes fsdp"), std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x"));
}

}  // namespace

namespace {

TEST_F(ShardCli, SequenceParallelismMovesEachTensorAllReduceIntoAGatherAndAScatterAndHalvesTheKeptActivations) {
  // The 4-block GPT-3 XL step, fsdp 2 x tensor 2, without and with sequence parallelism on the tensor pair.
  const auto tp = summary(kSharded, "tp");
  const auto sp = summary("gpt3-1.3b-fsdp-sp-v4-2x2x1 --set workload.model.layers=4", "sp");
  EXPECT_EQ(sp["metrics"]["model_flops"], tp["metrics"]["model_flops"]);
  EXPECT_EQ(sp["metrics"]["hardware_flops"], tp["metrics"]["hardware_flops"]);
  // [tokens, d] per chip: 4 sequences x 2048 x 2048 x 2 B = 32 MiB. Per block, the forward, its recomputation
  // and the backward each reduce two of them, plus the embedding and the head: 26, all-reduced over the pair
  // without sequence parallelism, reduce-scattered with it; the all-gathers take each chip's half (16 MiB):
  // 2 per block in the forward, the recomputation and the backward, the head's input, its weight gradient's
  // input and the embedding's input gradient.
  auto count = [](const nlohmann::json& s, const std::string& op, double bytes) {
    return std::count_if(s["collectives"].begin(), s["collectives"].end(), [&](const nlohmann::json& c) {
      return c["op"] == op && c["participants"] == 2 && c["bytes_per_chip"] == bytes;
    });
  };
  const double act = 4.0 * 2048 * 2048 * 2;
  EXPECT_EQ(count(tp, "all_reduce", act), 26);
  EXPECT_EQ(count(sp, "all_reduce", act), 0);
  EXPECT_EQ(count(sp, "reduce_scatter", act), 26);
  EXPECT_EQ(count(sp, "all_gather", act / 2), 6 * 4 + 3);
  // Full remat keeps each block's input and the head's input and norm output ([tokens, d] each), the norm's
  // statistics (2 f32 per token) and the logits' gradient (every token, 25,129 vocabulary rows per chip):
  // all but the last halve.
  const double tokens = 4 * 2048, dlogits = tokens * 25129 * 2;
  EXPECT_EQ(tp["memory"]["categories"]["activations"], 6 * act + tokens * 8 + dlogits);
  EXPECT_EQ(sp["memory"]["categories"]["activations"], (6 * act + tokens * 8) / 2 + dlogits);
}

TEST_F(ShardCli, LayoutSearchRunsEveryMeshThatFitsAndRanksThemByStepTime) {
  // With 1800 MiB of HBM per chip, the 2-block GPT-3 XL step fits only with its state sharded by fsdp 4 or
  // fsdp 2 x tensor 2 (the others need 1.84 to 3.93 GiB): 2 of the 6 data x fsdp x tensor meshes of 4 chips
  // run. The 4 meshes with a sequence axis (context parallelism) hold what the same mesh with data in its
  // place holds, and do not fit either. The 4 meshes with a tensor axis are tried again with sequence
  // parallelism on it: tensor_sequence 4 fits where tensor 4 does not (its kept block inputs are a quarter),
  // and fsdp 2 x tensor_sequence 2 fits too. fsdp 2 x tensor 2 fits only with its FSDP gathers held back
  // (1.78 GiB with them run ahead, 1.68 GiB without): its gathers then wait for the matmul before their reader,
  // and it ranks last (50.8 ms, where running them ahead would take 45.9 ms with more HBM).
  const Outcome o = tpusim("layouts " + std::string(kSharded) +
                           " --set workload.model.layers=2 --set chip.hbm.capacity=1800MiB -j 2 -o " +
                           (dir_ / "l").string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("14 meshes of 4 chips, 4 ran"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("    1  {data: 1, fsdp: 4, tensor: 1}"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("    2  {data: 1, fsdp: 2, tensor_sequence: 2}"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("    3  {data: 1, fsdp: 1, tensor_sequence: 4}"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("    4  {data: 1, fsdp: 2, tensor: 2}"), std::string::npos) << o.out;
  auto dropped = [&](const std::string& mesh, const std::string& why) {
    return o.out.find(mesh + std::string(52 - mesh.size() + 1, ' ') + "dropped: " + why) != std::string::npos;
  };
  EXPECT_TRUE(dropped("{data: 1, fsdp: 1, tensor: 4}", "needs 1.84 GiB per chip")) << o.out;
  EXPECT_TRUE(dropped("{data: 4, fsdp: 1, tensor: 1}", "needs 3.93 GiB per chip")) << o.out;
  EXPECT_TRUE(dropped("{data: 2, fsdp: 2, tensor: 1}", "needs 2.39 GiB per chip")) << o.out;
  EXPECT_TRUE(dropped("{data: 1, fsdp: 2, tensor: 1, sequence: 2}", "needs 2.39 GiB per chip")) << o.out;
  const std::string csv = slurp(dir_ / "l" / "layouts.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 15);
  // The manifest, appended as the 4 points finished (two at once), is left one line per file in name order, so
  // the same search leaves the same folder: layouts.csv and the points' logs, none still marked in progress.
  std::istringstream manifest(slurp(dir_ / "l" / ".tpusim-manifest"));
  std::vector<std::string> names;
  for (std::string line; std::getline(manifest, line);) {
    const std::size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    EXPECT_NE(line.substr(0, tab), "*") << line;
    names.push_back(line.substr(tab + 1));
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(names.front(), "layouts.csv");
  EXPECT_EQ(std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.rfind("points/", 0) == 0; }),
            4);
}

// The cells of each line of a layouts.csv ("quoted" cells hold commas).
std::vector<std::vector<std::string>> layout_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row{""};
  bool quoted = false;
  for (const char c : text) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      row.emplace_back();
    } else if (c == '\n' && !quoted) {
      rows.push_back(row);
      row = {""};
    } else {
      row.back() += c;
    }
  }
  return rows;
}

TEST_F(ShardCli, LayoutSearchTakesItsAxesAndSearchesRematAndMicrobatchesJointlyWithTheMesh) {
  // fsdp x tensor on 4 chips: {4, 1}, {2, 2}, {1, 4}, each with remat full / minimal and 1 / 2 microbatches:
  // 12 layouts, all fit in the v4's 32 GiB.
  const Outcome o = tpusim("layouts " + std::string(kSharded) +
                           " --axes fsdp,tensor --remat full,minimal --microbatches 1,2 -j 2 -o " + (dir_ / "j").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("3 meshes of 4 chips x 4 combinations of microbatches,remat: 12 layouts, 12 ran"),
            std::string::npos)
      << o.out;
  const auto rows = layout_rows(slurp(dir_ / "j" / "layouts.csv"));
  ASSERT_EQ(rows.size(), 13u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"rank", "mesh", "microbatches", "remat", "step_time_s", "mfu",
                                               "hbm_per_chip_bytes", "dropped"}));
  std::set<std::string> seen;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), 8u) << i;
    EXPECT_EQ(r[0], std::to_string(i));
    // Only the axes asked for, and no other.
    EXPECT_EQ(r[1].find("data"), std::string::npos) << r[1];
    EXPECT_EQ(r[1].find("sequence"), std::string::npos) << r[1];
    EXPECT_NE(r[1].find("fsdp: "), std::string::npos) << r[1];
    EXPECT_TRUE(seen.insert(r[1] + r[2] + r[3]).second) << "twice: " << r[1] << " " << r[2] << " " << r[3];
    if (i > 1) {
      // Ranked by step time, then by HBM per chip.
      const double prev = std::stod(rows[i - 1][4]), t = std::stod(r[4]);
      EXPECT_LE(prev, t) << i;
      if (prev == t) {
        EXPECT_LE(std::stod(rows[i - 1][6]), std::stod(r[6])) << i;
      }
    }
  }
  // The search's first layout is the run a user makes by hand with the same fields, to the tick.
  const auto& best = rows[1];
  const auto direct = summary(std::string(kSharded) + " --set 'workload.mesh=" + best[1] + "' --set workload.microbatches=" +
                                  best[2] + " --set workload.remat=" + best[3],
                              "best");
  EXPECT_EQ(direct["metrics"]["step_time_s"].get<double>(), std::stod(best[4]));
  EXPECT_EQ(direct["memory"]["total_bytes"].get<double>(), std::stod(best[6]));
  // Two microbatches keep fewer activations than one with the same mesh and policy.
  double one = 0, two = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][1] != "{fsdp: 4, tensor: 1}" || rows[i][3] != "full") continue;
    (rows[i][2] == "1" ? one : two) = std::stod(rows[i][6]);
  }
  EXPECT_GT(one, two);
  EXPECT_GT(two, 0);
}

}  // namespace

namespace {

// Four pipeline stages of two blocks each on a line of four v5e chips; the vocabulary is small so that the
// first and last stages' embedding and head add little to their blocks.
constexpr const char* kPipeline = R"(name: pp
pod:
  name: v5e-line4
  chip: v5e
  shape: [4]
  wraparound: [0]
  host_shape: [4]
workload:
  model:
    name: pp-model
    kind: transformer
    layers: 8
    d_model: 2048
    heads: 16
    d_ff: 8192
    vocab: 256
    context: 256
    position: none
    norm: rmsnorm
    mlp: relu
    bias: false
  batch: 8
  microbatches: 8
  step: train
  optimizer: sgd
  mesh: {pipeline: 4}
)";

TEST_F(ShardCli, TheGPipeBubbleIsTheClosedFormFraction) {
  write("pp.yaml", kPipeline);
  for (const int m : {4, 8}) {
    const auto j = summary(fmt_args((dir_ / "pp.yaml").string(), m), "pp" + std::to_string(m));
    EXPECT_EQ(j["program"]["programs"], 4);
    // The bubble: the time a stage has no compute (nor its HBM streams) in flight, mean over the stages.
    const double step = j["metrics"]["step_time_s"];
    const double bubble = (j["breakdown"]["communication_s"].get<double>() + j["breakdown"]["idle_s"].get<double>()) / step;
    const double p = 4;
    EXPECT_NEAR(bubble, (p - 1) / (m + p - 1), 0.02) << "m = " << m;
  }
}

// A stage waiting for its neighbour's activations is the pipeline's bubble, not collective time: the run's notes
// name it with its closed form, and call the step communication-bound only for collectives (there are none).
TEST_F(ShardCli, APipelineRunNamesItsBubbleAndIsNotCalledCommunicationBound) {
  write("pp.yaml", kPipeline);
  const auto j = summary(fmt_args((dir_ / "pp.yaml").string(), 4), "bubble");
  const double step = j["metrics"]["step_time_s"];
  const double communication = j["breakdown"]["communication_s"].get<double>() / step;
  ASSERT_GT(communication, 0.2);  // above the notes' threshold: the label it gets matters
  EXPECT_FALSE(j.contains("exposed_communication"));  // no collective ran
  std::vector<std::string> notes = j["notes"];
  for (const std::string& n : notes) EXPECT_EQ(n.rfind("communication-bound", 0), std::string::npos) << n;
  const auto bubble = std::find_if(notes.begin(), notes.end(),
                                   [](const std::string& n) { return n.rfind("pipeline bubble: ", 0) == 0; });
  ASSERT_NE(bubble, notes.end()) << j["notes"].dump();
  // p = 4 stages, m = 4 microbatches: 3 / 7 = 43%; the waiting share is the breakdown's communication.
  EXPECT_NE(bubble->find("with 4 stages and 4 microbatches (gpipe)"), std::string::npos) << *bubble;
  EXPECT_NE(bubble->find("(p - 1) / (m + p - 1) = 43% of the step"), std::string::npos) << *bubble;
  const std::string waiting = "here " + std::to_string(std::lround(100 * communication)) + "% of the step waits";
  EXPECT_NE(bubble->find(waiting), std::string::npos) << *bubble;
}

TEST_F(ShardCli, OneForwardOneBackwardKeepsFewerActivationsThanGPipeWithTheSameBubble) {
  write("pp.yaml", kPipeline);
  const auto gpipe = summary((dir_ / "pp.yaml").string(), "g");
  const auto ofob = summary((dir_ / "pp.yaml").string() + " --set workload.pipeline_schedule=1f1b", "o");
  // GPipe keeps all 8 microbatches' activations on the first stage, 1F1B at most 4 (the stages).
  const double a_g = gpipe["memory"]["categories"]["activations"], a_o = ofob["memory"]["categories"]["activations"];
  EXPECT_NEAR(a_o / a_g, 4.0 / 8.0, 0.05);
  EXPECT_NEAR(ofob["metrics"]["step_time_s"].get<double>() / gpipe["metrics"]["step_time_s"].get<double>(), 1.0, 0.02);
}

TEST_F(ShardCli, EveryPipelineStageReportsTheHbmItsFirstChipHeldAndTheFullestStandsForTheStep) {
  // Under 1F1B stage s keeps at most (stages - s) microbatches' activations, so the stages' peaks fall from the
  // first to the last; the step's memory.in_use is the fullest stage's, and a traced run carries one "HBM in
  // use" counter per stage, on that stage's chip, whose highest sample is that stage's peak.
  write("pp.yaml", kPipeline);
  const std::string out = (dir_ / "pp-in-use").string();
  const Outcome o = tpusim("run " + (dir_ / "pp.yaml").string() +
                           " --set workload.pipeline_schedule=1f1b --trace --trace-chips 0-3 -o " + out);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "pp-in-use" / "summary.json"));
  const nlohmann::json& stages = j["memory"]["in_use_by_stage"];
  ASSERT_EQ(stages.size(), 4u);
  std::vector<double> peaks;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    EXPECT_EQ(stages[s]["stage"], s);
    EXPECT_EQ(stages[s]["chip"], s);  // a line of four chips, one stage each
    peaks.push_back(stages[s]["peak_bytes"].get<double>());
  }
  for (std::size_t s = 1; s < peaks.size(); ++s) EXPECT_LT(peaks[s], peaks[s - 1]) << "stage " << s;
  EXPECT_EQ(j["memory"]["in_use"]["stage"], 0);
  EXPECT_EQ(j["memory"]["in_use"]["chip"], 0);
  EXPECT_EQ(j["memory"]["in_use"]["peak_bytes"].get<double>(), peaks[0]);
  EXPECT_NE(o.out.find("HBM in use by stage"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(stage 0, the fullest of 4)"), std::string::npos) << o.out;

  std::map<long long, double> counter_peak;  // GB by chip
  const nlohmann::json trace = nlohmann::json::parse(slurp(dir_ / "pp-in-use" / "trace.json"));
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] != "C" || e["name"] != "HBM in use") continue;
    double& peak = counter_peak[e["pid"].get<long long>()];
    peak = std::max(peak, e["args"]["GB"].get<double>());
  }
  ASSERT_EQ(counter_peak.size(), 4u);
  for (std::size_t s = 0; s < peaks.size(); ++s) EXPECT_NEAR(counter_peak[s] * 1e9, peaks[s], 1.0) << "stage " << s;
}

}  // namespace
