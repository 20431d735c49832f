#include "tools/src/describe_chip.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/src/charts/svg.h"
#include "tpusim/core/chip_blocks.h"

namespace tpusim::tools {
namespace {

using Rendered = std::map<std::string, std::string>;

// One line on what a block is: its kind's summary (core/chip_blocks.h) with each {key} replaced by the block's
// resolved field ("?" where it has none).
std::string summary(const ChipBlock& b, const Rendered& v) {
  const std::string_view text = block_kind(b.kind).summary;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t open = text.find('{', i);
    const std::size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, open - i));
    const auto it = v.find(b.name + "." + std::string(text.substr(open + 1, close - open - 1)));
    out += it == v.end() ? std::string("?") : it->second;
    i = close + 1;
  }
  return out;
}

std::string label(const ChipBlock& b) {
  const std::string kind(block_kind_name(b.kind));
  std::string s = b.name == kind ? b.name : fmt::format("{} ({})", b.name, kind);
  if (block_kind(b.kind).max_count > 1 || b.count == 0) s += fmt::format(" x{}", b.count);
  return s;
}

// "memory -> vmem, hbm" for each port of `b` that some path uses.
std::string outgoing(const ChipSpec& chip, const ChipBlock& b) {
  std::vector<std::pair<std::string, std::string>> by_port;
  for (const ChipPath& p : chip.composition.paths) {
    if (p.from != b.name) continue;
    const ChipBlock* to = nullptr;
    for (const ChipBlock& c : chip.composition.blocks) {
      if (c.name == p.to) to = &c;
    }
    const BlockPort* port = to != nullptr ? port_to(b.kind, to->kind) : nullptr;
    const std::string name = port != nullptr ? std::string(port->name) : "?";
    auto it = std::find_if(by_port.begin(), by_port.end(), [&](const auto& e) { return e.first == name; });
    if (it == by_port.end()) {
      by_port.emplace_back(name, p.to);
    } else {
      it->second += ", " + p.to;
    }
  }
  std::string s;
  for (const auto& [port, targets] : by_port) s += (s.empty() ? "" : "; ") + port + " -> " + targets;
  return s;
}

std::string source_of(const ChipSpec& chip, const std::string& key, const std::string& doc) {
  const auto it = chip.origins.find(key);
  if (it == chip.origins.end()) return "";
  if (it->second.defaulted) return doc.find("assumption") != std::string::npos ? "default [assumption]" : "default";
  return it->second.comment.empty() ? it->second.loc.str() : it->second.comment;
}

// The doc line of each rendered key, to tell defaulted assumptions apart.
std::map<std::string, std::string> docs_of(const ChipSpec& chip) {
  std::map<std::string, std::string> docs;
  for (const FieldInfo& f : chip_fields().infos()) docs[f.key] = f.doc;
  for (const ChipBlock& b : chip.composition.blocks) {
    for (const FieldInfo& f : block_kind(b.kind).fields->infos()) docs[b.name + "." + f.key] = f.doc;
  }
  return docs;
}

bool in_tensorcore(const ChipBlock& b) { return block_kind(b.kind).scope == BlockScope::tensorcore; }

}  // namespace

void print_chip_description(const ChipSpec& input, std::ostream& out) {
  const ChipSpec chip = standard_composition(input);
  const auto rendered_list = render_chip(chip);
  const Rendered rendered(rendered_list.begin(), rendered_list.end());
  out << fmt::format("chip {} (derived peak bf16 {})\n\nblocks\n", chip.name, format_flops(chip.derived_peak_bf16()));

  // Rows of the tree: the TensorCore first with what sits in it, then the chip-level blocks.
  struct Row {
    std::string tree, summary, paths;
  };
  std::vector<Row> rows;
  const ChipBlock* tensorcore = find_block(chip, BlockKind::tensorcore);
  std::vector<const ChipBlock*> inner, outer;
  for (const ChipBlock& b : chip.composition.blocks) {
    if (&b == tensorcore) continue;
    (in_tensorcore(b) ? inner : outer).push_back(&b);
  }
  const auto row = [&](const std::string& prefix, const ChipBlock& b) {
    rows.push_back(Row{prefix + label(b), b.count == 0 ? "switched off (count 0)" : summary(b, rendered),
                       outgoing(chip, b)});
  };
  if (tensorcore != nullptr) {
    row(outer.empty() ? "`-- " : "+-- ", *tensorcore);
    for (std::size_t i = 0; i < inner.size(); ++i) {
      row(std::string(outer.empty() ? "    " : "|   ") + (i + 1 == inner.size() ? "`-- " : "+-- "), *inner[i]);
    }
  }
  for (std::size_t i = 0; i < outer.size(); ++i) row(i + 1 == outer.size() ? "`-- " : "+-- ", *outer[i]);
  std::size_t tree_w = 0, summary_w = 0;
  for (const Row& r : rows) {
    tree_w = std::max(tree_w, r.tree.size());
    summary_w = std::max(summary_w, r.summary.size());
  }
  out << "  chip " << chip.name << "\n";
  for (const Row& r : rows) {
    std::string line = fmt::format("  {:<{}}  {:<{}}", r.tree, tree_w, r.summary, summary_w);
    if (!r.paths.empty()) line += "  " + r.paths;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }

  out << "\nfields\n";
  const auto docs = docs_of(chip);
  std::size_t key_w = 5, val_w = 5;
  for (const auto& [k, v] : rendered_list) {
    key_w = std::max(key_w, k.size());
    val_w = std::max(val_w, v.size());
  }
  out << fmt::format("  {:<{}}  {:<{}}  {}\n", "field", key_w, "value", val_w, "source");
  for (const auto& [k, v] : rendered_list) {
    const auto doc = docs.find(k);
    std::string line = fmt::format("  {:<{}}  {:<{}}  {}", k, key_w, v, val_w,
                                   source_of(chip, k, doc != docs.end() ? doc->second : std::string()));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void write_chip_svg(const ChipSpec& input, std::ostream& out) {
  const ChipSpec chip = standard_composition(input);
  const auto rendered_list = render_chip(chip);
  const Rendered rendered(rendered_list.begin(), rendered_list.end());
  constexpr double kBoxW = 190, kBoxH = 58, kGap = 24, kMargin = 20, kTitle = 40;

  // Layout: the TensorCore box (its blocks side by side) on top; blocks with outgoing paths (engines) and
  // the ICI ports in the middle row; the other chip-level blocks (memories, host) at the bottom.
  const ChipBlock* tensorcore = find_block(chip, BlockKind::tensorcore);
  std::vector<const ChipBlock*> inner, engines, memories;
  for (const ChipBlock& b : chip.composition.blocks) {
    if (&b == tensorcore) continue;
    if (in_tensorcore(b)) {
      inner.push_back(&b);
    } else if (!block_kind(b.kind).ports.empty() || b.kind == BlockKind::ici) {
      engines.push_back(&b);
    } else {
      memories.push_back(&b);
    }
  }
  struct Box {
    double x, y, w, h;
  };
  std::map<std::string, Box> boxes;
  const double tc_w = std::max<double>(1, inner.size()) * (kBoxW + kGap) + kGap;
  const double tc_h = kBoxH + 2 * kGap + 18;
  const auto row_width = [&](std::size_t n) { return n == 0 ? 0.0 : n * kBoxW + (n - 1) * kGap; };
  const double width =
      2 * kMargin + std::max({tc_w, row_width(engines.size()), row_width(memories.size()), 420.0});
  const double tc_x = (width - tc_w) / 2, tc_y = kMargin + kTitle;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    boxes[inner[i]->name] = Box{tc_x + kGap + i * (kBoxW + kGap), tc_y + kGap + 18, kBoxW, kBoxH};
  }
  const auto place_row = [&](const std::vector<const ChipBlock*>& blocks, double y) {
    const double x0 = (width - row_width(blocks.size())) / 2;
    for (std::size_t i = 0; i < blocks.size(); ++i) boxes[blocks[i]->name] = Box{x0 + i * (kBoxW + kGap), y, kBoxW, kBoxH};
  };
  const double engine_y = tc_y + tc_h + 2 * kGap;
  const double memory_y = engine_y + kBoxH + 3 * kGap;
  place_row(engines, engine_y);
  place_row(memories, memory_y);
  const double height = memory_y + kBoxH + kMargin + 30;

  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height)
      << "\n";
  out << R"(<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs>)"
      << "\n";
  out << fmt::format(R"(<text x="{}" y="{}" font-size="15">chip {}: {} blocks, {} paths (derived peak bf16 {})</text>)",
                     kMargin, kMargin + 14, svg_escape(chip.name), chip.composition.blocks.size(),
                     chip.composition.paths.size(), svg_escape(format_flops(chip.derived_peak_bf16())))
      << "\n";
  if (tensorcore != nullptr) {
    // Stacked outlines behind the box stand for the other TensorCores.
    for (int s = std::min(tensorcore->count, 3) - 1; s >= 1; --s) {
      out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" rx="6" fill="#f4f7fb" stroke="#9ab"/>)",
                         tc_x + 6 * s, tc_y - 6 * s, tc_w, tc_h)
          << "\n";
    }
    out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" rx="6" fill="#eef3f9" stroke="#678"/>)",
                       tc_x, tc_y, tc_w, tc_h)
        << "\n";
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-weight="bold">{}</text>)", tc_x + 8, tc_y + 16,
                       svg_escape(label(*tensorcore) + " (each holds the blocks below)"))
        << "\n";
  }
  for (const ChipBlock& b : chip.composition.blocks) {
    const auto it = boxes.find(b.name);
    if (it == boxes.end()) continue;
    const Box& box = it->second;
    const bool off = b.count == 0;
    out << fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" rx="4" fill="{}" stroke="#345"{}/>)",
                       box.x, box.y, box.w, box.h, off ? "#eeeeee" : "#ffffff", off ? R"( stroke-dasharray="4 3")" : "")
        << "\n";
    out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-weight="bold">{}</text>)", box.x + 8, box.y + 17,
                       svg_escape(label(b)))
        << "\n";
    // The summary on up to two lines of about 32 characters.
    std::string text = off ? "switched off (count 0)" : summary(b, rendered);
    std::vector<std::string> lines;
    while (!text.empty() && lines.size() < 2) {
      std::size_t cut = text.size() <= 32 ? text.size() : text.rfind(' ', 32);
      if (cut == std::string::npos || cut == 0) cut = std::min<std::size_t>(32, text.size());
      lines.push_back(text.substr(0, cut));
      text = cut < text.size() ? text.substr(cut + 1) : std::string();
    }
    if (!text.empty()) lines.back() += " ...";
    for (std::size_t l = 0; l < lines.size(); ++l) {
      out << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="#444">{}</text>)", box.x + 8, box.y + 33 + 14 * l,
                         svg_escape(lines[l]))
          << "\n";
    }
  }
  for (const ChipPath& p : chip.composition.paths) {
    const auto a = boxes.find(p.from), b = boxes.find(p.to);
    if (a == boxes.end() || b == boxes.end()) continue;
    const Box& s = a->second;
    const Box& t = b->second;
    double x1 = s.x + s.w / 2, y1 = s.y + s.h / 2, x2 = t.x + t.w / 2, y2 = t.y + t.h / 2;
    if (std::abs(s.y - t.y) < 1) {  // side by side: from edge to edge
      x1 = s.x < t.x ? s.x + s.w : s.x;
      x2 = s.x < t.x ? t.x : t.x + t.w;
    } else {
      y1 = s.y < t.y ? s.y + s.h : s.y;
      y2 = s.y < t.y ? t.y : t.y + t.h;
    }
    const ChipBlock* from = nullptr;
    const ChipBlock* to = nullptr;
    for (const ChipBlock& c : chip.composition.blocks) {
      if (c.name == p.from) from = &c;
      if (c.name == p.to) to = &c;
    }
    const BlockPort* port = from != nullptr && to != nullptr ? port_to(from->kind, to->kind) : nullptr;
    out << fmt::format(R"svg(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#444" stroke-width="1.4" marker-end="url(#arrow)"><title>{} -&gt; {}{}</title></line>)svg",
                       x1, y1, x2, y2, svg_escape(p.from), svg_escape(p.to),
                       port != nullptr ? svg_escape(fmt::format(" ({})", port->name)) : std::string())
        << "\n";
  }
  out << fmt::format(R"(<text x="{}" y="{:.0f}" fill="#555">arrows: paths (an engine reaches a memory; the MXU's results drain into the VPU)</text>)",
                     kMargin, height - 12)
      << "\n</svg>\n";
}

}  // namespace tpusim::tools
