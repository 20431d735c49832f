#pragma once
// The resolved, immutable description of one TPU chip, built from configs/chips/*.yaml (plus scenario
// overrides) by resolve_chip(). Both the lowering library and the models' elaborator read it; neither sees
// YAML.
//
// A chip file composes the chip from blocks (chip_blocks.h): every top-level map with a `kind` is one block,
// `count` says how many instances it has, and `paths` lists which block reaches which ("dma -> hbm"). The
// typed members below hold each block kind's parameters (one block per kind), so the lowering reads
// `chip.mxu.rows` or `chip.hbm.bandwidth` whatever the block is called; `composition` holds the blocks and
// paths themselves, which the elaborator builds and binds (models/README.md).
#include <any>
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
  Seconds step_overhead;  // MXU idle time between two back-to-back matmul instructions (pipeline steps)
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

// VMEM adds the compiler's cap on one instruction's share of it.
struct VmemSpec : MemorySpec {
  // XLA's scoped VMEM limit (libtpu's --xla_tpu_scoped_vmem_limit_kib): the most VMEM one instruction's
  // buffers and tiles may take, a compiler setting below the physical capacity; 0 = none.
  Bytes scoped_limit{0};
};

struct HbmSpec {
  Bytes capacity;
  BytesPerSecond bandwidth;
  Seconds latency;
  double efficiency = 1.0;  // achievable fraction of peak for long sequential streams
  double turnaround = 0.0;  // fraction of bandwidth lost while reads and writes interleave
  int channels = 1;         // independent channels sharing the peak bandwidth evenly (striped transfers)
  MemoryScheduler scheduler = MemoryScheduler::shared;

  // What a long stream in one direction achieves, efficiency x bandwidth: the one place it is computed, for
  // the lowering's tiling and estimates and the models' HBM alike (a spec built in code with efficiency 0
  // streams at the peak; a scenario's efficiency is in (0, 1]).
  [[nodiscard]] double achievable_fraction() const { return efficiency > 0 ? efficiency : 1.0; }
  [[nodiscard]] BytesPerSecond achievable_bandwidth() const {
    return BytesPerSecond(bandwidth.value() * achievable_fraction());
  }
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
  double link_efficiency = 1.0;   // achievable fraction of link_bandwidth (framing, flow control)
};

struct HostLinkSpec {
  int chips_per_host = 0;
  BytesPerSecond pcie_bandwidth;  // per chip, each direction
  BytesPerSecond dcn_bandwidth;   // per chip, to other pods
  Bytes memory_per_chip;             // host DRAM for each chip (the host's over its chips): offloaded activations
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

// The block kinds a chip is composed of (chip_blocks.h says what each is and where it may connect): the
// built-in ones, then those added to the catalogue at run time (add_block_kind), numbered on from these.
enum class BlockKind : std::uint8_t { tensorcore, mxu, vpu, vmem, cmem, hbm, dma, host, ici, sparsecore };
inline constexpr int kBuiltInBlockKinds = 10;
inline constexpr int kMaxBlockKinds = 32;  // built-in and added

// The parameters of the block kinds added at run time: an added kind's field table keeps its values here,
// keyed "<kind>.<field>", each as the type (the unit) its table declares.
class AddedParameters {
 public:
  template <class T>
  T& at(const std::string& key) {
    std::any& v = values_[key];
    if (!v.has_value()) v = T{};
    return std::any_cast<T&>(v);
  }
  // The value, or T{} when the chip did not set it.
  template <class T>
  [[nodiscard]] T value(const std::string& key) const {
    const auto it = values_.find(key);
    return it == values_.end() ? T{} : std::any_cast<const T&>(it->second);
  }

 private:
  std::map<std::string, std::any> values_;
};

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

// What is published about the chip beside what its blocks model: its generation and peak rates (the chip file's
// generation, peak_bf16 and peak_int8: its keys stay flat).
struct PublishedFigures {
  std::string generation;
  FlopsPerSecond peak_bf16;  // checked against the blocks' (ChipSpec::derived_peak_bf16)
  FlopsPerSecond peak_int8;  // 0 when the chip has no int8 path
};

// The composition (the chip file's blocks and `paths`), in file order. A spec built in code may leave both empty:
// standard_composition() then stands for it (every block its typed members describe, with the paths every bundled
// chip has).
struct ChipComposition {
  std::vector<ChipBlock> blocks;
  std::vector<ChipPath> paths;
};

struct ChipSpec {
  std::string name;
  int tensorcores = 0;  // the tensorcore block's count
  Hertz clock;
  PublishedFigures published;
  MxuSpec mxu;
  VpuSpec vpu;
  VmemSpec vmem;    // per TensorCore
  MemorySpec cmem;  // per chip (v4); capacity 0 when absent
  HbmSpec hbm;
  DmaSpec dma;
  IciSpec ici;
  HostLinkSpec host;
  SparseCoreSpec sparsecore;
  AddedParameters added;  // of the block kinds added at run time (chip_blocks.h, add_block_kind)
  ChipComposition composition;

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

// Calibrated overheads: the defaults of chip fields that no datasheet gives, set once for every generation from
// the calibration set (calibration/measurements.yaml, docs/calibration.md: C1-C3) with the reasoning below; each
// is listed by `tpusim describe assumptions`. None is set per chip or per scenario (a chip file may override one
// only with a source of its own).
//
// ICI link efficiency: the fraction of a link's one-way rate (chip.ici.link_bandwidth, the scaling book's
// per-link figure) that data moves at once link-layer framing (packet headers, CRC) and credit-based flow
// control are paid. C1's plateau (an 8x16 v5e all-gather of 256 MiB-4 GiB at ~90 GB/s, i.e. S (X-1) / (2 X t)
// = 42.2 GB/s per link) is 94% of 45 GB/s; C3 (v2, one link) gives 96% of the recalled 62 GB/s. Serial links
// typically lose 5-10% this way (PCIe Gen3 at 256 B payloads: ~94% after 128b/130b coding).
inline constexpr double kIciLinkEfficiency = 0.94;
// MXU step overhead: between two back-to-back matmul instructions (one per pipeline step of a tiled kernel) the
// arrays idle while the TensorCore's scalar unit does the step's bookkeeping (waiting on the operand DMAs'
// semaphores, issuing the next DMAs). The JAX Pallas TPU docs give ~0.35 us of fixed overhead per grid step
// (source [U]: the docs, recalled). A fixed time costs more on faster MXUs; the calibration matmuls bound it:
// v2 (C3) runs 96 ms against 95.9 ms at its 700 MHz peak (the model: 96.6 ms, steps of ~47 us), and v6e (C2)
// 90% (the model: 96.7%, steps of 2048^3 = 18.7 us; the rest of v6e's gap is not explained, see
// docs/calibration.md). No per-tile bubble beyond the dataflow's schedule: C3 leaves no room for one.
inline constexpr double kMxuStepOverheadSeconds = 0.35e-6;
// HBM efficiency: the fraction of peak a long single-direction stream reaches. All-bank refresh (JEDEC HBM2:
// tRFC ~ 350 ns every tREFI = 3.9 us, partly hidden by the controller) and row activations on page changes
// cost about 10%; GPUs' HBM read streams reach ~90% of peak the same way. Assumption (no TPU read-only
// measurement in the calibration set).
inline constexpr double kHbmEfficiency = 0.90;
// HBM read/write turnaround: the fraction lost while reads and writes interleave (write-to-read and
// read-to-write bus gaps). C2's v6e copy moves 32 MiB in and 32 MiB out at 1359.6 GB/s, 83.0% of 1638 GB/s;
// with kHbmEfficiency that leaves 1 - 0.830 / 0.90 = 7.8% for the turnarounds, rounded to 7% after the
// 0.5 us of read latency the copy also pays. Only the product is measured; the split is the assumption above.
inline constexpr double kHbmTurnaround = 0.07;

// The composition of a chip built in code with no blocks: one block per kind its typed members describe
// (cmem when cmem.capacity > 0, sparsecore when sparsecore.count > 0), named after the kind, and the paths
// dma -> vmem, hbm, cmem, host; mxu -> vpu, hbm; vpu -> hbm; sparsecore -> hbm. A spec with blocks is returned
// unchanged.
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
// published peak within 3% of the one the blocks give. A peak_int8 nobody wrote follows the int8 rate: it is
// replaced by mxu.int8_rate x the bf16 arithmetic when a what-if moved that away from it.
[[nodiscard]] ChipSpec resolve_chip(const ConfigNode& root, const std::string& path, Diagnostics& diags);

// Where the user wrote the chip field `key` ("peak_int8", "<block name>.<field>": "hbm.capacity"): a scenario, a
// chip file of their own, a --set, a sweep point; null when it comes from a bundled chip file or its default.
[[nodiscard]] const FieldOrigin* user_written(const ChipSpec& spec, const std::string& key);
// For an error or a note about the field `field` of the chip's block of `kind`: " (--set chip.hbm.capacity=8GiB)"
// or " (chip.hbm.capacity at my.yaml:5:15)" when the user wrote it (user_written), else "".
[[nodiscard]] std::string written_by_user(const ChipSpec& spec, BlockKind kind, const std::string& field);

// The resolved chip as (dotted key, value with unit) pairs: chip fields, then each block's kind, count and
// fields under its name, then "paths".
[[nodiscard]] std::vector<std::pair<std::string, std::string>> render_chip(const ChipSpec& chip);

}  // namespace tpusim
