#include "tpusim/core/chip_spec.h"

#include <cmath>

#include <fmt/format.h>

namespace tpusim {

const FieldTable<ChipSpec>& chip_fields() {
  using S = ChipSpec;
  static const FieldTable<ChipSpec> table = [] {
    FieldTable<ChipSpec> t;
    t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, std::nullopt, "chip name");
    t.add<std::string>("generation", [](S& s) -> std::string& { return s.generation; }, std::nullopt,
                       "TPU generation (v2, v3, v4, v5e, v5p, v6e)");
    t.add<int>("tensorcores", [](S& s) -> int& { return s.tensorcores; }, std::nullopt, "TensorCores per chip",
               at_least(1));
    t.add<Hertz>("clock", [](S& s) -> Hertz& { return s.clock; }, std::nullopt, "core clock", positive<Hertz>());
    t.add<FlopsPerSecond>("peak_bf16", [](S& s) -> FlopsPerSecond& { return s.peak_bf16; }, std::nullopt,
                          "published peak bf16 rate per chip", positive<FlopsPerSecond>());
    t.add<FlopsPerSecond>("peak_int8", [](S& s) -> FlopsPerSecond& { return s.peak_int8; }, "0 TOP/s",
                          "published peak int8 rate per chip; 0 = no int8 path");
    t.add<int>("mxu.per_core", [](S& s) -> int& { return s.mxu.per_core; }, std::nullopt,
               "MXUs per TensorCore", at_least(1));
    t.add<int>("mxu.rows", [](S& s) -> int& { return s.mxu.rows; }, std::nullopt, "systolic array rows",
               at_least(1));
    t.add<int>("mxu.cols", [](S& s) -> int& { return s.mxu.cols; }, std::nullopt, "systolic array columns",
               at_least(1));
    t.add_choice<MxuDataflow>("mxu.dataflow", [](S& s) -> MxuDataflow& { return s.mxu.dataflow; },
                              {{"weight_stationary", MxuDataflow::weight_stationary},
                               {"output_stationary", MxuDataflow::output_stationary}},
                              "weight_stationary", "systolic dataflow");
    t.add<double>("mxu.int8_rate", [](S& s) -> double& { return s.mxu.int8_rate; }, "0",
                  "int8 MACs per cycle relative to bf16 (0 = unsupported)", non_negative<double>());
    t.add<double>("mxu.fp8_rate", [](S& s) -> double& { return s.mxu.fp8_rate; }, "0",
                  "fp8 MACs per cycle relative to bf16 (0 = unsupported)", non_negative<double>());
    t.add<Seconds>("mxu.step_overhead", [](S& s) -> Seconds& { return s.mxu.step_overhead; },
                   format_time(Seconds(kMxuStepOverheadSeconds)),
                   "MXU idle time between two back-to-back matmul instructions, the per-step bookkeeping of a "
                   "tiled kernel (calibrated assumption: JAX Pallas docs' ~0.35 us per grid step, chip_spec.h)",
                   non_negative<Seconds>());
    t.add<int>("vpu.lanes", [](S& s) -> int& { return s.vpu.lanes; }, std::nullopt, "vector lanes", at_least(1));
    t.add<int>("vpu.sublanes", [](S& s) -> int& { return s.vpu.sublanes; }, std::nullopt, "vector sublanes",
               at_least(1));
    t.add<int>("vpu.alus", [](S& s) -> int& { return s.vpu.alus; }, "1", "ALUs per lane-sublane", at_least(1));
    t.add<double>("vpu.transcendental_rate", [](S& s) -> double& { return s.vpu.transcendental_rate; }, "0.25",
                  "transcendental throughput relative to elementwise (assumption)", fraction());
    t.add<double>("vpu.result_pops_per_cycle", [](S& s) -> double& { return s.vpu.result_pops_per_cycle; }, "1",
                  "vector registers of MXU results (lanes x sublanes f32 values) the VPU pops per cycle; a matmul "
                  "of m x n outputs takes ceil(m*n / (lanes*sublanes*this)) VPU cycles (assumption: one per "
                  "cycle, not published)",
                  positive<double>());
    t.add<Bytes>("vmem.capacity", [](S& s) -> Bytes& { return s.vmem.capacity; }, std::nullopt,
                 "vector memory (unified buffer) per TensorCore", positive<Bytes>());
    t.add<BytesPerSecond>("vmem.bandwidth", [](S& s) -> BytesPerSecond& { return s.vmem.bandwidth; },
                          std::nullopt, "VMEM bandwidth to the MXUs and VPU per TensorCore",
                          positive<BytesPerSecond>());
    t.add<Bytes>("cmem.capacity", [](S& s) -> Bytes& { return s.cmem.capacity; }, "0 B",
                 "common memory per chip (v4); 0 = none", non_negative<Bytes>());
    t.add<BytesPerSecond>("cmem.bandwidth", [](S& s) -> BytesPerSecond& { return s.cmem.bandwidth; }, "0 B/s",
                          "CMEM bandwidth");
    t.add<Bytes>("hbm.capacity", [](S& s) -> Bytes& { return s.hbm.capacity; }, std::nullopt, "HBM per chip",
                 positive<Bytes>());
    t.add<BytesPerSecond>("hbm.bandwidth", [](S& s) -> BytesPerSecond& { return s.hbm.bandwidth; },
                          std::nullopt, "HBM peak bandwidth per chip", positive<BytesPerSecond>());
    t.add<Seconds>("hbm.latency", [](S& s) -> Seconds& { return s.hbm.latency; }, std::nullopt,
                   "HBM access latency seen by a DMA", non_negative<Seconds>());
    t.add<double>("hbm.efficiency", [](S& s) -> double& { return s.hbm.efficiency; },
                  fmt::format("{}", kHbmEfficiency),
                  "achievable fraction of peak bandwidth for long single-direction streams (calibrated "
                  "assumption: refresh and row activations, chip_spec.h)",
                  fraction());
    t.add<double>("hbm.turnaround", [](S& s) -> double& { return s.hbm.turnaround; },
                  fmt::format("{}", kHbmTurnaround),
                  "fraction of bandwidth lost while reads and writes are both in flight, e.g. a copy (bus "
                  "turnarounds; calibrated on measurement C2's copy, chip_spec.h); 0 = none",
                  [](const double& v) { return v >= 0 && v < 1 ? std::string() : std::string("in [0, 1)"); });
    t.add<int>("hbm.channels", [](S& s) -> int& { return s.hbm.channels; }, "1",
               "HBM channels per chip, each 1/channels of the bandwidth; a transfer is striped over "
               "min(channels, ceil(bytes / 256 B)) of them (timing.h)",
               at_least(1));
    t.add<int>("dma.outstanding", [](S& s) -> int& { return s.dma.outstanding; }, "8",
               "DMA transfers in flight per descriptor queue; one queue per TensorCore (assumption)", at_least(1));
    t.add<double>("dma.strided_efficiency", [](S& s) -> double& { return s.dma.strided_efficiency; }, "1",
                  "fraction of path bandwidth a strided DMA achieves (assumption: tile rows of >= 512 B fill "
                  "whole HBM bursts)",
                  fraction());
    t.add<double>("dma.gather_efficiency", [](S& s) -> double& { return s.dma.gather_efficiency; }, "0.5",
                  "fraction of path bandwidth a gather DMA achieves (assumption: rows of a few hundred bytes, "
                  "about half of each burst used)",
                  fraction());
    t.add<int>("ici.links", [](S& s) -> int& { return s.ici.links; }, std::nullopt, "ICI ports per chip",
               at_least(0));
    t.add<BytesPerSecond>("ici.link_bandwidth", [](S& s) -> BytesPerSecond& { return s.ici.link_bandwidth; },
                          std::nullopt, "ICI bandwidth per link, one direction", positive<BytesPerSecond>());
    t.add<Seconds>("ici.hop_latency", [](S& s) -> Seconds& { return s.ici.hop_latency; }, std::nullopt,
                   "ICI latency per hop", non_negative<Seconds>());
    t.add<double>("ici.link_efficiency", [](S& s) -> double& { return s.ici.link_efficiency; },
                  fmt::format("{}", kIciLinkEfficiency),
                  "achievable fraction of ici.link_bandwidth after link-layer framing and flow control "
                  "(calibrated on measurement C1's plateau, chip_spec.h)",
                  fraction());
    t.add<int>("host.chips_per_host", [](S& s) -> int& { return s.host.chips_per_host; }, std::nullopt,
               "chips attached to one host", at_least(1));
    t.add<BytesPerSecond>("host.pcie_bandwidth", [](S& s) -> BytesPerSecond& { return s.host.pcie_bandwidth; },
                          std::nullopt, "host<->chip PCIe bandwidth per chip, each direction",
                          positive<BytesPerSecond>());
    t.add<BytesPerSecond>("host.dcn_bandwidth", [](S& s) -> BytesPerSecond& { return s.host.dcn_bandwidth; },
                          "0 B/s", "data-center network bandwidth per chip (between pods)");
    t.add<Seconds>("host.round_trip", [](S& s) -> Seconds& { return s.host.round_trip; }, "20 us",
                   "one host sync: the host waits for the chip and answers (assumption: PCIe round trip plus "
                   "runtime overhead, tens of us; not published)",
                   non_negative<Seconds>());
    t.add<BytesPerSecond>("host.storage_bandwidth",
                          [](S& s) -> BytesPerSecond& { return s.host.storage_bandwidth; }, "1 GB/s",
                          "checkpoint write bandwidth from one host to storage (assumption: one VM's share of a "
                          "distributed file system; not published)",
                          positive<BytesPerSecond>());
    return t;
  }();
  return table;
}

ChipSpec resolve_chip(const ConfigNode& root, const std::string& path, Diagnostics& diags) {
  ChipSpec spec;
  const std::size_t before = diags.size();
  chip_fields().resolve(root, path, spec, diags, &spec.origins);
  if (diags.size() != before) return spec;

  // Cross-field rule: the published peak must agree with the array arithmetic, or one of them is a typo.
  const double derived = spec.derived_peak_bf16().value();
  const double published = spec.peak_bf16.value();
  if (std::fabs(derived - published) > 0.03 * published) {
    const auto it = spec.origins.find("peak_bf16");
    diags.error(it != spec.origins.end() ? it->second.loc : root.loc(), path.empty() ? "peak_bf16" : path + ".peak_bf16",
                "published peak disagrees with tensorcores x mxu.per_core x 2 x rows x cols x clock",
                fmt::format("within 3% of {}", format_flops(spec.derived_peak_bf16())),
                format_flops(spec.peak_bf16));
  }
  return spec;
}

}  // namespace tpusim
