// ResNet (bottleneck blocks, He et al. 2016) as a fused-graph step (contract in model_lowering.h).
//
// A convolution of kh x kw taps over Cin input channels into Cout output channels is lowered onto the MXU as
// XLA's TPU convolution emitter does, one product per tap with the channels as the contraction:
// `taps` products of m = batch x Ho x Wo output positions, k = Cin, n = Cout, summed into one output
// (ir::Instruction::shape.batch with sum_batch). Each product is padded to the array on its own, so a 3-channel stem
// fills 3 of the 128 rows and a 64-channel layer half of them: the MXU utilization the real channel counts
// allow. Its input is read once per tile of output channels (the GEMM tiling of the equivalent im2col product
// m x (taps Cin) x Cout), its weights once per tile of output positions. Backward: the input gradient is the
// transposed convolution (taps products of batch x H x W input positions, k = Cout, n = Cin), the weight
// gradient `taps` separate products Cin x (batch Ho Wo) x Cout.
// (The transposed convolution's rows are the output positions, so a strided layer's gradient costs its
// forward's MACs.)
// Batch norm (training statistics over batch x H x W per channel) and ReLU run on the VPU: the norm is a
// reduction op, ReLU and the residual add are elementwise ops that fusion folds into it. The 3x3 stride-2 max
// pool, the global average pool, the 1000-way classifier and its softmax cross-entropy complete the step.
// Stride 2 sits in the first 1x1 convolution of stages 2-4 (the paper's ResNet; torchvision's v1.5 strides the
// 3x3 instead).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/fused_ops.h"
#include "zoo/model_lowering.h"

namespace tpusim::kernels {
namespace {

using fused::Access;
using fused::Phase;
using fused::TensorId;
using fused::TensorKind;

// One convolution, its batch norm and what the backward pass reads.
struct Conv {
  std::string name;
  int cin = 0, cout = 0, k = 1, stride = 1;
  std::int64_t in_size = 0, out_size = 0;  // input and output height (= width)
  Param weights, norm;
  // forward tensors
  TensorId x = 0, y = 0, stats = 0, z = 0;  // input, conv output, norm statistics, norm (+ relu) output
  bool relu = true;
};

class ResnetStep {
 public:
  ResnetStep(const WorkloadSpec& w, const ChipSpec& chip, const ShardView& shard, CollectivePoints& points)
      : w_(w), r_(w.model.resnet), shard_(shard), points_(points), b_(chip, w.numerics.dtype) {
    train_ = w.step == StepKind::train;
    wdt_ = w.weights();
  }
  fused::Graph build();

 private:
  Param param(const std::string& name, std::int64_t rows, std::int64_t cols);
  // Output positions of a layer of height `size` in one microbatch.
  [[nodiscard]] double positions(std::int64_t size) const {
    return static_cast<double>(shard_.microbatch()) * static_cast<double>(size) * static_cast<double>(size);
  }
  // Conv -> batch norm (-> ReLU unless `relu` is false); reads x, returns z.
  TensorId conv_forward(Conv& c, TensorId x);
  // Gradient at z -> gradient at x (through the ReLU when the caller has not done it).
  TensorId conv_backward(const Conv& c, TensorId dz);
  // A matmul with every product's model FLOPs counted once over the chips that compute the same images
  // (ShardView::replicas: a batch rule that leaves out a mesh axis).
  [[nodiscard]] Builder::Matmul matmul() const {
    Builder::Matmul mm;
    mm.flops.model_share = 1.0 / std::max(1, shard_.replicas.tokens);
    return mm;
  }

  const WorkloadSpec& w_;
  const ResnetModel& r_;
  const ShardView& shard_;
  CollectivePoints& points_;
  Builder b_;
  bool train_ = false;
  DType wdt_ = DType::f32;
  std::string mbp_;  // microbatch prefix of tensor and op names ("mb1.")
  int micro_ = 0;    // the microbatch being built (Builder::gradient)
};

Param ResnetStep::param(const std::string& name, std::int64_t rows, std::int64_t cols) {
  return b_.parameter(name, rows, cols, ParamStorage{wdt_, train_, w_.optimizer, shard_.weight_shards});
}

TensorId ResnetStep::conv_forward(Conv& c, TensorId x) {
  const Phase ph = Phase::forward;
  c.x = x;
  const double out = positions(c.out_size);
  const auto m = static_cast<std::int64_t>(out);
  const int taps = c.k * c.k;
  c.y = b_.activation(mbp_ + c.name + ".fwd.conv", out * c.cout);
  {
    // Re-reads from the tiling of the equivalent im2col product m x (taps Cin) x Cout.
    const GemmTiling t = b_.tiling(m, static_cast<std::int64_t>(taps) * c.cin, c.cout, w_.numerics.dtype);
    Builder::Matmul mm = matmul();
    mm.m = m, mm.k = c.cin, mm.n = c.cout, mm.batch = taps, mm.dtype = w_.numerics.dtype;
    mm.a = {x}, mm.b = {c.weights.w}, mm.outputs = {c.y};
    mm.a_times = std::ceil(static_cast<double>(c.cout) / static_cast<double>(t.tn));
    mm.b_times = std::ceil(static_cast<double>(m) / static_cast<double>(t.tm));
    const std::size_t op = b_.matmul(OpName{ph, mbp_ + c.name, "conv"}, ir::OpClass::matmul, mm);
    b_.graph().ops()[op].shape.sum_batch = true;
  }
  const double elements = out * c.cout;
  const TensorId n = b_.activation(mbp_ + c.name + ".fwd.norm", elements);
  c.stats = b_.activation(c.name + ".fwd.norm.stats", 2.0 * c.cout, DType::f32);
  b_.vector(OpName{ph, mbp_ + c.name, "norm"}, ir::OpClass::norm_activation, ir::VectorOp::reduction, elements,
            kBatchNormForward, {{c.y, 1}, {c.norm.w, 1}}, {{n, 1}, {c.stats, 1}});
  c.z = n;
  if (c.relu) {
    c.z = b_.activation(mbp_ + c.name + ".fwd.relu", elements);
    b_.vector(OpName{ph, mbp_ + c.name, "relu"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, elements,
              kReluForward, {{n, 1}}, {{c.z, 1}}, n);
  }
  return c.z;
}

TensorId ResnetStep::conv_backward(const Conv& c, TensorId dz) {
  const Phase ph = Phase::backward;
  const double out = positions(c.out_size), in = positions(c.in_size);
  const double elements = out * c.cout;
  const int taps = c.k * c.k;
  TensorId dn = dz;
  if (c.relu) {
    dn = b_.activation(mbp_ + c.name + ".bwd.relu", elements);
    b_.vector(OpName{ph, mbp_ + c.name, "relu"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, elements,
              kReluBackward, {{dz, 1}, {c.z, 1}}, {{dn, 1}}, dz);
  }
  const TensorId dy = b_.activation(mbp_ + c.name + ".bwd.norm", elements);
  std::vector<Access> reads{{dn, 1}, {c.y, 1}, {c.stats, 1}, {c.norm.w, 1}};
  const GradientWrite dnorm = b_.gradient(c.norm, micro_);
  if (dnorm.accumulate) reads.push_back({dnorm.tensor, 1});
  b_.vector(OpName{ph, mbp_ + c.name, "norm"}, ir::OpClass::norm_activation, ir::VectorOp::reduction, elements,
            kBatchNormBackward, reads, {{dy, 1}, {dnorm.tensor, 1}});
  // Weight gradient: one product per tap, Cin x (positions) x Cout.
  {
    const auto m = static_cast<std::int64_t>(out);
    Builder::Matmul mm = matmul();
    mm.m = c.cin, mm.k = m, mm.n = c.cout, mm.batch = taps, mm.dtype = w_.numerics.dtype;
    const GradientWrite dw = b_.gradient(c.weights, micro_);
    mm.a = {c.x}, mm.b = {dy}, mm.outputs = {dw.tensor};
    if (dw.accumulate) {
      mm.extra_reads.push_back({dw.tensor, 1});
      mm.epilogue += kGradientAccumulate.per_element.times(c.weights.elements);
    }
    b_.matmul(OpName{ph, mbp_ + c.name, "conv.dw"}, ir::OpClass::matmul, mm);
  }
  // Input gradient: the transposed convolution, one product per tap of the output positions' gradients
  // (its rows) against the tap's weights, scattered into the input positions (a strided convolution's
  // gradient has as many MACs as its forward, not stride^2 times more).
  const TensorId dx = b_.activation(mbp_ + c.name + ".bwd.dx", in * c.cin);
  const auto m = static_cast<std::int64_t>(out);
  const GemmTiling t = b_.tiling(m, static_cast<std::int64_t>(taps) * c.cout, c.cin, w_.numerics.dtype);
  Builder::Matmul mm = matmul();
  mm.m = m, mm.k = c.cout, mm.n = c.cin, mm.batch = taps, mm.dtype = w_.numerics.dtype;
  mm.a = {dy}, mm.b = {c.weights.w}, mm.outputs = {dx};
  mm.a_times = std::ceil(static_cast<double>(c.cin) / static_cast<double>(t.tn));
  mm.b_times = std::ceil(static_cast<double>(m) / static_cast<double>(t.tm));
  const std::size_t op = b_.matmul(OpName{ph, mbp_ + c.name, "conv.dx"}, ir::OpClass::matmul, mm);
  b_.graph().ops()[op].shape.sum_batch = true;
  return dx;
}

fused::Graph ResnetStep::build() {
  if (shard_.batch < 1 || r_.blocks.size() != r_.widths.size()) {
    throw std::invalid_argument("resnet " + w_.model.name + ": needs a batch and one width per stage");
  }
  // The layers, in order: the stem, then per block its 1x1 reduce, 3x3, 1x1 expand and (first block of a
  // stage) the projection shortcut.
  std::vector<Conv> convs;
  auto add_conv = [&](std::string name, int cin, int cout, int k, int stride, std::int64_t in_size, bool relu) {
    Conv c;
    c.name = std::move(name);
    c.cin = cin, c.cout = cout, c.k = k, c.stride = stride, c.in_size = in_size, c.out_size = in_size / stride;
    c.relu = relu;
    c.weights = param(c.name + ".w", static_cast<std::int64_t>(k) * k * cin, cout);
    c.norm = param(c.name + ".bn", 1, 2 * cout);
    convs.push_back(c);
    return convs.size() - 1;
  };
  const std::int64_t image = r_.image_size;
  const std::size_t stem = add_conv("stem", r_.channels, r_.stem_width, 7, 2, image, true);
  struct Block {
    std::size_t reduce, conv3, expand;
    std::optional<std::size_t> shortcut;
    std::string name;
  };
  std::vector<Block> blocks;
  std::int64_t size = image / 4;  // after the stem and the max pool
  int in = r_.stem_width;
  for (std::size_t s = 0; s < r_.blocks.size(); ++s) {
    const int width = r_.widths[s], out = width * r_.expansion;
    for (int i = 0; i < r_.blocks[s]; ++i) {
      const int stride = i == 0 && s > 0 ? 2 : 1;
      const std::string name = fmt::format("stage{}.block{}", s + 1, i);
      Block bl;
      bl.name = name;
      bl.reduce = add_conv(name + ".reduce", in, width, 1, stride, size, true);
      bl.conv3 = add_conv(name + ".conv3", width, width, 3, 1, size / stride, true);
      bl.expand = add_conv(name + ".expand", width, out, 1, 1, size / stride, false);
      if (i == 0) bl.shortcut = add_conv(name + ".shortcut", in, out, 1, stride, size, false);
      blocks.push_back(bl);
      size /= stride;
      in = out;
    }
  }
  const Param fc = param("head.fc", in, r_.classes);
  const Param fc_bias = param("head.fc_bias", 1, r_.classes);
  const double b = static_cast<double>(shard_.microbatch());
  const int microbatches = train_ ? std::max(1, shard_.microbatches) : 1;
  for (int micro = 0; micro < microbatches; ++micro) {
    mbp_ = micro == 0 ? "" : fmt::format("mb{}.", micro);
    micro_ = micro;
    // ---- forward ----
    const TensorId images = b_.activation(mbp_ + "input.images", b * image * image * r_.channels);
    conv_forward(convs[stem], images);
    const std::int64_t pooled_size = image / 4;
    const TensorId pooled = b_.activation(mbp_ + "stem.fwd.pool", positions(pooled_size) * r_.stem_width);
    b_.vector(OpName{Phase::forward, mbp_ + "stem", "pool"}, ir::OpClass::norm_activation, ir::VectorOp::reduction,
              positions(pooled_size) * r_.stem_width, kMaxPool, {{convs[stem].z, 1}}, {{pooled, 1}});
    TensorId x = pooled;
    std::vector<TensorId> block_out;
    for (Block& bl : blocks) {
      const TensorId in_x = x;
      TensorId h = conv_forward(convs[bl.reduce], in_x);
      h = conv_forward(convs[bl.conv3], h);
      h = conv_forward(convs[bl.expand], h);
      const TensorId skip = bl.shortcut ? conv_forward(convs[*bl.shortcut], in_x) : in_x;
      const Conv& e = convs[bl.expand];
      const double elements = positions(e.out_size) * e.cout;
      x = b_.activation(mbp_ + bl.name + ".fwd.out", elements);
      b_.vector(OpName{Phase::forward, mbp_ + bl.name, "residual_relu"}, ir::OpClass::norm_activation,
                ir::VectorOp::elementwise, elements, VpuCost{"residual add and relu", {2, 0}, ""}, {{h, 1}, {skip, 1}},
                {{x, 1}}, h);
      block_out.push_back(x);
    }
    const std::int64_t last = convs[blocks.back().expand].out_size;
    const TensorId features = b_.activation(mbp_ + "head.fwd.pool", b * in);
    b_.vector(OpName{Phase::forward, mbp_ + "head", "pool"}, ir::OpClass::norm_activation, ir::VectorOp::reduction,
              positions(last) * in, kAveragePool, {{x, 1}}, {{features, 1}});
    const TensorId logits = b_.activation(mbp_ + "head.fwd.logits", b * r_.classes);
    {
      Builder::Matmul mm = matmul();
      mm.m = shard_.microbatch(), mm.k = in, mm.n = r_.classes, mm.dtype = w_.numerics.dtype;
      mm.a = {features}, mm.b = {fc.w}, mm.outputs = {logits}, mm.extra_reads = {{fc_bias.w, 1}};
      mm.epilogue = kAdd.per_element.times(b * r_.classes);
      b_.matmul(OpName{Phase::forward, mbp_ + "head", "fc"}, ir::OpClass::loss, mm);
    }
    const TensorId loss = b_.activation(mbp_ + "head.fwd.loss", b, DType::f32);
    if (!train_) {
      b_.vector(OpName{Phase::forward, mbp_ + "head", "cross_entropy"}, ir::OpClass::loss, ir::VectorOp::reduction,
                b * r_.classes, kCrossEntropyForward, {{logits, 1}}, {{loss, 1}});
      continue;
    }
    const TensorId dlogits = b_.activation(mbp_ + "head.fwd.dlogits", b * r_.classes);
    b_.vector(OpName{Phase::forward, mbp_ + "head", "cross_entropy"}, ir::OpClass::loss, ir::VectorOp::reduction,
              b * r_.classes, kCrossEntropyWithGradient, {{logits, 1}}, {{dlogits, 1}, {loss, 1}});

    // ---- backward ----
    const TensorId dfeatures = b_.activation(mbp_ + "head.bwd.dfeatures", b * in);
    {
      Builder::Matmul mm = matmul();
      mm.m = shard_.microbatch(), mm.k = r_.classes, mm.n = in, mm.dtype = w_.numerics.dtype;
      mm.a = {dlogits}, mm.b = {fc.w}, mm.outputs = {dfeatures};
      b_.matmul(OpName{Phase::backward, mbp_ + "head", "fc.dx"}, ir::OpClass::loss, mm);
      Builder::Matmul dw = matmul();
      dw.m = in, dw.k = shard_.microbatch(), dw.n = r_.classes, dw.dtype = w_.numerics.dtype;
      const GradientWrite dfc = b_.gradient(fc, micro), dbias = b_.gradient(fc_bias, micro);
      dw.a = {features}, dw.b = {dlogits}, dw.outputs = {dfc.tensor}, dw.extra_writes = {{dbias.tensor, 1}};
      if (dfc.accumulate) dw.extra_reads = {{dfc.tensor, 1}, {dbias.tensor, 1}};
      b_.matmul(OpName{Phase::backward, mbp_ + "head", "fc.dw"}, ir::OpClass::loss, dw);
    }
    TensorId dx = b_.activation(mbp_ + "head.bwd.pool", positions(last) * in);
    b_.vector(OpName{Phase::backward, mbp_ + "head", "pool"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              positions(last) * in, kAveragePool, {{dfeatures, 1}}, {{dx, 1}});
    for (std::size_t i = blocks.size(); i-- > 0;) {
      const Block& bl = blocks[i];
      const Conv& e = convs[bl.expand];
      const double elements = positions(e.out_size) * e.cout;
      // Through the block's final ReLU: one gradient for both branches.
      const TensorId dsum = b_.activation(mbp_ + bl.name + ".bwd.relu", elements);
      b_.vector(OpName{Phase::backward, mbp_ + bl.name, "relu"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
                elements, kReluBackward, {{dx, 1}, {block_out[i], 1}}, {{dsum, 1}}, dx);
      TensorId dh = conv_backward(convs[bl.expand], dsum);
      dh = conv_backward(convs[bl.conv3], dh);
      dh = conv_backward(convs[bl.reduce], dh);
      const TensorId dskip = bl.shortcut ? conv_backward(convs[*bl.shortcut], dsum) : dsum;
      const Conv& red = convs[bl.reduce];
      const double in_elements = positions(red.in_size) * red.cin;
      dx = b_.activation(mbp_ + bl.name + ".bwd.dx", in_elements);
      b_.vector(OpName{Phase::backward, mbp_ + bl.name, "residual"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
                in_elements, kAdd, {{dh, 1}, {dskip, 1}}, {{dx, 1}}, dh);
    }
    const TensorId dpool = b_.activation(mbp_ + "stem.bwd.pool", positions(convs[stem].out_size) * r_.stem_width);
    b_.vector(OpName{Phase::backward, mbp_ + "stem", "pool"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise,
              positions(convs[stem].out_size) * r_.stem_width, kMaxPool, {{dx, 1}, {convs[stem].z, 1}},
              {{dpool, 1}});
    Conv stem_conv = convs[stem];
    stem_conv.x = images;
    {
      // The stem's backward: ReLU, batch norm and the weight gradient; its images need no gradient.
      const Phase ph = Phase::backward;
      const double elements = positions(stem_conv.out_size) * stem_conv.cout;
      const TensorId dn = b_.activation(mbp_ + "stem.bwd.relu", elements);
      b_.vector(OpName{ph, mbp_ + "stem", "relu"}, ir::OpClass::norm_activation, ir::VectorOp::elementwise, elements,
                kReluBackward, {{dpool, 1}, {stem_conv.z, 1}}, {{dn, 1}}, dpool);
      const TensorId dy = b_.activation(mbp_ + "stem.bwd.norm", elements);
      std::vector<Access> reads{{dn, 1}, {stem_conv.y, 1}, {stem_conv.stats, 1}, {stem_conv.norm.w, 1}};
      const GradientWrite dnorm = b_.gradient(stem_conv.norm, micro);
      if (dnorm.accumulate) reads.push_back({dnorm.tensor, 1});
      b_.vector(OpName{ph, mbp_ + "stem", "norm"}, ir::OpClass::norm_activation, ir::VectorOp::reduction, elements,
                kBatchNormBackward, reads, {{dy, 1}, {dnorm.tensor, 1}});
      Builder::Matmul mm = matmul();
      mm.m = stem_conv.cin, mm.k = static_cast<std::int64_t>(positions(stem_conv.out_size)), mm.n = stem_conv.cout;
      mm.batch = stem_conv.k * stem_conv.k, mm.dtype = w_.numerics.dtype;
      const GradientWrite dw = b_.gradient(stem_conv.weights, micro);
      mm.a = {images}, mm.b = {dy}, mm.outputs = {dw.tensor};
      if (dw.accumulate) mm.extra_reads.push_back({dw.tensor, 1});
      b_.matmul(OpName{ph, mbp_ + "stem", "conv.dw"}, ir::OpClass::matmul, mm);
    }
    // ---- gradient reductions, in the order the backward completes them: the head, the blocks from the last,
    // the stem; each starts when its gradients are done (FSDP: every microbatch's reduce-scattered; the
    // data-parallel all-reduce after the last) ----
    auto reduce = [&](int layer, const std::vector<const Param*>& params) {
      points_.after_weight_gradients(b_.graph(), layer, b_.gradient_buffers(params, micro), micro == 0,
                                     micro == microbatches - 1);
    };
    reduce(-1, {&fc, &fc_bias});
    for (std::size_t i = blocks.size(); i-- > 0;) {
      std::vector<const Param*> params;
      for (std::size_t c : {blocks[i].reduce, blocks[i].conv3, blocks[i].expand}) {
        params.push_back(&convs[c].weights);
        params.push_back(&convs[c].norm);
      }
      if (blocks[i].shortcut) {
        params.push_back(&convs[*blocks[i].shortcut].weights);
        params.push_back(&convs[*blocks[i].shortcut].norm);
      }
      reduce(static_cast<int>(i), params);
    }
    reduce(static_cast<int>(blocks.size()), {&convs[stem].weights, &convs[stem].norm});
  }
  points_.flush_gradient_reductions(b_.graph());
  // ---- optimizer: one update per stage (and the stem, the head) ----
  std::vector<const Param*> group;
  group.push_back(&convs[stem].weights);
  group.push_back(&convs[stem].norm);
  b_.optimizer_update("stem", group, w_.optimizer);
  for (const Block& bl : blocks) {
    group.clear();
    for (std::size_t c : {bl.reduce, bl.conv3, bl.expand}) {
      group.push_back(&convs[c].weights);
      group.push_back(&convs[c].norm);
    }
    if (bl.shortcut) {
      group.push_back(&convs[*bl.shortcut].weights);
      group.push_back(&convs[*bl.shortcut].norm);
    }
    b_.optimizer_update(bl.name, group, w_.optimizer);
  }
  b_.optimizer_update("head", {&fc, &fc_bias}, w_.optimizer);
  return std::move(b_.graph());
}

}  // namespace

fused::Graph build_resnet_step(const WorkloadSpec& workload, const ChipSpec& chip, const ShardView& shard,
                               CollectivePoints& points) {
  return ResnetStep(workload, chip, shard, points).build();
}

}  // namespace tpusim::kernels
