#pragma once
// The resolved, immutable description of one TPU chip. Built from configs/chips/*.yaml (plus scenario
// overrides) by resolve_chip(); models and the lowering library take `const ChipSpec&` and never see YAML.
// Every field is declared once in chip_fields() (chip_spec.cpp) with its unit, default and description.
#include <map>
#include <string>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/units.h"

namespace tpusim {

enum class MxuDataflow { weight_stationary, output_stationary };

struct MxuSpec {
  int per_core = 0;  // MXUs per TensorCore
  int rows = 0;      // systolic array R (contraction side for weight-stationary)
  int cols = 0;      // systolic array C (output columns)
  MxuDataflow dataflow = MxuDataflow::weight_stationary;
  double int8_rate = 0;  // MACs per cycle relative to bf16; 0 = not supported
  double fp8_rate = 0;   // same for fp8
};

struct VpuSpec {
  int lanes = 0;
  int sublanes = 0;
  int alus = 1;  // ALUs per lane-sublane
  double transcendental_rate = 0;  // elements per cycle relative to elementwise
  double result_pops_per_cycle = 1;  // MXU result registers (lanes x sublanes values) popped per cycle
};

struct MemorySpec {
  Bytes capacity;
  BytesPerSecond bandwidth;
};

struct HbmSpec {
  Bytes capacity;
  BytesPerSecond bandwidth;
  Seconds latency;
  double efficiency = 1.0;  // achievable fraction of peak for long sequential streams
  double turnaround = 0.0;  // fraction of bandwidth lost while reads and writes interleave
  int channels = 1;         // independent channels sharing the peak bandwidth evenly (striped transfers)
};

struct DmaSpec {
  int outstanding = 0;              // transfers in flight per descriptor queue (one queue per TensorCore)
  double strided_efficiency = 1.0;  // achieved fraction of a path's bandwidth for strided transfers
  double gather_efficiency = 1.0;   // same for gathers (many small rows)
};

struct IciSpec {
  int links = 0;
  BytesPerSecond link_bandwidth;  // per link, one direction
  Seconds hop_latency;
};

struct HostLinkSpec {
  int chips_per_host = 0;
  BytesPerSecond pcie_bandwidth;  // per chip, each direction
  BytesPerSecond dcn_bandwidth;   // per chip, to other pods
  Seconds round_trip;                // one host <-> chip synchronisation (host sync)
  BytesPerSecond storage_bandwidth;  // per host, checkpoint writes to storage
};

struct ChipSpec {
  std::string name;
  std::string generation;
  int tensorcores = 0;
  Hertz clock;
  FlopsPerSecond peak_bf16;  // published figure; checked against the derived one
  FlopsPerSecond peak_int8;  // 0 when the chip has no int8 path
  MxuSpec mxu;
  VpuSpec vpu;
  MemorySpec vmem;  // per TensorCore
  MemorySpec cmem;  // per chip (v4); capacity 0 when absent
  HbmSpec hbm;
  DmaSpec dma;
  IciSpec ici;
  HostLinkSpec host;

  // Where each field's value came from (key -> file:line and the source comment), for `tpusim describe`.
  std::map<std::string, FieldOrigin> origins;

  // bf16 MACs per cycle across the chip and the FLOP/s they give at `clock`.
  [[nodiscard]] double macs_per_cycle() const {
    return static_cast<double>(tensorcores) * mxu.per_core * mxu.rows * mxu.cols;
  }
  [[nodiscard]] FlopsPerSecond derived_peak_bf16() const {
    return FlopsPerSecond(2.0 * macs_per_cycle() * clock.value());
  }
};

[[nodiscard]] const FieldTable<ChipSpec>& chip_fields();

// Resolves a chip tree (already merged with overrides). `path` prefixes key paths in errors ("chip").
// Cross-field rules: the published peak must match the derived one within 3%.
[[nodiscard]] ChipSpec resolve_chip(const ConfigNode& root, const std::string& path, Diagnostics& diags);

}  // namespace tpusim
