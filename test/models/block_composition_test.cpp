// Chips built from their composition: a memory model replaced by another behind the same TLM interface (the
// DMA engine unchanged), the memories' bandwidth schedulers, a what-if chip composed from YAML with an extra
// block and a rewired path, and the module tree the elaborator builds. One simulation per test process
// (comparison runs are forked).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "block/registry.h"
#include "chip/simulate_with_blocks.h"
#include "memory/transfer.h"
#include "pod.h"
#include "support/in_child.h"
#include "test_chips.h"
#include "tpusim/core/chip_blocks.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {
namespace {

using testing::dma;
using testing::matmul;
using testing::scenario_for;
using testing::single;
using testing::v4_like;

using testing::kPicosecond;

// ---- a memory model of the test's own: every transfer on a bank of its own -----------------------------

// What the test memory saw, for the assertions.
struct Seen {
  int requests = 0;
  int writes = 0;
  std::uint64_t bytes = 0;
  std::vector<int> engines;
};

// A memory with unlimited banks: each transfer finishes `latency` + bytes / `bandwidth` after it arrives,
// whatever else is in flight. It shares no code with MemoryBlock: only the TLM target socket, the protocol of
// memory/transfer.h and the Block hooks through which the chip drives time.
class BankedMemory final : public Block, public MemoryTarget {
 public:
  tlm_utils::multi_passthrough_target_socket<BankedMemory> socket;

  BankedMemory(const sc_core::sc_module_name& name, const BlockBuild& b, Seen& seen)
      : Block(name, b.block.kind, b.block.name, 0), socket("socket"), spec_(b.chip.spec.hbm), seen_(seen) {
    socket.register_nb_transport_fw(this, &BankedMemory::nb_transport_fw);
  }

  [[nodiscard]] ir::Memory memory() const override { return ir::Memory::hbm; }
  [[nodiscard]] BytesPerSecond nominal_bandwidth() const override { return spec_.bandwidth; }
  [[nodiscard]] int memory_instance() const override { return 0; }
  [[nodiscard]] TargetSocket& target_socket() override { return socket; }
  // A transfer a slower memory timed: the test memory keeps no statistics but what it served (seen_).
  void count_transfer(const Transfer& /*t*/) override {}

  void advance(Tick now) override {
    for (auto it = pending_.begin(); it != pending_.end() && it->first <= now;) {
      tlm::tlm_phase phase = tlm::BEGIN_RESP;
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      it->second.gp->set_response_status(tlm::TLM_OK_RESPONSE);
      socket[it->second.socket]->nb_transport_bw(*it->second.gp, phase, delay);
      it = pending_.erase(it);
    }
  }
  [[nodiscard]] Tick next_event(Tick /*now*/) const override {
    return pending_.empty() ? kNever : pending_.begin()->first;
  }

 private:
  struct Request {
    tlm::tlm_generic_payload* gp;
    int socket;
  };
  tlm::tlm_sync_enum nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& /*phase*/,
                                     sc_core::sc_time& /*delay*/) {
    const Transfer& t = *gp.get_extension<Transfer>();
    ++seen_.requests;
    seen_.writes += gp.is_write() ? 1 : 0;
    seen_.bytes += t.bytes;
    seen_.engines.push_back(t.engine);
    const Tick now = sc_core::sc_time_stamp().value();
    const Tick done = now + to_ticks(spec_.latency) + ceil_ticks(t.volume / spec_.bandwidth.value() * kTicksPerSecond);
    pending_.emplace(done, Request{&gp, id});
    return tlm::TLM_ACCEPTED;
  }

  const HbmSpec& spec_;
  Seen& seen_;
  std::multimap<Tick, Request> pending_;
};

// Each TensorCore's DMA queue loads `bytes` from HBM at t = 0.
ir::ProgramSet two_loads(std::uint64_t bytes) {
  ir::Program p("two-loads");
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, bytes, 0), {}, "load.core0");
  p.add(dma(ir::Memory::hbm, ir::Memory::vmem, bytes, 1), {}, "load.core1");
  return single(std::move(p));
}

// v4-like with one HBM channel (no striping caps) at 100% efficiency: B = 1200 GB/s, latency 500 ns.
ChipSpec one_channel() {
  ChipSpec chip = v4_like();
  chip.hbm.channels = 1;
  return chip;
}

constexpr std::uint64_t kLoad = 12'000'000;  // 10 us at 1200 GB/s

TEST(BlockComposition, AnotherMemoryModelBehindTheSameInterfaceServesTheUnchangedDmaEngine) {
  const ChipSpec chip = one_channel();
  const Scenario s = scenario_for(chip);
  // The bundled HBM shares its bandwidth: both loads end at latency + 2 S / B.
  const double shared = tpusim::testing::in_child<double>(
      [&] { return simulate(s, two_loads(kLoad), {}).step_time.value(); }, -1.0);
  EXPECT_NEAR(shared, 500e-9 + 2 * kLoad / 1200e9, 2 * kPicosecond);

  // The same chip with the test's memory registered for the hbm kind: each load has a bank of its own.
  static Seen seen;
  BlockRegistry registry;
  register_chip_blocks(registry);
  registry.add(BlockKind::hbm, [](const BlockBuild& b) -> std::unique_ptr<Block> {
    return std::make_unique<BankedMemory>(b.block.name.c_str(), b, seen);
  });
  const SimResult r = simulate_with_blocks(s, two_loads(kLoad), {}, registry);
  EXPECT_NEAR(r.step_time.value(), 500e-9 + kLoad / 1200e9, kPicosecond);
  EXPECT_EQ(seen.requests, 2);
  EXPECT_EQ(seen.writes, 0);  // HBM -> VMEM reads HBM
  EXPECT_EQ(seen.bytes, 2 * kLoad);
  EXPECT_EQ(seen.engines, (std::vector<int>{0, 1}));  // one descriptor queue per TensorCore
  EXPECT_EQ(r.traffic.dma_bytes.count(), 2 * kLoad);
  EXPECT_EQ(r.traffic.hbm_read.count(), 0u);  // the statistics of a memory are its own: the test memory keeps none
}

// ---- bandwidth schedulers (chip.hbm.scheduler) ---------------------------------------------------------------

struct Ends {
  double first = -1, second = -1;
};

Ends load_ends(const ChipSpec& chip) {
  std::vector<double> ends;
  SimOptions options;
  options.trace = [&ends](const TraceSpan& span) { ends.push_back(span.end.value()); };
  const SimResult r = simulate(scenario_for(chip), two_loads(kLoad), options);
  EXPECT_EQ(ends.size(), 2u);
  std::sort(ends.begin(), ends.end());
  return ends.size() == 2 ? Ends{ends[0], ends[1]} : Ends{};
}

TEST(BlockComposition, AFifoHbmServesOneTransferAtATimeWhereTheSharedOneSplitsItsBandwidth) {
  ChipSpec chip = one_channel();
  const Ends shared = tpusim::testing::in_child<Ends>([&] { return load_ends(chip); }, Ends{});
  EXPECT_NEAR(shared.first, 500e-9 + 2 * kLoad / 1200e9, 2 * kPicosecond);
  EXPECT_NEAR(shared.second, 500e-9 + 2 * kLoad / 1200e9, 2 * kPicosecond);

  chip.hbm.scheduler = MemoryScheduler::fifo;
  const Ends fifo = load_ends(chip);
  EXPECT_NEAR(fifo.first, 500e-9 + kLoad / 1200e9, 2 * kPicosecond);
  EXPECT_NEAR(fifo.second, 500e-9 + 2 * kLoad / 1200e9, 2 * kPicosecond);
}

// ---- a what-if chip composed in YAML ---------------------------------------------------------------------------

// A v5e-like chip (one TensorCore, no CMEM), with an extra CMEM block and the DMA engine rewired to reach it.
// HBM is slow enough that the GEMM below is bound by it.
std::string whatif_chip(bool with_cmem, bool drain_through_vpu) {
  std::string text = R"(name: whatif
generation: v5e
clock: 1.5 GHz
peak_bf16: 196.608 TFLOP/s
tensorcore: {kind: tensorcore, count: 1}
mxu: {kind: mxu, count: 4, rows: 128, cols: 128}
vpu: {kind: vpu, lanes: 128, sublanes: 8}
vmem: {kind: vmem, capacity: 128 MiB, bandwidth: 12288 GB/s}
hbm: {kind: hbm, capacity: 16 GB, bandwidth: 200 GB/s, latency: 500 ns}
dma: {kind: dma}
ici: {kind: ici, links: 4, link_bandwidth: 50 GB/s, hop_latency: 1 us}
host: {kind: host, chips_per_host: 8, pcie_bandwidth: 16 GB/s}
paths: [dma -> vmem, dma -> hbm, dma -> host)";
  if (drain_through_vpu) text += ", mxu -> vpu";
  if (with_cmem) text += ", dma -> cmem]\ncmem: {kind: cmem, capacity: 64 MiB, bandwidth: 1 TB/s}\n";
  else text += "]\n";
  return text;
}

ChipSpec resolved(const std::string& text) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string(text, "whatif.yaml", diags);
  ChipSpec chip = resolve_chip(root, "chip", diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return chip;
}

constexpr std::int64_t kGemmM = 8192, kGemmK = 2048, kGemmN = 2048;

struct GemmRun {
  double step = -1;
  std::uint64_t hbm_read = 0;
  bool staged = false;
};

GemmRun run_gemm(const ChipSpec& chip) {
  ir::Program p("gemm");
  const kernels::GemmLowering g = kernels::lower_gemm(p, chip, kGemmM, kGemmK, kGemmN, DType::bf16, {}, "gemm");
  const SimResult r = simulate(scenario_for(chip), single(std::move(p)), {});
  return GemmRun{r.step_time.value(), r.traffic.hbm_read.count(), g.weights_in_cmem};
}

TEST(BlockComposition, AWhatIfChipWithAnExtraCmemBlockAndAPathToItIsSimulatedWithThem) {
  const ChipSpec plain = resolved(whatif_chip(false, true));
  const ChipSpec with_cmem = resolved(whatif_chip(true, true));
  ASSERT_TRUE(has_path(with_cmem, BlockKind::dma, BlockKind::cmem));
  const GemmRun without = tpusim::testing::in_child<GemmRun>([&] { return run_gemm(plain); }, GemmRun{});
  EXPECT_FALSE(without.staged);
  ASSERT_GT(without.step, 0);

  const GemmRun r = run_gemm(with_cmem);
  EXPECT_TRUE(r.staged);
  const kernels::GemmTiling t = kernels::tile_gemm(with_cmem, kGemmM, kGemmK, kGemmN, DType::bf16);
  const auto row_tiles = static_cast<std::uint64_t>((kGemmM + t.tm - 1) / t.tm);
  const auto col_tiles = static_cast<std::uint64_t>((kGemmN + t.tn - 1) / t.tn);
  ASSERT_GT(row_tiles, 1u);
  const std::uint64_t a = kGemmM * kGemmK * 2, b = kGemmK * kGemmN * 2;
  // Closed forms: A is read once per column of C tiles; B ceil(m / tm) times from HBM, or once into CMEM.
  EXPECT_EQ(without.hbm_read, a * col_tiles + b * row_tiles);
  EXPECT_EQ(r.hbm_read, a * col_tiles + b);
  EXPECT_LT(r.step, without.step);
}

TEST(BlockComposition, WithoutAPathFromTheMxuToTheVpuMatmulResultsDoNotOccupyTheVpu) {
  // One matmul of 1024 x 512 x 1024 on the what-if chip: the VPU pops its 1024 x 1024 results in
  // 1024^2 / (128 x 8) = 1024 cycles when the path mxu -> vpu drains the MXU into it.
  const auto one_matmul = [] {
    ir::Program p("mm");
    p.add(matmul(0, 1024, 512, 1024), {}, "mm");
    return single(std::move(p));
  };
  const ChipSpec drained = resolved(whatif_chip(false, true));
  const double drained_vpu = tpusim::testing::in_child<double>(
      [&] { return simulate(scenario_for(drained), one_matmul(), {}).unit(HwUnit::vpu).busy.value(); }, -1.0);
  EXPECT_NEAR(drained_vpu, 1024 / 1.5e9, kPicosecond);

  const ChipSpec bypass = resolved(whatif_chip(false, false));
  const SimResult r = simulate(scenario_for(bypass), one_matmul(), {});
  EXPECT_EQ(r.unit(HwUnit::vpu).busy.value(), 0.0);
  const auto df = make_mxu_dataflow(bypass.mxu.dataflow);
  EXPECT_NEAR(r.step_time.value(),
              static_cast<double>(matmul_cycles(*df, bypass.mxu, MatmulShape{1024, 512, 1024}, DType::bf16)) / 1.5e9,
              kPicosecond);
}

TEST(BlockComposition, AProgramThatNeedsAPathTheChipLacksFailsNamingTheInstruction) {
  std::string text = whatif_chip(false, true);
  text.replace(text.find(", dma -> host"), 13, "");
  const ChipSpec chip = resolved(text);
  ir::Program p("outfeed");
  p.add(dma(ir::Memory::hbm, ir::Memory::host, 4096), {}, "to.host");
  try {
    (void)simulate(scenario_for(chip), single(std::move(p)), {});
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.instruction(), 0u);
    EXPECT_EQ(e.label(), "to.host");
    EXPECT_NE(std::string(e.what()).find("no path dma -> host"), std::string::npos) << e.what();
  }
}

// ---- the module tree ---------------------------------------------------------------------------------------------

TEST(BlockComposition, TheElaboratorBuildsTheBlocksTheProgramReachesAsAModuleTree) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const Scenario s = scenario_for(v4_like(), {2});
  ir::Program compute("compute");
  compute.add(dma(ir::Memory::hbm, ir::Memory::cmem, 4096), {}, "stage");
  compute.add(matmul(1, 128, 128, 128), {}, "mm");
  ir::Program collective("collective");
  ir::Instruction ar;
  ar.kind = ir::OpKind::collective;
  ar.bytes = 4096;
  collective.add(ar, {}, "allreduce");
  ir::ProgramSet programs;
  programs.programs.push_back(std::move(compute));
  programs.programs.push_back(std::move(collective));
  programs.role_of_chip = {0, 1};
  RunControl control({}, {}, 2);
  BlockRegistry registry;
  register_chip_blocks(registry);
  Pod pod("pod", s, programs, control, net::InterconnectOptions{}, registry);
  const auto exists = [](const char* name) { return sc_core::sc_find_object(name) != nullptr; };
  // chip0 runs the DMA and the matmul: both TensorCores (the matmul's core 1), their MXU and the VPU that
  // drains it, the DMA engine and the two memories it touches; no VMEM (nothing allocates it), no host, no ICI.
  for (const char* name : {"pod.chip0.tensorcore0.mxu", "pod.chip0.tensorcore1.mxu", "pod.chip0.tensorcore1.vpu",
                           "pod.chip0.dma", "pod.chip0.hbm", "pod.chip0.cmem", "pod.chip0.dma.socket",
                           "pod.chip0.hbm.socket", "pod.chip0.tensorcore1.mxu.results"}) {
    EXPECT_TRUE(exists(name)) << name;
  }
  for (const char* name : {"pod.chip0.tensorcore0.vmem", "pod.chip0.host", "pod.chip0.ici", "pod.chip1.dma",
                           "pod.chip1.tensorcore0.mxu"}) {
    EXPECT_FALSE(exists(name)) << name;
  }
  // The collective's chip: its ICI ports and the VPUs its reductions reserve (ici/chip_port.h), no MXU.
  EXPECT_TRUE(exists("pod.chip1.ici"));
  EXPECT_TRUE(exists("pod.chip1.tensorcore0.vpu"));
}

}  // namespace
}  // namespace tpusim::models
