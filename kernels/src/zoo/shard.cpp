#include "tpusim/kernels/shard.h"

#include <algorithm>

namespace tpusim::kernels {

ShardView full_shard(const WorkloadSpec& w) {
  ShardView s;
  s.batch = w.batch;
  s.microbatches = w.step == StepKind::train ? w.memory.microbatches : 1;
  s.seq_len = w.tokens.seq_len;
  s.decoder_seq_len = w.tokens.decoder_seq_len > 0 ? w.tokens.decoder_seq_len : w.tokens.seq_len;
  s.context = w.tokens.context;
  if (w.model.kind == ModelKind::transformer) {
    const TransformerModel& t = w.model.transformer;
    s.heads = t.heads;
    s.kv_heads = t.kv();
    s.d_ff = t.d_ff;
    s.moe.d_ff = t.moe.d_ff > 0 ? t.moe.d_ff : t.d_ff;
    s.moe.experts = t.moe.experts;
    s.vocab.rows = t.vocab;
    s.pipeline.layers = t.architecture == Architecture::encoder ? t.encoder_depth() : t.decoder_depth();
    s.pipeline.encoder_layers = t.architecture == Architecture::encoder_decoder ? t.encoder_depth() : 0;
    // workload.part: blocks runs the stack alone, as a middle pipeline stage does: its input activations come in
    // and its output gradient comes back from outside the chip.
    s.pipeline.embedding = s.pipeline.head = w.part == ModelPart::model;
  }
  return s;
}

std::vector<std::pair<bool, int>> pipeline_order(const ShardView& shard, PipelineSchedule schedule, bool train) {
  const int m = train ? std::max(1, shard.microbatches) : 1;
  std::vector<std::pair<bool, int>> order;
  if (!train) {
    order.emplace_back(true, 0);
    return order;
  }
  if (shard.pipeline.stages <= 1) {
    for (int i = 0; i < m; ++i) {
      order.emplace_back(true, i);
      order.emplace_back(false, i);
    }
    return order;
  }
  const PipelinePart& p = shard.pipeline;
  const int warmup = schedule == PipelineSchedule::gpipe ? m : std::min(p.stages - p.stage - 1, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) order.emplace_back(true, f);
  while (f < m) {
    order.emplace_back(true, f++);
    order.emplace_back(false, b++);
  }
  while (b < m) order.emplace_back(false, b++);
  return order;
}

}  // namespace tpusim::kernels
