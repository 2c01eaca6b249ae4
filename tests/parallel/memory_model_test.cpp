// Memory figures on hand-computed cases.
#include <gtest/gtest.h>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/memory_model.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

TEST(MemoryModel, TransformerActivationsFollowThePublishedFormulas) {
  // GPT-3 175B layer: s = 2048, b = 1, h = 12288, a = 96; sbh = 2048 * 12288 = 25,165,824.
  // 5 a s / h = 5 * 96 * 2048 / 12288 = 80.
  const double sbh = 2048.0 * 12288;
  // No parallelism: sbh (34 + 80) = 114 sbh.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 1, false, Recompute::kNone, false), 114 * sbh);
  // t = 8: sbh (10 + 24/8 + 80/8) = 23 sbh.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, false, Recompute::kNone, false), 23 * sbh);
  // t = 8 with sequence parallelism: sbh/8 (34 + 80) = 14.25 sbh.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, true, Recompute::kNone, false), 14.25 * sbh);
  // Selective drops the attention term: sbh/8 * 34 = 4.25 sbh.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, true, Recompute::kSelective, false), 4.25 * sbh);
  // Full recomputation keeps the input: 2 sbh / 8 with sp, 2 sbh without.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, true, Recompute::kFull, false), 0.25 * sbh);
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, false, Recompute::kFull, false), 2 * sbh);
  // Linear in the micro-batch.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 4, 12288, 96, 8, true, Recompute::kNone, false), 4 * 14.25 * sbh);
  // Flash attention keeps no s x s matrices, only a float per head and token: 4 a / h = 4 * 96 / 12288 = 1/32.
  // With sp at t = 8: sbh/8 (34 + 1/32); so recomputing nothing costs what selective costs, plus the 1/32.
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(2048, 1, 12288, 96, 8, true, Recompute::kNone, true),
                   (34 + 1.0 / 32) / 8 * sbh);
  // And it does not grow with s^2: at 16x the sequence, 16x the bytes (unfused: ~74x).
  const double f1 = transformer_activation_bytes(2048, 1, 12288, 96, 1, false, Recompute::kNone, true);
  EXPECT_DOUBLE_EQ(transformer_activation_bytes(32768, 1, 12288, 96, 1, false, Recompute::kNone, true), 16 * f1);
}

// A transformer layer's activations followed only its hidden size and heads: MLP widths of 4h, 8h and 16h, gated or
// not, and an MoE's top-1 or top-8 routing all planned 34 sbh, so a plan at 77.9 of 78 GB could run out of memory.
TEST(MemoryModel, TransformerActivationsFollowTheBlocksWidths) {
  const double s = 4096, h = 4096, a = 32, sbh = s * h;
  const auto bytes = [&](const BlockWidths& w, int t = 1, bool sp = false) {
    return transformer_activation_bytes(s, 1, h, a, t, sp, Recompute::kSelective, true, w);
  };
  // The GPT form, said or left out: 34 sbh.
  EXPECT_DOUBLE_EQ(bytes({}), 34 * sbh);
  EXPECT_DOUBLE_EQ(bytes({h, h, 4 * h, false, 0}), 34 * sbh);
  // Llama 3 70B's block: 8 KV heads of 64 (kv = h / 8), SwiGLU at 3.5 h: 10 + 4 + 0.5 + 6 x 3.5 = 35.5 sbh.
  EXPECT_DOUBLE_EQ(bytes({h, h / 8, 3.5 * h, true, 0}), 35.5 * sbh);
  // Twice the MLP width: 16 sbh more ungated (4 per h of width), 24 more gated.
  EXPECT_DOUBLE_EQ(bytes({h, h, 8 * h, false, 0}) - bytes({}), 16 * sbh);
  EXPECT_DOUBLE_EQ(bytes({h, h, 8 * h, true, 0}) - bytes({h, h, 4 * h, true, 0}), 24 * sbh);
  // Top-2 experts of width 3.5 h, gated (Mixtral): two copies of each token (2 h each) and of its MLP tensors:
  // 10 + 4 + 8 + 2 x 21 = 64 sbh; top-8 stores four times top-2's expert tensors.
  EXPECT_DOUBLE_EQ(bytes({h, h, 3.5 * h, true, 2}), 64 * sbh);
  EXPECT_DOUBLE_EQ(bytes({h, h, 3.5 * h, true, 8}) - bytes({h, h, 3.5 * h, true, 2}), 6 * (2 + 21) * sbh);
  // Tensor parallelism splits the inside part only (10 sbh stay whole), sequence parallelism all of it.
  EXPECT_DOUBLE_EQ(bytes({h, h, 8 * h, true, 0}, 8), (10 + (8 + 48) / 8.0) * sbh);
  EXPECT_DOUBLE_EQ(bytes({h, h, 8 * h, true, 0}, 8, true), (10 + 8 + 48) / 8.0 * sbh);
  // An MoE layer's dispatched copies stay whole on each rank (its experts read the gathered tokens): top-2 at
  // t = 4 with sequence parallelism is 2 x 2 + (10 + 8 + 42) / 4 sbh.
  EXPECT_DOUBLE_EQ(bytes({h, h, 3.5 * h, true, 2}, 4, true), (4 + 60 / 4.0) * sbh);
}

TEST(MemoryModel, ZeroStagesShardTheModelStates) {
  // 1e9 local parameters, dp = 8.
  // ZeRO-0: 2 + 2 + 12 = 16 GB.
  MemoryBreakdown z0 = model_state_bytes(1e9, 0, 8);
  EXPECT_DOUBLE_EQ(z0.total(), 16e9);
  // ZeRO-1: 2 + 2 + 12/8 = 5.5 GB.
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 1, 8).total(), 5.5e9);
  // ZeRO-2: 2 + (2 + 12)/8 = 3.75 GB.
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 2, 8).total(), 3.75e9);
  // ZeRO-3: 16/8 = 2 GB.
  MemoryBreakdown z3 = model_state_bytes(1e9, 3, 8);
  EXPECT_DOUBLE_EQ(z3.total(), 2e9);
  EXPECT_DOUBLE_EQ(z3.weights, 0.25e9);
  EXPECT_DOUBLE_EQ(z3.optimizer, 1.5e9);
  // torchtitan (FSDP2): fp32 master and gradients sharded, Adam 8 bytes. At ZeRO-2 ("never" resharding) the bf16
  // compute copy stays gathered: weights 4/8 + 2 = 2.5 bytes per parameter (they were 4, whole).
  const StateBytes tt = state_bytes(Engine::kTorchtitan);
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 2, 8, tt).weights, 2.5e9);
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 2, 8, tt).gradients, 0.5e9);
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 3, 8, tt).weights, 0.5e9);
  EXPECT_DOUBLE_EQ(model_state_bytes(1e9, 0, 8, tt).weights, 4e9);
}

// The bytes a parameter follow the model's dtype (an f32 model was counted at bf16's 2-byte weights and gradients):
// Megatron-LM's distributed-optimizer table (fp16 20 and 4 + 16/d, bf16 18 and 6 + 12/d, fp32 16 and 8 + 8/d).
TEST(MemoryModel, StateBytesFollowTheModelsDtype) {
  const double d = 8;
  auto per_param = [&](Engine e, const char* dtype, int zero) {
    return model_state_bytes(1, zero, static_cast<int>(d), state_bytes(e, dtype)).total();
  };
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "f16", 0), 20);
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "f16", 1), 4 + 16 / d);
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "bf16", 0), 18);
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "bf16", 1), 6 + 12 / d);
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "f32", 0), 16);
  EXPECT_DOUBLE_EQ(per_param(Engine::kMegatron, "f32", 1), 8 + 8 / d);
  EXPECT_DOUBLE_EQ(state_bytes(Engine::kMegatron, "f16").gradient_reduce, 2);
  // No engine and DeepSpeed: fp32 throughout, reduced in fp32.
  for (Engine e : {Engine::kGeneric, Engine::kDeepSpeed}) {
    EXPECT_DOUBLE_EQ(per_param(e, "f32", 0), 16);
    EXPECT_DOUBLE_EQ(per_param(e, "f32", 3), 16 / d);
    EXPECT_DOUBLE_EQ(state_bytes(e, "f32").gradient_reduce, 4);
    EXPECT_DOUBLE_EQ(per_param(e, "f16", 0), 16);
  }
  // torchtitan in float32: the gathered compute copy at ZeRO-2 is fp32 too.
  EXPECT_DOUBLE_EQ(model_state_bytes(1, 2, 8, state_bytes(Engine::kTorchtitan, "f32")).weights, 4 / d + 4);
}

TEST(MemoryModel, MicroBatchesInFlightPerSchedule) {
  // p = 4, m = 16.
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::kGpipe, 4, 0, 16, 1), 16);
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::k1F1B, 4, 0, 16, 1), 4);
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::k1F1B, 4, 3, 16, 1), 1);
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::k1F1B, 4, 0, 2, 1), 2);  // fewer micro-batches than stages
  // Interleaved, v = 2: 4 * (1 + 3 / 8) = 5.5.
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::kInterleaved, 4, 0, 16, 2), 5.5);
}

}  // namespace
}  // namespace tuner::parallel

namespace tuner::parallel {
namespace {

// The loss keeps the softmax of its logits for backward: Megatron-LM's vocab-parallel cross-entropy in fp32 (4 bytes
// per logit of this rank's vocabulary share), where the model's dtype (2) was counted; only the last stage holds it.
TEST(MemoryModel, MegatronsLossKeepsItsSoftmaxInFp32OnTheLastStage) {
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kMegatron;
  o.pins = parse_pins("tp=4,pp=2,dp=1,mbs=2,recompute=none,zero=1");
  const ModelGraph m = parse_model_spec("llama3-8b");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  const Plan fp32 = Planner(m, c, o).plan();
  o.loss_fp32 = false;
  const Plan bf16 = Planner(m, c, o).plan();
  ASSERT_EQ(fp32.stages.size(), 2u);
  const double logits_per_rank = 2.0 * 8192 * 128256 / 4;  // mbs x seq x vocab / tp
  EXPECT_NEAR(fp32.stages[1].memory.activations - bf16.stages[1].memory.activations, 2 * logits_per_rank,
              0.01 * logits_per_rank);
  EXPECT_DOUBLE_EQ(fp32.stages[0].memory.activations, bf16.stages[0].memory.activations);
}

}  // namespace
}  // namespace tuner::parallel
