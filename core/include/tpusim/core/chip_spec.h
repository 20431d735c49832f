#pragma once
// The resolved, immutable description of one TPU chip, built from configs/chips/*.yaml (plus scenario
// overrides) by resolve_chip(). Both the lowering library and the models' elaborator read it; neither sees
// YAML.
//
// A chip file composes the chip from blocks (chip_blocks.h): every top-level map with a `kind` is one block,
// `count` says how many instances it has, and `paths` lists which block reaches which ("dma -> hbm"). The
// typed members below hold each block kind's parameters (one block per kind), so the lowering reads
// `chip.mxu.rows` or `chip.hbm.bandwidth` whatever the block is called; `blocks` and `paths` hold the
// composition itself, which the elaborator builds and binds (models/README.md).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/units.h"

namespace tpusim {

enum class MxuDataflow { weight_stationary, output_stationary };

// How a memory block shares its bandwidth between the transfers in flight (models/src/memory/).
//   shared: engines with work split the rate equally, each engine's transfers served in issue order;
//   fifo:   one transfer at a time over the whole rate, in arrival order.
enum class MemoryScheduler { shared, fifo };

struct MxuSpec {
  int per_core = 0;  // MXUs per TensorCore (the mxu block's count)
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
  MemoryScheduler scheduler = MemoryScheduler::shared;
};

struct HbmSpec {
  Bytes capacity;
  BytesPerSecond bandwidth;
  Seconds latency;
  double efficiency = 1.0;  // achievable fraction of peak for long sequential streams
  double turnaround = 0.0;  // fraction of bandwidth lost while reads and writes interleave
  int channels = 1;         // independent channels sharing the peak bandwidth evenly (striped transfers)
  MemoryScheduler scheduler = MemoryScheduler::shared;
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

// The SparseCores of v4 and v5p: embedding-table gathers beside the TensorCores (chip_blocks.cpp). count 0 =
// the chip has none; the lowering then runs lookups on the TensorCores.
struct SparseCoreSpec {
  int count = 0;  // SparseCores per chip (the sparsecore block's count)
  int tiles = 0;  // compute tiles per SparseCore, each fetching rows on its own
  int lanes = 0;  // SIMD lanes per tile: pooled values added per cycle
};

// ---- composition -------------------------------------------------------------------------------------------

// The block kinds a chip is composed of (chip_blocks.h says what each is and where it may connect).
enum class BlockKind : std::uint8_t { tensorcore, mxu, vpu, vmem, cmem, hbm, dma, host, ici, sparsecore };
inline constexpr int kBlockKinds = 10;

struct ChipBlock {
  std::string name;  // its key in the chip file
  BlockKind kind = BlockKind::tensorcore;
  int count = 1;     // instances (per TensorCore for the kinds that live in one); 0 = absent
  SourceLoc loc;
};

// One entry of `paths`: the block named `from` reaches the block named `to` (an engine reaches a memory, the
// MXU's results drain into a VPU).
struct ChipPath {
  std::string from, to;
  SourceLoc loc;
};

struct ChipSpec {
  std::string name;
  std::string generation;
  int tensorcores = 0;  // the tensorcore block's count
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
  SparseCoreSpec sparsecore;

  // The composition, in file order. A spec built in code may leave both empty: standard_composition() then
  // stands for it (every block its typed members describe, with the paths every bundled chip has).
  std::vector<ChipBlock> blocks;
  std::vector<ChipPath> paths;

  // Where each field's value came from ("hbm.bandwidth" -> file:line and the source comment), for
  // `tpusim describe`. Block fields are keyed "<block name>.<field>".
  std::map<std::string, FieldOrigin> origins;

  // bf16 MACs per cycle across the chip and the FLOP/s they give at `clock`.
  [[nodiscard]] double macs_per_cycle() const {
    return static_cast<double>(tensorcores) * mxu.per_core * mxu.rows * mxu.cols;
  }
  [[nodiscard]] FlopsPerSecond derived_peak_bf16() const {
    return FlopsPerSecond(2.0 * macs_per_cycle() * clock.value());
  }
};

// The composition of a chip built in code with no `blocks`: one block per kind its typed members describe
// (cmem when cmem.capacity > 0, sparsecore when sparsecore.count > 0), named after the kind, and the paths
// dma -> vmem, hbm, cmem, host; mxu -> vpu; sparsecore -> hbm. A spec with blocks is returned unchanged.
[[nodiscard]] ChipSpec standard_composition(ChipSpec spec);

// The block of `kind` with at least one instance, or nullptr.
[[nodiscard]] const ChipBlock* find_block(const ChipSpec& chip, BlockKind kind);
// Whether a path leads from the (present) block of kind `from` to the (present) block of kind `to`.
[[nodiscard]] bool has_path(const ChipSpec& chip, BlockKind from, BlockKind to);

// The chip-level fields (name, clock, ...); each block kind's fields are in chip_blocks.h.
[[nodiscard]] const FieldTable<ChipSpec>& chip_fields();

// Resolves a chip tree (already merged with overrides). `path` prefixes key paths in errors ("chip").
// Besides every field's own check: one block per kind, the required kinds present, counts within each kind's
// range, every path between two blocks that may connect and listed once, the required paths present, and the
// published peak within 3% of the one the blocks give.
[[nodiscard]] ChipSpec resolve_chip(const ConfigNode& root, const std::string& path, Diagnostics& diags);

// The resolved chip as (dotted key, value with unit) pairs: chip fields, then each block's kind, count and
// fields under its name, then "paths".
[[nodiscard]] std::vector<std::pair<std::string, std::string>> render_chip(const ChipSpec& chip);

}  // namespace tpusim
