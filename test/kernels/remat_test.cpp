// Rematerialization policies (MaxText's names) and host offload: the memory plan of a two-block decoder under
// each policy against a hand count, the hardware FLOPs against the recomputed ops', and the offload copies.
#include <cstdint>
#include <string>

#include "kernels_test_support.h"
#include "tpusim/kernels/lowering.h"

#include <gtest/gtest.h>

namespace tpusim::kernels {
namespace {

using testing::roomy;

// Two blocks of d 128, 2 heads of 64, d_ff 512 (ReLU), vocabulary 1024, RMSNorm, no biases or positions, tied
// embeddings; 2 sequences of 64 tokens (T = 128), bf16 activations, flash attention, fusion on.
WorkloadSpec two_blocks(Remat remat) {
  WorkloadSpec w = testing::training_step(testing::small_decoder("two-blocks", 2, 128, 2, 512, 1024, 64), 2, 64);
  w.memory.remat = remat;
  return w;
}

// Sizes of the hand count (bytes): a [T, d] bf16 tensor, a [T, d_ff] one, a norm's f32 row statistics [T], the
// flash attention's f32 log-sum-exp [2 sequences x 2 heads x 64].
constexpr std::uint64_t kTd = 128 * 128 * 2, kTf = 128 * 512 * 2, kStats = 128 * 4, kLse = 2 * 2 * 64 * 4;
// Kept outside the blocks under every policy: the last block's output (the head's input), the head's
// normalized input and its norm statistics, and the logits' gradient [T, 1024] bf16.
constexpr std::uint64_t kHead = kTd + kTd + kStats + 128 * 1024 * 2;

// FLOPs per block of each forward matmul: 2 x T x k x n (the attention core: Q K^T and P V, 2 x 2 x 2 sequences
// x 2 heads x 64^3).
constexpr double kQkv = 2.0 * 128 * 128 * 384, kAttention = 2 * 2.0 * 2 * 2 * 64 * 64 * 64, kOut = 2.0 * 128 * 128 * 128,
                 kUp = 2.0 * 128 * 128 * 512, kDown = 2.0 * 128 * 512 * 128;

struct Expect {
  Remat remat;
  std::uint64_t kept_per_block;  // activations kept per block for the backward
  double recomputed_per_block;   // FLOPs the backward's recomputation adds per block
};

TEST(Remat, EachPolicyKeepsItsHandCountAndRecomputesTheRestOfTheBlock) {
  // Every named policy keeps the block input x. The backward reads, per block: x, the norms' outputs and
  // statistics, q, k, v, the attention output (context) and log-sum-exp, the residual after attention, the
  // MLP's pre- and post-activation. A policy keeps what it names of that (or what recomputing the rest reads:
  // out_proj for the residual x + out_proj); the rest is recomputed from what it keeps. Saving mlpwo keeps
  // nothing: no op of the backward or of the recomputation reads the MLP's output (the block output is the
  // next block's kept input), as jax.checkpoint saves only residuals the backward needs. The flash attention
  // is recomputed for its log-sum-exp unless nothing needs it (minimal keeps q, k, v, out_proj: the backward
  // still needs the context and log-sum-exp).
  const Expect want[] = {
      // none: x, the two norm outputs, the context, the residual (5 x [T, d]); q, k, v; the MLP's pre- and
      // post-activation; two norm statistics; the log-sum-exp. Nothing recomputed.
      {Remat::none, 5 * kTd + 3 * kTd + 2 * kTf + 2 * kStats + kLse, 0},
      // full: x; the whole forward again.
      {Remat::full, kTd, kQkv + kAttention + kOut + kUp + kDown},
      // minimal: x, q, k, v, out_proj, mlpwi; the attention core (for the context and its log-sum-exp).
      {Remat::minimal, 5 * kTd + kTf, kAttention},
      // save_dot_except_mlpwi and save_dot_except_mlp: x, q, k, v, out_proj; the attention core and mlpwi.
      {Remat::save_dot_except_mlpwi, 5 * kTd, kAttention + kUp},
      {Remat::save_dot_except_mlp, 5 * kTd, kAttention + kUp},
      // ... with the context: one [T, d] more; the attention still runs for its log-sum-exp.
      {Remat::save_dot_with_context_except_mlp, 6 * kTd, kAttention + kUp},
      {Remat::save_dot_except_logits_ffn1, 6 * kTd, kAttention + kUp},
      // save_qkv_proj: x, q, k, v; the attention, its output projection and mlpwi.
      {Remat::save_qkv_proj, 4 * kTd, kAttention + kOut + kUp},
      // save_out_proj: x, out_proj; the QKV projection, the attention and mlpwi.
      {Remat::save_out_proj, 2 * kTd, kQkv + kAttention + kUp},
      // custom with every tag recomputed (the default): x; everything but the MLP's down projection, whose
      // output nothing of the backward reads.
      {Remat::custom, kTd, kQkv + kAttention + kOut + kUp},
  };
  const LoweredWorkload none = lower(two_blocks(Remat::none), roomy());
  const double none_hardware = none.programs.programs[0].hardware_flops();
  for (const Expect& e : want) {
    const WorkloadSpec w = two_blocks(e.remat);
    const LoweredWorkload l = lower(w, roomy());
    const MemoryPlan plan = *plan_memory(w, roomy());
    SCOPED_TRACE(static_cast<int>(e.remat));
    EXPECT_EQ(plan.activations.count(), 2 * e.kept_per_block + kHead);
    EXPECT_EQ(plan.host_offload.count(), 0u);
    EXPECT_EQ(l.programs.programs[0].model_flops(), none.programs.programs[0].model_flops());
    EXPECT_EQ(l.programs.programs[0].hardware_flops(), none_hardware + 2 * e.recomputed_per_block);
  }
  // Under none, the hardware FLOPs are the model FLOPs plus the flash backward's recomputed scores (Q K^T).
  EXPECT_EQ(none_hardware - none.programs.programs[0].model_flops(), 2 * kAttention / 2);
}

TEST(Remat, CustomNamesEachTensorsPlacement) {
  // Keeping q, k, v and the context on the device, everything else recomputed, is
  // save_dot_with_context_except_mlp without out_proj: the residual x + out_proj needs the output projection
  // run again.
  WorkloadSpec w = two_blocks(Remat::custom);
  for (const RematTag t : {RematTag::query_proj, RematTag::key_proj, RematTag::value_proj, RematTag::context}) {
    w.memory.remat_custom[static_cast<std::size_t>(t)] = RematPlacement::device;
  }
  const LoweredWorkload none = lower(two_blocks(Remat::none), roomy());
  const LoweredWorkload l = lower(w, roomy());
  EXPECT_EQ(plan_memory(w, roomy())->activations.count(), 2 * 5 * kTd + kHead);
  EXPECT_EQ(l.programs.programs[0].hardware_flops(),
            none.programs.programs[0].hardware_flops() + 2 * (kAttention + kOut + kUp));
}

TEST(Remat, OffloadedTensorsGoToHostMemoryAndComeBackForTheBackward) {
  // MaxText's C5 shape: the block input, q, k, v and out_proj offloaded, the rest recomputed. On the device
  // only what the head keeps; in host memory 5 x [T, d] per block, all of them live when the backward starts.
  WorkloadSpec w = two_blocks(Remat::custom);
  for (const RematTag t : {RematTag::decoder_layer_input, RematTag::query_proj, RematTag::key_proj,
                           RematTag::value_proj, RematTag::out_proj}) {
    w.memory.remat_custom[static_cast<std::size_t>(t)] = RematPlacement::offload;
  }
  ChipSpec chip = roomy();
  chip.host.memory_per_chip = GiB(1);
  const MemoryPlan plan = *plan_memory(w, chip);
  EXPECT_EQ(plan.activations.count(), kHead);
  EXPECT_EQ(plan.host_offload.count(), 2 * 5 * kTd);
  EXPECT_EQ(plan.host_capacity, GiB(1));
  // One DMA each way per tensor: HBM -> host in the forward, host -> HBM before the block's recomputation.
  const ir::Program p = lower(w, chip).programs.programs[0];
  std::uint64_t to_host = 0, to_hbm = 0;
  int copies = 0;
  for (const auto& ins : p.instructions()) {
    if (ins.kind != ir::OpKind::dma) continue;
    ++copies;
    EXPECT_EQ(ins.op_class, ir::OpClass::host);
    if (ins.memory.src == ir::Memory::hbm && ins.memory.dst == ir::Memory::host) to_host += ins.bytes;
    if (ins.memory.src == ir::Memory::host && ins.memory.dst == ir::Memory::hbm) to_hbm += ins.bytes;
  }
  EXPECT_EQ(copies, 2 * 2 * 5);
  EXPECT_EQ(to_host, 2 * 5 * kTd);
  EXPECT_EQ(to_hbm, 2 * 5 * kTd);
  // The recomputation is save_dot_except_mlp's (the same tensors kept, only elsewhere).
  const LoweredWorkload device = lower(two_blocks(Remat::save_dot_except_mlp), roomy());
  EXPECT_EQ(p.hardware_flops(), device.programs.programs[0].hardware_flops());
}

TEST(Remat, OffloadBeyondTheHostMemoryIsRefused) {
  WorkloadSpec w = two_blocks(Remat::qkv_proj_offloaded);
  ChipSpec chip = roomy();
  chip.host.memory_per_chip = Bytes(2 * 3 * kTd - 1);  // one byte short of q, k and v of both blocks
  const Diagnostic d = testing::config_error([&] { (void)lower(w, chip); });
  EXPECT_NE(d.message.find("do not fit in host memory"), std::string::npos) << d.message;
  EXPECT_NE(d.expected.find("chip.host.memory_per_chip"), std::string::npos) << d.expected;
  chip.host.memory_per_chip = Bytes(2 * 3 * kTd);
  EXPECT_EQ(plan_memory(w, chip)->host_offload.count(), 2 * 3 * kTd);
  chip.host.memory_per_chip = Bytes(0);  // unknown: refused too
  const Diagnostic unknown = testing::config_error([&] { (void)lower(w, chip); });
  EXPECT_NE(unknown.message.find("gives no host memory"), std::string::npos) << unknown.message;
}

}  // namespace
}  // namespace tpusim::kernels

namespace tpusim::kernels {
namespace {

// The memory timeline the tools follow in simulated time (memory_in_use.h) is the plan's own count: its ops'
// allocations and frees, swept in program order (allocate at an op, free after it), peak at exactly the plan's
// activations + workspace on top of its persistent bytes, under every policy; everything allocated is freed;
// each instruction belongs to at most one op, and only to instructions of the program.
TEST(MemoryTimeline, SweptInProgramOrderItIsThePlansCount) {
  for (const Remat remat : {Remat::none, Remat::full, Remat::minimal, Remat::save_qkv_proj}) {
    const LoweredWorkload l = lower(two_blocks(remat), roomy());
    ASSERT_EQ(l.memory_timelines.size(), 1U);
    ASSERT_TRUE(l.memory.has_value());
    const MemoryTimeline& t = l.memory_timelines[0];
    const MemoryPlan& p = *l.memory;
    EXPECT_EQ(t.persistent, p.weights + p.gradients + p.optimizer_state + p.kv_cache);
    double held = 0, peak = 0, allocated = 0, freed = 0;
    std::vector<int> owner(l.programs.programs[0].size(), 0);
    for (const ActivationUse& u : t.uses) {
      held += u.allocated;
      peak = std::max(peak, held);
      held -= u.freed;
      allocated += u.allocated;
      freed += u.freed;
      EXPECT_FALSE(u.instructions.empty());
      for (const std::uint32_t i : u.instructions) {
        ASSERT_LT(i, owner.size());
        EXPECT_EQ(++owner[i], 1) << "instruction " << i << " in two ops";
      }
    }
    EXPECT_EQ(allocated, freed) << static_cast<int>(remat);
    EXPECT_NEAR(peak, (p.activations + p.workspace).as_double(), 1.0) << static_cast<int>(remat);
    EXPECT_GT(peak, 0);
  }
}

}  // namespace
}  // namespace tpusim::kernels
