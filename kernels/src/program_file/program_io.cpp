// The "tpusim-program" JSON format (documented in kernels/README.md).
#include "tpusim/kernels/program_io.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <ostream>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "program_file/json_locate.h"
#include "program_file/program_format.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/fields.h"
#include "tpusim/kernels/collectives.h"

namespace tpusim::ir {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace program_format;

// Collects every problem of a file, each located by the JSON pointer of the offending value.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  void error(const std::string& ptr, std::string message, std::string expected, std::string found,
             std::string hint = {}) {
    // A file of generated garbage can have millions of errors: the first ones say what is wrong.
    if (diags_.size() >= kMaxErrors) {
      ++omitted_;
      return;
    }
    diags_.error(SourceLoc{source_}, ptr, std::move(message), std::move(expected), std::move(found),
                 std::move(hint));
  }
  [[nodiscard]] const Diagnostics& diagnostics() const { return diags_; }
  // The errors, with a last one counting those left out.
  [[nodiscard]] std::vector<Diagnostic> finished() const {
    std::vector<Diagnostic> out = diags_.items();
    if (omitted_ > 0) {
      out.push_back(Diagnostic{SourceLoc{source_}, "", fmt::format("... and {} more errors", omitted_), "", "", ""});
    }
    return out;
  }

  // A required member; reports it missing otherwise.
  const json* need(const json& obj, const std::string& ptr, const std::string& key) {
    const auto it = obj.find(key);
    if (it != obj.end()) return &*it;
    error(ptr + "/" + key, "missing field", fmt::format("a value for '{}'", key), "nothing");
    return nullptr;
  }

  bool object(const json& v, const std::string& ptr, const std::vector<std::string>& allowed) {
    if (!v.is_object()) {
      error(ptr, "wrong type", "an object", describe(v));
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(ptr + "/" + key, "unknown field", "one of the fields of this object", key, suggestion(key, allowed));
      }
    }
    return true;
  }

  std::optional<std::uint64_t> uint(const json& v, const std::string& ptr,
                                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= max) return v.get<std::uint64_t>();
    error(ptr, "bad value", fmt::format("an integer in [0, {}]", max), describe(v));
    return std::nullopt;
  }

  std::optional<double> flops(const json& v, const std::string& ptr) {
    if (v.is_number() && v.get<double>() >= 0) return v.get<double>();
    error(ptr, "bad value", "a non-negative number", describe(v));
    return std::nullopt;
  }

  template <class E, std::size_t N>
  std::optional<E> enumeration(const json& v, const std::string& ptr, const Named<E> (&table)[N]) {
    if (v.is_string()) {
      for (const auto& e : table) {
        if (e.name == v.get<std::string>()) return e.value;
      }
    }
    const auto all = names(table);
    error(ptr, "unknown name", fmt::format("one of: {}", fmt::join(all, ", ")), describe(v),
          v.is_string() ? suggestion(v.get<std::string>(), all) : std::string());
    return std::nullopt;
  }

  static std::string describe(const json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) {
      if (v.empty()) return "an empty array";
      return fmt::format("an array of {} item{}", v.size(), v.size() == 1 ? "" : "s");
    }
    const std::string text = v.dump();
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
  }

 private:
  static constexpr std::size_t kMaxErrors = 50;
  std::string source_;
  Diagnostics diags_;
  std::size_t omitted_ = 0;
};

// A custom op's unit, a kind added at run time (ir::add_unit_kind), which sets its op kind (custom_op); the
// built-in unit kinds have op kinds of their own.
void read_added_unit(Reader& r, const json& v, const std::string& ptr, OpKind& kind) {
  UnitKind unit{};
  if (v.is_string() && unit_kind_named(v.get<std::string>(), unit) && static_cast<int>(unit) >= kBuiltInUnitKinds) {
    kind = custom_op(unit);
    return;
  }
  std::vector<std::string> added;
  for (int k = kBuiltInUnitKinds; k < unit_kind_count(); ++k) added.emplace_back(unit_name(static_cast<UnitKind>(k)));
  const std::string expected = added.empty() ? std::string("a unit kind added to the simulator (none is)")
                                             : fmt::format("one of the added unit kinds: {}", fmt::join(added, ", "));
  r.error(ptr, "unknown unit kind", expected, Reader::describe(v),
          v.is_string() ? suggestion(v.get<std::string>(), added) : std::string());
}

// FLOPs above these bounds are refused (kernels/README.md, "Program file format"), within kFlopsSlack for the
// rounding of a lowering that splits an op's FLOPs over its parts.
constexpr double kFlopsSlack = 1e-9;
// A vector, gather, scatter or collective does at most a fused multiply-add per element it computes on.
constexpr double kFlopsPerElement = 2;

// The most FLOPs `ins` can stand for, and how that bound is made, or nullopt where a file's FLOPs are not
// bounded (a custom op: the block of its added unit kind says what they mean).
std::optional<std::pair<double, std::string>> flops_bound(const Instruction& ins) {
  const auto d = [](auto x) { return static_cast<double>(x); };
  switch (ins.kind) {
    case OpKind::matmul: {
      const double b = 2 * d(ins.shape.m) * d(ins.shape.k) * d(ins.shape.n) * d(ins.shape.batch);
      return std::pair{b, fmt::format("2 x m x k x n x batch = 2 x {} x {} x {} x {} = {}", ins.shape.m, ins.shape.k,
                                      ins.shape.n, ins.shape.batch, b)};
    }
    case OpKind::vector: {
      const double b = kFlopsPerElement * d(ins.vector.elements);
      return std::pair{b, fmt::format("{0} x elements = {0} x {1} = {2}", kFlopsPerElement, ins.vector.elements, b)};
    }
    case OpKind::gather:
    case OpKind::scatter: {
      const double b = kFlopsPerElement * d(ins.shape.m) * d(ins.shape.n);
      return std::pair{b, fmt::format("{0} x rows x width = {0} x {1} x {2} = {3}", kFlopsPerElement, ins.shape.m,
                                      ins.shape.n, b)};
    }
    case OpKind::collective: {
      const std::uint64_t elements = ins.bytes / static_cast<std::uint64_t>(dtype_bytes(ins.dtype));
      const double b = kFlopsPerElement * d(elements);
      return std::pair{b, fmt::format("{0} x the elements of its buffer = {0} x {1} = {2}", kFlopsPerElement,
                                      elements, b)};
    }
    case OpKind::dma:
    case OpKind::send:
    case OpKind::recv:
    case OpKind::host:
    case OpKind::barrier:
      return std::pair{0.0, fmt::format("0 (a {} computes nothing)", op_name(ins.kind))};
    default:
      return std::nullopt;
  }
}

// An absent hardware_flops is 0 (the writer omits it at 0), so model FLOPs without it would make MFU exceed
// HFU = 0. It is refused rather than taken as the op's bound: what the hardware executes is the file's to say.
void missing_hardware_flops(Reader& r, const json& v, const std::string& ptr, const Instruction& ins) {
  if (ins.flops.model <= 0 || v.contains("hardware_flops")) return;
  r.error(ptr + "/model_flops", "model FLOPs without hardware FLOPs",
          "hardware_flops given too, at least model_flops (model FLOPs are the useful part of what the hardware "
          "executes; an absent hardware_flops is 0)",
          fmt::format("model_flops {} and no hardware_flops", ins.flops.model),
          "add hardware_flops: the FLOPs the hardware executes for this instruction");
}

// The FLOPs of an instruction read without errors: model FLOPs are the useful part of what the hardware
// executes, and neither is more than the op computes.
void check_flops(Reader& r, const json& v, const std::string& ptr, const Instruction& ins) {
  const auto above = [](double x, double bound) { return x > bound * (1 + kFlopsSlack); };
  if (v.contains("model_flops") && v.contains("hardware_flops") && above(ins.flops.model, ins.flops.hardware)) {
    r.error(ptr + "/model_flops", "more model FLOPs than hardware FLOPs",
            fmt::format("at most hardware_flops, {} (model FLOPs are the useful part of what the hardware executes)",
                        ins.flops.hardware),
            fmt::format("{}", ins.flops.model));
    return;
  }
  const auto bound = flops_bound(ins);
  for (const auto& [field, x] : {std::pair{"hardware_flops", ins.flops.hardware}, {"model_flops", ins.flops.model}}) {
    if (!bound || !above(x, bound->first)) continue;
    r.error(fmt::format("{}/{}", ptr, field), fmt::format("more FLOPs than the {} computes", op_name(ins.kind)),
            fmt::format("at most {}", bound->second), fmt::format("{}", x));
    return;
  }
  missing_hardware_flops(r, v, ptr, ins);
}

// Reads one instruction's fields into `ins` and its dependencies into `deps`; false if anything was wrong.
bool read_instruction(Reader& r, const json& v, const std::string& ptr, std::size_t index, int version,
                      std::size_t groups, Instruction& ins, std::vector<std::uint32_t>& deps, std::string& label) {
  if (!v.is_object()) return r.object(v, ptr, {});
  const std::size_t errors = r.diagnostics().size();
  const json* op = r.need(v, ptr, "op");
  if (op == nullptr) return false;
  const auto kind = r.enumeration(*op, ptr + "/op", kOps);
  if (!kind) return false;
  ins.kind = *kind;
  ins.op_class = default_op_class(ins.kind);  // a `class` below (version 2) replaces it
  std::vector<std::string> allowed = kCommonFields;
  std::vector<std::string> fields = op_fields(ins.kind);
  // A remote put (a dma to `remote`) names its destination as a send does: `peer` along the first axis of
  // `mesh_axes` (optional: the pod's first axis of more than one chip).
  const auto dst = v.find("dst");
  const bool put = ins.kind == OpKind::dma && dst != v.end() && dst->is_string() && dst->get<std::string>() == "remote";
  if (put) fields.emplace_back("peer");
  if (put) allowed.emplace_back("mesh_axes");
  allowed.insert(allowed.end(), fields.begin(), fields.end());
  if (ins.kind == OpKind::collective) allowed.emplace_back("algorithm");  // optional, default "auto"
  if (ins.kind == OpKind::host) allowed.emplace_back("host_seconds");   // optional, default 0
  if (ins.kind == OpKind::vector) allowed.emplace_back("bytes");        // optional VMEM operand bytes, default 0
  const bool groupable = std::find(fields.begin(), fields.end(), "mesh_axes") != fields.end();
  if (groupable) allowed.emplace_back("group");  // a group of the set, instead of mesh_axes
  if (version >= 2) {                                                   // optional, see kernels/README.md
    allowed.emplace_back("class");
    if (ins.kind == OpKind::matmul) {
      for (const char* f : {"batch", "sum_batch", "vector_op", "elements", "buffers"}) allowed.emplace_back(f);
    }
    if (ins.kind == OpKind::matmul || ins.kind == OpKind::vector) {
      for (const char* f : {"hbm_read", "hbm_written", "grid_steps"}) allowed.emplace_back(f);
    }
  }
  r.object(v, ptr, allowed);

  auto at = [&](const std::string& f) { return ptr + "/" + f; };
  auto opt_uint = [&](const std::string& f, std::uint64_t max, auto& dst) {
    if (const auto it = v.find(f); it != v.end()) {
      if (const auto u = r.uint(*it, at(f), max)) dst = static_cast<std::remove_reference_t<decltype(dst)>>(*u);
    }
  };
  if (const auto it = v.find("label"); it != v.end()) {
    if (it->is_string()) label = it->get<std::string>();
    else r.error(at("label"), "wrong type", "a string", Reader::describe(*it));
  }
  opt_uint("core", std::numeric_limits<std::uint8_t>::max(), ins.core);
  opt_uint("vmem_alloc", kMaxCount, ins.vmem.alloc);
  opt_uint("vmem_free", kMaxCount, ins.vmem.free);
  if (const auto it = v.find("host_seconds"); ins.kind == OpKind::host && it != v.end()) {
    if (it->is_number() && it->get<double>() >= 0) ins.host.seconds = it->get<double>();
    else r.error(at("host_seconds"), "bad value", "a number of seconds >= 0", Reader::describe(*it));
  }
  if (const auto it = v.find("bytes"); ins.kind == OpKind::vector && it != v.end()) {
    if (const auto u = r.uint(*it, at("bytes"), kMaxCount)) ins.bytes = *u;
  }
  if (version >= 2) {
    if (const auto it = v.find("class"); it != v.end()) {
      if (const auto c = r.enumeration(*it, at("class"), kOpClassNames)) ins.op_class = *c;
    }
    opt_uint("hbm_read", kMaxCount, ins.stream.hbm_read);
    opt_uint("hbm_written", kMaxCount, ins.stream.hbm_written);
    opt_uint("grid_steps", std::numeric_limits<std::uint32_t>::max(), ins.stream.grid_steps);
    if (ins.kind == OpKind::matmul) {
      opt_uint("buffers", std::numeric_limits<std::uint8_t>::max(), ins.stream.buffers);
      if (const auto it = v.find("batch"); it != v.end()) {
        if (const auto u = r.uint(*it, at("batch"), std::numeric_limits<std::int32_t>::max())) {
          if (*u == 0) r.error(at("batch"), "bad value", "an integer >= 1", "0");
          else ins.shape.batch = static_cast<std::int32_t>(*u);
        }
      }
      if (const auto it = v.find("sum_batch"); it != v.end()) {
        if (it->is_boolean()) ins.shape.sum_batch = it->get<bool>();
        else r.error(at("sum_batch"), "wrong type", "true or false", Reader::describe(*it));
      }
      if (const auto it = v.find("vector_op"); it != v.end()) {
        if (const auto e = r.enumeration(*it, at("vector_op"), kVectorOps)) ins.vector.op = *e;
      }
      if (const auto it = v.find("elements"); it != v.end()) {
        if (const auto u = r.uint(*it, at("elements"), kMaxCount)) {
          ins.vector.elements = static_cast<std::int64_t>(*u);
        }
      }
    }
  }
  for (const char* f : {"model_flops", "hardware_flops"}) {
    if (const auto it = v.find(f); it != v.end()) {
      if (const auto x = r.flops(*it, at(f))) (f[0] == 'm' ? ins.flops.model : ins.flops.hardware) = *x;
    }
  }

  if (const auto it = v.find("group"); groupable && it != v.end()) {
    if (v.contains("mesh_axes")) {
      r.error(at("group"), "both a group and mesh_axes", "either mesh_axes or group, not both", Reader::describe(*it));
    } else if (groups == 0) {
      r.error(at("group"), "no group to name", "an index into the top-level groups (the file has none)",
              Reader::describe(*it));
    } else if (const auto u = r.uint(*it, at("group"), groups - 1)) {
      ins.comm.group = static_cast<std::uint16_t>(*u);
    }
  }

  if (put && v.contains("mesh_axes")) fields.emplace_back("mesh_axes");
  for (const std::string& f : fields) {
    if (f == "mesh_axes" && groupable && v.contains("group")) continue;  // the group replaces it
    const json* x = r.need(v, ptr, f);
    if (x == nullptr) continue;
    const std::string p = at(f);
    auto set_int = [&](std::int64_t& dst, std::uint64_t max) {
      if (const auto u = r.uint(*x, p, max)) dst = static_cast<std::int64_t>(*u);
    };
    if (f == "m" || f == "rows") set_int(ins.shape.m, kMaxDim);
    else if (f == "k" || f == "bags") set_int(ins.shape.k, kMaxDim);
    else if (f == "n" || f == "width") set_int(ins.shape.n, kMaxDim);
    else if (f == "elements") set_int(ins.vector.elements, kMaxCount);
    else if (f == "bytes") { if (const auto u = r.uint(*x, p, kMaxCount)) ins.bytes = *u; }
    else if (f == "dtype") { if (const auto e = r.enumeration(*x, p, kDTypes)) ins.dtype = *e; }
    else if (f == "vector_op") { if (const auto e = r.enumeration(*x, p, kVectorOps)) ins.vector.op = *e; }
    else if (f == "src") { if (const auto e = r.enumeration(*x, p, kMemories)) ins.memory.src = *e; }
    else if (f == "dst") { if (const auto e = r.enumeration(*x, p, kMemories)) ins.memory.dst = *e; }
    else if (f == "pattern") { if (const auto e = r.enumeration(*x, p, kPatterns)) ins.memory.pattern = *e; }
    else if (f == "collective") { if (const auto e = r.enumeration(*x, p, kCollectives)) ins.comm.collective = *e; }
    else if (f == "host_op") { if (const auto e = r.enumeration(*x, p, kHostOps)) ins.host.op = *e; }
    else if (f == "unit") read_added_unit(r, *x, p, ins.kind);
    else if (f == "peer") {
      if (x->is_number_integer() && x->get<std::int64_t>() >= std::numeric_limits<std::int32_t>::min() &&
          x->get<std::int64_t>() <= std::numeric_limits<std::int32_t>::max()) {
        ins.comm.peer = static_cast<std::int32_t>(x->get<std::int64_t>());
      } else {
        r.error(p, "bad value", "a 32-bit signed integer", Reader::describe(*x));
      }
    } else if (f == "mesh_axes") {
      if (!x->is_array()) r.error(p, "wrong type", "an array of mesh axis indices", Reader::describe(*x));
      else {
        for (std::size_t a = 0; a < x->size(); ++a) {
          const std::string pa = fmt::format("{}/{}", p, a);
          const auto u = r.uint((*x)[a], pa, 31);
          if (u && (ins.comm.mesh_axes >> *u & 1u) != 0) {
            r.error(pa, "axis listed twice", "each mesh axis at most once", Reader::describe((*x)[a]));
          } else if (u) {
            ins.comm.mesh_axes |= 1u << *u;
          }
        }
      }
    }
  }

  if (ins.kind == OpKind::gather || ins.kind == OpKind::scatter) {  // the rows' bytes follow from the shape
    std::uint64_t elements = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(ins.shape.m), static_cast<std::uint64_t>(ins.shape.n),
                               &elements) ||
        __builtin_mul_overflow(elements, static_cast<std::uint64_t>(dtype_bytes(ins.dtype)), &ins.bytes)) {
      r.error(at("rows"), "bad value", "rows x width x dtype bytes below 2^64",
              fmt::format("{} x {}", ins.shape.m, ins.shape.n));
    }
  }
  if (ins.kind == OpKind::matmul) {
    for (const auto& [f, x] : {std::pair{"m", ins.shape.m}, {"k", ins.shape.k}, {"n", ins.shape.n}}) {
      if (x == 0 && v.contains(f)) r.error(at(f), "a matmul dimension of 0", "an integer >= 1", "0");
    }
  }
  // A collective reduces, gathers or moves whole elements of its dtype (its plan counts in them).
  if (ins.kind == OpKind::collective && r.diagnostics().size() == errors &&
      ins.bytes % static_cast<std::uint64_t>(dtype_bytes(ins.dtype)) != 0) {
    r.error(at("bytes"), "not a whole number of elements",
            fmt::format("a multiple of {} (the bytes of one {} element)", dtype_bytes(ins.dtype),
                        dtype_name(ins.dtype)),
            fmt::format("{} bytes", ins.bytes));
  }
  if (r.diagnostics().size() == errors) check_flops(r, v, ptr, ins);
  if (const auto it = v.find("algorithm"); ins.kind == OpKind::collective && it != v.end()) {
    const std::optional<kernels::CollectiveAlgorithm> a =
        it->is_string() ? kernels::algorithm_by_name(it->get<std::string>()) : std::nullopt;
    if (a) {
      ins.comm.algorithm = static_cast<std::uint8_t>(*a);
    } else {
      const std::vector<std::string> all = kernels::algorithm_names();
      r.error(at("algorithm"), "unknown collective algorithm", fmt::format("one of: {}", fmt::join(all, ", ")),
              Reader::describe(*it), it->is_string() ? suggestion(it->get<std::string>(), all) : std::string());
    }
  }

  if (const json* d = r.need(v, ptr, "deps")) {
    if (!d->is_array()) {
      r.error(at("deps"), "wrong type", "an array of earlier instruction indices", Reader::describe(*d));
    } else {
      for (std::size_t i = 0; i < d->size(); ++i) {
        const std::string p = fmt::format("{}/deps/{}", ptr, i);
        const json& dep = (*d)[i];
        if (dep.is_number_unsigned() && dep.get<std::uint64_t>() >= index) {
          r.error(p, "dependency is not an earlier instruction", fmt::format("an index below {}", index),
                  Reader::describe(dep));
        } else if (const auto u = r.uint(dep, p)) {
          deps.push_back(static_cast<std::uint32_t>(*u));
        }
      }
    }
  }
  return r.diagnostics().size() == errors;
}

// Reads the top-level `groups`: each {size: [..], stride: [..] (optional, 1s), pods (optional, 1)}, arrays of
// 1 to kGroupAxes positive integers (missing axes are 1).
std::vector<CollectiveGroup> read_groups(Reader& r, const json& v) {
  std::vector<CollectiveGroup> groups;
  if (!v.is_array() || v.size() >= kAxesGroup) {
    r.error("/groups", "wrong type", fmt::format("an array of at most {} groups", kAxesGroup - 1), Reader::describe(v));
    return groups;
  }
  constexpr std::uint64_t kMaxMembers = std::numeric_limits<std::uint32_t>::max();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string ptr = fmt::format("/groups/{}", i);
    CollectiveGroup g;
    if (r.object(v[i], ptr, {"size", "stride", "pods"})) {
      const auto axes = [&](const std::string& key, std::array<std::uint32_t, kGroupAxes>& out) {
        const json& a = v[i][key];
        if (!a.is_array() || a.empty() || a.size() > static_cast<std::size_t>(kGroupAxes)) {
          r.error(ptr + "/" + key, "wrong type", fmt::format("an array of 1 to {} positive integers, one per torus axis", kGroupAxes),
                  Reader::describe(a));
          return;
        }
        for (std::size_t k = 0; k < a.size(); ++k) {
          const std::string p = fmt::format("{}/{}/{}", ptr, key, k);
          if (const auto u = r.uint(a[k], p, kMaxMembers)) {
            if (*u == 0) r.error(p, "bad value", "a positive integer", "0");
            else out[k] = static_cast<std::uint32_t>(*u);
          }
        }
      };
      if (r.need(v[i], ptr, "size") != nullptr) axes("size", g.size);
      if (v[i].contains("stride")) axes("stride", g.stride);
      if (const auto it = v[i].find("pods"); it != v[i].end()) {
        if (const auto u = r.uint(*it, ptr + "/pods", kMaxMembers)) {
          if (*u == 0) r.error(ptr + "/pods", "bad value", "a positive integer", "0");
          else g.pods = static_cast<std::uint32_t>(*u);
        }
      }
    }
    groups.push_back(g);
  }
  return groups;
}

}  // namespace

ProgramSet parse_program_json(std::string_view text, const std::string& source) {
  const json root = parse_tree(text, source);
  Reader r(source);
  // Every error names the file, the line and column of the offending value, and its JSON pointer.
  auto throw_if_any = [&] {
    if (!r.diagnostics().empty()) throw ConfigError(with_lines(text, source, r.finished()));
  };
  if (!r.object(root, "", {"signature", "format", "version", "role_of_chip", "groups", "programs"})) throw_if_any();
  // Optional, any version: what `tpusim lower` signs its files with (kernels/README.md); not checked when read,
  // since a program file edited by hand is still a program.
  if (const auto sig = root.find("signature"); sig != root.end() && !sig->is_string()) {
    r.error("/signature", "wrong type", "a string", Reader::describe(*sig));
  }
  // A file of another format or version is not interpreted further: its other errors would be noise.
  if (const json* f = r.need(root, "", "format"); f && !(f->is_string() && f->get<std::string>() == kFormat)) {
    r.error("/format", "not a tpusim program file", json(std::string(kFormat)).dump(), Reader::describe(*f));
  }
  int version = 0;
  if (const json* v = r.need(root, "", "version"); v && v->is_number_unsigned() &&
                                                     (v->get<std::uint64_t>() == 1 || v->get<std::uint64_t>() == 2)) {
    version = static_cast<int>(v->get<std::uint64_t>());
  } else if (v != nullptr) {
    r.error("/version", "unsupported version", "1 or 2", Reader::describe(*v));
  }
  throw_if_any();

  ProgramSet set;
  if (const auto g = root.find("groups"); g != root.end()) set.groups = read_groups(r, *g);
  const json* programs = r.need(root, "", "programs");
  if (programs != nullptr && !programs->is_array()) {
    r.error("/programs", "wrong type", "an array of programs", Reader::describe(*programs));
  } else if (programs != nullptr && programs->empty()) {
    r.error("/programs", "no program to run", "at least one program", "an empty array");
  } else if (programs != nullptr) {
    for (std::size_t p = 0; p < programs->size(); ++p) {
      const std::string pptr = fmt::format("/programs/{}", p);
      const json& pj = (*programs)[p];
      if (!r.object(pj, pptr, {"name", "instructions"})) continue;
      std::string name;
      if (const json* n = r.need(pj, pptr, "name")) {
        if (n->is_string()) name = n->get<std::string>();
        else r.error(pptr + "/name", "wrong type", "a string", Reader::describe(*n));
      }
      Program prog(name);
      const json* instrs = r.need(pj, pptr, "instructions");
      if (instrs != nullptr && !instrs->is_array()) {
        r.error(pptr + "/instructions", "wrong type", "an array of instructions", Reader::describe(*instrs));
      } else if (instrs != nullptr) {
        bool ok = true;
        for (std::size_t i = 0; i < instrs->size(); ++i) {
          Instruction ins;
          std::vector<std::uint32_t> deps;
          std::string label;
          ok = read_instruction(r, (*instrs)[i], fmt::format("{}/instructions/{}", pptr, i), i, version,
                                set.groups.size(), ins, deps, label) &&
               ok;
          if (ok) prog.add(ins, deps, label);
        }
      }
      set.programs.push_back(std::move(prog));
    }
  }
  if (const json* roles = r.need(root, "", "role_of_chip")) {
    if (!roles->is_array()) {
      r.error("/role_of_chip", "wrong type", "an array of program indices (one per chip)", Reader::describe(*roles));
    } else {
      const std::size_t nprog = set.programs.size();
      for (std::size_t c = 0; c < roles->size(); ++c) {
        const std::string ptr = fmt::format("/role_of_chip/{}", c);
        const json& role = (*roles)[c];
        if (nprog == 0) {
          r.error(ptr, "no program for this role", "at least one program", Reader::describe(role));
        } else if (const auto u = r.uint(role, ptr, std::min<std::size_t>(nprog - 1, std::numeric_limits<std::uint16_t>::max()))) {
          set.role_of_chip.push_back(static_cast<std::uint16_t>(*u));
        }
      }
    }
  }
  // Chips with nothing to run would end the step at 0 s, and with it every rate of the summary. An empty
  // program beside work (a role that idles) is fine.
  if (r.diagnostics().empty()) {
    std::set<std::size_t> run;  // the programs some chip runs: programs[0] for all without roles
    if (set.role_of_chip.empty()) run.insert(0);
    run.insert(set.role_of_chip.begin(), set.role_of_chip.end());
    if (std::all_of(run.begin(), run.end(), [&](std::size_t p) { return set.programs[p].size() == 0; })) {
      r.error(fmt::format("/programs/{}/instructions", *run.begin()), "no chip has an instruction to run",
              "at least one instruction in a program that a chip runs",
              run.size() == 1 ? "an empty array" : fmt::format("{} programs run, all empty", run.size()));
    }
  }
  throw_if_any();
  return set;
}

ProgramSet read_program_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError({Diagnostic{SourceLoc{path.string()}, "", "cannot open program file", "a readable file",
                                  "no such file or no permission", ""}});
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_program_json(text.str(), path.string());
}

SourceLoc program_file_location(const std::filesystem::path& path, const std::string& json_pointer) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return SourceLoc{path.string()};
  const std::string t = text.str();
  const auto [line, column] = line_column(t, pointer_offset(t, json_pointer));
  return SourceLoc{path.string(), line, column};
}

}  // namespace tpusim::ir
