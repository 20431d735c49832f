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

#include "json_locate.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/fields.h"
#include "tpusim/kernels/collectives.h"

namespace tpusim::ir {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kFormat = "tpusim-program";
// Largest matmul dimension (products of two stay inside 64 bits) and largest element or byte count of one
// instruction (256 Ti): beyond them the arithmetic of the hardware models would overflow.
constexpr auto kMaxDim = static_cast<std::uint64_t>(kMaxDimension);
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 48;
constexpr int kVersion = 2;  // version 1 files (no fused-op fields) read unchanged

template <class E>
struct Named {
  E value;
  std::string_view name;
};

constexpr Named<OpKind> kOps[] = {{OpKind::matmul, "matmul"}, {OpKind::vector, "vector"},
                                  {OpKind::dma, "dma"},       {OpKind::collective, "collective"},
                                  {OpKind::send, "send"},     {OpKind::recv, "recv"},
                                  {OpKind::host, "host"},     {OpKind::barrier, "barrier"},
                                  {OpKind::gather, "gather"}, {OpKind::scatter, "scatter"}};
constexpr Named<VectorOp> kVectorOps[] = {{VectorOp::elementwise, "elementwise"},
                                          {VectorOp::transcendental, "transcendental"},
                                          {VectorOp::reduction, "reduction"},
                                          {VectorOp::transpose, "transpose"}};
constexpr Named<Memory> kMemories[] = {{Memory::hbm, "hbm"},   {Memory::vmem, "vmem"},    {Memory::cmem, "cmem"},
                                       {Memory::host, "host"}, {Memory::remote, "remote"}};
constexpr Named<DmaPattern> kPatterns[] = {
    {DmaPattern::contiguous, "contiguous"}, {DmaPattern::strided, "strided"}, {DmaPattern::gather, "gather"}};
constexpr Named<CollectiveKind> kCollectives[] = {{CollectiveKind::all_reduce, "all_reduce"},
                                                  {CollectiveKind::reduce_scatter, "reduce_scatter"},
                                                  {CollectiveKind::all_gather, "all_gather"},
                                                  {CollectiveKind::all_to_all, "all_to_all"},
                                                  {CollectiveKind::permute, "permute"}};
constexpr Named<HostOp> kHostOps[] = {
    {HostOp::infeed, "infeed"}, {HostOp::outfeed, "outfeed"}, {HostOp::checkpoint, "checkpoint"}};
constexpr Named<OpClass> kOpClassNames[] = {{OpClass::other, "other"},
                                         {OpClass::matmul, "matmul"},
                                         {OpClass::attention, "attention"},
                                         {OpClass::norm_activation, "norm_activation"},
                                         {OpClass::optimizer, "optimizer"},
                                         {OpClass::embedding, "embedding"},
                                         {OpClass::loss, "loss"},
                                         {OpClass::communication, "communication"},
                                         {OpClass::host, "host"}};
static_assert(std::size(kOpClassNames) == kOpClasses, "one name per OpClass");
constexpr Named<DType> kDTypes[] = {
    {DType::bf16, "bf16"}, {DType::f32, "f32"}, {DType::int8, "int8"}, {DType::fp8, "fp8"}};

template <class E, std::size_t N>
std::string name_of(const Named<E> (&table)[N], E v) {
  for (const auto& e : table) {
    if (e.value == v) return std::string(e.name);
  }
  return "?";
}

template <class E, std::size_t N>
std::vector<std::string> names(const Named<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

// The fields an op kind uses beyond the common ones, in the order they are written.
const std::vector<std::string>& op_fields(OpKind k) {
  static const std::vector<std::string> matmul{"m", "k", "n", "dtype"}, vector{"vector_op", "elements", "dtype"},
      dma{"src", "dst", "pattern", "bytes"}, collective{"collective", "dtype", "bytes", "mesh_axes"},
      peer{"bytes", "mesh_axes", "peer"}, host{"host_op", "bytes"},
      embedding{"rows", "width", "bags", "dtype", "src", "dst"}, none{};
  switch (k) {
    case OpKind::matmul: return matmul;
    case OpKind::vector: return vector;
    case OpKind::dma: return dma;
    case OpKind::collective: return collective;
    case OpKind::send:
    case OpKind::recv: return peer;
    case OpKind::host: return host;
    case OpKind::barrier: return none;
    case OpKind::gather:
    case OpKind::scatter: return embedding;
  }
  return none;
}

const std::vector<std::string> kCommonFields{"op",        "label",       "core",           "vmem_alloc",
                                             "vmem_free", "model_flops", "hardware_flops", "deps"};

ordered_json axes_json(std::uint32_t mask) {
  ordered_json a = ordered_json::array();
  for (std::uint32_t i = 0; i < 32; ++i) {
    if (mask & (1u << i)) a.push_back(i);
  }
  return a;
}

ordered_json instruction_json(const Program& p, const Instruction& ins) {
  ordered_json j;
  j["op"] = std::string(op_name(ins.kind));
  if (!p.label_of(ins).empty()) j["label"] = p.label_of(ins);
  if (ins.core != 0) j["core"] = ins.core;
  for (const std::string& f : op_fields(ins.kind)) {
    if (f == "m" || f == "rows") j[f] = ins.m;
    else if (f == "k" || f == "bags") j[f] = ins.k;
    else if (f == "n" || f == "width") j[f] = ins.n;
    else if (f == "dtype") j[f] = name_of(kDTypes, ins.dtype);
    else if (f == "vector_op") j[f] = name_of(kVectorOps, ins.vector_op);
    else if (f == "elements") j[f] = ins.elements;
    else if (f == "src") j[f] = name_of(kMemories, ins.src);
    else if (f == "dst") j[f] = name_of(kMemories, ins.dst);
    else if (f == "pattern") j[f] = name_of(kPatterns, ins.pattern);
    else if (f == "bytes") j[f] = ins.bytes;
    else if (f == "collective") j[f] = name_of(kCollectives, ins.collective);
    else if (f == "mesh_axes" && ins.group != kAxesGroup) j["group"] = ins.group;  // instead of mesh_axes
    else if (f == "mesh_axes") j[f] = axes_json(ins.mesh_axes);
    else if (f == "peer") j[f] = ins.peer;
    else if (f == "host_op") j[f] = name_of(kHostOps, ins.host_op);
  }
  // Optional: the VMEM operand bytes of a vector op (0 = none declared: no VMEM bound).
  if (ins.kind == OpKind::vector && ins.bytes != 0) j["bytes"] = ins.bytes;
  // Version 2, each optional and written only when not its default.
  if (ins.op_class != OpClass::other) j["class"] = name_of(kOpClassNames, ins.op_class);
  if (ins.kind == OpKind::matmul) {
    if (ins.batch != 1) j["batch"] = ins.batch;
    if (ins.sum_batch) j["sum_batch"] = true;
    if (ins.elements != 0) {
      j["vector_op"] = name_of(kVectorOps, ins.vector_op);
      j["elements"] = ins.elements;
    }
  }
  if (ins.kind == OpKind::matmul || ins.kind == OpKind::vector) {
    if (ins.hbm_read != 0) j["hbm_read"] = ins.hbm_read;
    if (ins.hbm_written != 0) j["hbm_written"] = ins.hbm_written;
    if (ins.grid_steps != 0) j["grid_steps"] = ins.grid_steps;
  }
  // Optional (version 1 files without it mean "auto"), so written only when not auto.
  if (ins.kind == OpKind::collective && ins.algorithm != 0) {
    j["algorithm"] = std::string(kernels::algorithm_name(static_cast<kernels::CollectiveAlgorithm>(ins.algorithm)));
  }
  // Optional (files without it mean no host-side time), so written only when set.
  if (ins.kind == OpKind::host && ins.host_seconds != 0) j["host_seconds"] = ins.host_seconds;
  if (ins.vmem_alloc != 0) j["vmem_alloc"] = ins.vmem_alloc;
  if (ins.vmem_free != 0) j["vmem_free"] = ins.vmem_free;
  if (ins.model_flops != 0) j["model_flops"] = ins.model_flops;
  if (ins.hardware_flops != 0) j["hardware_flops"] = ins.hardware_flops;
  ordered_json deps = ordered_json::array();
  for (std::uint32_t d = 0; d < ins.dep_count; ++d) deps.push_back(p.deps_of(ins)[d]);
  j["deps"] = std::move(deps);
  return j;
}

ordered_json group_json(const CollectiveGroup& g) {
  ordered_json j;
  j["size"] = g.size;
  j["stride"] = g.stride;
  j["pods"] = g.pods;
  return j;
}

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
    if (v.is_array()) return "an array";
    const std::string text = v.dump();
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
  }

 private:
  static constexpr std::size_t kMaxErrors = 50;
  std::string source_;
  Diagnostics diags_;
  std::size_t omitted_ = 0;
};

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
  std::vector<std::string> allowed = kCommonFields;
  const auto& fields = op_fields(ins.kind);
  allowed.insert(allowed.end(), fields.begin(), fields.end());
  if (ins.kind == OpKind::collective) allowed.emplace_back("algorithm");  // optional, default "auto"
  if (ins.kind == OpKind::host) allowed.emplace_back("host_seconds");   // optional, default 0
  if (ins.kind == OpKind::vector) allowed.emplace_back("bytes");        // optional VMEM operand bytes, default 0
  const bool groupable = std::find(fields.begin(), fields.end(), "mesh_axes") != fields.end();
  if (groupable) allowed.emplace_back("group");  // a group of the set, instead of mesh_axes
  if (version >= 2) {                                                   // optional, see kernels/README.md
    allowed.emplace_back("class");
    if (ins.kind == OpKind::matmul) {
      for (const char* f : {"batch", "sum_batch", "vector_op", "elements"}) allowed.emplace_back(f);
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
  opt_uint("vmem_alloc", kMaxCount, ins.vmem_alloc);
  opt_uint("vmem_free", kMaxCount, ins.vmem_free);
  if (const auto it = v.find("host_seconds"); ins.kind == OpKind::host && it != v.end()) {
    if (it->is_number() && it->get<double>() >= 0) ins.host_seconds = it->get<double>();
    else r.error(at("host_seconds"), "bad value", "a number of seconds >= 0", Reader::describe(*it));
  }
  if (const auto it = v.find("bytes"); ins.kind == OpKind::vector && it != v.end()) {
    if (const auto u = r.uint(*it, at("bytes"), kMaxCount)) ins.bytes = *u;
  }
  if (version >= 2) {
    if (const auto it = v.find("class"); it != v.end()) {
      if (const auto c = r.enumeration(*it, at("class"), kOpClassNames)) ins.op_class = *c;
    }
    opt_uint("hbm_read", kMaxCount, ins.hbm_read);
    opt_uint("hbm_written", kMaxCount, ins.hbm_written);
    opt_uint("grid_steps", std::numeric_limits<std::uint32_t>::max(), ins.grid_steps);
    if (ins.kind == OpKind::matmul) {
      if (const auto it = v.find("batch"); it != v.end()) {
        if (const auto u = r.uint(*it, at("batch"), std::numeric_limits<std::int32_t>::max())) {
          if (*u == 0) r.error(at("batch"), "bad value", "an integer >= 1", "0");
          else ins.batch = static_cast<std::int32_t>(*u);
        }
      }
      if (const auto it = v.find("sum_batch"); it != v.end()) {
        if (it->is_boolean()) ins.sum_batch = it->get<bool>();
        else r.error(at("sum_batch"), "wrong type", "true or false", Reader::describe(*it));
      }
      if (const auto it = v.find("vector_op"); it != v.end()) {
        if (const auto e = r.enumeration(*it, at("vector_op"), kVectorOps)) ins.vector_op = *e;
      }
      if (const auto it = v.find("elements"); it != v.end()) {
        if (const auto u = r.uint(*it, at("elements"), kMaxCount)) {
          ins.elements = static_cast<std::int64_t>(*u);
        }
      }
    }
  }
  for (const char* f : {"model_flops", "hardware_flops"}) {
    if (const auto it = v.find(f); it != v.end()) {
      if (const auto x = r.flops(*it, at(f))) (f[0] == 'm' ? ins.model_flops : ins.hardware_flops) = *x;
    }
  }

  if (const auto it = v.find("group"); groupable && it != v.end()) {
    if (v.contains("mesh_axes")) {
      r.error(at("group"), "both a group and mesh_axes", "either mesh_axes or group, not both", Reader::describe(*it));
    } else if (groups == 0) {
      r.error(at("group"), "no group to name", "an index into the top-level groups (the file has none)",
              Reader::describe(*it));
    } else if (const auto u = r.uint(*it, at("group"), groups - 1)) {
      ins.group = static_cast<std::uint16_t>(*u);
    }
  }

  for (const std::string& f : fields) {
    if (f == "mesh_axes" && groupable && v.contains("group")) continue;  // the group replaces it
    const json* x = r.need(v, ptr, f);
    if (x == nullptr) continue;
    const std::string p = at(f);
    auto set_int = [&](std::int64_t& dst, std::uint64_t max) {
      if (const auto u = r.uint(*x, p, max)) dst = static_cast<std::int64_t>(*u);
    };
    if (f == "m" || f == "rows") set_int(ins.m, kMaxDim);
    else if (f == "k" || f == "bags") set_int(ins.k, kMaxDim);
    else if (f == "n" || f == "width") set_int(ins.n, kMaxDim);
    else if (f == "elements") set_int(ins.elements, kMaxCount);
    else if (f == "bytes") { if (const auto u = r.uint(*x, p, kMaxCount)) ins.bytes = *u; }
    else if (f == "dtype") { if (const auto e = r.enumeration(*x, p, kDTypes)) ins.dtype = *e; }
    else if (f == "vector_op") { if (const auto e = r.enumeration(*x, p, kVectorOps)) ins.vector_op = *e; }
    else if (f == "src") { if (const auto e = r.enumeration(*x, p, kMemories)) ins.src = *e; }
    else if (f == "dst") { if (const auto e = r.enumeration(*x, p, kMemories)) ins.dst = *e; }
    else if (f == "pattern") { if (const auto e = r.enumeration(*x, p, kPatterns)) ins.pattern = *e; }
    else if (f == "collective") { if (const auto e = r.enumeration(*x, p, kCollectives)) ins.collective = *e; }
    else if (f == "host_op") { if (const auto e = r.enumeration(*x, p, kHostOps)) ins.host_op = *e; }
    else if (f == "peer") {
      if (x->is_number_integer() && x->get<std::int64_t>() >= std::numeric_limits<std::int32_t>::min() &&
          x->get<std::int64_t>() <= std::numeric_limits<std::int32_t>::max()) {
        ins.peer = static_cast<std::int32_t>(x->get<std::int64_t>());
      } else {
        r.error(p, "bad value", "a 32-bit signed integer", Reader::describe(*x));
      }
    } else if (f == "mesh_axes") {
      if (!x->is_array()) r.error(p, "wrong type", "an array of mesh axis indices", Reader::describe(*x));
      else {
        for (std::size_t a = 0; a < x->size(); ++a) {
          if (const auto u = r.uint((*x)[a], fmt::format("{}/{}", p, a), 31)) ins.mesh_axes |= 1u << *u;
        }
      }
    }
  }

  if (ins.kind == OpKind::gather || ins.kind == OpKind::scatter) {  // the rows' bytes follow from the shape
    std::uint64_t elements = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(ins.m), static_cast<std::uint64_t>(ins.n), &elements) ||
        __builtin_mul_overflow(elements, static_cast<std::uint64_t>(dtype_bytes(ins.dtype)), &ins.bytes)) {
      r.error(at("rows"), "bad value", "rows x width x dtype bytes below 2^64", fmt::format("{} x {}", ins.m, ins.n));
    }
  }
  if (const auto it = v.find("algorithm"); ins.kind == OpKind::collective && it != v.end()) {
    const std::optional<kernels::CollectiveAlgorithm> a =
        it->is_string() ? kernels::algorithm_by_name(it->get<std::string>()) : std::nullopt;
    if (a) {
      ins.algorithm = static_cast<std::uint8_t>(*a);
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

void write_program_json(const ProgramSet& set, std::ostream& out) {
  out << "{\n  \"format\": " << json(std::string(kFormat)).dump() << ",\n  \"version\": " << kVersion
      << ",\n  \"role_of_chip\": " << json(set.role_of_chip).dump();
  if (!set.groups.empty()) {  // optional: files without groups read (and are written) as before
    out << ",\n  \"groups\": [";
    for (std::size_t g = 0; g < set.groups.size(); ++g) {
      out << (g == 0 ? "\n    " : ",\n    ") << group_json(set.groups[g]).dump();
    }
    out << "\n  ]";
  }
  out << ",\n  \"programs\": [";
  for (std::size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    out << (p == 0 ? "\n" : ",\n") << "    {\n      \"name\": " << json(prog.name()).dump()
        << ",\n      \"instructions\": [";
    for (std::size_t i = 0; i < prog.size(); ++i) {
      out << (i == 0 ? "\n" : ",\n") << "        " << instruction_json(prog, prog[i]).dump();
    }
    out << (prog.size() == 0 ? "]" : "\n      ]") << "\n    }";
  }
  out << (set.programs.empty() ? "]" : "\n  ]") << "\n}\n";
}

ProgramSet parse_program_json(std::string_view text, const std::string& source) {
  const json root = parse_tree(text, source);
  Reader r(source);
  // Every error names the file, the line and column of the offending value, and its JSON pointer.
  auto throw_if_any = [&] {
    if (!r.diagnostics().empty()) throw ConfigError(with_lines(text, source, r.finished()));
  };
  if (!r.object(root, "", {"format", "version", "role_of_chip", "groups", "programs"})) throw_if_any();
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
