// Context parallelism: a long sequence split over cp GPUs fits where it did
// not, pinned cp is honoured and exported, the planner searches cp for long
// sequences and for batches too small for the cluster (and not otherwise),
// degrees multiply to the cluster, and the ring's K/V exchange
// hidden behind attention still pays overlap_interference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

PlannerOptions options(int64_t batch, const std::string& fix) {
  PlannerOptions o;
  o.global_batch = batch;
  o.pins = parse_pins(fix);
  return o;
}

TEST(ContextParallel, LongSequencesFitOnlyWhenSplit) {
  // Llama 3 8B at 131,072 tokens on one node: without cp one sequence's activations overflow 80 GB even at tp 8
  // with full recomputation; cp 8 x tp 1 splits the sequence and fits.
  const ModelGraph m = parse_model_spec("llama:layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=131072,vocab=128256");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  EXPECT_THROW(Planner(m, c, options(8, "tp=8,cp=1,pp=1,mbs=1,recompute=full")).plan(), SpecError);
  const Plan p = Planner(m, c, options(8, "tp=1,cp=8,pp=1,mbs=1,recompute=full,zero=3")).plan();
  EXPECT_EQ(p.config.cp, 8);
  EXPECT_EQ(p.config.tp * p.config.cp * p.config.pp * p.config.dp, 8);
  EXPECT_LE(p.peak_memory_bytes, p.memory_capacity_bytes);
  for (const auto& st : p.stages) EXPECT_NEAR(st.time.total(), p.iteration_time_s, 1e-9 * p.iteration_time_s);
  // Unpinned, the planner finds a plan and it uses context parallelism (nothing else fits).
  const Plan free = Planner(m, c, options(8, "")).plan();
  EXPECT_GT(free.config.cp, 1);
  // Exported: Megatron's --context-parallel-size and torchtitan's context_parallel_degree carry it.
  const std::string meg = export_megatron(p, m, 8);
  EXPECT_NE(meg.find("--context-parallel-size 8\n"), std::string::npos) << meg;
  EXPECT_NE(export_torchtitan(p, m, 8).find("context_parallel_degree = 8\n"), std::string::npos);
  std::vector<std::string> warnings;
  export_deepspeed(p, m, 8, &warnings);
  EXPECT_FALSE(warnings.empty());
}

// Ring attention is a fused kernel in every engine (Megatron-LM with Transformer Engine, torchtitan): a GPT model,
// whose recipe is unfused attention, was planned at cp 16 with unfused attention, sized with (s/cp)^2 scores, and
// exported as --attention-backend unfused with --context-parallel-size.
TEST(ContextParallel, ContextParallelPlansRunFlashAttention) {
  const ModelGraph m = parse_model_spec("gpt:layers=24,hidden=2048,heads=16,seq=131072");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:4");
  const Plan p = Planner(m, c, options(1024, "")).plan();
  ASSERT_GT(p.config.cp, 1);
  EXPECT_EQ(p.attention, AttentionKernel::kFlash);
  EXPECT_NE(export_megatron(p, m, 1024).find("--attention-backend flash\n"), std::string::npos);
  EXPECT_GT(p.stages[0].time.cp_comm_s, 0) << "the ring's exchange is a breakdown term of its own";
  // At this length attention is most of the model's FLOPs: counted causally (half), MFU is near half the
  // convention's figure.
  EXPECT_LT(p.mfu_causal, 0.6 * p.mfu);
  EXPECT_GT(p.mfu_causal, 0.4 * p.mfu);
  // Without cp the recipe stands (short sequences keep unfused attention for GPT).
  const ModelGraph short_seq = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const Plan q = Planner(short_seq, parse_cluster_spec("dgx-h100:2"), options(64, "")).plan();
  EXPECT_EQ(q.config.cp, 1);
  EXPECT_EQ(q.attention, AttentionKernel::kUnfused);
  EXPECT_NEAR(q.mfu_causal, q.mfu, 0.1 * q.mfu);
  // Asked for unfused attention, cp is not planned, and a cp pin says why.
  PlannerOptions o = options(64, "cp=2");
  o.attention = AttentionKernel::kUnfused;
  try {
    (void)Planner(short_seq, parse_cluster_spec("dgx-h100:2"), o).plan();
    ADD_FAILURE() << "cp=2 planned with unfused attention";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("needs flash attention"), std::string::npos) << e.what();
  }
  o.pins = parse_pins("");
  EXPECT_EQ(Planner(short_seq, parse_cluster_spec("dgx-h100:2"), o).plan().config.cp, 1);
}

TEST(ContextParallel, ShortSequencesKeepCpOneAndBadPinsAreRefused) {
  const ModelGraph m = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  EXPECT_EQ(Planner(m, c, options(64, "")).plan().config.cp, 1);
  // A pinned cp is planned even for short sequences; one that does not divide the sequence is refused.
  EXPECT_EQ(Planner(m, c, options(64, "cp=2")).plan().config.cp, 2);
  try {
    Planner(m, c, options(64, "cp=3")).plan();
    FAIL() << "cp=3 planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("--fix cp=3 must divide"), std::string::npos) << e.what();
  }
  EXPECT_EQ(to_string(parse_pins("tp=2,cp=4")), "tp=2,cp=4");
  EXPECT_THROW(parse_pins("cp=0"), SpecError);
}

// tp, pp and dp pinned with cp free leave cp the GPUs they do not use: planned so, or refused naming that cp and why
// (it was "no configuration was tried" wherever the search did not consider that cp).
TEST(ContextParallel, TpPpAndDpPinnedLeaveCpTheRestOfTheGpus) {
  const ModelGraph m = parse_model_spec("llama3-8b");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  const Plan p = Planner(m, c, options(1024, "tp=2,pp=2,dp=2")).plan();
  EXPECT_EQ(p.config.cp, 2);
  EXPECT_EQ(p.config.tp * p.config.cp * p.config.pp * p.config.dp, 16);
  PlannerOptions o = options(1024, "tp=2,pp=2,dp=2");
  o.attention = AttentionKernel::kUnfused;
  try {
    (void)Planner(m, c, o).plan();
    ADD_FAILURE() << "cp=2 planned with unfused attention";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("--fix tp x pp x dp = 8 GPUs of the 16 of dgx-h100:2 leaves cp=2, but "
                                         "context parallelism runs flash attention"),
              std::string::npos)
        << e.what();
  }
  const ModelGraph odd = parse_model_spec("gpt:layers=8,hidden=1024,heads=16,seq=1001,vocab=32000");
  try {
    (void)Planner(odd, c, options(64, "tp=1,pp=1,dp=8")).plan();
    ADD_FAILURE() << "cp=2 planned for 1001 tokens";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("leaves cp=2, but it does not divide the sequence of 1001 tokens; allowed: "
                                         "tp x cp x pp x dp = 16"),
              std::string::npos)
        << e.what();
  }
}

// torchtitan shards each sequence round-robin into 2 x cp chunks, as Megatron-LM does (PyTorch asserts the sequence
// divides by 2 x cp): 1002 tokens at cp 2 exported a job that fails at start-up. And an f32 model runs unfused
// attention (flash kernels are fp16/bf16), so no cp: a pin or an implied cp says why, and --attention flash is bad input.
TEST(ContextParallel, TorchtitansChunksAndAnF32ModelsAttentionLimitCp) {
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  const ModelGraph m = parse_model_spec("llama:layers=4,hidden=1024,heads=16,seq=1002");
  PlannerOptions o = options(64, "cp=2");
  o.engine = Engine::kTorchtitan;
  try {
    (void)Planner(m, c, o).plan();
    ADD_FAILURE() << "cp=2 planned for torchtitan at 1002 tokens";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("torchtitan splits each sequence into 2 x cp = 4 chunks, which do not divide "
                                         "1002 tokens"),
              std::string::npos)
        << e.what();
  }
  o.pins = parse_pins("tp=2,pp=2,dp=2");  // cp 2 implied
  try {
    (void)Planner(m, c, o).plan();
    ADD_FAILURE() << "an implied cp=2 planned for torchtitan at 1002 tokens";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("leaves cp=2, but torchtitan splits each sequence into 2 x cp = 4 chunks"),
              std::string::npos)
        << e.what();
  }
  ModelGraph f32 = parse_model_spec("llama:layers=4,hidden=1024,heads=16,seq=32768");
  f32.dtype = "f32";
  const Plan p = Planner(f32, c, options(64, "")).plan();  // a long sequence: cp would be searched in bf16
  EXPECT_EQ(p.attention, AttentionKernel::kUnfused);
  EXPECT_EQ(p.config.cp, 1);
  PlannerOptions flash = options(64, "");
  flash.attention = AttentionKernel::kFlash;
  EXPECT_THROW(Planner(f32, c, flash), SpecError);
  try {
    (void)Planner(f32, c, options(64, "cp=2")).plan();
    ADD_FAILURE() << "cp=2 planned for an f32 model";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is f32 (flash kernels run fp16/bf16 only); allowed: cp=1"), std::string::npos)
        << e.what();
  }
}

TEST(ContextParallel, ABatchTooSmallForTheClusterSearchesCpAtAnyLength) {
  // 16 sequences of 8,192 tokens on 128 GPUs: 1 sequence per tensor group of 8, so without splitting sequences
  // only tp 8 x dp 16 uses every GPU. cp is searched (the sequence is short of long_sequence) and wins.
  const ModelGraph m =
      parse_model_spec("llama:layers=8,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=8192,vocab=128256");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:16");
  const Plan free = Planner(m, c, options(16, "")).plan();
  const Plan no_cp = Planner(m, c, options(16, "cp=1")).plan();
  EXPECT_GT(free.config.cp, 1) << describe(free.config);
  // The plan says so, and names the batch that would give every tensor group 4 sequences.
  ASSERT_EQ(free.notes.size(), 1u);
  EXPECT_NE(free.notes[0].find("gives 1 per tensor-parallel group of 8 GPUs on 128 GPUs"), std::string::npos)
      << free.notes[0];
  EXPECT_NE(free.notes[0].find("a global batch of 64 or more"), std::string::npos) << free.notes[0];
  EXPECT_LT(free.iteration_time_s, no_cp.iteration_time_s * 0.99);
  EXPECT_EQ(free.config.tp * free.config.cp * free.config.pp * free.config.dp, 128);
  // For DeepSpeed, which has no context parallelism (and runs 1F1B only), the search keeps cp 1; Megatron-LM has it.
  PlannerOptions deepspeed = options(16, "");
  deepspeed.engine = Engine::kDeepSpeed;
  const Plan ds = Planner(m, c, deepspeed).plan();
  EXPECT_EQ(ds.config.cp, 1);
  EXPECT_TRUE(ds.config.pp == 1 || ds.config.schedule == Schedule::k1F1B) << describe(ds.config);
  PlannerOptions megatron = options(16, "");
  megatron.engine = Engine::kMegatron;
  EXPECT_GT(Planner(m, c, megatron).plan().config.cp, 1);
  // The old rule (cp only for long sequences) plans cp 1 here.
  PlannerOptions old_rule = options(16, "");
  old_rule.batch_starved_sequences = 0;
  EXPECT_EQ(Planner(m, c, old_rule).plan().config.cp, 1);
  // With enough sequences for every tensor group (4 each), cp is not searched, and there is no note.
  const Plan enough = Planner(m, c, options(64, "")).plan();
  EXPECT_EQ(enough.config.cp, 1);
  EXPECT_TRUE(enough.notes.empty());
  // Nor where a split would leave a GPU fewer than starved_cp_min_tokens (1,024) of a sequence: here only cp 2 is
  // offered, and at a limit of 4,096 tokens none.
  PlannerOptions few_tokens = options(16, "");
  few_tokens.starved_cp_min_tokens = 4096;
  EXPECT_EQ(Planner(m, c, few_tokens).plan().config.cp, 2);
  few_tokens.starved_cp_min_tokens = 8192;
  EXPECT_EQ(Planner(m, c, few_tokens).plan().config.cp, 1);
}

// A ring of 64 ranks over 8 nodes steps in lockstep, and each step waits for the hop that crosses a node: one GPU's
// 50 GB/s link. It was priced as a hierarchical all-gather using every link of a node at once: 0.14 s where the
// ring's own sends take about 4 s (the user test's hand count).
TEST(ContextParallel, ARingAcrossNodesWaitsForItsNetworkHop) {
  const ModelGraph m = parse_model_spec("llama3-8b");
  const Plan p = Planner(m, parse_cluster_spec("dgx-h100:8"), options(64, "cp=64,tp=1,pp=1,zero=1,mbs=1")).plan();
  ASSERT_EQ(p.config.cp, 64);
  // K and V of one rank's 128 tokens: 8 kv heads x 128 x 2 bytes, twice.
  const double chunk = 128.0 * 2 * 8 * 128 * 2;
  const double sends = 3.0 * 63 * chunk / 50e9 * 32 /*layers*/ * 64 /*micro-batches*/;
  EXPECT_GT(p.stages[0].time.cp_comm_s, 0.8 * sends) << "the ring's network hops, less what attention hides";
  EXPECT_LT(p.stages[0].time.cp_comm_s, 1.5 * sends);
}

TEST(ContextParallel, RingExchangeHiddenBehindAttentionPaysTheInterference) {
  // One Llama block holding 4,096 of a sequence's tokens under cp 2, on one GPU of its tensor group: the attention
  // passes K/V (forward all-gather; backward reduce-scatter + all-gather) around the ring behind the kernels.
  const ModelGraph g =
      parse_model_spec("llama:layers=1,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=4096,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  const Layer* block = nullptr;
  for (const Layer& l : g.layers)
    if (l.kind == LayerKind::kTransformer) block = &l;
  ASSERT_NE(block, nullptr);
  auto attention = [&](double interference) {
    CostParams p;
    p.overlap_interference = interference;
    OpCostModel costs(c.gpu, p, {});
    const LayerPlan lp = plan_layer_sharding(*block, g, c, tensor_mesh(c, 1), 1, costs, INFINITY, 16, 2);
    for (const Operator& op : block->ops)
      for (const OpShardingPlan& o : lp.ops)
        if (op.type == OpType::kAttention && o.op == op.name) return o;
    ADD_FAILURE() << "no attention op";
    return OpShardingPlan{};
  };
  const OpShardingPlan none = attention(0), full = attention(1), prior = attention(0.15);
  // The ring's K and V of all 2 x 4,096 tokens, 8 key/value heads of 128.
  const double kv = 1.0 * 4096 * 2 * 8 * 128 * 2 * 2;
  const CommGroup ring{2, 2};
  const double fwd = all_gather_s(c, ring, kv), bwd = reduce_scatter_s(c, ring, kv) + all_gather_s(c, ring, kv);
  const double work = full.fwd_compute_s;  // cp x the local attention
  ASSERT_GT(work, 0);
  // Interference 1: the whole exchange counts; 0: only what the attention cannot hide; between: linear.
  EXPECT_NEAR(full.fwd_comm_s, fwd, 1e-12);
  EXPECT_NEAR(full.bwd_comm_s, bwd, 1e-12);
  EXPECT_NEAR(none.fwd_comm_s, std::max(0.0, fwd - work), 1e-12);
  EXPECT_NEAR(none.bwd_comm_s, std::max(0.0, bwd - 2 * work), 1e-12);
  EXPECT_NEAR(prior.fwd_comm_s, none.fwd_comm_s + 0.15 * std::min(fwd, work), 1e-12);
  EXPECT_NEAR(prior.bwd_comm_s, none.bwd_comm_s + 0.15 * std::min(bwd, 2 * work), 1e-12);
  EXPECT_GT(prior.fwd_comm_s, none.fwd_comm_s);
  // In the layer's totals the ring is its own term (cp_comm_s), not TP/SP communication.
  CostParams p;
  OpCostModel costs(c.gpu, p, {});
  const LayerPlan lp = plan_layer_sharding(*block, g, c, tensor_mesh(c, 1), 1, costs, INFINITY, 16, 2);
  EXPECT_NEAR(lp.cp_comm_s, prior.fwd_comm_s + prior.bwd_comm_s, 1e-12);
  EXPECT_NEAR(lp.comm_s, 0.0, 1e-12) << "tp 1: no tensor-parallel collectives";
}

}  // namespace
}  // namespace tuner::parallel
