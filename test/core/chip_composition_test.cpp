// A chip file composes the chip from blocks and paths (core/chip_spec.h, chip_blocks.h): what resolves, and
// every way a composition can be wrong, each reported with the file, line and key path.
#include <string>

#include <gtest/gtest.h>

#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/scenario.h"

namespace tpusim {
namespace {

// A small valid chip; each test edits one thing. Line numbers below count from 1 at "name: small".
constexpr const char* kChip = R"(name: small
generation: test
clock: 1 GHz
peak_bf16: 65.536 TFLOP/s
tensorcore:
  kind: tensorcore
  count: 2
mxu:
  kind: mxu
  count: 1
  rows: 128
  cols: 128
vpu: {kind: vpu, lanes: 128, sublanes: 8}
vmem: {kind: vmem, capacity: 16 MiB, bandwidth: 8 TB/s}
hbm: {kind: hbm, capacity: 16 GiB, bandwidth: 1 TB/s, latency: 500 ns}
dma: {kind: dma}
ici: {kind: ici, links: 4, link_bandwidth: 50 GB/s, hop_latency: 1 us}
host: {kind: host, chips_per_host: 4, pcie_bandwidth: 16 GB/s}
paths:
  - dma -> vmem
  - dma -> hbm
  - mxu -> vpu
)";

struct ResolvedChip {
  ChipSpec spec;
  Diagnostics diags;
};

ResolvedChip resolve_chip_yaml(const std::string& text) {
  ResolvedChip r;
  const ConfigNode root = load_yaml_string(text, "chip.yaml", r.diags);
  r.spec = resolve_chip(root, "chip", r.diags);
  return r;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The one diagnostic of a bad composition.
const Diagnostic& only(const ResolvedChip& r) {
  EXPECT_EQ(r.diags.size(), 1u) << r.diags.str();
  static const Diagnostic none;
  return r.diags.empty() ? none : r.diags.items().front();
}

TEST(ChipComposition, ASmallChipResolvesIntoTypedMembersAndItsComposition) {
  const ResolvedChip r = resolve_chip_yaml(kChip);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.spec.tensorcores, 2);
  EXPECT_EQ(r.spec.mxu.per_core, 1);
  EXPECT_EQ(r.spec.hbm.bandwidth, BytesPerSecond(1e12));
  EXPECT_EQ(r.spec.hbm.scheduler, MemoryScheduler::shared);
  ASSERT_EQ(r.spec.composition.blocks.size(), 8u);
  EXPECT_EQ(r.spec.composition.blocks[0].name, "tensorcore");
  EXPECT_EQ(r.spec.composition.blocks[0].loc.line, 5);
  ASSERT_EQ(r.spec.composition.paths.size(), 3u);
  EXPECT_EQ(r.spec.composition.paths[1].from, "dma");
  EXPECT_EQ(r.spec.composition.paths[1].to, "hbm");
  EXPECT_EQ(r.spec.composition.paths[1].loc.line, 21);
  EXPECT_TRUE(has_path(r.spec, BlockKind::dma, BlockKind::hbm));
  EXPECT_FALSE(has_path(r.spec, BlockKind::dma, BlockKind::host));  // not listed: the DMA cannot reach it
  EXPECT_EQ(r.spec.origins.at("hbm.bandwidth").loc.line, 15);
}

TEST(ChipComposition, BlocksMayHaveAnyNameAndAreFoundByKind) {
  std::string text = replaced(kChip, "hbm: {kind: hbm", "main_memory: {kind: hbm");
  text = replaced(text, "dma -> hbm", "dma -> main_memory");
  const ResolvedChip r = resolve_chip_yaml(text);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  ASSERT_NE(find_block(r.spec, BlockKind::hbm), nullptr);
  EXPECT_EQ(find_block(r.spec, BlockKind::hbm)->name, "main_memory");
  EXPECT_TRUE(has_path(r.spec, BlockKind::dma, BlockKind::hbm));
  EXPECT_EQ(r.spec.hbm.capacity, GiB(16));
}

TEST(ChipComposition, AnExtraMemoryBlockAndItsPathResolve) {
  std::string text = replaced(kChip, "dma: {kind: dma}", "dma: {kind: dma}\ncmem: {kind: cmem, capacity: 64 MiB, bandwidth: 2 TB/s, scheduler: fifo}");
  text = replaced(text, "  - mxu -> vpu\n", "  - mxu -> vpu\n  - dma -> cmem\n");
  const ResolvedChip r = resolve_chip_yaml(text);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.spec.cmem.capacity, MiB(64));
  EXPECT_EQ(r.spec.cmem.scheduler, MemoryScheduler::fifo);
  EXPECT_TRUE(has_path(r.spec, BlockKind::dma, BlockKind::cmem));
}

TEST(ChipComposition, CountZeroSwitchesAnOptionalBlockOff) {
  std::string text = replaced(kChip, "dma: {kind: dma}", "dma: {kind: dma}\ncmem: {kind: cmem, count: 0, capacity: 64 MiB, bandwidth: 2 TB/s}");
  text = replaced(text, "  - mxu -> vpu\n", "  - mxu -> vpu\n  - dma -> cmem\n");
  const ResolvedChip r = resolve_chip_yaml(text);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.spec.cmem.capacity.count(), 0u);
  EXPECT_EQ(find_block(r.spec, BlockKind::cmem), nullptr);
  EXPECT_FALSE(has_path(r.spec, BlockKind::dma, BlockKind::cmem));
}

TEST(ChipComposition, AnUnknownBlockKindNamesTheLineAndTheClosestKind) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "dma: {kind: dma}", "dma: {kind: dmaa}"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.file, "chip.yaml");
  EXPECT_EQ(d.loc.line, 16);
  EXPECT_EQ(d.key_path, "chip.dma.kind");
  EXPECT_NE(d.expected.find("did you mean 'dma'"), std::string::npos) << d.str();
  EXPECT_EQ(d.found, "'dmaa'");
}

TEST(ChipComposition, ADanglingPathNamesTheMissingBlock) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  - dma -> hbm\n", "  - dma -> hmb\n"));
  ASSERT_GE(r.diags.size(), 1u);
  const Diagnostic& d = r.diags.items().front();
  EXPECT_EQ(d.loc.line, 21);
  EXPECT_EQ(d.key_path, "chip.paths[1]");
  EXPECT_NE(d.message.find("dangling path: no block named 'hmb'"), std::string::npos) << d.str();
  EXPECT_EQ(d.hint, "did you mean 'hbm'?");
}

TEST(ChipComposition, ADuplicatePathNamesBothLines) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  - mxu -> vpu\n", "  - mxu -> vpu\n  - dma ->  hbm\n"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.line, 23);
  EXPECT_EQ(d.key_path, "chip.paths[3]");
  EXPECT_NE(d.message.find("duplicate path 'dma -> hbm'"), std::string::npos) << d.str();
  EXPECT_NE(d.found.find("chip.yaml:21"), std::string::npos) << d.str();
}

TEST(ChipComposition, AMissingRequiredBlockIsReportedAtTheChip) {
  std::string text = replaced(kChip, "hbm: {kind: hbm, capacity: 16 GiB, bandwidth: 1 TB/s, latency: 500 ns}\n", "");
  text = replaced(text, "  - dma -> hbm\n", "");
  const ResolvedChip r = resolve_chip_yaml(text);
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.file, "chip.yaml");
  EXPECT_EQ(d.loc.line, 1);
  EXPECT_EQ(d.key_path, "chip");
  EXPECT_EQ(d.message, "missing required block of kind 'hbm'");
}

TEST(ChipComposition, ASecondBlockOfAKindPointsAtTheFirst) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "dma: {kind: dma}", "dma: {kind: dma}\nhbm2: {kind: hbm, capacity: 1 GiB, bandwidth: 1 TB/s, latency: 1 us}"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.line, 17);
  EXPECT_EQ(d.key_path, "chip.hbm2.kind");
  EXPECT_EQ(d.message, "a second hbm block");
  EXPECT_NE(d.expected.find("chip.yaml:15"), std::string::npos) << d.str();
}

TEST(ChipComposition, APathBetweenKindsThatCannotConnectSaysWhatTheSourceReaches) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  - mxu -> vpu\n", "  - mxu -> dma\n"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.line, 22);
  EXPECT_EQ(d.message, "a mxu block cannot reach a dma block");
  EXPECT_EQ(d.expected, "mxu -> a block of kind vpu, hbm");
}

TEST(ChipComposition, AMalformedPathShowsTheExpectedForm) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  - mxu -> vpu\n", "  - mxu to vpu\n"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.loc.line, 22);
  EXPECT_EQ(d.message, "malformed path");
  EXPECT_EQ(d.found, "'mxu to vpu'");
}

TEST(ChipComposition, AnEngineMustReachTheMemoriesItsWorkNeeds) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  - dma -> vmem\n", ""));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.paths");
  EXPECT_EQ(d.loc.line, 19);
  EXPECT_EQ(d.message, "the dma block 'dma' reaches no vmem block");
}

TEST(ChipComposition, ACountOutsideTheKindsRangeIsRejected) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "vpu: {kind: vpu,", "vpu: {kind: vpu, count: 2,"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.vpu.count");
  EXPECT_EQ(d.loc.line, 13);
  EXPECT_EQ(d.expected, "1");
  EXPECT_EQ(d.found, "2");
}

// int8 matmuls run at mxu.int8_rate x the bf16 rate; the published int8 peak changes nothing, so one written that
// disagrees with them is refused (a `--set chip.peak_int8=...` what-if ran unchanged, exit 0).
TEST(ChipComposition, AWrittenInt8PeakIsCheckedAgainstTheInt8Rate) {
  const auto with = [](const std::string& rate, const std::string& peak) {
    return resolve_chip_yaml(replaced(replaced(kChip, "  cols: 128\n", "  cols: 128\n  int8_rate: " + rate + "\n"),
                                      "peak_bf16: 65.536 TFLOP/s\n",
                                      "peak_bf16: 65.536 TFLOP/s\npeak_int8: " + peak + "\n"));
  };
  using P = std::pair<const char*, const char*>;
  for (const auto& [rate, peak] : {P{"2", "131.072 TOP/s"}, P{"1", "66 TOP/s"}, P{"0", "0 TOP/s"}}) {
    const ResolvedChip fine = with(rate, peak);
    EXPECT_TRUE(fine.diags.empty()) << rate << " " << peak << ": " << fine.diags.str();
  }
  const ResolvedChip r = with("1", "131.072 TOP/s");
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.peak_int8");
  EXPECT_EQ(d.loc.line, 5);
  EXPECT_EQ(d.expected, "65.536 TOP/s (int8_rate 1 x 65.536 TFLOP/s) within -0.5% / +3%");
  EXPECT_EQ(d.found, "131.072 TOP/s");
  EXPECT_EQ(only(with("0", "65.536 TOP/s")).expected, "0 TOP/s (chip.mxu.int8_rate is 0: no int8 path)");
}

// The int8 peak shown with the chip (describe, summary.json's scenario) is the rate int8 matmuls run at: where
// nobody wrote it, it follows mxu.int8_rate x the bf16 arithmetic once a what-if moves that off the chip file's
// figure (`--set chip.mxu.int8_rate=2` on v4 echoed the bundled 275 TOP/s while int8 ran at 550).
TEST(ChipComposition, AnInt8PeakNobodyWroteFollowsTheInt8Rate) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  cols: 128\n", "  cols: 128\n  int8_rate: 2\n"));
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_DOUBLE_EQ(r.spec.published.peak_int8.value(), 131.072e12);  // was 0, the default: "no int8 path"
  EXPECT_EQ(r.spec.origins.at("peak_int8").comment,
            "derived: mxu.int8_rate 2 x 65.536 TFLOP/s (the bf16 arithmetic), the rate int8 matmuls run at");

  const auto peak_int8 = [](const Scenario& s) {
    for (const auto& [key, value] : render_scenario(s)) {
      if (key == "chip.peak_int8") return value;
    }
    return std::string("none");
  };
  const Scenario bundled = load_scenario("gemm-v4", {});
  EXPECT_EQ(peak_int8(bundled), "275 TFLOP/s");  // the published figure, while it agrees with int8_rate 1
  const Scenario doubled = load_scenario("gemm-v4", {"chip.mxu.int8_rate=2"});
  EXPECT_DOUBLE_EQ(doubled.chip.published.peak_int8.value(), 2 * 275.2512e12);
  EXPECT_EQ(peak_int8(doubled), "550.502 TFLOP/s");
  EXPECT_EQ(doubled.chip.origins.at("peak_int8").comment,
            "derived: mxu.int8_rate 2 x 275.251 TFLOP/s (the bf16 arithmetic), the rate int8 matmuls run at (the "
            "chip file's 275 TFLOP/s is for other values)");
  EXPECT_EQ(peak_int8(load_scenario("gemm-v4", {"chip.mxu.int8_rate=0"})), "0 FLOP/s");
  // A clock what-if moves both peaks: the bf16 one is written (checked), the int8 one follows.
  const Scenario faster = load_scenario("gemm-v4", {"chip.clock=2.1GHz", "chip.peak_bf16=550TFLOP/s"});
  EXPECT_DOUBLE_EQ(faster.chip.published.peak_int8.value(), 550.5024e12);
}

// The simulator tells each TensorCore's DMA queue and HBM streams apart by 8-bit engine ids: 63 TensorCores
// resolve (and run), 64 are refused here rather than failing inside the run ("fused stream: bad core").
TEST(ChipComposition, MoreTensorCoresThanTheEngineIdsCoverAreRejected) {
  const std::string cores = "  kind: tensorcore\n  count: 2\n";
  const ResolvedChip most = resolve_chip_yaml(replaced(replaced(kChip, cores, "  kind: tensorcore\n  count: 63\n"),
                                                       "65.536 TFLOP/s", "2064.384 TFLOP/s"));
  EXPECT_TRUE(most.diags.empty()) << most.diags.str();
  EXPECT_EQ(most.spec.tensorcores, kMaxTensorCores);
  const ResolvedChip r = resolve_chip_yaml(replaced(replaced(kChip, cores, "  kind: tensorcore\n  count: 64\n"),
                                                    "65.536 TFLOP/s", "2097.152 TFLOP/s"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.tensorcore.count");
  EXPECT_EQ(d.loc.line, 7);
  EXPECT_EQ(d.expected, "1 to 63");
  EXPECT_EQ(d.found, "64");
}

TEST(ChipComposition, KeysOfTheFlatFormatSayWhereTheyMoved) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "clock: 1 GHz\n", "clock: 1 GHz\ntensorcores: 2\n"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.tensorcores");
  EXPECT_EQ(d.loc.line, 4);
  EXPECT_EQ(d.hint, "did you mean 'tensorcore.count'?");

  const ResolvedChip m = resolve_chip_yaml(replaced(kChip, "  count: 1\n  rows: 128", "  per_core: 1\n  rows: 128"));
  const Diagnostic& e = only(m);
  EXPECT_EQ(e.key_path, "chip.mxu.per_core");
  EXPECT_EQ(e.hint, "did you mean 'mxu.count'?");
}

TEST(ChipComposition, AMisspeltBlockInAnOverrideSuggestsTheBlock) {
  const ResolvedChip r = resolve_chip_yaml(std::string(kChip) + "hmb:\n  bandwidth: 2 TB/s\n");
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.hmb");
  EXPECT_EQ(d.hint, "did you mean 'hbm'?");
}

TEST(ChipComposition, ThePublishedPeakIsCheckedAgainstTheBlockCounts) {
  const ResolvedChip r = resolve_chip_yaml(replaced(kChip, "  count: 1\n  rows: 128", "  count: 2\n  rows: 128"));
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.peak_bf16");
  EXPECT_EQ(d.loc.line, 4);
}

// A scoped VMEM limit above the VMEM contradicts it: the lowering would take the capacity's share and ignore the
// limit without a word. Equal to the capacity, or 0 (no limit), is fine.
TEST(ChipComposition, AScopedVmemLimitAboveTheCapacityIsRefusedAtTheLimit) {
  const std::string vmem = "vmem: {kind: vmem, capacity: 16 MiB, bandwidth: 8 TB/s}";
  const auto with_limit = [&](const std::string& limit) {
    return resolve_chip_yaml(replaced(kChip, vmem, vmem.substr(0, vmem.size() - 1) + ", scoped_limit: " + limit + "}"));
  };
  const ResolvedChip r = with_limit("32 MiB");
  const Diagnostic& d = only(r);
  EXPECT_EQ(d.key_path, "chip.vmem.scoped_limit");
  EXPECT_EQ(d.loc.line, 14);
  EXPECT_EQ(d.found, "32 MiB");
  EXPECT_EQ(d.expected.rfind("at most 16 MiB (chip.vmem.capacity", 0), 0u) << d.expected;
  for (const char* ok : {"16 MiB", "0 B", "1 MiB"}) {
    const ResolvedChip fine = with_limit(ok);
    EXPECT_TRUE(fine.diags.empty()) << ok << ": " << fine.diags.str();
  }
}

TEST(ChipComposition, ACodeBuiltSpecStandsForTheStandardComposition) {
  ChipSpec spec;
  spec.tensorcores = 2;
  spec.mxu.per_core = 4;
  spec.cmem.capacity = MiB(128);
  const ChipSpec composed = standard_composition(spec);
  ASSERT_EQ(composed.composition.blocks.size(), 9u);
  EXPECT_EQ(composed.composition.blocks[0].count, 2);
  EXPECT_EQ(composed.composition.blocks[1].count, 4);
  EXPECT_TRUE(has_path(spec, BlockKind::dma, BlockKind::cmem));
  EXPECT_TRUE(has_path(spec, BlockKind::mxu, BlockKind::vpu));
  EXPECT_FALSE(has_path(spec, BlockKind::sparsecore, BlockKind::hbm));
  spec.cmem.capacity = Bytes(0);
  EXPECT_FALSE(has_path(spec, BlockKind::dma, BlockKind::cmem));
}

TEST(ChipComposition, EveryKindIsCataloguedInOrderWithAFieldTable) {
  ASSERT_EQ(block_kinds().size(), static_cast<std::size_t>(kBuiltInBlockKinds));
  for (std::size_t i = 0; i < block_kinds().size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(block_kinds()[i].kind), i);
    EXPECT_NE(block_kinds()[i].fields, nullptr);
  }
  EXPECT_EQ(port_to(BlockKind::dma, BlockKind::hbm)->name, "memory");
  EXPECT_EQ(port_to(BlockKind::mxu, BlockKind::vpu)->name, "results");
  EXPECT_EQ(port_to(BlockKind::hbm, BlockKind::dma), nullptr);
}

}  // namespace
}  // namespace tpusim
