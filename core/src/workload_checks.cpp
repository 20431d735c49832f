#include "workload_checks.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tpusim {
namespace {

std::string_view step_name(StepKind k) {
  switch (k) {
    case StepKind::forward: return "forward";
    case StepKind::train: return "train";
    case StepKind::prefill: return "prefill";
    case StepKind::decode: return "decode";
  }
  return "?";
}

}  // namespace

void resolve_workload_defaults(Scenario& s, Diagnostics& diags) {
  WorkloadSpec& w = s.workload;
  if (!w.program.empty()) {
    // A program file fixes the work: its instructions are the whole step (shapes, types, collectives, host
    // work), and nothing else of workload: is read (a run reported them as if they had been).
    std::vector<std::pair<SourceLoc, std::string>> set;  // in the order they are written
    for (const auto& [key, origin] : w.origins) {
      if (!origin.defaulted && key != "program") set.emplace_back(origin.loc, key);
    }
    std::stable_sort(set.begin(), set.end(), [](const auto& a, const auto& b) {
      const SourceLoc& x = a.first;
      const SourceLoc& y = b.first;
      return std::tie(x.file, x.line, x.column) < std::tie(y.file, y.line, y.column);
    });
    for (const auto& [loc, key] : set) {
      diags.error(loc, "workload." + key,
                  fmt::format("a program file fixes the work: workload.{} would change nothing", key),
                  "no workload field but program with a program file (its instructions are the whole step)",
                  "a value set", "set it in the model scenario the program is lowered from (tpusim lower), or drop it");
    }
    return;
  }
  const ModelSpec& model = w.model;
  auto at = [&](const std::string& key) { return origin_of(w.origins, key); };
  const bool transformer = model.kind == ModelKind::transformer;
  const bool weight_dtype_set = w.numerics.weight_dtype.has_value();  // not auto (resolved below)

  if (w.inference()) {
    if (!transformer) {
      diags.error(at("step"), "workload.step", fmt::format("step {} needs a transformer model", step_name(w.step)),
                  "forward or train for a model of kind " + std::string(model_kind_name(model.kind)),
                  std::string(step_name(w.step)));
    } else if (model.transformer.architecture == Architecture::encoder) {
      diags.error(at("step"), "workload.step", "an encoder-only model generates no tokens",
                  "forward or train (prefill and decode need a decoder)", std::string(step_name(w.step)));
    } else if (model.transformer.architecture == Architecture::encoder_decoder && w.step == StepKind::prefill) {
      // Its encoder's self-attention fills no KV cache, which the lowering's prefill assumes of every stack.
      diags.error(at("step"), "workload.step", "the prefill of an encoder-decoder model is not modelled",
                  "forward, train or decode for architecture encoder_decoder", "prefill",
                  "step: forward runs the encoder and the decoder over the prompt; step: decode one new token");
    }
  }
  if (w.memory.microbatches > 1) {
    if (w.step != StepKind::train) {
      diags.error(at("microbatches"), "workload.microbatches", "microbatches accumulate gradients",
                  "1 unless step: train", std::to_string(w.memory.microbatches));
    } else if (w.batch % w.memory.microbatches != 0) {
      diags.error(at("microbatches"), "workload.microbatches", "the batch does not split into equal microbatches",
                  fmt::format("a divisor of the batch ({})", w.batch), std::to_string(w.memory.microbatches));
    }
  }

  // What only a training step has: a policy for the activations its backward pass reads, an optimizer.
  if (w.step != StepKind::train && w.memory.remat != Remat::none) {
    diags.error(at("remat"), "workload.remat", "rematerialization recomputes what a backward pass reads",
                "none unless step: train", fmt::format("a remat policy with step {}", step_name(w.step)));
  }
  if (const auto it = w.origins.find("optimizer");
      w.step != StepKind::train && it != w.origins.end() && !it->second.defaulted) {
    diags.error(it->second.loc, "workload.optimizer", "an optimizer updates the weights of a training step",
                "no optimizer unless step: train", fmt::format("an optimizer with step {}", step_name(w.step)));
  }

  // A checkpoint saves the state a training step updates: an inference step updates none.
  if (w.step != StepKind::train && w.host.checkpoint.every_steps > 0) {
    diags.error(at("checkpoint.every_steps"), "workload.checkpoint.every_steps",
                "a checkpoint saves the parameters and optimizer state a training step updates",
                "0 unless step: train",
                fmt::format("{} with step {}", w.host.checkpoint.every_steps, step_name(w.step)));
  }
  // A decode's new token attends to the context's cached tokens: seq_len (context's default) and decoder_seq_len
  // would change nothing once context is set, except an encoder-decoder's encoder length (seq_len).
  const auto written = [&](const char* key) {
    const auto it = w.origins.find(key);
    return it != w.origins.end() && !it->second.defaulted;
  };
  if (w.step == StepKind::decode && written("context") && written("seq_len") && transformer &&
      model.transformer.architecture != Architecture::encoder_decoder) {
    diags.error(at("seq_len"), "workload.seq_len", "a decode with workload.context set does not read seq_len",
                "no seq_len with context on a decode (the KV cache holds context tokens, and one is new)",
                std::to_string(w.tokens.seq_len), "drop seq_len: context is the sequence so far");
  }
  if (w.step == StepKind::decode && written("decoder_seq_len") && transformer &&
      model.transformer.architecture == Architecture::encoder_decoder) {  // another architecture: refused below
    diags.error(at("decoder_seq_len"), "workload.decoder_seq_len",
                "a decode's decoder tokens are the context in its KV cache and one new token",
                "no decoder_seq_len on a decode (set workload.context)", std::to_string(w.tokens.decoder_seq_len));
  }
  if (w.step != StepKind::decode && w.tokens.context != 0) {
    diags.error(at("context"), "workload.context", "the tokens already in the KV cache are read by a decode step",
                "no context unless step: decode (a prefill's prompt is seq_len)",
                fmt::format("{} with step {}", w.tokens.context, step_name(w.step)));
  }
  // The pipeline's stages (workload.mesh's pipeline axis; 1 without one).
  int stages = 1;
  for (const MeshAxisSpec& a : w.mesh.axes) {
    if (a.name == "pipeline") stages = a.size;
  }
  // The order of a pipeline's microbatches: without a pipeline axis there are no stages to order.
  if (const auto it = w.origins.find("pipeline_schedule"); it != w.origins.end() && !it->second.defaulted) {
    if (stages <= 1) {
      diags.error(it->second.loc, "workload.pipeline_schedule", "orders the microbatches of a pipeline's stages",
                  "no pipeline_schedule without a pipeline axis in workload.mesh", "a schedule set",
                  "add a pipeline axis (mesh: {pipeline: N, ...}), or drop pipeline_schedule");
    }
  }

  // remat_custom.* places the tensors of remat: custom only; a block's input is what every recomputation of the
  // block starts from, so it stays on the device or goes to host memory.
  for (std::size_t i = 0; i < kRematTags; ++i) {
    const std::string key = "remat_custom." + std::string(remat_tag_name(static_cast<RematTag>(i)));
    const auto it = w.origins.find(key);
    if (it == w.origins.end() || it->second.defaulted) continue;
    if (w.memory.remat != Remat::custom) {
      diags.error(at(key), "workload." + key, "places a tensor under remat: custom only",
                  "no remat_custom entries, or remat: custom", "remat_custom with another remat policy");
    } else if (static_cast<RematTag>(i) == RematTag::decoder_layer_input &&
               w.memory.remat_custom[i] == RematPlacement::remat) {
      diags.error(at(key), "workload." + key, "a block's input is where its recomputation starts", "device or offload",
                  "remat");
    }
  }

  // An int8 or fp8 type (`key`: the operands' or the weights') needs the chip's MXU rate for it: without one the
  // chip cannot run it, it would only emulate it.
  const auto refuse_without_rate = [&](const std::string& key, DType d, const std::string& what) {
    const bool int8 = d == DType::int8;
    if ((int8 ? s.chip.mxu.int8_rate : s.chip.mxu.fp8_rate) > 0) return;
    diags.error(at(key), "workload." + key,
                fmt::format("chip {} has no {} MXU rate (chip.mxu.{}_rate is 0)", s.chip.name, dtype_name(d),
                            dtype_name(d)),
                fmt::format("a {} type the chip computes in", what), std::string(dtype_name(d)),
                int8 ? fmt::format("use bf16{}, or a chip with an int8 rate (v3 and later)",
                                   what == "weight" ? " weights" : "")
                     : "no bundled chip publishes an fp8 rate; set chip.mxu.fp8_rate to model one");
  };
  const auto quantized = [](DType d) { return d == DType::int8 || d == DType::fp8; };
  if (quantized(w.numerics.dtype)) refuse_without_rate("dtype", w.numerics.dtype, "matmul");

  // Parameter storage: f32 master weights for training (mixed precision), the compute type otherwise.
  if (!w.numerics.weight_dtype) w.numerics.weight_dtype = w.weights();
  const DType wd = *w.numerics.weight_dtype;
  if (quantized(wd)) {
    if (w.step == StepKind::train) {
      diags.error(at("weight_dtype"), "workload.weight_dtype", "quantized weights are for inference",
                  "bf16 or f32 to train", std::string(dtype_name(wd)));
    } else if (wd != w.numerics.dtype) {  // the same type as the operands: refused above
      refuse_without_rate("weight_dtype", wd, "weight");
    }
  }

  if (w.numerics.quantization == Quantization::int8) {
    if (!transformer) {
      diags.error(at("quantization"), "workload.quantization", "int8 quantization applies to a transformer's dense layers",
                  "none for a model of kind " + std::string(model_kind_name(model.kind)), "int8");
    } else if (s.chip.mxu.int8_rate <= 0) {
      diags.error(at("quantization"), "workload.quantization",
                  fmt::format("chip {} has no int8 MXU rate (chip.mxu.int8_rate is 0)", s.chip.name),
                  "none on this chip", "int8", "use a chip with an int8 rate (v3 and later)");
    } else if (w.numerics.dtype != DType::bf16 && w.numerics.dtype != DType::f32) {
      diags.error(at("quantization"), "workload.quantization",
                  "int8 quantization quantizes bf16 or f32 activations inside each matmul",
                  "workload.dtype bf16 or f32 with quantization: int8", std::string(dtype_name(w.numerics.dtype)));
    } else if (wd == DType::int8 || wd == DType::fp8) {
      diags.error(at("quantization"), "workload.quantization",
                  "the weights are stored quantized already (weight_dtype); quantization: int8 quantizes them in "
                  "the kernel",
                  "one of the two", "int8 with weight_dtype " + std::string(dtype_name(wd)));
    }
  }

  if (w.part == ModelPart::blocks && !transformer) {
    diags.error(at("part"), "workload.part", "only a transformer has blocks to run on their own",
                "model for a model of kind " + std::string(model_kind_name(model.kind)), "blocks");
  }
  // A pipeline's stages are cut from the whole model, its first stage holding the embedding and its last the
  // head: with part: blocks they would still be there (the lowering ran the whole model, silently).
  if (w.part == ModelPart::blocks && stages > 1) {
    diags.error(at("part"), "workload.part", "a pipeline runs the whole model over its stages",
                "part: model with a pipeline axis", fmt::format("blocks with pipeline: {}", stages),
                "drop the pipeline axis to time the blocks alone, or run part: model");
  }
  // Settings that only some kinds read: set for another kind they would change nothing, so they are refused.
  const bool whole = transformer || model.kind == ModelKind::resnet;  // the kinds lowered from a graph
  struct ReadBy {
    const char* key;
    bool read;    // by this model's kind
    bool set;     // to other than its default
    const char* who;
  };
  const char* graph = "a transformer or a resnet";
  const ReadBy read_by[] = {
      {"weight_dtype", whole, weight_dtype_set, graph},
      {"microbatches", whole, w.memory.microbatches > 1, graph},
      // A resnet's backward reads every activation its forward kept (kernels/src/zoo/resnet.cpp has no policy).
      {"remat", transformer, w.memory.remat != Remat::none, "a transformer"},
      {"fusion", whole, !w.kernels.fusion, graph},
      {"overlap", whole, !w.schedule.overlap, graph},
      {"async_collectives", whole, w.schedule.async_collectives != all_collective_kinds(), graph},
      {"attention", transformer, w.kernels.attention != AttentionImpl::flash, "a transformer"},
      {"seq_len", transformer, w.tokens.seq_len != 0, "a transformer"},
      {"context", transformer, w.tokens.context != 0, "a transformer"},
  };
  for (const ReadBy& r : read_by) {
    if (r.read || !r.set) continue;
    diags.error(at(r.key), std::string("workload.") + r.key,
                fmt::format("a model of kind {} does not read {}: it would change nothing", model_kind_name(model.kind),
                            r.key),
                fmt::format("no {} (it applies to {})", r.key, r.who), "a value set",
                model.kind == ModelKind::mlp && std::string_view(r.key) == "weight_dtype"
                    ? "an mlp keeps its parameters in workload.dtype"
                    : "");
  }
  if (!transformer) return;
  const TransformerModel& t = model.transformer;
  const bool learned = t.style.position == PositionKind::learned;
  if (w.tokens.seq_len == 0) w.tokens.seq_len = t.context;
  if (w.tokens.decoder_seq_len == 0) w.tokens.decoder_seq_len = w.tokens.seq_len;
  if (w.tokens.context == 0) w.tokens.context = w.tokens.seq_len;
  if (learned && w.tokens.seq_len > t.context) {
    diags.error(at("seq_len"), "workload.seq_len", "longer than the model's learned position table",
                fmt::format("at most the model's context ({})", t.context), std::to_string(w.tokens.seq_len));
  }
  if (learned && w.step == StepKind::decode && w.tokens.context >= t.context) {
    const auto it = w.origins.find("context");
    const bool defaulted = it == w.origins.end() || it->second.defaulted;
    diags.error(at("context"), "workload.context", "the next token has no learned position",
                fmt::format("below the model's context ({})", t.context), std::to_string(w.tokens.context),
                defaulted ? fmt::format("context defaults to seq_len, which defaults to the model's context; set "
                                        "workload.context below {}",
                                        t.context)
                          : "");
  }
  if (t.architecture != Architecture::encoder_decoder && w.origins.count("decoder_seq_len") &&
      !w.origins.at("decoder_seq_len").defaulted) {
    diags.error(at("decoder_seq_len"), "workload.decoder_seq_len", "applies to encoder_decoder models",
                "no decoder_seq_len for architecture decoder or encoder", std::to_string(w.tokens.decoder_seq_len));
  }
}

}  // namespace tpusim
