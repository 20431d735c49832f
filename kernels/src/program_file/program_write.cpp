// The "tpusim-program" JSON writer (the format: kernels/README.md, program_format.h).
#include <ostream>

#include <nlohmann/json.hpp>

#include "program_file/program_format.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/program_io.h"

namespace tpusim::ir {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace program_format;

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
    if (f == "m" || f == "rows") j[f] = ins.shape.m;
    else if (f == "k" || f == "bags") j[f] = ins.shape.k;
    else if (f == "n" || f == "width") j[f] = ins.shape.n;
    else if (f == "dtype") j[f] = name_of(kDTypes, ins.dtype);
    else if (f == "vector_op") j[f] = name_of(kVectorOps, ins.vector.op);
    else if (f == "elements") j[f] = ins.vector.elements;
    else if (f == "src") j[f] = name_of(kMemories, ins.memory.src);
    else if (f == "dst") j[f] = name_of(kMemories, ins.memory.dst);
    else if (f == "pattern") j[f] = name_of(kPatterns, ins.memory.pattern);
    else if (f == "bytes") j[f] = ins.bytes;
    else if (f == "collective") j[f] = name_of(kCollectives, ins.comm.collective);
    else if (f == "mesh_axes" && ins.comm.group != kAxesGroup) j["group"] = ins.comm.group;  // instead of mesh_axes
    else if (f == "mesh_axes") j[f] = axes_json(ins.comm.mesh_axes);
    else if (f == "peer") j[f] = ins.comm.peer;
    else if (f == "host_op") j[f] = name_of(kHostOps, ins.host.op);
    else if (f == "unit") j[f] = std::string(unit_name(unit_of(ins.kind)));
  }
  if (is_remote_put(ins)) {  // a remote put's destination, as a send's
    j["peer"] = ins.comm.peer;
    if (ins.comm.mesh_axes != 0) j["mesh_axes"] = axes_json(ins.comm.mesh_axes);
  }
  // Optional: the VMEM operand bytes of a vector op (0 = none declared: no VMEM bound).
  if (ins.kind == OpKind::vector && ins.bytes != 0) j["bytes"] = ins.bytes;
  // Version 2, each optional and written only when not its default.
  if (ins.op_class != default_op_class(ins.kind)) j["class"] = name_of(kOpClassNames, ins.op_class);
  if (ins.kind == OpKind::matmul) {
    if (ins.shape.batch != 1) j["batch"] = ins.shape.batch;
    if (ins.shape.sum_batch) j["sum_batch"] = true;
    if (ins.vector.elements != 0) {
      j["vector_op"] = name_of(kVectorOps, ins.vector.op);
      j["elements"] = ins.vector.elements;
    }
  }
  if (ins.kind == OpKind::matmul || ins.kind == OpKind::vector) {
    if (ins.stream.hbm_read != 0) j["hbm_read"] = ins.stream.hbm_read;
    if (ins.stream.hbm_written != 0) j["hbm_written"] = ins.stream.hbm_written;
    if (ins.stream.grid_steps != 0) j["grid_steps"] = ins.stream.grid_steps;
    if (ins.kind == OpKind::matmul && ins.stream.buffers != 0) j["buffers"] = ins.stream.buffers;
  }
  // Optional (version 1 files without it mean "auto"), so written only when not auto.
  if (ins.kind == OpKind::collective && ins.comm.algorithm != 0) {
    j["algorithm"] =
        std::string(kernels::algorithm_name(static_cast<kernels::CollectiveAlgorithm>(ins.comm.algorithm)));
  }
  // Optional (files without it mean no host-side time), so written only when set.
  if (ins.kind == OpKind::host && ins.host.seconds != 0) j["host_seconds"] = ins.host.seconds;
  if (ins.vmem.alloc != 0) j["vmem_alloc"] = ins.vmem.alloc;
  if (ins.vmem.free != 0) j["vmem_free"] = ins.vmem.free;
  if (ins.flops.model != 0) j["model_flops"] = ins.flops.model;
  if (ins.flops.hardware != 0) j["hardware_flops"] = ins.flops.hardware;
  ordered_json deps = ordered_json::array();
  for (std::uint32_t d = 0; d < ins.deps.count; ++d) deps.push_back(p.deps_of(ins)[d]);
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

}  // namespace tpusim::ir
