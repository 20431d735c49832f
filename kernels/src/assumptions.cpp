#include "tpusim/kernels/assumptions.h"

#include <fmt/format.h>

#include "graph/attention.h"
#include "graph/fused_ops.h"
#include "tpusim/kernels/collectives.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {

std::vector<Assumption> lowering_assumptions() {
  std::vector<Assumption> out{
      {"GEMM share of VMEM", fmt::format("{:.0f}%", 100 * kGemmVmemFraction), "kernels/include/tpusim/kernels/gemm.h",
       "room left for the compiler's other buffers when tiling a GEMM; the tiles also keep within XLA's scoped VMEM "
       "limit (chip.vmem.scoped_limit, sourced in docs/hardware.md), which binds first on v5e, v5p and v6e"},
      {"batched matmul: no pipeline bound", "batch > 1",
       "kernels/src/graph/fused_ops.cpp",
       "a batch of products (attention's heads, a convolution's taps) runs its grid over the products too, and "
       "the GEMM tiler does not choose how many products share a step; a kernel blocks several small ones "
       "together, enough to hide the HBM latency, so the simulation charges such a matmul no pipeline bound"},
      {"vector-pass share of VMEM", fmt::format("{:.1f}%", 100 * kVectorVmemFraction),
       "kernels/include/tpusim/kernels/gemm.h", "chunk size of streaming vector passes (within the scoped limit too)"},
      {"GEMM share of CMEM", fmt::format("{:.0f}%", 100 * kGemmCmemFraction), "kernels/include/tpusim/kernels/gemm.h",
       "one GEMM stage's staged weights may fill CMEM (stages run one after another)"},
      {"auto all-to-all: direct up to", fmt::format("{} per chip", format_bytes(Bytes(kAutoDirectMaxBytes))),
       "kernels/include/tpusim/kernels/collectives.h",
       "below this, one latency-bound step beats ring steps (sweeps/alltoall-algorithms-v4-4x4x4.yaml); over a short "
       "axis of a twisted torus direct at every size (the rings close over the twist); all-reduce, "
       "reduce-scatter and all-gather take the ring at every size, as measurement C1 shows the runtime does (on a "
       "twisted torus following its links where the group holds the shifted rings, else as a line: "
       "kernels/README.md, \"Twisted tori\")"},
      {"collective matmul threshold (auto)",
       fmt::format("{} gathered per chip", format_bytes(Bytes(kWindowedEinsumThreshold))),
       "core/include/tpusim/core/scenario.h",
       "workload.collective_matmul: auto decomposes the tensor group's gathers and reduce-scatters where the "
       "residual stream gathered on a chip is at least this: XLA's SPMD partitioner windows an einsum whose "
       "operand reaches threshold_for_windowed_einsum_mib (default 256); libtpu's own default is not published"},
      {"flash attention key block", fmt::format("{} keys", kFlashKeyBlock), "kernels/src/graph/attention.h",
       "the key block of JAX's splash-attention kernels; the query block is the largest power of two whose "
       "working set fits the GEMM share of VMEM"},
      {"flash attention causal blocks", "computed in full", "kernels/src/graph/attention.h",
       "fully masked blocks are not skipped: hardware FLOPs count the whole T x T product, as model FLOPs do"},
      {"megacore split of a fused op", "equal parts over the TensorCores", "kernels/src/graph/fused_graph.h",
       "along the batch of products, else the rows, else the columns of a matmul; a vector op by elements (as "
       "XLA's megacore partitions a fusion's parallel dimension)"},
      {"one fused kernel at a time per TensorCore", "program order", "kernels/src/graph/fused_graph.h",
       "XLA runs a TensorCore's fusions one after another; only DMAs and collectives overlap them"},
      {"FSDP all-gather type", "the activation dtype (bf16)", "kernels/src/sharding/sharding_points.cpp",
       "the f32 master weights are cast to the compute type before they are gathered (the cast moved across the "
       "all-gather, half the bytes); gradients are reduced in their storage type (f32)"},
      {"FSDP weight cast", "a VPU fusion per gathered weight shard", "kernels/src/sharding/sharding_points.cpp",
       "before each FSDP all-gather of an f32 master weight the shard is converted in a fusion of its own (XLA moves "
       "the convert ahead of the all-gather, which cannot run it): it reads the shard in f32 and writes it in the "
       "compute type, on the VPU and HBM of the layer's compute stream, one fusion after another; the gather does "
       "not wait for it (the scheduler converts ahead of a gather it starts one layer early)"},
      {"FSDP prefetch depth", "one layer", "kernels/src/sharding/sharding_points.cpp",
       "a layer's all-gathers start when the previous layer's first gathered weight is consumed, as XLA's "
       "latency-hiding scheduler overlaps them with one layer of compute; where the memory plan (which counts them "
       "from there) does not fit HBM, each waits for the op before its first reader instead"},
      {"context parallelism", "all-gather of K and V, load-balanced causal chunks", "kernels/src/sharding/sharding_points.cpp",
       "MaxText's all-gather context parallelism (not ring attention): a chip's keys and values are gathered over the "
       "sequence group before the attention, gathered again for its backward (only the chip's part is kept), their "
       "gradients reduce-scattered; each chip holds 2 of 2c sequence chunks (i and 2c-1-i) so causal work is "
       "equal, and every chip computes its queries against all keys (masked blocks are not skipped)"},
      {"gradient reduction granularity", "one collective per block (per kind)", "kernels/src/sharding/sharding_points.cpp",
       "XLA's all-reduce / reduce-scatter combiner joins a layer's gradients into one collective"},
      {"remat policies: what is recomputed", "only what the backward reads", "kernels/src/zoo/transformer.cpp",
       "a block's forward runs again before its backward with each kept or fetched tensor read in its place, and "
       "every recomputed op whose output nothing reads is dropped, as jax.checkpoint saves and recomputes only "
       "the residuals the backward needs (saving mlpwo keeps nothing: no backward op reads the MLP's output)"},
      {"remat tags", "MaxText's checkpoint names on this block", "kernels/src/zoo/transformer.cpp",
       "query_proj / key_proj / value_proj: the attention's inputs after bias and rotary (recomputed in the "
       "projection's epilogue); out_proj / mlpwo: the sub-block outputs after their row-parallel reduction; mlpwi: "
       "both halves of a gated up-projection; context: the attention output. The flash attention's log-sum-exp "
       "has no tag: saving the context still runs the attention forward again for it"},
      {"save_dot_except_logits_ffn1", "q, k, v, context, out_proj, mlpwo", "kernels/src/zoo/transformer.cpp",
       "read from the name (every dot of the block but the attention logits and the MLP's first projection); "
       "MaxText's own definition of it was not found"},
      {"offload prefetch", "one block ahead", "kernels/src/zoo/transformer.cpp",
       "a block's offloaded tensors are copied back (host -> HBM DMA) once the backward of the block after it has "
       "started, so the copy overlaps that block's compute; the copies to host start when their producer ends"},
  };
  for (const VpuCost& c : vpu_costs()) {
    out.push_back({std::string("VPU work: ") + c.name,
                   fmt::format("{:g} + {:g} transcendental per element", c.per_element.elementwise,
                               c.per_element.transcendental),
                   "kernels/src/graph/fused_ops.h", std::string("one VPU op per arithmetic step of the formula: ") + c.why});
  }
  return out;
}

}  // namespace tpusim::kernels
