#include "tpusim/kernels/model_params.h"

#include "tpusim/kernels/dlrm.h"

#include <algorithm>
#include <cmath>

namespace tpusim::kernels {
namespace {

struct ResnetConv {
  double macs_per_image;  // multiply-adds
  double weights;
};

// ResNet (He et al. 2016): the stem, the bottleneck stages, the classifier; convolutions carry no bias (each
// is followed by a batch norm with a scale and a shift per channel).
struct ResnetCounts {
  double conv_weights = 0, batch_norm = 0, fc = 0, macs = 0;
};

ResnetCounts resnet_counts(const ResnetModel& r) {
  ResnetCounts c;
  double size = r.image_size / 2.0;  // after the stride-2 stem
  auto conv = [&](double in, double out, double k, double out_size) {
    c.conv_weights += in * out * k * k;
    c.batch_norm += 2 * out;
    c.macs += in * out * k * k * out_size * out_size;
  };
  conv(r.channels, r.stem_width, 7, size);
  size /= 2;  // 3x3 stride-2 max pool
  double in = r.stem_width;
  for (std::size_t stage = 0; stage < r.blocks.size(); ++stage) {
    const double width = r.widths[stage], out = width * r.expansion;
    for (int block = 0; block < r.blocks[stage]; ++block) {
      const bool downsample = block == 0 && stage > 0;
      const double out_size = downsample ? size / 2 : size;
      conv(in, width, 1, out_size);       // 1x1 reduce, strided in the first block of stages 2-4 (the paper's
                                          // ResNet; torchvision's v1.5 strides the 3x3 instead)
      conv(width, width, 3, out_size);    // 3x3
      conv(width, out, 1, out_size);      // 1x1 expand
      if (block == 0) conv(in, out, 1, out_size);  // projection shortcut
      size = out_size;
      in = out;
    }
  }
  c.fc = in * r.classes + r.classes;
  c.macs += in * r.classes;
  return c;
}

}  // namespace

std::vector<ParamGroup> parameter_groups(const ModelSpec& model) {
  std::vector<ParamGroup> g;
  if (model.kind == ModelKind::mlp) {
    double w = 0;
    for (std::size_t l = 1; l < model.mlp.widths.size(); ++l) w += static_cast<double>(model.mlp.widths[l - 1]) * model.mlp.widths[l];
    g.push_back({"dense layers", w, true});
    return g;
  }
  if (model.kind == ModelKind::resnet) {
    const ResnetCounts c = resnet_counts(model.resnet);
    g.push_back({"convolutions", c.conv_weights, true});
    g.push_back({"batch norms", c.batch_norm, false});
    g.push_back({"classifier", c.fc, true});
    return g;
  }
  if (model.kind == ModelKind::dlrm) {
    // The tables, and each MLP's weights and biases; the top MLP reads the bottom MLP's output beside the
    // interaction's F (F - 1) / 2 pairwise dot products of the F = tables + 1 feature vectors (dlrm.cpp).
    const DlrmModel& d = model.dlrm;
    const auto dense = [](double in, const std::vector<int>& widths) {
      double n = 0;
      for (int w : widths) {
        n += in * w + w;
        in = w;
      }
      return n;
    };
    const double f = d.tables + 1.0;
    g.push_back({"embedding tables", static_cast<double>(d.tables) * static_cast<double>(d.rows_per_table) *
                                         d.embedding_dim, false});
    g.push_back({"bottom MLP", dense(d.dense_features, d.bottom_mlp), true});
    g.push_back({"top MLP", dense(d.embedding_dim + f * (f - 1) / 2, d.top_mlp), true});
    return g;
  }
  if (model.kind != ModelKind::transformer) return g;
  const TransformerModel& t = model.transformer;
  const double d = static_cast<double>(t.d_model), hd = static_cast<double>(t.heads) * t.head_dim(),
               kvd = static_cast<double>(t.kv()) * t.head_dim(), f = static_cast<double>(t.d_ff),
               fe = static_cast<double>(t.moe.d_ff > 0 ? t.moe.d_ff : t.d_ff);
  const double up = t.gated() ? 2 : 1;
  const double norm = t.style.norm == NormKind::layernorm && t.style.bias ? 2 * d : d;
  const int enc = t.encoder_depth(), dec = t.decoder_depth();
  const int stack_layers = t.architecture == Architecture::encoder ? enc : dec;
  const int blocks = t.architecture == Architecture::encoder_decoder ? enc + dec : stack_layers;
  const double self_attn = d * (hd + 2 * kvd) + hd * d;
  const double cross_attn = d * hd + d * 2 * kvd + hd * d;
  int moe_layers = 0;
  const int moe_stack = t.architecture == Architecture::encoder ? enc : dec;  // experts sit in the decoder
  for (int l = 0; l < moe_stack; ++l) moe_layers += t.moe.is_moe_layer(l) ? 1 : 0;
  const int dense_layers = blocks - moe_layers;
  g.push_back({"embedding", static_cast<double>(t.vocab) * d, t.ends.tied_embeddings});
  if (t.style.position == PositionKind::learned) g.push_back({"positions", static_cast<double>(t.context) * d, false});
  if (t.style.position == PositionKind::relative) {
    const int stacks = t.architecture == Architecture::encoder_decoder ? 2 : 1;
    g.push_back({"relative position bias", static_cast<double>(stacks) * t.style.relative_buckets * t.heads, false});
  }
  if (t.ends.token_types > 0) g.push_back({"token types", static_cast<double>(t.ends.token_types) * d, false});
  g.push_back({"attention", blocks * self_attn, true});
  if (t.architecture == Architecture::encoder_decoder) g.push_back({"cross-attention", dec * cross_attn, true});
  if (dense_layers > 0) g.push_back({"mlp", dense_layers * (d * up * f + f * d), true});
  if (moe_layers > 0) {
    g.push_back({"router", moe_layers * d * t.moe.experts, true});
    g.push_back({"experts", moe_layers * static_cast<double>(t.moe.experts) * (d * up * fe + fe * d), true});
  }
  if (t.style.bias) {
    double biases = blocks * (hd + 2 * kvd + d) + dense_layers * (up * f + d);
    if (t.architecture == Architecture::encoder_decoder) biases += dec * (hd + 2 * kvd + d);
    g.push_back({"biases", biases, false});
  }
  const int norms_per_block = t.style.block == TransformerBlock::parallel ? 1 : 2;
  double norms = blocks * norms_per_block * norm + (t.architecture == Architecture::encoder_decoder ? dec * norm : 0);
  norms += norm * (t.architecture == Architecture::encoder_decoder ? 2 : 1);  // the final norm of each stack
  g.push_back({"norms", norms, false});
  if (!t.ends.tied_embeddings) g.push_back({"output projection", d * static_cast<double>(t.vocab), true});
  if (t.ends.lm_head_transform) {
    g.push_back({"lm head transform", d * d, true});
    g.push_back({"lm head bias and norm", d + norm + static_cast<double>(t.ends.tied_embeddings ? t.vocab : 0), false});
  }
  if (t.ends.pooler) g.push_back({"pooler", d * d + d, false});  // its next-sentence head is not modelled
  return g;
}

double parameter_count(const ModelSpec& model) {
  double n = 0;
  for (const ParamGroup& p : parameter_groups(model)) n += p.count;
  return n;
}

double active_matmul_parameters(const ModelSpec& model) {
  if (model.kind != ModelKind::transformer) {
    double n = 0;
    for (const ParamGroup& p : parameter_groups(model)) n += p.matmul ? p.count : 0;
    return n;
  }
  const TransformerModel& t = model.transformer;
  double n = 0;
  for (const ParamGroup& p : parameter_groups(model)) {
    if (!p.matmul) continue;
    n += p.component == "experts" ? p.count * t.moe.top_k / t.moe.experts : p.count;
  }
  return n;
}

StepWork step_work(const WorkloadSpec& w, const ShardView& shard) {
  StepWork s;
  s.examples = static_cast<double>(shard.batch);
  switch (w.model.kind) {
    case ModelKind::transformer: {
      const bool enc_dec = w.model.transformer.architecture == Architecture::encoder_decoder;
      const double per_seq = w.step == StepKind::decode ? 1.0
                             : enc_dec                  ? static_cast<double>(shard.decoder_seq_len)
                                                        : static_cast<double>(shard.seq_len);
      s.tokens = static_cast<double>(shard.batch) * per_seq;
      if (w.step == StepKind::prefill) s.tokens = static_cast<double>(shard.batch) * static_cast<double>(shard.seq_len);
      break;
    }
    case ModelKind::gemm:
    case ModelKind::collective: s.examples = 0; break;
    case ModelKind::mlp:
    case ModelKind::resnet:
    case ModelKind::dlrm: break;
  }
  return s;
}

double closed_form_model_flops(const WorkloadSpec& w) {
  const ShardView shard = full_shard(w);
  const double batch = static_cast<double>(shard.batch);
  if (w.model.kind == ModelKind::resnet) {
    // Forward 2 x MACs; training 3 x that less the stem's input gradient (the images need none).
    const ResnetModel& r = w.model.resnet;
    const double fwd = 2.0 * resnet_counts(r).macs * batch;
    if (w.step != StepKind::train) return fwd;
    const double stem = 2.0 * r.channels * r.stem_width * 49.0 * (r.image_size / 2.0) * (r.image_size / 2.0) * batch;
    return 3 * fwd - stem;
  }
  if (w.model.kind == ModelKind::mlp) {
    double n = 0;
    const auto& wd = w.model.mlp.widths;
    for (std::size_t l = 1; l < wd.size(); ++l) n += static_cast<double>(wd[l - 1]) * wd[l];
    if (w.step != StepKind::train) return 2 * batch * n;
    return 6 * batch * n - 2 * batch * static_cast<double>(wd[0]) * wd[1];  // no input gradient
  }
  if (w.model.kind == ModelKind::dlrm) return dlrm_model_flops(w.model.dlrm, shard.batch, w.step);
  if (w.model.kind == ModelKind::gemm) {
    return 2.0 * static_cast<double>(w.model.gemm.m) * static_cast<double>(w.model.gemm.k) * w.model.gemm.n;
  }
  if (w.model.kind != ModelKind::transformer) return 0;
  const TransformerModel& t = w.model.transformer;
  // Per-token matmul parameters of each part.
  const double d = static_cast<double>(t.d_model), q = t.head_dim();
  const double hd = shard.heads * q, kvd = shard.kv_heads * q;
  const double up = t.gated() ? 2 : 1;
  const double f = static_cast<double>(shard.d_ff), fe = static_cast<double>(shard.moe.d_ff);
  const double attn = d * (hd + 2 * kvd) + hd * d;
  const double vocab = d * static_cast<double>(shard.vocab.rows) + (t.ends.lm_head_transform ? d * d : 0);
  // Under a capacity factor below 1 an expert's buffer holds ceil(cf x T k / E) of the T k / E tokens routed to it,
  // T a microbatch's tokens; the rest are dropped and compute nothing (TransformerStep::expert_shape). The programs
  // round each expert group's capacity up on its own: the sum equals this where those are whole numbers of tokens.
  const std::int64_t moe_seq =
      t.architecture == Architecture::encoder_decoder ? shard.decoder_seq_len : shard.seq_len;  // experts' stack
  const double routed = static_cast<double>(shard.microbatch()) *
                        (w.step == StepKind::decode ? 1.0 : static_cast<double>(moe_seq)) * t.moe.top_k /
                        std::max(1, t.moe.experts);
  const double kept = t.moe.experts > 0 && routed > 0
                          ? std::min(1.0, std::ceil(t.moe.capacity_factor * routed - 1e-9) / routed)
                          : 1.0;
  auto block = [&](int layer) {
    if (!t.moe.is_moe_layer(layer)) return attn + d * up * f + f * d;
    const double active_experts = kept * t.moe.top_k * shard.moe.experts / t.moe.experts;
    return attn + d * t.moe.experts + active_experts * (d * up * fe + fe * d);
  };
  const bool enc_dec = t.architecture == Architecture::encoder_decoder;
  const double s = static_cast<double>(shard.seq_len);
  const double s_dec = enc_dec ? static_cast<double>(shard.decoder_seq_len) : s;
  double n_dec = 0;  // decoder (or encoder-only) stack parameters per token
  const PipelinePart& part = shard.pipeline;
  for (int l = part.first_layer; l < part.first_layer + part.layers; ++l) n_dec += block(l);
  double n_enc = 0;
  if (enc_dec) {
    // Encoder blocks are dense; the decoder's cross-attention adds its query and output projections per
    // decoder token and its key/value projection per encoder token.
    n_enc = shard.pipeline.encoder_layers * (attn + d * up * f + f * d);
    n_dec += shard.pipeline.layers * (d * hd + hd * d);
  }
  const double n_xkv = enc_dec ? shard.pipeline.layers * d * 2 * kvd : 0;
  const double head = shard.pipeline.head ? vocab : 0;
  const double l_dec = shard.pipeline.layers, l_enc = shard.pipeline.encoder_layers;
  const double xattn = enc_dec ? s : 0;  // cross-attention keys per decoder query
  const double keys_dec = s_dec;  // self-attention keys per query: the whole sequence
  switch (w.step) {
    case StepKind::train:
    case StepKind::forward: {
      const double k = w.step == StepKind::train ? 3 : 1;  // forward 2, backward 4 per parameter and token
      double flops = 2 * k * ((n_dec + head) * batch * s_dec + (n_enc + n_xkv) * batch * s);
      flops += 2 * k * 2 * shard.heads * q * (l_dec * (keys_dec + xattn) * batch * s_dec + l_enc * s * batch * s);
      return flops;
    }
    case StepKind::prefill: {
      double flops = 2 * (n_dec * batch * s_dec + (n_enc + n_xkv) * batch * s) + 2 * head * batch;
      flops += 4 * shard.heads * q * (l_dec * (s_dec + xattn) * batch * s_dec + l_enc * s * batch * s);
      return flops;
    }
    case StepKind::decode: {
      const double keys = static_cast<double>(shard.context) + 1;
      return 2 * (n_dec + head) * batch + 4 * shard.heads * q * l_dec * (keys + xattn) * batch;
    }
  }
  return 0;
}

}  // namespace tpusim::kernels
