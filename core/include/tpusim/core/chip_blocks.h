#pragma once
// The catalogue of block kinds a chip file composes a chip from: for each kind, where its instances live,
// how many it may have, whether a chip needs one, which other kinds it may reach through `paths`, and its
// parameters (declared once, in chip_blocks.cpp). The parser (chip_spec.cpp) checks a chip against it; the
// models' elaborator (models/src/chip/) builds one module per block from it; `tpusim describe params`
// and docs/parameters.md list it.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/fields.h"

namespace tpusim {

// The most TensorCores a chip may have: the simulator tells the HBM's users apart by an 8-bit engine id, and
// each TensorCore takes one for its DMA queue (0, 1, ...) and two for the HBM streams of its MXUs and VPU
// (128 + 2 x core + unit, below the SparseCores' 254; models/src/memory/fused_stream.h checks it).
inline constexpr int kMaxTensorCores = 63;

// Where a kind's instances live: once per chip, or inside each TensorCore (count is then per TensorCore).
enum class BlockScope { chip, tensorcore };

// One way a block reaches others, written "from -> to" in `paths`.
struct BlockPort {
  std::string_view name;             // "memory", "results"
  std::string_view doc;
  std::vector<BlockKind> accepts;    // the kinds it may reach
  std::vector<BlockKind> required;   // kinds it must reach whenever the block is present
};

struct BlockKindInfo {
  BlockKind kind = BlockKind::tensorcore;
  std::string_view name;  // the `kind:` text
  std::string_view doc;
  BlockScope scope = BlockScope::chip;
  bool required = false;  // every chip has one
  int min_count = 1;      // 0: the block may be present but switched off (count: 0)
  int max_count = 1;
  std::vector<BlockPort> ports;
  const FieldTable<ChipSpec>* fields = nullptr;  // keys relative to the block ("bandwidth")
  // One line on what a block of the kind is, for `tpusim describe chip`: each {key} is the block's resolved
  // field of that key.
  std::string_view summary;
  // An observer: it runs no instructions and holds nothing a program names, so it is built whenever a block it
  // reaches through `paths` is (the others are built when the chip's program reaches them).
  bool observes = false;
  // The typed member of ChipSpec that keeps the block's count too, for the lowering (TensorCores, MXUs per
  // TensorCore, SparseCores), or none.
  int& (*count_member)(ChipSpec&) = nullptr;
};

// Every kind, indexed by BlockKind: the built-in ones, then the added ones.
[[nodiscard]] const std::vector<BlockKindInfo>& block_kinds();
// Adds a kind to the catalogue and returns its BlockKind (the next free one; `info.kind` is ignored). Its name,
// fields and ports are checked: a name of its own, a field table, ports that reach known kinds. Chip files may
// then compose blocks of it; models/README.md ("A block kind of your own") shows the rest. Throws
// std::invalid_argument on a bad entry or a full catalogue (kMaxBlockKinds). Its texts are views: they must
// outlive the kind (string literals do).
BlockKind add_block_kind(BlockKindInfo info);
// Takes the last added kind out again (tests); false when `name` is not the last added kind.
bool remove_block_kind(std::string_view name);
// Changes each time a kind is added or removed, so that what is derived from the catalogue follows it.
[[nodiscard]] int block_catalogue_generation();
[[nodiscard]] const BlockKindInfo& block_kind(BlockKind kind);
[[nodiscard]] std::string_view block_kind_name(BlockKind kind);
// The port of a `from` block that reaches a `to` block, or nullptr when the two kinds cannot connect.
[[nodiscard]] const BlockPort* port_to(BlockKind from, BlockKind to);

// The chip's fields for `tpusim describe params` and the docs: the chip-level fields and `paths`, then one
// section per block kind (its kind and count keys, then its parameters).
[[nodiscard]] std::vector<std::pair<std::string, std::vector<FieldInfo>>> chip_field_sections();

}  // namespace tpusim
