#pragma once
// Internal: the ops every model family is built from (matmuls with their tiling's HBM traffic, elementwise
// ops, norms, activations, optimizer updates), added to a fused::Graph.
//
// VPU work per element. No source gives the VPU instruction counts of these ops on a TPU; each count below is
// the arithmetic of the op's formula, one VPU operation per add, multiply, compare or select, and one
// transcendental per exp, tanh, rsqrt or reciprocal (timed at chip.vpu.transcendental_rate). They are listed
// by `tpusim describe assumptions`.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "graph/collective_points.h"
#include "graph/fused_graph.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/gemm.h"

namespace tpusim::kernels {

// The grid steps of a fused vector op over `elements` of `bytes_per_element` (its reads and writes): chunks as
// lower_vector_pass cuts them, double-buffered within kVectorVmemFraction of VMEM.
[[nodiscard]] double vector_grid_steps(const ChipSpec& chip, double elements, double bytes_per_element);

struct VpuCost {
  const char* name;
  fused::VpuWork per_element;
  const char* why;
};

// AQT's dynamic int8 quantization of a matmul operand (per channel of the contraction): |x|, the running max
// that gives the scale, and x x 127 / max rounded to int8 (an assumption: three VPU ops per element).
inline constexpr VpuCost kAqtQuantize{"int8 quantization (AQT)", {3, 0},
                                      "abs, the running max for the scale, multiply by the scale and round to int8"};
// mean, subtract, square, sum, scale by rsqrt(var), gamma, beta (the row's rsqrt is amortised).
inline constexpr VpuCost kLayerNormForward{"layernorm forward", {7, 0}, "mean, centre, square, sum, scale, gamma, beta"};
inline constexpr VpuCost kLayerNormBackward{"layernorm backward", {12, 0},
                                            "dy*gamma, two row sums, the combination, dgamma and dbeta sums"};
inline constexpr VpuCost kRmsNormForward{"rmsnorm forward", {4, 0}, "square, sum, scale, gamma"};
inline constexpr VpuCost kRmsNormBackward{"rmsnorm backward", {8, 0}, "dy*gamma, a row sum, the combination, dgamma"};
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (the tanh approximation JAX uses).
inline constexpr VpuCost kGeluForward{"gelu forward", {8, 1}, "x^3, scale, add, scale, tanh, add, two multiplies"};
inline constexpr VpuCost kGeluBackward{"gelu backward", {12, 1}, "the tanh recomputed and its derivative times dy"};
inline constexpr VpuCost kReluForward{"relu forward", {1, 0}, "max"};
inline constexpr VpuCost kReluBackward{"relu backward", {2, 0}, "compare, select"};
// silu(a) x b = a x sigmoid(a) x b, sigmoid = 1 / (1 + exp(-a)).
inline constexpr VpuCost kSwigluForward{"swiglu forward", {4, 2}, "negate, exp, add, reciprocal, two multiplies"};
inline constexpr VpuCost kSwigluBackward{"swiglu backward", {8, 2}, "sigmoid recomputed, the two branch gradients"};
inline constexpr VpuCost kGegluForward{"geglu forward", {9, 1}, "gelu of one branch times the other"};
inline constexpr VpuCost kGegluBackward{"geglu backward", {14, 1}, "gelu recomputed, the two branch gradients"};
// Per attention score.
inline constexpr VpuCost kScale{"attention score scale", {1, 0}, "multiply by 1/sqrt(d_head)"};
inline constexpr VpuCost kMask{"causal mask", {2, 0}, "compare, select"};
inline constexpr VpuCost kSoftmax{"softmax", {4, 1}, "max, subtract, exp, sum, normalize"};
// Flash: the normalization by the row sum applies to the output rows, not to every score.
inline constexpr VpuCost kOnlineSoftmax{"online softmax (flash)", {3, 1}, "running max, subtract, exp, sum"};
inline constexpr VpuCost kSoftmaxRecompute{"softmax recompute (flash backward)", {2, 1},
                                           "subtract the log-sum-exp, exp"};
inline constexpr VpuCost kSoftmaxBackward{"softmax backward", {2, 0}, "dS = P (dP - D): subtract, multiply"};
inline constexpr VpuCost kSoftmaxBackwardRows{"softmax backward with its row sums", {4, 0},
                                              "D = rowsum(dP P), then dS = P (dP - D)"};
inline constexpr VpuCost kAttentionBackwardRows{"attention backward row sums", {2, 0}, "D = rowsum(dO O)"};
inline constexpr VpuCost kRotary{"rotary embedding", {3, 0}, "x cos + rotate(x) sin"};
inline constexpr VpuCost kAdd{"residual or bias add", {1, 0}, "add"};
// Per vocabulary logit: max, subtract, exp, sum (forward), and softmax - onehot (the gradient).
inline constexpr VpuCost kCrossEntropyForward{"cross-entropy forward", {3, 1}, "max, subtract, exp, sum"};
inline constexpr VpuCost kCrossEntropyWithGradient{"cross-entropy with its gradient", {5, 2},
                                                   "the forward, then exp(l - lse) - onehot"};
// A vocabulary-parallel cross-entropy (logits split over the tensor group) cannot fuse its passes: the row
// max and the row sums are all-reduced over the group between them (Megatron-LM's vocab_parallel_cross_entropy).
// Per logit of this chip's shard, except the loss (per token).
inline constexpr VpuCost kCrossEntropyMax{"cross-entropy row max (vocabulary-parallel)", {1, 0}, "max"};
inline constexpr VpuCost kCrossEntropySums{"cross-entropy row sums (vocabulary-parallel)", {3, 1},
                                           "subtract the global max, exp, sum; pick the target logit"};
inline constexpr VpuCost kCrossEntropyGradient{"cross-entropy gradient (vocabulary-parallel)", {3, 1},
                                               "exp(l - max), divide by the global sum, subtract the one-hot"};
inline constexpr VpuCost kCrossEntropyLoss{"cross-entropy loss from the reduced row statistics, per token", {2, 1},
                                           "log of the sum, add the max, subtract the target logit"};
inline constexpr VpuCost kSampling{"greedy sampling", {1, 0}, "argmax over the vocabulary"};
// Per parameter.
inline constexpr VpuCost kSgdUpdate{"sgd update", {2, 0}, "w -= lr g"};
inline constexpr VpuCost kAdamUpdate{"adam update", {11, 1},
                                     "m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, w -= lr m / (sqrt(v) + eps)"};
inline constexpr VpuCost kAdamWUpdate{"adamw update", {13, 1}, "adam plus w -= lr wd w"};
inline constexpr VpuCost kAdafactorUpdate{"adafactor update", {12, 1},
                                          "g^2 row and column sums, v = r c / sum r, g / sqrt(v), RMS clip, w -= lr u"};
inline constexpr VpuCost kGradientAccumulate{"gradient accumulation", {1, 0}, "add into the accumulator"};
// Per weight element, before an FSDP all-gather of the compute-type copy (sharding_points.cpp).
inline constexpr VpuCost kWeightCast{"weight cast", {1, 0}, "convert an f32 master weight to the compute type"};
// Mixture of experts, per routing logit (softmax, top-k selection) and per dispatched or combined element.
inline constexpr VpuCost kRouter{"router top-k", {10, 1}, "softmax over experts, k rounds of max and mask"};
inline constexpr VpuCost kDispatch{"expert dispatch", {1, 0}, "select each expert's token rows (a gather)"};
inline constexpr VpuCost kCombine{"expert combine", {2, 0}, "gate times expert output, summed over the top k"};
inline constexpr VpuCost kBatchNormForward{"batch norm forward", {7, 0}, "mean, centre, square, sum, scale, gamma, beta"};
inline constexpr VpuCost kBatchNormBackward{"batch norm backward", {12, 0}, "as layer norm, over the batch"};
inline constexpr VpuCost kMaxPool{"3x3 max pool", {9, 0}, "nine compares per output"};
inline constexpr VpuCost kAveragePool{"global average pool", {1, 0}, "one add per input"};

// Every cost above, for `tpusim describe assumptions`.
[[nodiscard]] std::vector<VpuCost> vpu_costs();

// A parameter tensor with, to train, its gradient (in the parameter type) and its optimizer state.
struct Param {
  fused::TensorId w = 0;
  std::optional<fused::TensorId> grad;  // the stored gradient (this chip's shard under FSDP)
  std::vector<fused::TensorId> state;
  double elements = 0;  // on this chip
  int shards = 1;       // FSDP: chips the parameter is stored over
  // The share of the products with this weight (forward, input and weight gradients) that are model FLOPs on
  // this chip: Builder::Matmul::flops.model_share of the matmuls that use it.
  double model_share = 1;
};

// Where a backward op puts a parameter's gradient (Builder::gradient): `tensor`, accumulating into what it
// holds (read, then written) when `accumulate`.
struct GradientWrite {
  fused::TensorId tensor = 0;
  bool accumulate = false;
};

// How a step stores its parameters: their type, whether it trains (gradients, optimizer state) and with
// which optimizer, and over how many chips FSDP shards them.
struct ParamStorage {
  DType dtype = DType::f32;
  bool train = false;
  Optimizer optimizer = Optimizer::adam;
  int shards = 1;
};

// One op of a step, with its label parts.
struct OpName {
  fused::Phase phase = fused::Phase::forward;
  std::string scope;  // "layer3", "embedding", "head"
  std::string name;   // "qkv"
};

class Builder {
 public:
  Builder(const ChipSpec& chip, DType activation_dtype);

  [[nodiscard]] fused::Graph& graph() { return graph_; }
  [[nodiscard]] const ChipSpec& chip() const { return chip_; }
  [[nodiscard]] DType activation_dtype() const { return act_; }

  fused::TensorId activation(const std::string& name, double elements, std::optional<DType> dtype = std::nullopt);
  fused::TensorId on_chip(const std::string& name);
  fused::TensorId tensor(const std::string& name, double elements, DType dtype, fused::TensorKind kind);

  struct Flops {
    double model = 0, hardware = 0;
  };
  // FLOPs of `batch` products of m x k x n: 2 m k n each, useful (model) unless `recompute`.
  [[nodiscard]] static Flops matmul_flops(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t batch,
                                          bool recompute);

  // C = A x B: `batch` products of m x k x n in `dtype`. The operands may be several tensors side by side
  // (Q, K and V gradients as one right-hand side); each part of A is read ceil(n / tn) times and each part of
  // B ceil(m / tm) times (the GEMM tiling of tile_gemm, per product) unless a_times / b_times say otherwise.
  // A phase of recompute carries hardware FLOPs only.
  struct Matmul {
    std::int64_t m = 0, k = 0, n = 0, batch = 1;
    DType dtype = DType::bf16;
    std::vector<fused::TensorId> a, b, outputs;
    std::vector<fused::Access> extra_reads;   // read once more (a bias, the accumulator of a gradient)
    std::vector<fused::Access> extra_writes;  // written besides the outputs (a bias gradient)
    std::optional<double> a_times, b_times;
    // Its FLOPs: `given`, else 2 m k n per product (model FLOPs unless recompute). This chip counts
    // `model_share` of the model FLOPs: below 1 when other chips compute the same products (a repeated kv head,
    // a mesh axis none of its dimensions is sharded over: ShardView::replicas) or some of its rows are padding.
    // Hardware FLOPs count it whole.
    struct Count {
      std::optional<Flops> given;
      double model_share = 1;
    } flops;
    fused::VpuWork epilogue;  // VPU work inside the kernel
    // Collective matmul: `a`'s tokens run along the contraction (a weight gradient, A^T dY), so a ring-gathered
    // `a` is read whole rather than split by rows (ring_gathered). Its gather happened in an earlier phase
    // (forward or recompute): nothing is left to overlap.
    bool gathered_along_k = false;
  };
  std::size_t matmul(const OpName& name, ir::OpClass cls, const Matmul& mm);
  // Collective matmul: `whole` arrives as `chunks` (one per ring step, in arrival order); a matmul whose one `a`
  // operand is `whole` (its rows the gathered tokens) runs as one partial matmul per chunk, 1/N of the rows,
  // each reading its chunk, so each waits only for its ring step.
  void ring_gathered(fused::TensorId whole, std::vector<fused::TensorId> chunks);
  // Collective matmul: the ring chunks `mm` would run on as partial matmuls (matmul above), or none.
  [[nodiscard]] std::vector<fused::TensorId> ring_split(const Matmul& mm) const;
  // Collective matmul with the weight gradient fed by the same gathered tensor (`dw`, gathered_along_k, reading
  // `fed`'s ring-gathered `a` as its `a` or `b`): `fed` runs as its partials and `dw` as N partial matmuls over
  // k / N of the tokens, partial i right after fed's (`<dw name>.step<i>`, on the chunk that step i delivered
  // and that chunk's tokens of the other operand). The partials accumulate in place: each after the first
  // reads what the one before wrote and adds its own (one add per element of every output, on the VPU in the
  // kernel); FLOPs, the epilogue and dw's extra reads are split evenly. Otherwise fed, then dw, as matmul does.
  void matmul_with_gradient(const OpName& fed_name, ir::OpClass fed_cls, const Matmul& fed, const OpName& dw_name,
                            ir::OpClass dw_cls, const Matmul& dw);
  // Collective matmul, the reduce-scatter side: one of `blocks` row blocks of `mm` (m / blocks rows, reading that
  // share of `a`, the weights whole), writing `out` instead of mm.outputs. Labelled "<name>.ring<order>".
  std::size_t partial_rows(const OpName& name, ir::OpClass cls, const Matmul& mm, int blocks, int order,
                           fused::TensorId out);

  // A VPU op over `elements` values doing `cost` per value: reads `reads`, writes `writes`; with `fuse_into`,
  // an elementwise consumer of that tensor that fusion merges into its producer.
  std::size_t vector(const OpName& name, ir::OpClass cls, ir::VectorOp kind, double elements, const VpuCost& cost,
                     const std::vector<fused::Access>& reads, const std::vector<fused::Access>& writes,
                     std::optional<fused::TensorId> fuse_into = std::nullopt);

  // The GEMM tiling of one product (tile_gemm, memoized), with operands in `dtype` or, for `mm`, as its
  // operand tensors sit in HBM (f32 weights cast as they load).
  [[nodiscard]] GemmTiling tiling(std::int64_t m, std::int64_t k, std::int64_t n, DType dtype,
                                  OperandBytes operands = {}, std::int64_t batch = 1);
  [[nodiscard]] GemmTiling tiling(const Matmul& mm);

  // A parameter of rows x cols (stored 1/shards per chip), its gradient and its optimizer state: adam and adamw
  // two f32 moments; adafactor the f32 row and column sums of a matrix's second moment (Shazeer & Stern
  // 2018; a vector keeps a full second moment), no first moment (beta1 = 0, the paper's default); sgd none.
  Param parameter(const std::string& name, std::int64_t rows, std::int64_t cols, const ParamStorage& storage);
  // Where microbatch `microbatch`'s backward writes p's gradient. Without FSDP the stored gradient,
  // accumulated into after the first microbatch. Under FSDP (p.shards > 1) the chip computes the gradient of
  // the whole (gathered) weight: a buffer of the full size, one per microbatch, written by the first op that
  // produces it and accumulated into by later ones (a tied embedding's second use), read by the FSDP
  // reduce-scatter into the stored shard (it lives until then: the memory plan's workspace).
  GradientWrite gradient(const Param& p, int microbatch);
  // The gradient buffers of `params` (those with a gradient) in microbatch `microbatch`.
  [[nodiscard]] std::vector<GradientBuffer> gradient_buffers(const std::vector<const Param*>& params, int microbatch);

  // One optimizer update of `params` (those with a gradient) as a VPU op in phase optimizer: reads each
  // weight, gradient and state, writes the weight and the state.
  void optimizer_update(const std::string& scope, const std::vector<const Param*>& params, Optimizer optimizer);

  // From now on every int8 matmul quantizes its operands inside its kernel (AQT: kAqtQuantize per element of
  // A and B per product), its activations and weights stored in wider types.
  void quantize_int8() { quantize_int8_ = true; }

  // Adds VPU work to an op already added (work done inside a kernel, such as flash attention's softmax).
  void add_vpu(std::size_t op, double elements, const VpuCost& cost);

 private:
  const ChipSpec& chip_;
  DType act_;
  bool quantize_int8_ = false;
  fused::Graph graph_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, DType, double, double, std::int64_t>, GemmTiling>
      tilings_;
  std::map<std::pair<fused::TensorId, int>, fused::TensorId> whole_gradients_;  // (stored, microbatch) -> buffer
  std::map<fused::TensorId, std::vector<fused::TensorId>> ring_chunks_;  // ring_gathered
  std::size_t one_matmul(const OpName& name, ir::OpClass cls, const Matmul& mm);
  // Partial i of a ring-split matmul (matmul): 1/N of the rows, on chunk i.
  std::size_t ring_partial(const OpName& name, ir::OpClass cls, const Matmul& mm,
                           const std::vector<fused::TensorId>& chunks, std::size_t i);
};

[[nodiscard]] std::string op_label(const OpName& name);

}  // namespace tpusim::kernels
