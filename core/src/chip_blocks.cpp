// The block kinds and their parameters (contract in chip_blocks.h). Each parameter is declared once here, with
// its unit, default and meaning; defaults that are assumptions say so and why.
#include "tpusim/core/chip_blocks.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim {
namespace {

using S = ChipSpec;

FieldTable<ChipSpec> no_fields() { return {}; }

FieldTable<ChipSpec> mxu_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("rows", [](S& s) -> int& { return s.mxu.rows; }, std::nullopt, "systolic array rows", at_least(1));
  t.add<int>("cols", [](S& s) -> int& { return s.mxu.cols; }, std::nullopt, "systolic array columns", at_least(1));
  t.add_choice<MxuDataflow>("dataflow", [](S& s) -> MxuDataflow& { return s.mxu.dataflow; },
                            {{"weight_stationary", MxuDataflow::weight_stationary},
                             {"output_stationary", MxuDataflow::output_stationary}},
                            "weight_stationary", "systolic dataflow");
  t.add<double>("int8_rate", [](S& s) -> double& { return s.mxu.int8_rate; }, "0",
                "int8 MACs per cycle relative to bf16 (0 = unsupported)", non_negative<double>());
  t.add<double>("fp8_rate", [](S& s) -> double& { return s.mxu.fp8_rate; }, "0",
                "fp8 MACs per cycle relative to bf16 (0 = unsupported)", non_negative<double>());
  t.add<Seconds>("step_overhead", [](S& s) -> Seconds& { return s.mxu.step_overhead; },
                 format_time(Seconds(kMxuStepOverheadSeconds)),
                 "MXU idle time between two back-to-back matmul instructions, the per-step bookkeeping of a "
                 "tiled kernel (calibrated assumption: JAX Pallas docs' ~0.35 us per grid step, chip_spec.h)",
                 non_negative<Seconds>());
  return t;
}

FieldTable<ChipSpec> vpu_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("lanes", [](S& s) -> int& { return s.vpu.lanes; }, std::nullopt, "vector lanes", at_least(1));
  t.add<int>("sublanes", [](S& s) -> int& { return s.vpu.sublanes; }, std::nullopt, "vector sublanes", at_least(1));
  t.add<int>("alus", [](S& s) -> int& { return s.vpu.alus; }, "1", "ALUs per lane-sublane", at_least(1));
  t.add<double>("transcendental_rate", [](S& s) -> double& { return s.vpu.transcendental_rate; }, "0.25",
                "transcendental throughput relative to elementwise (assumption)", fraction());
  t.add<double>("result_pops_per_cycle", [](S& s) -> double& { return s.vpu.result_pops_per_cycle; }, "1",
                "vector registers of MXU results (lanes x sublanes f32 values) the VPU pops per cycle; a matmul "
                "of m x n outputs takes ceil(m*n / (lanes*sublanes*this)) VPU cycles when a path mxu -> vpu "
                "drains the MXU into this VPU (assumption: one per cycle, not published)",
                positive<double>());
  return t;
}

void add_scheduler(FieldTable<ChipSpec>& t, std::function<MemoryScheduler&(S&)> access) {
  t.add_choice<MemoryScheduler>("scheduler", std::move(access),
                                {{"shared", MemoryScheduler::shared}, {"fifo", MemoryScheduler::fifo}}, "shared",
                                "how the transfers in flight share the bandwidth: shared (engines with work split "
                                "it equally, each engine's transfers in issue order) or fifo (one transfer at a "
                                "time, in arrival order)");
}

FieldTable<ChipSpec> vmem_fields() {
  FieldTable<ChipSpec> t;
  t.add<Bytes>("capacity", [](S& s) -> Bytes& { return s.vmem.capacity; }, std::nullopt,
               "vector memory (unified buffer) per TensorCore", positive<Bytes>());
  t.add<BytesPerSecond>("bandwidth", [](S& s) -> BytesPerSecond& { return s.vmem.bandwidth; }, std::nullopt,
                        "VMEM bandwidth to the MXUs and VPU per TensorCore (also the rate of VMEM -> VMEM copies)",
                        positive<BytesPerSecond>());
  t.add<Bytes>("scoped_limit", [](S& s) -> Bytes& { return s.vmem.scoped_limit; }, "0 B",
               "XLA's scoped VMEM limit (--xla_tpu_scoped_vmem_limit_kib): the most VMEM one instruction's "
               "double-buffered tiles may take, so it caps the GEMM, attention and vector-pass tiles (a limit above "
               "their shares of capacity does not bind; one written above the capacity is refused); 0 = no "
               "compiler limit",
               non_negative<Bytes>());
  add_scheduler(t, [](S& s) -> MemoryScheduler& { return s.vmem.scheduler; });
  return t;
}

FieldTable<ChipSpec> cmem_fields() {
  FieldTable<ChipSpec> t;
  t.add<Bytes>("capacity", [](S& s) -> Bytes& { return s.cmem.capacity; }, std::nullopt,
               "common memory per chip, between HBM and VMEM (v4)", positive<Bytes>());
  t.add<BytesPerSecond>("bandwidth", [](S& s) -> BytesPerSecond& { return s.cmem.bandwidth; }, std::nullopt,
                        "CMEM bandwidth", positive<BytesPerSecond>());
  add_scheduler(t, [](S& s) -> MemoryScheduler& { return s.cmem.scheduler; });
  return t;
}

FieldTable<ChipSpec> hbm_fields() {
  FieldTable<ChipSpec> t;
  t.add<Bytes>("capacity", [](S& s) -> Bytes& { return s.hbm.capacity; }, std::nullopt, "HBM per chip",
               positive<Bytes>());
  t.add<BytesPerSecond>("bandwidth", [](S& s) -> BytesPerSecond& { return s.hbm.bandwidth; }, std::nullopt,
                        "HBM peak bandwidth per chip", positive<BytesPerSecond>());
  t.add<Seconds>("latency", [](S& s) -> Seconds& { return s.hbm.latency; }, std::nullopt,
                 "HBM access latency seen by a transfer that reads HBM", non_negative<Seconds>());
  t.add<double>("efficiency", [](S& s) -> double& { return s.hbm.efficiency; }, fmt::format("{}", kHbmEfficiency),
                "achievable fraction of peak bandwidth for long single-direction streams (calibrated assumption: "
                "refresh and row activations, chip_spec.h)",
                fraction());
  t.add<double>("turnaround", [](S& s) -> double& { return s.hbm.turnaround; }, fmt::format("{}", kHbmTurnaround),
                "fraction of bandwidth lost while reads and writes are both in flight, e.g. a copy (bus "
                "turnarounds; calibrated on measurement C2's copy, chip_spec.h); 0 = none",
                [](const double& v) { return v >= 0 && v < 1 ? std::string() : std::string("in [0, 1)"); });
  t.add<int>("channels", [](S& s) -> int& { return s.hbm.channels; }, "1",
             "HBM channels per chip, each 1/channels of the bandwidth; a transfer is striped over "
             "min(channels, ceil(bytes / 256 B)) of them (timing.h)",
             at_least(1));
  add_scheduler(t, [](S& s) -> MemoryScheduler& { return s.hbm.scheduler; });
  return t;
}

FieldTable<ChipSpec> dma_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("outstanding", [](S& s) -> int& { return s.dma.outstanding; }, "8",
             "DMA transfers in flight per descriptor queue; one queue per TensorCore (assumption)", at_least(1));
  t.add<double>("strided_efficiency", [](S& s) -> double& { return s.dma.strided_efficiency; }, "1",
                "fraction of path bandwidth a strided DMA achieves (assumption: tile rows of >= 512 B fill whole "
                "HBM bursts)",
                fraction());
  t.add<double>("gather_efficiency", [](S& s) -> double& { return s.dma.gather_efficiency; }, "0.5",
                "fraction of path bandwidth a gather DMA achieves (assumption: rows of a few hundred bytes, about "
                "half of each burst used)",
                fraction());
  return t;
}

FieldTable<ChipSpec> ici_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("links", [](S& s) -> int& { return s.ici.links; }, std::nullopt,
             "ICI ports per chip; a slice cables at most two per axis of its shape: fewer is refused, more are idle "
             "(a run notes ports the user wrote beyond them)",
             at_least(0));
  t.add<BytesPerSecond>("link_bandwidth", [](S& s) -> BytesPerSecond& { return s.ici.link_bandwidth; },
                        std::nullopt, "ICI bandwidth per link, one direction", positive<BytesPerSecond>());
  t.add<Seconds>("hop_latency", [](S& s) -> Seconds& { return s.ici.hop_latency; }, std::nullopt,
                 "ICI latency per hop", non_negative<Seconds>());
  t.add<double>("link_efficiency", [](S& s) -> double& { return s.ici.link_efficiency; },
                fmt::format("{}", kIciLinkEfficiency),
                "achievable fraction of ici.link_bandwidth after link-layer framing and flow control (calibrated "
                "on measurement C1's plateau, chip_spec.h)",
                fraction());
  return t;
}

FieldTable<ChipSpec> host_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("chips_per_host", [](S& s) -> int& { return s.host.chips_per_host; }, std::nullopt,
             "chips attached to one host", at_least(1));
  t.add<BytesPerSecond>("pcie_bandwidth", [](S& s) -> BytesPerSecond& { return s.host.pcie_bandwidth; },
                        std::nullopt, "host<->chip PCIe bandwidth per chip, each direction",
                        positive<BytesPerSecond>());
  t.add<BytesPerSecond>("dcn_bandwidth", [](S& s) -> BytesPerSecond& { return s.host.dcn_bandwidth; }, "0 B/s",
                        "data-center network bandwidth per chip (between pods)", non_negative<BytesPerSecond>());
  t.add<Bytes>("memory_per_chip", [](S& s) -> Bytes& { return s.host.memory_per_chip; }, "0 B",
               "host DRAM per chip (the host's DRAM over chips_per_host), which holds the activations a remat "
               "policy offloads; 0 = unknown: offloading is refused");
  t.add<Seconds>("round_trip", [](S& s) -> Seconds& { return s.host.round_trip; }, "20 us",
                 "one host sync: the host waits for the chip and answers (assumption: PCIe round trip plus runtime "
                 "overhead, tens of us; not published)",
                 non_negative<Seconds>());
  t.add<BytesPerSecond>("storage_bandwidth", [](S& s) -> BytesPerSecond& { return s.host.storage_bandwidth; },
                        "1 GB/s",
                        "checkpoint write bandwidth from one host to storage (assumption: one VM's share of a "
                        "distributed file system; not published)",
                        positive<BytesPerSecond>());
  return t;
}

FieldTable<ChipSpec> sparsecore_fields() {
  FieldTable<ChipSpec> t;
  t.add<int>("tiles", [](S& s) -> int& { return s.sparsecore.tiles; }, std::nullopt,
             "compute tiles per SparseCore, each fetching table rows on its own", at_least(1));
  t.add<int>("lanes", [](S& s) -> int& { return s.sparsecore.lanes; }, std::nullopt,
             "SIMD lanes per tile: values a tile adds into its pooled outputs per cycle", at_least(1));
  return t;
}

// The HBM access granularity a SparseCore fetches rows in is a property of the memory (JEDEC HBM2 JESD235: 32
// bytes per access, a 64-bit pseudo-channel burst of 4 or a 128-bit channel burst of 2); it lives in timing.h.

std::vector<BlockKindInfo> make_catalogue() {
  static const FieldTable<ChipSpec> none = no_fields(), mxu = mxu_fields(), vpu = vpu_fields(),
                                    vmem = vmem_fields(), cmem = cmem_fields(), hbm = hbm_fields(),
                                    dma = dma_fields(), ici = ici_fields(), host = host_fields(),
                                    sparsecore = sparsecore_fields();
  using K = BlockKind;
  const std::vector<BlockKind> memories{K::vmem, K::cmem, K::hbm, K::host};
  std::vector<BlockKindInfo> kinds{
      {K::tensorcore, "tensorcore",
       "a TensorCore: runs its MXU, VPU and DMA queues of the program; count = TensorCores per chip",
       BlockScope::chip, true, 1, kMaxTensorCores, {}, &none, "runs its MXU, VPU and DMA queues"},
      {K::mxu, "mxu", "the systolic arrays of a TensorCore (a matmul's tiles go round-robin over them); count = "
       "MXUs per TensorCore", BlockScope::tensorcore, true, 1, 64,
       {{"results", "the unit that pops the matmul results (occupying it for result_pop_cycles)", {K::vpu}, {}},
        {"memory", "the memory a fused matmul's operands stream from and its results to (kernels/program.h)",
         {K::hbm}, {}}},
       &mxu, "{rows} x {cols} systolic arrays, {dataflow}"},
      {K::vpu, "vpu", "the vector unit of a TensorCore", BlockScope::tensorcore, true, 1, 1,
       {{"memory", "the memory a fused vector op's operands stream from and its results to (kernels/program.h)",
         {K::hbm}, {}}},
       &vpu, "{lanes} lanes x {sublanes} sublanes x {alus} ALUs"},
      {K::vmem, "vmem", "the vector memory (unified buffer) of a TensorCore: capacity is enforced, bandwidth "
       "bounds matmul and vector operands and VMEM -> VMEM copies", BlockScope::tensorcore, true, 1, 1, {}, &vmem,
       "{capacity} at {bandwidth}, {scheduler} scheduler"},
      {K::cmem, "cmem", "common memory shared by the TensorCores, between HBM and VMEM (v4)", BlockScope::chip,
       false, 0, 1, {}, &cmem, "{capacity} at {bandwidth}, {scheduler} scheduler"},
      {K::hbm, "hbm", "high-bandwidth memory", BlockScope::chip, true, 1, 1, {}, &hbm,
       "{capacity} at {bandwidth}, {channels} channels, {latency} read latency, {scheduler} scheduler"},
      {K::dma, "dma", "the DMA engine: one descriptor queue per TensorCore moving data between the memories it "
       "reaches", BlockScope::chip, true, 1, 1,
       {{"memory", "a memory its transfers read or write", memories, {K::hbm, K::vmem}}}, &dma,
       "{outstanding} transfers in flight per TensorCore queue"},
      {K::host, "host", "the host CPU and its PCIe link: host work (infeed, checkpoints, syncs) and host memory "
       "for DMAs", BlockScope::chip, true, 1, 1, {}, &host,
       "PCIe {pcie_bandwidth} each way, {chips_per_host} chips per host"},
      {K::ici, "ici", "the chip's ICI ports into the pod's interconnect", BlockScope::chip, true, 1, 1, {}, &ici,
       "{links} links x {link_bandwidth} one way, {hop_latency} per hop"},
      {K::sparsecore, "sparsecore", "SparseCores: embedding-table gathers and pooling beside the TensorCores "
       "(v4, v5p, v6e); count = SparseCores per chip", BlockScope::chip, false, 0, 64,
       {{"memory", "the memory holding the embedding tables: HBM, where the lowering places them", {K::hbm, K::cmem},
         {K::hbm}}},
       &sparsecore,
       "{tiles} tiles x {lanes} lanes each"},
  };
  kinds[static_cast<std::size_t>(K::tensorcore)].count_member = [](ChipSpec& s) -> int& { return s.tensorcores; };
  kinds[static_cast<std::size_t>(K::mxu)].count_member = [](ChipSpec& s) -> int& { return s.mxu.per_core; };
  kinds[static_cast<std::size_t>(K::sparsecore)].count_member = [](ChipSpec& s) -> int& { return s.sparsecore.count; };
  return kinds;
}

// The catalogue: the built-in kinds, then the added ones; `generation` counts the changes.
struct BlockCatalogue {
  std::vector<BlockKindInfo> kinds = [] {
    auto k = make_catalogue();
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (static_cast<std::size_t>(k[i].kind) != i) throw std::logic_error("block catalogue out of BlockKind order");
    }
    return k;
  }();
  int generation = 0;
};

BlockCatalogue& catalogue() {
  static BlockCatalogue c;
  return c;
}

}  // namespace

const std::vector<BlockKindInfo>& block_kinds() { return catalogue().kinds; }

int block_catalogue_generation() { return catalogue().generation; }

BlockKind add_block_kind(BlockKindInfo info) {
  BlockCatalogue& c = catalogue();
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("add_block_kind {}: {}", info.name, why));
  };
  if (info.name.empty()) throw bad("a block kind with no name");
  if (std::any_of(c.kinds.begin(), c.kinds.end(), [&](const BlockKindInfo& k) { return k.name == info.name; })) {
    throw bad("the catalogue has a kind of that name");
  }
  if (info.fields == nullptr) throw bad("no field table (an empty one for a kind without parameters)");
  if (info.min_count < 0 || info.max_count < std::max(info.min_count, 1)) throw bad("an empty count range");
  for (const BlockPort& p : info.ports) {
    const auto known = [&](BlockKind k) { return static_cast<std::size_t>(k) < c.kinds.size(); };
    if (!std::all_of(p.accepts.begin(), p.accepts.end(), known) ||
        !std::all_of(p.required.begin(), p.required.end(), known)) {
      throw bad("a port reaches a kind the catalogue lacks");
    }
  }
  if (c.kinds.size() >= static_cast<std::size_t>(kMaxBlockKinds)) throw bad("the catalogue is full");
  info.kind = static_cast<BlockKind>(c.kinds.size());
  c.kinds.push_back(std::move(info));
  ++c.generation;
  return c.kinds.back().kind;
}

bool remove_block_kind(std::string_view name) {
  BlockCatalogue& c = catalogue();
  if (c.kinds.size() <= static_cast<std::size_t>(kBuiltInBlockKinds) || c.kinds.back().name != name) return false;
  c.kinds.pop_back();
  ++c.generation;
  return true;
}

const BlockKindInfo& block_kind(BlockKind kind) { return block_kinds()[static_cast<std::size_t>(kind)]; }

std::string_view block_kind_name(BlockKind kind) { return block_kind(kind).name; }

const BlockPort* port_to(BlockKind from, BlockKind to) {
  for (const BlockPort& p : block_kind(from).ports) {
    if (std::find(p.accepts.begin(), p.accepts.end(), to) != p.accepts.end()) return &p;
  }
  return nullptr;
}

}  // namespace tpusim
