#include "tpusim/core/chip_spec.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "tpusim/core/chip_blocks.h"
#include "tpusim/core/data_paths.h"

namespace tpusim {
namespace {

std::string join_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Keys of the chip files before blocks, and where they went.
const std::vector<std::pair<std::string, std::string>> kMovedKeys{{"tensorcores", "tensorcore.count"},
                                                                  {"mxu.per_core", "mxu.count"}};

// The count a block's typed members carry (BlockKindInfo::count_member).
void set_count(ChipSpec& spec, BlockKind kind, int count) {
  if (const auto member = block_kind(kind).count_member; member != nullptr) member(spec) = count;
}

// "from -> to" into its two names; false when the text has another form.
bool split_path(const std::string& text, std::string& from, std::string& to) {
  const auto arrow = text.find("->");
  if (arrow == std::string::npos) return false;
  const auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  from = trim(text.substr(0, arrow));
  to = trim(text.substr(arrow + 2));
  const auto plain = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  return plain(from) && plain(to);
}

// The header of one block: its kind and count (the fields are the kind's table).
struct BlockHeader {
  BlockKind kind = BlockKind::tensorcore;
  int count = 1;
};

// Built again when a kind was added or removed (the choice of kinds changed).
const FieldTable<BlockHeader>& header_fields() {
  const auto make = [] {
    FieldTable<BlockHeader> t;
    std::vector<std::pair<std::string, BlockKind>> kinds;
    for (const BlockKindInfo& k : block_kinds()) kinds.emplace_back(std::string(k.name), k.kind);
    t.add_choice<BlockKind>("kind", [](BlockHeader& h) -> BlockKind& { return h.kind; }, kinds, std::nullopt,
                            "the block kind (below)");
    t.add<int>("count", [](BlockHeader& h) -> int& { return h.count; }, "1",
               "instances of the block (per TensorCore for mxu, vpu, vmem); 0 switches an optional block off",
               at_least(0));
    return t;
  };
  static FieldTable<BlockHeader> table = make();
  static int generation = 0;
  if (generation != block_catalogue_generation()) {
    table = make();
    generation = block_catalogue_generation();
  }
  return table;
}

// A published peak agrees with the array arithmetic when it lies up to kPeakAbove above it (a rounded or marketing
// figure the chip cannot quite reach: MFU stays below 1) and the arithmetic exceeds it by no more than the rounding
// of a three-digit figure (kPeakRoundingAbove; v3's 940 MHz gives 0.17% above 123 TFLOP/s).
constexpr double kPeakRoundingAbove = 0.005;
constexpr double kPeakAbove = 0.03;
bool peak_agrees(double derived, double published) {
  return derived - published <= kPeakRoundingAbove * published && published - derived <= kPeakAbove * published;
}

// Cross-field rule: the published int8 peak is informational (int8 matmuls run at chip.mxu.int8_rate, MFU is
// counted against peak_bf16), so one the user wrote that disagrees with int8_rate x the bf16 arithmetic would
// change nothing without a word. Same tolerance as peak_bf16; a bundled chip's figure is not checked (a what-if
// of the arrays or the clock leaves it behind, as it does nothing).
void check_peak_int8(const ChipSpec& spec, const std::string& path, Diagnostics& diags) {
  const FieldOrigin* written = user_written(spec, "peak_int8");
  if (written == nullptr) return;
  const double derived = spec.mxu.int8_rate * spec.derived_peak_bf16().value();
  const double published = spec.published.peak_int8.value();
  if (peak_agrees(derived, published)) return;
  diags.error(written->loc, join_path(path, "peak_int8"),
              "published int8 peak disagrees with mxu.int8_rate x the bf16 arithmetic",
              derived == 0 ? std::string("0 TOP/s (chip.mxu.int8_rate is 0: no int8 path)")
                           : fmt::format("{} TOP/s (int8_rate {} x {}) within -0.5% / +3%", derived / 1e12,
                                         spec.mxu.int8_rate, format_flops(spec.derived_peak_bf16())),
              fmt::format("{} TOP/s", published / 1e12),
              "int8 matmuls run at chip.mxu.int8_rate x the bf16 rate: a what-if of the int8 peak sets "
              "chip.mxu.int8_rate, and peak_int8 to match it or not at all");
}

// The int8 peak shown with the chip (describe, summary.json's scenario) is the rate int8 matmuls run at:
// int8_rate x the bf16 arithmetic. A bundled chip's published figure stays while it agrees (peak_agrees); one a
// what-if left behind (a written int8_rate, clock or MXU shape; a chip file of the user's without peak_int8) is
// replaced by the product, its source saying so. A peak the user wrote is checked instead (check_peak_int8).
void follow_int8_rate(ChipSpec& spec) {
  if (user_written(spec, "peak_int8") != nullptr) return;
  const double derived = spec.mxu.int8_rate * spec.derived_peak_bf16().value();
  const FlopsPerSecond was = spec.published.peak_int8;
  if (peak_agrees(derived, was.value())) return;
  spec.published.peak_int8 = FlopsPerSecond(derived);
  const auto it = spec.origins.find("peak_int8");
  const bool from_file = it != spec.origins.end() && !it->second.defaulted;
  FieldOrigin& origin = spec.origins["peak_int8"];
  origin = FieldOrigin{SourceLoc{"(derived from mxu.int8_rate)", 0, 0},
                       fmt::format("derived: mxu.int8_rate {} x {} (the bf16 arithmetic), the rate int8 matmuls run "
                                   "at{}",
                                   spec.mxu.int8_rate, format_flops(spec.derived_peak_bf16()),
                                   from_file ? fmt::format(" (the chip file's {} is for other values)",
                                                           format_flops(was))
                                             : std::string()),
                       false};
}

// Cross-field rule: XLA's scoped VMEM limit is a share of the TensorCore's VMEM, so a limit the user wrote above
// the capacity contradicts it: the lowering takes the capacity's share and would ignore the limit without a word.
// A bundled chip's limit (XLA's default) above a what-if's smaller VMEM is left alone: it does not bind, which is
// what shrinking the VMEM means.
void check_scoped_limit(const ChipSpec& spec, const std::string& path, Diagnostics& diags) {
  const Bytes capacity = spec.vmem.capacity;
  const Bytes limit = spec.vmem.scoped_limit;
  if (limit.count() <= capacity.count()) return;
  const FieldOrigin* written = user_written(spec, "vmem.scoped_limit");
  if (written == nullptr) return;
  diags.error(written->loc, join_path(path, "vmem.scoped_limit"), "scoped VMEM limit above the VMEM capacity",
              fmt::format("at most {} (chip.vmem.capacity: one instruction's tiles cannot take more VMEM than the "
                          "TensorCore has), or 0 B for no compiler limit",
                          format_bytes(capacity)),
              format_bytes(limit));
}

}  // namespace

const FieldTable<ChipSpec>& chip_fields() {
  using S = ChipSpec;
  static const FieldTable<ChipSpec> table = [] {
    FieldTable<ChipSpec> t;
    t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, std::nullopt, "chip name");
    t.add<std::string>("generation", [](S& s) -> std::string& { return s.published.generation; }, std::nullopt,
                       "TPU generation (v2, v3, v4, v5e, v5p, v6e)");
    t.add<Hertz>("clock", [](S& s) -> Hertz& { return s.clock; }, std::nullopt, "core clock", positive<Hertz>());
    t.add<FlopsPerSecond>("peak_bf16", [](S& s) -> FlopsPerSecond& { return s.published.peak_bf16; }, std::nullopt,
                          "published peak bf16 rate per chip, MFU's denominator: from 0.5% below to 3% above "
                          "tensorcores x MXUs x 2 x rows x cols x clock",
                          positive<FlopsPerSecond>());
    t.add<FlopsPerSecond>("peak_int8", [](S& s) -> FlopsPerSecond& { return s.published.peak_int8; }, "0 TOP/s",
                          "published peak int8 rate per chip, for the record: int8 matmuls run at mxu.int8_rate x "
                          "the bf16 rate, so one written (not a bundled chip's) must lie from 0.5% below to 3% above "
                          "mxu.int8_rate x tensorcores x MXUs x 2 x rows x cols x clock; one not written follows "
                          "that product once a what-if moves it off the chip file's figure; 0 = no int8 path");
    return t;
  }();
  return table;
}

ChipSpec resolve_chip(const ConfigNode& root, const std::string& path, Diagnostics& diags) {
  ChipSpec spec;
  if (!root.is_map()) {
    diags.error(root.loc(), path, "wrong type", "a chip map (name, clock, blocks, paths)", root.describe());
    return spec;
  }
  const std::size_t before = diags.size();

  // Every top-level map with a `kind` is a block; the rest are chip fields (unknown keys are reported, with a
  // did-you-mean over the fields and the block names).
  std::vector<std::string> not_fields{"paths"};
  for (const auto& e : root.entries()) {
    if (e.value.is_map() && e.value.find("kind") != nullptr) not_fields.push_back(e.key);
  }
  for (const auto& [old_key, new_key] : kMovedKeys) {
    const auto dot = old_key.find('.');
    const ConfigNode* parent = dot == std::string::npos ? &root : root.find(old_key.substr(0, dot));
    const std::string leaf = dot == std::string::npos ? old_key : old_key.substr(dot + 1);
    const ConfigNode* moved = parent != nullptr && parent->is_map() ? parent->find(leaf) : nullptr;
    if (moved == nullptr) continue;
    diags.error(moved->loc(), join_path(path, old_key), fmt::format("'{}' has moved", old_key),
                fmt::format("{} (the chip is composed of blocks: tpusim describe params)", join_path(path, new_key)),
                moved->describe(), fmt::format("did you mean '{}'?", new_key));
    if (dot == std::string::npos) not_fields.push_back(old_key);
  }
  chip_fields().resolve(root, path, spec, diags, &spec.origins, not_fields);

  std::vector<int> first_of_kind(block_kinds().size(), -1);  // index into spec.composition.blocks
  std::vector<std::string> unresolved;               // blocks whose kind or count is wrong
  for (const auto& e : root.entries()) {
    if (!e.value.is_map() || e.value.find("kind") == nullptr) continue;
    const std::string block_path = join_path(path, e.key);
    BlockHeader header;
    std::map<std::string, FieldOrigin> header_origins;
    const std::size_t header_errors = diags.size();
    // Only `kind` and `count` here; the kind's own table checks the other keys.
    std::vector<std::string> rest;
    for (const auto& f : e.value.entries()) {
      if (f.key != "kind" && f.key != "count") rest.push_back(f.key);
    }
    header_fields().resolve(e.value, block_path, header, diags, &header_origins, rest);
    if (diags.size() != header_errors) {
      unresolved.push_back(e.key);
      continue;
    }
    const BlockKindInfo& info = block_kind(header.kind);
    const SourceLoc kind_loc = e.value.find("kind")->loc();
    if (header.count < info.min_count || header.count > info.max_count) {
      const FieldOrigin& o = header_origins.at("count");
      diags.error(o.loc, block_path + ".count", fmt::format("count out of range for a {} block", info.name),
                  info.min_count == info.max_count ? fmt::format("{}", info.min_count)
                                                   : fmt::format("{} to {}", info.min_count, info.max_count),
                  fmt::format("{}", header.count));
    }
    if (const int first = first_of_kind[static_cast<std::size_t>(header.kind)]; first >= 0) {
      const ChipBlock& b = spec.composition.blocks[static_cast<std::size_t>(first)];
      diags.error(kind_loc, block_path + ".kind", fmt::format("a second {} block", info.name),
                  fmt::format("one block per kind ('{}' at {} is the {} block; count sets how many instances)",
                              b.name, b.loc.str(), info.name),
                  fmt::format("'{}'", e.key));
      unresolved.push_back(e.key);
      continue;
    }
    first_of_kind[static_cast<std::size_t>(header.kind)] = static_cast<int>(spec.composition.blocks.size());
    std::map<std::string, FieldOrigin> field_origins;
    std::vector<std::string> skip{"kind", "count"};
    for (const auto& moved : kMovedKeys) {
      if (moved.first.rfind(e.key + ".", 0) == 0) skip.push_back(moved.first.substr(e.key.size() + 1));
    }
    info.fields->resolve(e.value, block_path, spec, diags, &field_origins, skip);
    for (auto& [k, o] : field_origins) spec.origins[e.key + "." + k] = std::move(o);  // "hbm.bandwidth"
    spec.origins[e.key + ".count"] = header_origins.at("count");
    spec.composition.blocks.push_back(ChipBlock{e.key, header.kind, header.count, e.key_loc});
    set_count(spec, header.kind, header.count);
  }
  const auto block_of = [&](BlockKind k) -> const ChipBlock* {
    const int i = first_of_kind[static_cast<std::size_t>(k)];
    return i < 0 ? nullptr : &spec.composition.blocks[static_cast<std::size_t>(i)];
  };

  // A block whose kind could not be read may be the missing one: say nothing more about it.
  for (const BlockKindInfo& k : block_kinds()) {
    if (k.required && block_of(k.kind) == nullptr && unresolved.empty()) {
      diags.error(root.loc(), path, fmt::format("missing required block of kind '{}'", k.name),
                  fmt::format("a block with kind: {} ({})", k.name, k.doc), "none");
    }
  }

  // Paths: "from -> to" between blocks whose kinds may connect, each listed once.
  const ConfigNode* paths = root.find("paths");
  SourceLoc paths_loc = root.loc();  // where `paths:` is written
  for (const auto& e : root.entries()) {
    // The key, or the value where it came from elsewhere (a --set that replaced the list).
    if (e.key == "paths") paths_loc = e.value.loc().file != e.key_loc.file ? e.value.loc() : e.key_loc;
  }
  const std::string paths_key = join_path(path, "paths");
  const auto find_named = [&](const std::string& name) -> const ChipBlock* {
    for (const ChipBlock& b : spec.composition.blocks) {
      if (b.name == name) return &b;
    }
    return nullptr;
  };
  std::vector<std::string> block_names;
  for (const ChipBlock& b : spec.composition.blocks) block_names.push_back(b.name);
  if (paths == nullptr || paths->is_null()) {
    diags.error(root.loc(), paths_key, "missing required key",
                "a list of paths between blocks, e.g. [dma -> hbm, dma -> vmem]", "nothing");
  } else if (!paths->is_seq()) {
    diags.error(paths->loc(), paths_key, "wrong type", "a list of 'from -> to' paths", paths->describe());
  } else {
    std::map<std::pair<std::string, std::string>, SourceLoc> seen;
    for (std::size_t i = 0; i < paths->items().size(); ++i) {
      const ConfigNode& item = paths->items()[i];
      const std::string key = fmt::format("{}[{}]", paths_key, i);
      std::string from, to;
      if (!item.is_scalar() || !split_path(item.scalar(), from, to)) {
        diags.error(item.loc(), key, "malformed path", "'from -> to', two block names", item.describe());
        continue;
      }
      const ChipBlock* a = find_named(from);
      const ChipBlock* b = find_named(to);
      for (const auto& [name, block] : {std::pair{from, a}, std::pair{to, b}}) {
        if (block == nullptr && std::find(unresolved.begin(), unresolved.end(), name) == unresolved.end()) {
          diags.error(item.loc(), key, fmt::format("dangling path: no block named '{}'", name), "a block of this chip",
                      fmt::format("'{}'", name), suggestion(name, block_names));
        }
      }
      if (a == nullptr || b == nullptr) continue;
      if (const auto it = seen.find({from, to}); it != seen.end()) {
        diags.error(item.loc(), key, fmt::format("duplicate path '{} -> {}'", from, to), "each path listed once",
                    fmt::format("a second one (the first is at {})", it->second.str()));
        continue;
      }
      seen.emplace(std::pair{from, to}, item.loc());
      if (port_to(a->kind, b->kind) == nullptr) {
        std::string reach;
        for (const BlockPort& p : block_kind(a->kind).ports) {
          for (BlockKind k : p.accepts) reach += (reach.empty() ? "" : ", ") + std::string(block_kind_name(k));
        }
        diags.error(item.loc(), key,
                    fmt::format("a {} block cannot reach a {} block", block_kind_name(a->kind), block_kind_name(b->kind)),
                    reach.empty() ? fmt::format("no path from a {} block", block_kind_name(a->kind))
                                  : fmt::format("{} -> a block of kind {}", from, reach),
                    fmt::format("'{}'", item.scalar()));
        continue;
      }
      spec.composition.paths.push_back(ChipPath{from, to, item.loc()});
    }
  }
  // Required paths: an engine that is present must reach the kinds its work needs.
  if (diags.size() == before) {
    for (const ChipBlock& b : spec.composition.blocks) {
      if (b.count == 0) continue;
      for (const BlockPort& p : block_kind(b.kind).ports) {
        for (BlockKind want : p.required) {
          if (!has_path(spec, b.kind, want)) {
            diags.error(paths_loc, paths_key,
                        fmt::format("the {} block '{}' reaches no {} block", block_kind_name(b.kind), b.name,
                                    block_kind_name(want)),
                        fmt::format("a path {} -> <{} block> ({})", b.name, block_kind_name(want), p.doc), "none");
          }
        }
      }
    }
  }
  if (diags.size() != before) return spec;

  // An optional block switched off (count: 0) leaves its typed members empty.
  if (const ChipBlock* c = block_of(BlockKind::cmem); c == nullptr || c->count == 0) {
    spec.cmem = MemorySpec{};
  }
  if (const ChipBlock* sc = block_of(BlockKind::sparsecore); sc == nullptr || sc->count == 0) {
    spec.sparsecore = SparseCoreSpec{};
  }

  // Cross-field rule: the published peak must agree with the array arithmetic (peak_agrees), or one of them is a
  // typo: MFU is counted against the published peak, so a chip running faster than it would report an MFU above
  // 100% (a what-if clock raised 3% without the peak did).
  const double derived = spec.derived_peak_bf16().value();
  const double published = spec.published.peak_bf16.value();
  if (!peak_agrees(derived, published)) {
    const auto it = spec.origins.find("peak_bf16");
    diags.error(it != spec.origins.end() ? it->second.loc : root.loc(), join_path(path, "peak_bf16"),
                "published peak disagrees with tensorcore count x mxu count x 2 x rows x cols x clock",
                fmt::format("{} (the arithmetic) within -0.5% / +3%: between {} and {}",
                            format_flops(spec.derived_peak_bf16()),
                            format_flops(FlopsPerSecond(derived / (1 + kPeakRoundingAbove))),
                            format_flops(FlopsPerSecond(derived / (1 - kPeakAbove)))),
                format_flops(spec.published.peak_bf16),
                fmt::format("a what-if that changes the clock or the MXUs sets the peak too (--set "
                            "chip.peak_bf16='{}', or a sweep's derived value, docs/sweeps.md); else one of them "
                            "is a typo",
                            format_flops(spec.derived_peak_bf16())));
  }
  check_scoped_limit(spec, path, diags);
  check_peak_int8(spec, path, diags);
  follow_int8_rate(spec);
  return spec;
}

const FieldOrigin* user_written(const ChipSpec& spec, const std::string& key) {
  const auto it = spec.origins.find(key);
  if (it == spec.origins.end() || it->second.defaulted || is_bundled_file(it->second.loc.file)) return nullptr;
  return &it->second;
}

std::string written_by_user(const ChipSpec& spec, BlockKind kind, const std::string& field) {
  const ChipBlock* block = find_block(spec, kind);
  const std::string key = (block != nullptr ? block->name : std::string(block_kind_name(kind))) + "." + field;
  const FieldOrigin* written = user_written(spec, key);
  if (written == nullptr) return "";
  if (written->loc.file.rfind("--set ", 0) == 0) return fmt::format(" ({})", written->loc.file);
  return fmt::format(" (chip.{} at {})", key, written->loc.str());
}

std::vector<std::pair<std::string, std::vector<FieldInfo>>> chip_field_sections() {
  std::vector<FieldInfo> chip = chip_fields().infos();
  chip.push_back(FieldInfo{"paths", "list of 'from -> to'", std::nullopt,
                           "which block reaches which (an engine a memory, the MXU the VPU that drains it); the "
                           "kinds each block may reach are listed with its kind below"});
  std::vector<std::pair<std::string, std::vector<FieldInfo>>> out{{"chip", std::move(chip)}};
  for (const BlockKindInfo& k : block_kinds()) {
    std::string reach;
    for (const BlockPort& p : k.ports) {
      std::string kinds;
      for (BlockKind a : p.accepts) kinds += (kinds.empty() ? "" : "|") + std::string(block_kind_name(a));
      reach += fmt::format("; reaches {} ({})", kinds, p.doc);
    }
    const std::string count = k.min_count == k.max_count ? fmt::format("count {}", k.min_count)
                                                         : fmt::format("count {} to {}", k.min_count, k.max_count);
    std::string title = fmt::format("chip.{} (block kind: {}; {}{}, {}{}): {}", k.name, k.name,
                                    k.scope == BlockScope::tensorcore ? "in each TensorCore" : "per chip",
                                    k.required ? ", required" : ", optional", count, reach, k.doc);
    std::vector<FieldInfo> fields = header_fields().infos();
    for (FieldInfo& f : k.fields->infos()) fields.push_back(std::move(f));
    out.emplace_back(std::move(title), std::move(fields));
  }
  return out;
}

ChipSpec standard_composition(ChipSpec spec) {
  if (!spec.composition.blocks.empty()) return spec;
  using K = BlockKind;
  const SourceLoc standard{"(standard composition)"};
  const auto add = [&](K kind, int count) {
    spec.composition.blocks.push_back(ChipBlock{std::string(block_kind_name(kind)), kind, count, standard});
  };
  const auto path = [&](K from, K to) {
    spec.composition.paths.push_back(
        ChipPath{std::string(block_kind_name(from)), std::string(block_kind_name(to)), standard});
  };
  const bool cmem = spec.cmem.capacity.count() > 0;
  const bool sparsecore = spec.sparsecore.count > 0;
  add(K::tensorcore, spec.tensorcores);
  add(K::mxu, spec.mxu.per_core);
  add(K::vpu, 1);
  add(K::vmem, 1);
  if (cmem) add(K::cmem, 1);
  add(K::hbm, 1);
  add(K::dma, 1);
  add(K::host, 1);
  add(K::ici, 1);
  if (sparsecore) add(K::sparsecore, spec.sparsecore.count);
  path(K::dma, K::vmem);
  if (cmem) path(K::dma, K::cmem);
  path(K::dma, K::hbm);
  path(K::dma, K::host);
  path(K::mxu, K::vpu);
  path(K::mxu, K::hbm);
  path(K::vpu, K::hbm);
  if (sparsecore) path(K::sparsecore, K::hbm);
  return spec;
}

const ChipBlock* find_block(const ChipSpec& chip, BlockKind kind) {
  for (const ChipBlock& b : chip.composition.blocks) {
    if (b.kind == kind && b.count > 0) return &b;
  }
  return nullptr;
}

bool has_path(const ChipSpec& chip, BlockKind from, BlockKind to) {
  if (chip.composition.blocks.empty()) return has_path(standard_composition(chip), from, to);
  const ChipBlock* a = find_block(chip, from);
  const ChipBlock* b = find_block(chip, to);
  if (a == nullptr || b == nullptr) return false;
  return std::any_of(chip.composition.paths.begin(), chip.composition.paths.end(),
                     [&](const ChipPath& p) { return p.from == a->name && p.to == b->name; });
}

std::vector<std::pair<std::string, std::string>> render_chip(const ChipSpec& input) {
  const ChipSpec chip = standard_composition(input);
  std::vector<std::pair<std::string, std::string>> out = chip_fields().render(chip);
  for (const ChipBlock& b : chip.composition.blocks) {
    const BlockKindInfo& info = block_kind(b.kind);
    out.emplace_back(b.name + ".kind", std::string(info.name));
    if (info.max_count > 1 || info.min_count == 0) out.emplace_back(b.name + ".count", fmt::format("{}", b.count));
    for (auto& [k, v] : info.fields->render(chip)) out.emplace_back(b.name + "." + k, v);
  }
  std::string paths;
  for (const ChipPath& p : chip.composition.paths) {
    paths += (paths.empty() ? "" : ", ") + p.from + " -> " + p.to;
  }
  out.emplace_back("paths", paths);
  return out;
}

}  // namespace tpusim
