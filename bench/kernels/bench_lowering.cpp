// Lowering speed of whole models, the part of a pod-scale run that happens before simulation:
//  - BM_LowerGpt3_175bTrainingStep: GPT-3 175B, one 2048-token sequence, Adam, on a v4 chip (the memory
//    plan, the fused graph, and the emitted program of thousands of instructions);
//  - BM_LowerLlama2_70bDecodeStep: LLaMA-2 70B, 8 sequences against a 4096-token KV cache.
// Each reports the program's instructions. The chip's HBM is enlarged so the plan fits (sharding, which
// would make it fit on a pod, is not lowered yet).
#include <benchmark/benchmark.h>

#include "tpusim/core/scenario.h"
#include "tpusim/kernels/lowering.h"

namespace tpusim::kernels {
namespace {

WorkloadSpec workload(const std::string& model, StepKind step, std::int64_t batch, std::int64_t seq) {
  WorkloadSpec w;
  w.model = load_model(model);
  w.step = step;
  w.batch = batch;
  w.tokens.seq_len = seq;
  w.tokens.decoder_seq_len = seq;
  w.tokens.context = seq - 1;
  w.numerics.weight_dtype = w.weights();
  return w;
}

void run(benchmark::State& state, const WorkloadSpec& w) {
  ChipSpec chip = load_chip("v4");
  chip.hbm.capacity = Bytes(1ULL << 44);
  std::size_t instructions = 0;
  for (auto _ : state) {
    const LoweredWorkload l = lower(w, chip);
    instructions = l.programs.programs[0].size();
    benchmark::DoNotOptimize(instructions);
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_LowerGpt3_175bTrainingStep(benchmark::State& state) {
  run(state, workload("gpt3-175b", StepKind::train, 1, 2048));
}
BENCHMARK(BM_LowerGpt3_175bTrainingStep)->Unit(benchmark::kMillisecond);

void BM_LowerLlama2_70bDecodeStep(benchmark::State& state) {
  run(state, workload("llama2-70b", StepKind::decode, 8, 4096));
}
BENCHMARK(BM_LowerLlama2_70bDecodeStep)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::kernels

BENCHMARK_MAIN();
