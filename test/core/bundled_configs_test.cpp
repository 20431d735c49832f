// The bundled hardware configs (configs/chips, configs/pods, configs/models) resolve with no diagnostics,
// agree with the reference sheet (docs/hardware.md), and cite a source for every value they set.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/data_paths.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/core/scenario.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

// gtest parameter names allow only letters, digits and '_'.
std::string param_name(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

std::optional<ChipSpec> load_chip_or_fail(const std::string& name) {
  try {
    return load_chip(name);
  } catch (const ConfigError& e) {
    ADD_FAILURE() << "chip '" << name << "' does not resolve:\n" << e.what();
    return std::nullopt;
  }
}

// ---- chips ----------------------------------------------------------------------------------------------------

TEST(BundledChips, AreTheSixGenerations) {
  EXPECT_EQ(bundled_names("configs/chips"), (std::vector<std::string>{"v2", "v3", "v4", "v5e", "v5p", "v6e"}));
}

class BundledChip : public testing::TestWithParam<std::string> {};

TEST_P(BundledChip, ResolvesWithNoDiagnostics) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  EXPECT_EQ(chip->name, GetParam());
  EXPECT_EQ(chip->published.generation, GetParam());
}

TEST_P(BundledChip, EveryFieldCitesASourceOrIsDefaulted) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  std::vector<std::string> keys;
  for (const auto& info : chip_fields().infos()) keys.push_back(info.key);
  for (const ChipBlock& b : chip->composition.blocks) {
    keys.push_back(b.name + ".count");
    for (const auto& info : block_kind(b.kind).fields->infos()) keys.push_back(b.name + "." + info.key);
  }
  EXPECT_GT(keys.size(), 30u);
  for (const std::string& key : keys) {
    const auto it = chip->origins.find(key);
    ASSERT_NE(it, chip->origins.end()) << "no origin recorded for " << key;
    const FieldOrigin& o = it->second;
    EXPECT_TRUE(o.defaulted || !o.comment.empty())
        << GetParam() << ": " << key << " at " << o.loc.str() << " has no source comment";
  }
}

TEST_P(BundledChip, IsComposedOfTheStandardBlocksAndPaths) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  for (BlockKind k : {BlockKind::tensorcore, BlockKind::mxu, BlockKind::vpu, BlockKind::vmem, BlockKind::hbm,
                      BlockKind::dma, BlockKind::host, BlockKind::ici}) {
    const ChipBlock* b = find_block(*chip, k);
    ASSERT_NE(b, nullptr) << GetParam() << ": " << block_kind_name(k);
    EXPECT_EQ(b->name, block_kind_name(k));
  }
  EXPECT_EQ(find_block(*chip, BlockKind::tensorcore)->count, chip->tensorcores);
  EXPECT_EQ(find_block(*chip, BlockKind::mxu)->count, chip->mxu.per_core);
  for (BlockKind memory : {BlockKind::vmem, BlockKind::hbm, BlockKind::host}) {
    EXPECT_TRUE(has_path(*chip, BlockKind::dma, memory)) << GetParam() << ": dma -> " << block_kind_name(memory);
  }
  EXPECT_TRUE(has_path(*chip, BlockKind::mxu, BlockKind::vpu)) << GetParam();
}

TEST_P(BundledChip, ValuesNotOnTheSheetAreLabelledAssumptions) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  for (const char* key : {"vmem.bandwidth", "hbm.latency", "ici.hop_latency"}) {
    const std::string& comment = chip->origins.at(key).comment;
    // XLA's cost-model table gives the HBM -> VMEM latency of v5e, v5p and v6e (hardware.md xlaplat).
    const bool sourced = std::string(key) == "hbm.latency" &&
                         (GetParam() == std::string("v5e") || GetParam() == std::string("v5p") ||
                          GetParam() == std::string("v6e"));
    const std::string expect = sourced ? "hardware.md [P] xlaplat" : "assumption";
    EXPECT_EQ(comment.rfind(expect, 0), 0u) << GetParam() << ": " << key << ": '" << comment << "'";
  }
}

TEST_P(BundledChip, PublishedPeakMatchesTheArrayArithmeticWithinThreePercent) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  const double derived = chip->derived_peak_bf16().value();
  EXPECT_NEAR(derived, chip->published.peak_bf16.value(), 0.03 * chip->published.peak_bf16.value());
}

TEST_P(BundledChip, Int8PeakFollowsTheInt8RateOfTheMxu) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  const double expected = chip->published.peak_bf16.value() * chip->mxu.int8_rate;
  EXPECT_NEAR(chip->published.peak_int8.value(), expected, 0.01 * std::max(expected, 1.0));
}

INSTANTIATE_TEST_SUITE_P(Configs, BundledChip, testing::Values("v2", "v3", "v4", "v5e", "v5p", "v6e"),
                         param_name);

struct SheetRow {
  double peak_tflops;
  int tensorcores, mxus, mxu_dim;
  double hbm_gbps;
  std::uint64_t hbm_bytes;
  int ici_links;
  double link_gbps;
  int chips_per_host;
  double pcie_gbps;
  std::uint64_t vmem_bytes;
};

// docs/hardware.md chip table, plus the per-link rates and VMEM sizes chosen in the brief for the configs.
const std::map<std::string, SheetRow>& sheet() {
  static const std::map<std::string, SheetRow> rows{
      {"v2", {46, 2, 1, 128, 700, 16ULL << 30, 4, 62, 4, 16, 16ULL << 20}},
      {"v3", {123, 2, 2, 128, 900, 32ULL << 30, 4, 100, 4, 16, 16ULL << 20}},
      {"v4", {275, 2, 4, 128, 1200, 32ULL << 30, 6, 45, 4, 16, 16ULL << 20}},
      {"v5e", {197, 1, 4, 128, 819, 16'000'000'000ULL, 4, 45, 8, 16, 128ULL << 20}},
      {"v5p", {459, 2, 4, 128, 2765, 95ULL << 30, 6, 90, 4, 16, 64ULL << 20}},
      {"v6e", {918, 1, 4, 256, 1638, 32'000'000'000ULL, 4, 90, 8, 32, 128ULL << 20}},
  };
  return rows;
}

TEST_P(BundledChip, CarriesTheSheetsNumbers) {
  const auto chip = load_chip_or_fail(GetParam());
  ASSERT_TRUE(chip.has_value());
  const SheetRow& row = sheet().at(GetParam());
  EXPECT_EQ(chip->published.peak_bf16.value(), row.peak_tflops * 1e12);
  EXPECT_EQ(chip->tensorcores, row.tensorcores);
  EXPECT_EQ(chip->mxu.per_core, row.mxus);
  EXPECT_EQ(chip->mxu.rows, row.mxu_dim);
  EXPECT_EQ(chip->mxu.cols, row.mxu_dim);
  EXPECT_EQ(chip->hbm.bandwidth.value(), row.hbm_gbps * 1e9);
  EXPECT_EQ(chip->hbm.capacity.count(), row.hbm_bytes);
  EXPECT_EQ(chip->ici.links, row.ici_links);
  EXPECT_EQ(chip->ici.link_bandwidth.value(), row.link_gbps * 1e9);
  EXPECT_EQ(chip->host.chips_per_host, row.chips_per_host);
  EXPECT_EQ(chip->host.pcie_bandwidth.value(), row.pcie_gbps * 1e9);
  EXPECT_EQ(chip->vmem.capacity.count(), row.vmem_bytes);
  EXPECT_EQ(chip->vpu.lanes, 128);
  EXPECT_EQ(chip->vpu.sublanes, 8);
  // HBM -> VMEM latency: hardware.md xlaplat on v5e, v5p and v6e; an assumption of 500 ns on the others.
  const std::map<std::string, double> latency{{"v5e", 1133e-9}, {"v5p", 667e-9}, {"v6e", 628e-9}};
  EXPECT_DOUBLE_EQ(chip->hbm.latency.value(), latency.count(GetParam()) ? latency.at(GetParam()) : 500e-9);
  EXPECT_EQ(chip->ici.hop_latency.value(), 1e-6);
}

TEST(BundledChips, DerivedPeaksMatchThePublishedFiguresWithinOnePercent) {
  const std::map<std::string, double> published{{"v4", 275e12}, {"v5p", 459e12}, {"v5e", 197e12}, {"v3", 123e12}};
  for (const auto& [name, peak] : published) {
    const auto chip = load_chip_or_fail(name);
    ASSERT_TRUE(chip.has_value());
    EXPECT_NEAR(chip->derived_peak_bf16().value(), peak, 0.01 * peak) << name;
  }
}

TEST(BundledChips, V4PeakIsTwoCoresTimesFourMxusAt1050MHz) {
  const auto chip = load_chip_or_fail("v4");
  ASSERT_TRUE(chip.has_value());
  EXPECT_EQ(chip->clock.value(), 1.05e9);
  EXPECT_EQ(chip->macs_per_cycle(), 131072.0);
  EXPECT_EQ(chip->derived_peak_bf16().value(), 2.0 * 131072 * 1.05e9);
}

TEST(BundledChips, OnlyV4HasCmem) {
  for (const std::string name : {"v2", "v3", "v4", "v5e", "v5p", "v6e"}) {
    const auto chip = load_chip_or_fail(name);
    ASSERT_TRUE(chip.has_value());
    if (name == "v4") {
      EXPECT_EQ(chip->cmem.capacity, MiB(128));
      EXPECT_GT(chip->cmem.bandwidth.value(), 0.0);
      EXPECT_TRUE(has_path(*chip, BlockKind::dma, BlockKind::cmem));
    } else {
      EXPECT_EQ(chip->cmem.capacity.count(), 0u) << name;
      EXPECT_EQ(find_block(*chip, BlockKind::cmem), nullptr) << name;
    }
  }
}

TEST(BundledChips, Int8RatesFollowTheSheet) {
  const std::map<std::string, std::pair<double, double>> int8{
      {"v2", {0, 0}}, {"v3", {123e12, 1}}, {"v4", {275e12, 1}}, {"v5e", {393e12, 2}}, {"v5p", {918e12, 2}},
      {"v6e", {1836e12, 2}}};
  for (const auto& [name, want] : int8) {
    const auto chip = load_chip_or_fail(name);
    ASSERT_TRUE(chip.has_value());
    EXPECT_EQ(chip->published.peak_int8.value(), want.first) << name;
    EXPECT_EQ(chip->mxu.int8_rate, want.second) << name;
  }
}

// v6e's clock is XLA's cost-model figure (hardware.md xlaplat); its 4 arrays of one row per cycle stand for the
// 2 arrays of two rows the sources give, an assumption.
TEST(BundledChips, V6eCitesItsClockAndLabelsItsMxuCountAnAssumption) {
  const auto chip = load_chip_or_fail("v6e");
  ASSERT_TRUE(chip.has_value());
  EXPECT_EQ(chip->origins.at("mxu.count").comment.rfind("assumption", 0), 0u);
  EXPECT_EQ(chip->origins.at("clock").comment.rfind("hardware.md [P] xlaplat", 0), 0u);
  EXPECT_DOUBLE_EQ(chip->clock.value(), 1.75e9);
}

TEST(BundledChips, V5pAndV6eVmemSizesCiteJaxsHardwareTable) {
  for (const auto& [name, mib] : {std::pair<std::string, std::int64_t>{"v5p", 64}, {"v6e", 128}}) {
    const auto chip = load_chip_or_fail(name);
    ASSERT_TRUE(chip.has_value());
    EXPECT_EQ(chip->vmem.capacity.count(), mib << 20) << name;
    EXPECT_EQ(chip->origins.at("vmem.capacity").comment.rfind("hardware.md [P] jaxinfo", 0), 0u) << name;
  }
}

// ALUs per lane-sublane with the source its comment cites (docs/hardware.md): published for v2, v3 (Norrie et
// al., micro21) and v5p (the scaling book); v4 and v6e from tpuasm's issue slots and v5e by analogy, all three
// labelled assumptions. The transcendental unit takes one vreg per cycle everywhere (1 / ALUs), an assumption.
TEST(BundledChips, VpuAluCountsAndTranscendentalRatesCiteTheirSources) {
  struct Row {
    const char* chip;
    int alus;
    const char* source;
    bool assumption;
  };
  for (const Row& row : {Row{"v2", 2, "[P] micro21", false}, Row{"v3", 2, "[P] micro21", false},
                         Row{"v4", 2, "[U] tpuasm", true}, Row{"v5e", 4, "v5p", true},
                         Row{"v5p", 4, "[P]", false}, Row{"v6e", 4, "[U] tpuasm", true}}) {
    const auto chip = load_chip_or_fail(row.chip);
    ASSERT_TRUE(chip.has_value());
    EXPECT_EQ(chip->vpu.alus, row.alus) << row.chip;
    const std::string& alus = chip->origins.at("vpu.alus").comment;
    EXPECT_NE(alus.find(row.source), std::string::npos) << row.chip << ": '" << alus << "'";
    EXPECT_EQ(alus.rfind("assumption", 0) == 0, row.assumption) << row.chip << ": '" << alus << "'";
    EXPECT_EQ(chip->vpu.transcendental_rate, 1.0 / row.alus) << row.chip;
    const std::string& rate = chip->origins.at("vpu.transcendental_rate").comment;
    EXPECT_EQ(rate.rfind("assumption", 0), 0u) << row.chip << ": '" << rate << "'";
  }
}

TEST(BundledChips, OriginsPointIntoTheChipFile) {
  const auto chip = load_chip_or_fail("v4");
  ASSERT_TRUE(chip.has_value());
  const FieldOrigin& clock = chip->origins.at("clock");
  EXPECT_EQ(std::filesystem::path(clock.loc.file).filename(), "v4.yaml");
  EXPECT_GT(clock.loc.line, 0);
  EXPECT_NE(clock.comment.find("hardware.md"), std::string::npos);
}

// ---- pods -----------------------------------------------------------------------------------------------------

const std::map<std::string, long long>& expected_pods() {
  static const std::map<std::string, long long> pods{
      {"v2-1x1", 1},          {"v5e-8x16", 128},     {"v6e-1x1", 1},
      {"v2-2x2", 4},          {"v2-4x4", 16},        {"v2-16x16", 256},     {"v3-1x1", 1},  {"v3-4x4", 16},
      {"v3-32x32", 1024},     {"v4-1x1x1", 1},       {"v4-2x2x1", 4},       {"v4-2x2x4", 16},
      {"v4-4x4x4", 64},       {"v4-8x8x8", 512},     {"v4-16x16x16", 4096}, {"v5e-1x1", 1},
      {"v5e-2x2", 4},         {"v5e-4x4", 16},       {"v5e-16x16", 256},    {"v5p-2x2x1", 4},
      {"v5p-4x4x4", 64},      {"v5p-8x8x8", 512},    {"v5p-16x16x24", 6144}, {"v5p-16x20x28", 8960},
      {"v6e-2x2", 4},         {"v6e-16x16", 256},
  };
  return pods;
}

std::vector<std::string> pod_names() {
  std::vector<std::string> names;
  for (const auto& [name, count] : expected_pods()) names.push_back(name);
  return names;
}

TEST(BundledPods, IncludeEverySliceOfTheBrief) {
  const auto names = bundled_names("configs/pods");
  const std::set<std::string> have(names.begin(), names.end());
  for (const auto& [name, count] : expected_pods()) EXPECT_EQ(have.count(name), 1u) << name;
}

// Loads a bundled pod; a failure to resolve is a test failure that shows every diagnostic.
std::optional<PodSpec> load_pod_checked(const std::string& name) {
  try {
    return load_pod(name);
  } catch (const ConfigError& e) {
    ADD_FAILURE() << "pod '" << name << "' does not resolve:\n" << e.what();
    return std::nullopt;
  }
}

class BundledPod : public testing::TestWithParam<std::string> {
 protected:
  std::optional<PodSpec> load() { return load_pod_checked(GetParam()); }
};

#define LOAD_POD_OR_RETURN(var) \
  const auto var = load();      \
  if (!var) return

TEST_P(BundledPod, ResolvesWithNoDiagnostics) {
  LOAD_POD_OR_RETURN(pod);
  EXPECT_EQ(pod->name, GetParam());
}

TEST_P(BundledPod, HasTheExpectedChipCount) {
  LOAD_POD_OR_RETURN(pod);
  EXPECT_EQ(pod->chip_count(), expected_pods().at(GetParam()));
  EXPECT_EQ(pod->pods, 1);
}

TEST_P(BundledPod, NamesItsShapeAndChip) {
  LOAD_POD_OR_RETURN(pod);
  std::string name = pod->chip + "-";
  for (std::size_t i = 0; i < pod->shape.size(); ++i) name += (i ? "x" : "") + std::to_string(pod->shape[i]);
  EXPECT_EQ(name, GetParam());
  EXPECT_TRUE(load_chip_or_fail(pod->chip).has_value());
}

TEST_P(BundledPod, HostsHoldNoMoreChipsThanTheChipSpecSays) {
  LOAD_POD_OR_RETURN(pod);
  const auto chip = load_chip_or_fail(pod->chip);
  ASSERT_TRUE(chip.has_value());
  const int per_host = std::accumulate(pod->host_shape.begin(), pod->host_shape.end(), 1, std::multiplies<>());
  EXPECT_LE(per_host, chip->host.chips_per_host);
  if (pod->chip_count() >= chip->host.chips_per_host) {
    EXPECT_EQ(per_host, chip->host.chips_per_host);
  }
}

TEST_P(BundledPod, WrapsAroundPerTheSheetsRule) {
  LOAD_POD_OR_RETURN(pod);
  const std::string& gen = pod->chip;
  ASSERT_EQ(pod->wraparound.size(), pod->shape.size());
  if (gen == "v4" || gen == "v5p") {
    // A multiple of a full 4x4x4 cube wraps around through the OCS; smaller slices are meshes.
    bool full_cubes = true;
    for (int d : pod->shape) full_cubes &= d % 4 == 0;
    EXPECT_EQ(pod->wraparound, std::vector<int>(3, full_cubes ? 1 : 0));
    EXPECT_EQ(pod->cube, full_cubes ? (std::vector<int>{4, 4, 4}) : std::vector<int>{});
  } else if (gen == "v5e" || gen == "v6e") {
    for (std::size_t i = 0; i < pod->shape.size(); ++i) EXPECT_EQ(pod->wraparound[i], pod->shape[i] == 16 ? 1 : 0);
    EXPECT_TRUE(pod->cube.empty());
  } else {
    // v2/v3: the full pod is a 2D torus; sub-pod slices are meshes (an assumption).
    const bool full_pod = pod->chip_count() == (gen == "v2" ? 256 : 1024);
    EXPECT_EQ(pod->wraparound, std::vector<int>(2, full_pod ? 1 : 0));
    EXPECT_TRUE(pod->cube.empty());
  }
}

TEST_P(BundledPod, EverySetFieldCitesASource) {
  LOAD_POD_OR_RETURN(pod);
  for (const auto& [key, origin] : pod->origins) {
    EXPECT_TRUE(origin.defaulted || !origin.comment.empty()) << GetParam() << ": " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, BundledPod, testing::ValuesIn(pod_names()), param_name);

TEST(BundledPods, FullPodsHaveThePublishedChipCounts) {
  for (const auto& [name, count] : std::map<std::string, long long>{
           {"v4-16x16x16", 4096}, {"v5p-16x20x28", 8960}, {"v3-32x32", 1024}, {"v2-16x16", 256},
           {"v5e-16x16", 256}, {"v6e-16x16", 256}, {"v5p-16x16x24", 6144}}) {
    const auto pod = load_pod_checked(name);
    ASSERT_TRUE(pod.has_value()) << name;
    EXPECT_EQ(pod->chip_count(), count) << name;
  }
}

// ---- models ---------------------------------------------------------------------------------------------------

TEST(BundledModels, AreTheSyntheticKernelsAndTheZoo) {
  EXPECT_EQ(bundled_names("configs/models"),
            (std::vector<std::string>{"bert-large", "dlrm-mlperf", "gemm-4096", "gemm-skinny", "gpt3-1.3b", "gpt3-13b", "gpt3-175b",
                                      "gpt3-6.7b", "llama2-13b", "llama2-70b", "llama2-7b", "llama3.1-405b",
                                      "llama3.1-70b", "llama3.1-8b", "maxtext-16b", "maxtext-512b", "maxtext-52b",
                                      "mixtral-8x7b", "mlp-quickstart", "mlp-small", "resnet-50", "t5-base"}));
}

// Resolves a bundled model through a scenario, the way users reach it.
Scenario scenario_with_model(const std::string& model) {
  const auto path = std::filesystem::temp_directory_path() / ("tpusim_model_" + model + ".yaml");
  {
    std::ofstream out(path);
    out << "name: model-check\npod: v4-4x4x4\nworkload:\n  model: " << model << "\n  batch: 8\n";
  }
  try {
    Scenario s = load_scenario(path.string(), {});
    std::filesystem::remove(path);
    return s;
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
}

TEST(BundledModels, ResolveThroughAScenario) {
  struct Want {
    ModelKind kind;
    std::vector<int> widths;
    GemmModel gemm;
  };
  const std::map<std::string, Want> want{
      {"mlp-quickstart", {ModelKind::mlp, {4096, 8192, 8192, 8192, 4096}, {}}},
      {"mlp-small", {ModelKind::mlp, {256, 512, 256}, {}}},
      {"gemm-4096", {ModelKind::gemm, {}, {4096, 4096, 4096}}},
      {"gemm-skinny", {ModelKind::gemm, {}, {8, 4096, 4096}}},
  };
  for (const auto& [name, w] : want) {
    try {
      const Scenario s = scenario_with_model(name);
      ASSERT_EQ(s.workload.model.kind, w.kind) << name;
      const ModelSpec& m = s.workload.model;
      EXPECT_EQ(m.name, name);
      EXPECT_EQ(m.kind, w.kind) << name;
      if (w.kind == ModelKind::mlp) {
        EXPECT_EQ(m.mlp.widths, w.widths) << name;
      } else {
        EXPECT_EQ(m.gemm.m, w.gemm.m) << name;
        EXPECT_EQ(m.gemm.k, w.gemm.k) << name;
        EXPECT_EQ(m.gemm.n, w.gemm.n) << name;
      }
    } catch (const ConfigError& e) {
      ADD_FAILURE() << "model '" << name << "' does not resolve:\n" << e.what();
    }
  }
}

TEST(BundledModels, ZooModelsResolveWithTheirPublishedDimensions) {
  struct Want {
    std::int64_t layers, d_model, heads, kv_heads, d_head, d_ff, vocab;
  };
  const std::map<std::string, Want> want{
      {"gpt3-1.3b", {24, 2048, 16, 16, 128, 8192, 50257}},     {"gpt3-6.7b", {32, 4096, 32, 32, 128, 16384, 50257}},
      {"gpt3-13b", {40, 5120, 40, 40, 128, 20480, 50257}},     {"gpt3-175b", {96, 12288, 96, 96, 128, 49152, 50257}},
      {"llama2-7b", {32, 4096, 32, 32, 128, 11008, 32000}},    {"llama2-13b", {40, 5120, 40, 40, 128, 13824, 32000}},
      {"llama2-70b", {80, 8192, 64, 8, 128, 28672, 32000}},    {"bert-large", {24, 1024, 16, 16, 64, 4096, 30522}},
      {"t5-base", {12, 768, 12, 12, 64, 3072, 32128}},         {"mixtral-8x7b", {32, 4096, 32, 8, 128, 14336, 32000}},
      {"maxtext-16b", {32, 5120, 32, 32, 256, 32768, 32768}},  {"maxtext-52b", {32, 12288, 32, 32, 256, 49152, 32768}},
      {"maxtext-512b", {128, 20480, 64, 64, 256, 65536, 32768}},
      {"llama3.1-8b", {32, 4096, 32, 8, 128, 14336, 128256}},  {"llama3.1-70b", {80, 8192, 64, 8, 128, 28672, 128256}},
      {"llama3.1-405b", {126, 16384, 128, 8, 128, 53248, 128256}},
  };
  for (const auto& [name, w] : want) {
    const Scenario s = scenario_with_model(name);
    const TransformerModel& t = s.workload.model.transformer;
    ASSERT_EQ(s.workload.model.kind, ModelKind::transformer) << name;
    EXPECT_EQ(t.layers, w.layers) << name;
    EXPECT_EQ(t.d_model, w.d_model) << name;
    EXPECT_EQ(t.heads, w.heads) << name;
    EXPECT_EQ(t.kv(), w.kv_heads) << name;
    EXPECT_EQ(t.head_dim(), w.d_head) << name;
    EXPECT_EQ(t.d_ff, w.d_ff) << name;
    EXPECT_EQ(t.vocab, w.vocab) << name;
  }
  const Scenario mixtral = scenario_with_model("mixtral-8x7b");
  EXPECT_EQ(mixtral.workload.model.transformer.moe.experts, 8);
  EXPECT_EQ(mixtral.workload.model.transformer.moe.top_k, 2);
  const Scenario t5 = scenario_with_model("t5-base");
  EXPECT_EQ(t5.workload.model.transformer.encoder_depth(), 12);
  EXPECT_EQ(t5.workload.model.transformer.decoder_depth(), 12);
  const Scenario resnet = scenario_with_model("resnet-50");
  EXPECT_EQ(resnet.workload.model.resnet.blocks, (std::vector<int>{3, 4, 6, 3}));
  EXPECT_EQ(resnet.workload.model.resnet.widths, (std::vector<int>{64, 128, 256, 512}));
}

TEST(BundledModels, DlrmHasTheMlperfCriteoShape) {
  const Scenario s = scenario_with_model("dlrm-mlperf");
  ASSERT_EQ(s.workload.model.kind, ModelKind::dlrm);
  const DlrmModel& m = s.workload.model.dlrm;
  EXPECT_EQ(m.dense_features, 13);
  EXPECT_EQ(m.bottom_mlp, (std::vector<int>{512, 256, 128}));
  EXPECT_EQ(m.top_mlp, (std::vector<int>{1024, 1024, 512, 256, 1}));
  EXPECT_EQ(m.tables, 26);
  EXPECT_EQ(m.embedding_dim, 128);
  EXPECT_EQ(m.lookups_per_table, 1);
  // The tables fit one v4 chip's 32 GiB of HBM in bf16.
  EXPECT_LT(26.0 * static_cast<double>(m.rows_per_table) * 128 * 2, 32.0 * (1ull << 30));
}

TEST(BundledModels, QuickstartTrainingStepIsUnderTensOfMillisecondsAtV4Peak) {
  // 6 FLOP per weight per example for forward + backward; batch 1024 at v4's 275 TFLOP/s.
  const std::vector<int> widths{4096, 8192, 8192, 8192, 4096};
  double weights = 0;
  for (std::size_t i = 1; i < widths.size(); ++i) weights += static_cast<double>(widths[i - 1]) * widths[i];
  EXPECT_EQ(weights, 201326592.0);
  const double seconds = 6.0 * weights * 1024 / 275e12;
  EXPECT_LT(seconds, 0.05);
}

TEST(BundledModels, EveryValueLineCitesItsOrigin) {
  for (const auto& name : bundled_names("configs/models")) {
    Diagnostics diags;
    const auto path = resolve_data_file("configs/models", name, {}, SourceLoc{}, "model", diags);
    ASSERT_TRUE(path.has_value()) << diags.str();
    const ConfigNode root = load_yaml_file(*path, diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    // Every leaf value (sections such as moe: hold leaves of their own).
    std::function<void(const ConfigNode&, const std::string&)> check = [&](const ConfigNode& map,
                                                                          const std::string& prefix) {
      for (const auto& e : map.entries()) {
        if (e.value.is_map()) {
          check(e.value, prefix + e.key + ".");
        } else {
          EXPECT_FALSE(e.value.comment().empty()) << name << ": " << prefix << e.key;
        }
      }
    };
    check(root, "");
  }
}

}  // namespace
}  // namespace tpusim
