// The model zoo through the tpusim binary: whole-model scenarios, their summary.json (schema 2), the memory
// plan's bad-input error, `describe model` and `lower`'s summary.
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace {

using tpusim::test::CliTest;
using tpusim::test::Outcome;
using tpusim::test::slurp;

using ZooCli = CliTest;

TEST_F(ZooCli, AModelThatDoesNotFitExitsTwoWithTheMemoryBreakdownAndWritesNothing) {
  const Outcome o = tpusim("run gpt3-175b-does-not-fit-v4 -o " + (dir_ / "x").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("gpt3-175b-does-not-fit-v4.yaml:8:10: error: workload: the step does not fit in HBM: "
                       "2.61 TiB per chip, chip v4 has 32 GiB"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("found:    optimizer_state 1.27 TiB, weights 650 GiB, gradients 650 GiB, activations 72.4 GiB"),
            std::string::npos)
      << o.err;
  // The scenario's pod is one chip: the hint asks for a pod of 98, not a mesh this one cannot take.
  EXPECT_NE(o.err.find("would fit: a pod of at least 98 chips (this one has 1) with fsdp: 98 (the weights, gradients "
                       "and optimizer state sharded, with remat: full; workload.mesh)"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x"));
}

// A capacity the user set is named with where it was set: the error read "chip v4 has 8 GiB" at the workload's
// line, as if v4 had 8 GiB of HBM. The message of a bundled capacity is the one above.
TEST_F(ZooCli, AStepThatDoesNotFitAWrittenHbmCapacitySaysWhereTheCapacityWasSet) {
  const Outcome set = tpusim("run gpt3-1.3b-train-v4 --set chip.hbm.capacity=8GiB -o " + (dir_ / "x").string());
  EXPECT_EQ(set.exit_code, 2);
  EXPECT_NE(set.err.find("gpt3-1.3b-train-v4.yaml:"), std::string::npos) << set.err;  // the workload's line
  EXPECT_NE(set.err.find("error: workload: the step does not fit in HBM: "), std::string::npos) << set.err;
  EXPECT_NE(set.err.find(" per chip, chip v4 has 8 GiB (--set chip.hbm.capacity=8GiB)\n"), std::string::npos)
      << set.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x"));

  const std::filesystem::path s = write("s.yaml", "name: s\npod: v4-1x1x1\nchip:\n  hbm: {capacity: 64 KiB}\n"
                                                  "workload: {model: mlp-small, batch: 8, step: forward}\n");
  const Outcome file = tpusim("run " + s.string() + " -o " + (dir_ / "y").string());
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_NE(file.err.find("chip v4 has 64 KiB (chip.hbm.capacity at " + s.string() + ":4:19)\n"), std::string::npos)
      << file.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "y"));
}

TEST_F(ZooCli, FusedAndTiledLoweringsOfAGemmAgreeWithinTwoPercent) {
  const auto tiled = summary("gemm-v4 --set workload.model.lowering=tiled", "tiled");
  const auto fused = summary("gemm-v4 --set workload.model.lowering=fused", "fused");
  const double t = tiled["metrics"]["step_time_s"], f = fused["metrics"]["step_time_s"];
  EXPECT_NEAR(f / t, 1.0, 0.02);
  EXPECT_EQ(fused["program"]["instructions"], 2);  // one fused matmul per TensorCore
  EXPECT_DOUBLE_EQ(fused["metrics"]["model_flops"].get<double>(), tiled["metrics"]["model_flops"].get<double>());
  // Without CMEM staging (v5e) both stream exactly the bytes of tile_gemm's tiling.
  const auto tiled5 = summary("gemm-v4 --set pod=v5e-1x1 --set workload.model.lowering=tiled", "tiled5");
  const auto fused5 = summary("gemm-v4 --set pod=v5e-1x1 --set workload.model.lowering=fused", "fused5");
  EXPECT_EQ(fused5["bytes"], tiled5["bytes"]);
  EXPECT_NEAR(fused5["metrics"]["step_time_s"].get<double>() / tiled5["metrics"]["step_time_s"].get<double>(), 1.0,
              0.02);
}

TEST_F(ZooCli, AStepTakesLongerAsTheHbmLatencyGrows) {
  // The GEMM tiler picks deeper buffers and smaller tiles to hide a longer HBM latency, and the simulation
  // charges the same pipeline bound it ranks tilings by, so a slower HBM never makes the step faster. Before
  // the bound was charged, GPT-3 1.3B (2 layers, v4) took 115.0, 129.2, 118.1 and 114.4 ms at these latencies.
  double last = 0;
  for (const char* latency : {"3us", "5us", "10us", "20us"}) {
    const auto j = summary(std::string("gpt3-1.3b-train-v4 --set workload.model.layers=2 --set chip.hbm.latency=") +
                               latency,
                           std::string("lat") + latency);
    const double step = j["metrics"]["step_time_s"];
    EXPECT_GT(step, last) << latency;
    last = step;
  }
}

TEST_F(ZooCli, DecodeOfAMemoryBoundModelRunsWithinTenPercentOfHbmBandwidth) {
  const auto j = summary("llama2-7b-decode-v5e", "d");
  const double step = j["metrics"]["step_time_s"];
  const double bytes = j["bytes"]["hbm_read"].get<double>() + j["bytes"]["hbm_written"].get<double>();
  // Every step reads the bf16 weights but the embedding table (a lookup of 4 rows) and the KV cache (32 layers
  // x 4 sequences x 1025 positions x 4096 x K and V x 2 B); the rest (activations, which the GEMM tiling
  // re-reads once per weight tile column) is under 1%.
  const double weights = (6738415616.0 - 32000.0 * 4096) * 2, cache = 32.0 * 4 * 1025 * 4096 * 2 * 2;
  EXPECT_GE(j["bytes"]["hbm_read"].get<double>(), weights + cache);
  EXPECT_LE(j["bytes"]["hbm_read"].get<double>(), 1.01 * (weights + cache));
  // Within 10% of the bandwidth HBM achieves for long streams (peak x chip.hbm.efficiency).
  const double achievable = 819e9 * std::stod(j["scenario"]["chip"]["hbm"]["efficiency"].get<std::string>());
  EXPECT_GE(bytes / step, 0.9 * achievable);
  EXPECT_LE(bytes / step, achievable);
  EXPECT_DOUBLE_EQ(j["metrics"]["time_per_output_token_s"].get<double>(), step);
  EXPECT_DOUBLE_EQ(j["metrics"]["tokens_per_s"].get<double>(), 4 / step);
}

TEST_F(ZooCli, TrainingSummaryCarriesTokensPerSecondTheMemoryPlanAndTheOpClassBreakdown) {
  const auto j = summary("gpt3-1.3b-train-v4", "g");
  EXPECT_EQ(j["schema_version"], 2);
  const double step = j["metrics"]["step_time_s"];
  EXPECT_DOUBLE_EQ(j["metrics"]["tokens_per_s"].get<double>(), 8 * 2048 / step);
  EXPECT_DOUBLE_EQ(j["metrics"]["examples_per_s"].get<double>(), 8 / step);
  // Model FLOPs (6 N + 12 L H Q T) x tokens: N = 12 L d^2 + V d with L = 24, d = 2048.
  const double n = 12.0 * 24 * 2048 * 2048 + 50257.0 * 2048;
  EXPECT_NEAR(j["metrics"]["model_flops"].get<double>() / ((6 * n + 12.0 * 24 * 2048 * 2048) * 8 * 2048), 1.0, 1e-9);
  EXPECT_GT(j["metrics"]["hfu"].get<double>(), j["metrics"]["mfu"].get<double>());  // full remat recomputes
  const auto& mem = j["memory"];
  std::uint64_t sum = 0;
  for (const auto& [k, v] : mem["categories"].items()) sum += v.get<std::uint64_t>();
  EXPECT_EQ(sum, mem["total_bytes"].get<std::uint64_t>());
  EXPECT_EQ(mem["capacity_bytes"], 34359738368ull);
  EXPECT_EQ(mem["categories"]["weights"], 1315723264ull * 4);  // f32 master weights
  EXPECT_EQ(mem["categories"]["optimizer_state"], 1315723264ull * 8);
  double classes = j["op_classes"]["idle_s"].get<double>();
  for (const char* c : {"matmul", "attention", "norm_activation", "optimizer", "embedding", "loss"}) {
    ASSERT_TRUE(j["op_classes"].contains(c)) << c;
    classes += j["op_classes"][c]["time_s"].get<double>();
  }
  EXPECT_NEAR(classes, step, 1e-9 * step);
  EXPECT_GT(j["op_classes"]["matmul"]["share"].get<double>(), 0.5);
}

TEST_F(ZooCli, DescribeModelPrintsParametersByComponent) {
  const Outcome o = tpusim("describe model llama2-70b");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("model llama2-70b (kind transformer)"), std::string::npos) << o.out;
  // 80 blocks x (8192 x (8192 + 2 x 1024) + 8192 x 8192): grouped-query attention with 8 KV heads of 128.
  const auto line = [&](const std::string& key) { return o.out.substr(o.out.find(key), o.out.find('\n', o.out.find(key)) - o.out.find(key)); };
  EXPECT_NE(line("  attention").find("12079595520"), std::string::npos) << o.out;
  EXPECT_NE(line("  total").find("68976648192"), std::string::npos) << o.out;
  EXPECT_NE(line("  total").find("68.977 B"), std::string::npos) << o.out;
}

TEST_F(ZooCli, LowerReportsTheProgramAndTheMemoryPlan) {
  const Outcome o = tpusim("lower llama2-7b-prefill-v5e -o " + (dir_ / "p.json").string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("llama2-7b-prefill-v5e: 1 program of"), std::string::npos) << o.out;
  // 32 layers x 4 prompts x 1024 positions x 4096 x K and V x 2 B.
  EXPECT_NE(o.out.find("(2147483648 B)"), std::string::npos) << o.out;
  const auto j = nlohmann::json::parse(slurp(dir_ / "p.json"));
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["programs"][0]["instructions"][0]["class"], "embedding");
}

TEST_F(ZooCli, ALoweredProgramRunsInTheSameTimeAsTheModelItCameFrom) {
  // The program file carries everything the simulation charges a fused instruction: its bytes, its grid steps and
  // its matmuls' operand buffers (the pipeline bound; without them the step would read faster).
  const std::string model = "gpt3-1.3b-train-v4 --set workload.model.layers=2 --set chip.hbm.latency=10us";
  ASSERT_EQ(tpusim("lower " + model + " -o " + (dir_ / "p.json").string()).exit_code, 0);
  const auto j = nlohmann::json::parse(slurp(dir_ / "p.json"));
  int buffered = 0;
  for (const auto& ins : j["programs"][0]["instructions"]) buffered += ins.contains("buffers") ? 1 : 0;
  EXPECT_GT(buffered, 0);
  std::ofstream(dir_ / "p.yaml") << "name: p\npod: v4-1x1x1\nworkload: {program: p.json}\n";
  const auto direct = summary(model, "direct");
  const auto from_file = summary((dir_ / "p.yaml").string() + " --set chip.hbm.latency=10us", "file");
  EXPECT_EQ(from_file["metrics"]["step_time_s"].get<double>(), direct["metrics"]["step_time_s"].get<double>());
}

}  // namespace

TEST_F(ZooCli, AModelFromABundledOneNamesAMisspeltBaseAndBlocksNeedATransformer) {
  const auto bad_base = write("a.yaml", "name: a\npod: v4-1x1x1\nworkload:\n  model: {from: gpt3-67b, layers: 1}\n"
                                        "  part: blocks\n");
  Outcome o = tpusim("run " + bad_base.string() + " -q -o " + (dir_ / "a").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(bad_base.string() + ":4:17: error: workload.model.from: unknown name 'gpt3-67b'"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("did you mean 'gpt3-6.7b'?"), std::string::npos) << o.err;
  const auto mlp = write("b.yaml", "name: b\npod: v4-1x1x1\nworkload:\n  model: mlp-small\n  part: blocks\n");
  o = tpusim("run " + mlp.string() + " -q -o " + (dir_ / "b").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(mlp.string() + ":5:9: error: workload.part: only a transformer has blocks"), std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "a"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "b"));
}

TEST_F(ZooCli, AnOffloadedBlockInputTakesItsTwoPcieCopiesAndAtMostThemPlusTheCompute) {
  // One block of d 128 over 256 x 256 tokens on a v6e chip with its PCIe link set to 4 GB/s each way, so that
  // the copies dominate: the block input, 65536 x 128 bf16 = 16 MiB, goes to host memory after the embedding
  // and comes back before the block's recomputation, 2 x 16 MiB / 4 GB/s = 8.39 ms against about 3 ms of
  // compute. The copy back reads what the copy out wrote, so the two cannot overlap: the step takes at least
  // both, and at most both plus the same step with the input kept in HBM (1% for the PCIe latencies).
  const std::string scenario = R"(name: offload
pod: v6e-1x1
chip: {host: {pcie_bandwidth: 4 GB/s}}
workload:
  model: {kind: transformer, layers: 1, d_model: 128, heads: 2, d_ff: 512, vocab: 256, context: 256,
          position: none, norm: rmsnorm, mlp: relu, bias: false}
  batch: 256
  step: train
  remat: custom
)";
  write("device.yaml", scenario);
  write("offload.yaml", scenario + "  remat_custom: {decoder_layer_input: offload}\n");
  const auto device = summary((dir_ / "device.yaml").string(), "device");
  const auto offload = summary((dir_ / "offload.yaml").string(), "offload");
  const double bytes = 65536.0 * 128 * 2, pcie = 4e9;
  const double copies = 2 * bytes / pcie;
  const double t_device = device["metrics"]["step_time_s"], t_offload = offload["metrics"]["step_time_s"];
  EXPECT_GT(copies, 2 * t_device);
  EXPECT_GE(t_offload, copies);
  EXPECT_LE(t_offload, 1.01 * (copies + t_device));
  EXPECT_EQ(offload["memory"]["host_offload_bytes"], 16777216);
  EXPECT_EQ(offload["memory"]["host_capacity_bytes"], 192ull << 30);
  EXPECT_FALSE(device["memory"].contains("host_offload_bytes"));
  // The kept input left the device: 16 MiB fewer activations kept for the backward.
  EXPECT_EQ(device["memory"]["categories"]["activations"].get<std::int64_t>() -
                offload["memory"]["categories"]["activations"].get<std::int64_t>(),
            16777216);
  // The two copies are the op class `host` (nothing else of this training step is), on the DMA engine.
  EXPECT_EQ(offload["op_classes"]["host"]["instructions"], 2);
  EXPECT_GE(offload["op_classes"]["host"]["busy_s"].get<double>(), copies);
  EXPECT_LE(offload["op_classes"]["host"]["busy_s"].get<double>(), 1.01 * copies);
}
