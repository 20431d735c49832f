#pragma once
// The "tpusim-program" format's vocabulary, shared by its reader (program_io.cpp) and writer
// (program_write.cpp): the format line and version, the bounds a value may take, the names of every enum, and
// the fields each op kind writes.
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/kernels/program.h"

namespace tpusim::ir::program_format {

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
                                  {OpKind::gather, "gather"}, {OpKind::scatter, "scatter"},
                                  {OpKind::custom, "custom"}};
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
    {HostOp::infeed, "infeed"}, {HostOp::outfeed, "outfeed"}, {HostOp::checkpoint, "checkpoint"},
    {HostOp::launch, "launch"}, {HostOp::sync, "sync"}};
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
inline std::string name_of(const Named<E> (&table)[N], E v) {
  for (const auto& e : table) {
    if (e.value == v) return std::string(e.name);
  }
  return "?";
}

template <class E, std::size_t N>
inline std::vector<std::string> names(const Named<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

// The fields an op kind uses beyond the common ones, in the order they are written.
inline const std::vector<std::string>& op_fields(OpKind k) {
  static const std::vector<std::string> matmul{"m", "k", "n", "dtype"}, vector{"vector_op", "elements", "dtype"},
      dma{"src", "dst", "pattern", "bytes"}, collective{"collective", "dtype", "bytes", "mesh_axes"},
      peer{"bytes", "mesh_axes", "peer"}, host{"host_op", "bytes"},
      embedding{"rows", "width", "bags", "dtype", "src", "dst"}, custom{"unit", "bytes"}, none{};
  if (is_custom(k)) return custom;
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
    case OpKind::custom: return custom;
  }
  return none;
}

inline const std::vector<std::string> kCommonFields{"op",        "label",       "core",           "vmem_alloc",
                                             "vmem_free", "model_flops", "hardware_flops", "deps"};

}  // namespace tpusim::ir::program_format
