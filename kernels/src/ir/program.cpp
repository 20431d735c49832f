#include "tpusim/kernels/program.h"

#include <stdexcept>

#include <fmt/format.h>

namespace tpusim::ir {

UnitKind unit_of(OpKind k) {
  if (is_custom(k)) {
    return static_cast<UnitKind>(kBuiltInUnitKinds + static_cast<int>(k) - static_cast<int>(OpKind::custom));
  }
  switch (k) {
    case OpKind::matmul: return UnitKind::mxu;
    case OpKind::vector: return UnitKind::vpu;
    case OpKind::dma: return UnitKind::dma;
    case OpKind::collective:
    case OpKind::send:
    case OpKind::recv: return UnitKind::ici;
    case OpKind::host: return UnitKind::host;
    case OpKind::barrier: return UnitKind::sync;
    case OpKind::gather:
    case OpKind::scatter: return UnitKind::sparsecore;
    case OpKind::custom: break;
  }
  return UnitKind::sync;
}

OpKind custom_op(UnitKind added) {
  return static_cast<OpKind>(static_cast<int>(OpKind::custom) + static_cast<int>(added) - kBuiltInUnitKinds);
}

std::string_view op_name(OpKind k) {
  if (is_custom(k)) return "custom";
  switch (k) {
    case OpKind::matmul: return "matmul";
    case OpKind::vector: return "vector";
    case OpKind::dma: return "dma";
    case OpKind::collective: return "collective";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::host: return "host";
    case OpKind::barrier: return "barrier";
    case OpKind::gather: return "gather";
    case OpKind::scatter: return "scatter";
    case OpKind::custom: return "custom";
  }
  return "?";
}

std::string_view unit_name(UnitKind u) { return unit_info(u).name; }

namespace detail {
std::array<UnitKindInfo, kMaxUnitKinds> unit_kind_table = [] {
  std::array<UnitKindInfo, kMaxUnitKinds> t{};
  for (std::size_t i = 0; i < kUnitKindInfo.size(); ++i) t[i] = kUnitKindInfo[i];
  return t;
}();
int unit_kind_count = kBuiltInUnitKinds;
}  // namespace detail

UnitKind add_unit_kind(UnitKindInfo info) {
  auto refuse = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("unit kind '{}': {}", info.name, why));
  };
  if (info.name.empty()) refuse("it needs a name");
  UnitKind taken{};
  if (unit_kind_named(info.name, taken)) refuse("the name is taken");
  if (info.stall_name.empty()) refuse("it needs a stall name (how the report names a wait on its instructions)");
  if (info.per_core) refuse("an added kind runs one queue per chip (per_core: false)");
  if (info.time_rank == 0 || info.time_rank >= kTimeRanks) {
    refuse(fmt::format("its time_rank is {}, expected 1 to {}", info.time_rank, kTimeRanks - 1));
  }
  if (detail::unit_kind_count == kMaxUnitKinds) refuse(fmt::format("the catalogue is full ({} kinds)", kMaxUnitKinds));
  detail::unit_kind_table[static_cast<std::size_t>(detail::unit_kind_count)] = info;
  return static_cast<UnitKind>(detail::unit_kind_count++);
}

bool remove_unit_kind(std::string_view name) {
  if (detail::unit_kind_count == kBuiltInUnitKinds) return false;
  UnitKindInfo& last = detail::unit_kind_table[static_cast<std::size_t>(detail::unit_kind_count - 1)];
  if (last.name != name) return false;
  last = UnitKindInfo{};
  --detail::unit_kind_count;
  return true;
}

bool unit_kind_named(std::string_view name, UnitKind& out) {
  for (int k = 0; k < detail::unit_kind_count; ++k) {
    if (detail::unit_kind_table[static_cast<std::size_t>(k)].name == name) {
      out = static_cast<UnitKind>(k);
      return true;
    }
  }
  return false;
}

OpClass default_op_class(OpKind k) {
  switch (k) {
    case OpKind::collective:
    case OpKind::send:
    case OpKind::recv: return OpClass::communication;
    case OpKind::host: return OpClass::host;
    default: return OpClass::other;
  }
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::other: return "other";
    case OpClass::matmul: return "matmul";
    case OpClass::attention: return "attention";
    case OpClass::norm_activation: return "norm_activation";
    case OpClass::optimizer: return "optimizer";
    case OpClass::embedding: return "embedding";
    case OpClass::loss: return "loss";
    case OpClass::communication: return "communication";
    case OpClass::host: return "host";
  }
  return "?";
}

Program::Program(std::string name) : name_(std::move(name)) {}

void Program::scale_flops(std::size_t begin, std::size_t end, double factor) {
  for (std::size_t i = begin; i < end && i < instrs_.size(); ++i) {
    instrs_[i].flops.model *= factor;
    instrs_[i].flops.hardware *= factor;
  }
}

std::uint32_t Program::intern(const std::string& label) {
  // Labels repeat per layer and tile; a linear scan over the last few keeps this cheap without a map.
  const std::size_t from = labels_.size() > 16 ? labels_.size() - 16 : 0;
  for (std::size_t i = labels_.size(); i-- > from;) {
    if (labels_[i] == label) return static_cast<std::uint32_t>(i);
  }
  labels_.push_back(label);
  return static_cast<std::uint32_t>(labels_.size() - 1);
}

std::uint32_t Program::add(Instruction ins, const std::vector<std::uint32_t>& deps, const std::string& label) {
  const auto index = static_cast<std::uint32_t>(instrs_.size());
  for (std::uint32_t d : deps) {
    if (d >= index) {
      throw std::logic_error(fmt::format("program {}: instruction {} depends on {}, which is not earlier",
                                         name_, index, d));
    }
  }
  ins.deps.begin = static_cast<std::uint32_t>(deps_.size());
  ins.deps.count = static_cast<std::uint32_t>(deps.size());
  deps_.insert(deps_.end(), deps.begin(), deps.end());
  ins.label = intern(label);
  instrs_.push_back(ins);
  return index;
}

int Program::cores_used() const {
  int cores = 1;
  for (const auto& i : instrs_) cores = std::max(cores, i.core + 1);
  return cores;
}

double Program::model_flops() const {
  double f = 0;
  for (const auto& i : instrs_) f += i.flops.model;
  return f;
}

double Program::hardware_flops() const {
  double f = 0;
  for (const auto& i : instrs_) f += i.flops.hardware;
  return f;
}

std::uint64_t Program::dma_bytes() const {
  std::uint64_t b = 0;
  for (const auto& i : instrs_) {
    if (i.kind == OpKind::dma) b += i.bytes;
  }
  return b;
}

Program Program::from_parts(std::string name, std::vector<Instruction> instrs, std::vector<std::uint32_t> deps,
                            std::vector<std::string> labels) {
  Program p(std::move(name));
  for (std::size_t i = 0; i < instrs.size(); ++i) {
    const auto& ins = instrs[i];
    if (static_cast<std::size_t>(ins.deps.begin) + ins.deps.count > deps.size()) {
      throw std::invalid_argument(fmt::format("instruction {}: dependency range out of bounds", i));
    }
    for (std::uint32_t k = 0; k < ins.deps.count; ++k) {
      if (deps[ins.deps.begin + k] >= i) {
        throw std::invalid_argument(fmt::format("instruction {}: depends on {}, which is not earlier", i,
                                                deps[ins.deps.begin + k]));
      }
    }
    if (ins.label >= labels.size() && !(labels.empty() && ins.label == 0)) {
      throw std::invalid_argument(fmt::format("instruction {}: label index out of bounds", i));
    }
  }
  if (labels.empty()) labels.emplace_back("");
  p.instrs_ = std::move(instrs);
  p.deps_ = std::move(deps);
  p.labels_ = std::move(labels);
  return p;
}

}  // namespace tpusim::ir
