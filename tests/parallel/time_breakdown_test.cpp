// The plan's time breakdown: every stage's terms add up to the iteration time,
// for plans with pipelines, data parallelism, ZeRO and recomputation, and the
// terms respond to what they stand for (recomputation, unfused attention, the
// interference of collectives hidden behind compute).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/memory_model.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

Plan plan_of(const std::string& model, const std::string& cluster, int64_t batch, const std::string& fix,
             AttentionKernel attention = AttentionKernel::kFlash) {
  PlannerOptions o;
  o.global_batch = batch;
  o.pins = parse_pins(fix);
  o.attention = attention;
  return Planner(parse_model_spec(model), parse_cluster_spec(cluster), o).plan();
}

void expect_terms_add_up(const Plan& plan) {
  ASSERT_FALSE(plan.stages.empty());
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const TimeBreakdown& t = plan.stages[s].time;
    EXPECT_NEAR(t.total(), plan.iteration_time_s, 1e-9 * plan.iteration_time_s) << "stage " << s;
    for (double x : {t.compute_s, t.memory_bound_s, t.recompute_s, t.tp_comm_s, t.ep_comm_s, t.zero_comm_s,
                     t.reshard_s, t.pp_p2p_s, t.pp_bubble_s, t.dp_comm_s, t.optimizer_s, t.wait_s})
      EXPECT_GE(x, -1e-12) << "stage " << s;
    EXPECT_GT(t.compute_s, 0);
    EXPECT_GT(t.memory_bound_s, 0);
  }
}

// torchtitan's ZeRO-2 is FSDP2 without resharding after forward: the weights are freed after each backward and
// gathered again at every micro-batch's forward, besides the gradients' reduce-scatter (other engines' ZeRO-2 keeps
// whole weights and gathers them once, after the step).
TEST(TimeBreakdown, TorchtitanZeroTwoGathersTheWeightsEveryForward) {
  const ModelGraph m = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  PlannerOptions o;
  o.global_batch = 64;
  o.pins = parse_pins("tp=1,pp=1,dp=16,mbs=1,zero=2,recompute=full");
  const Plan generic = Planner(m, c, o).plan();
  o.engine = Engine::kTorchtitan;
  const Plan tt = Planner(m, c, o).plan();
  expect_terms_add_up(tt);
  EXPECT_GT(tt.stages[0].time.zero_comm_s, 1.5 * generic.stages[0].time.zero_comm_s);
  EXPECT_LT(tt.stages[0].time.dp_comm_s, generic.stages[0].time.dp_comm_s);  // no gather after the step
}

// Under a pipeline schedule torchtitan's FSDP2 syncs once a step: PyTorch's pipelining turns gradient sync and
// resharding after backward off for every micro-batch but the last (the planner charged a reduce-scatter and a gather
// per micro-batch: 21 s of 30 s for Llama 3 405B at pp 64, and it then chose pp 2 at 18% MFU). The gradients
// accumulate whole in fp32 meanwhile (4 bytes per parameter of the stage), which it did not count.
TEST(TimeBreakdown, TorchtitanFsdpInAPipelineSyncsOnceAStepAndHoldsWholeGradients) {
  const ModelGraph m = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kTorchtitan;
  o.pins = parse_pins("tp=1,pp=2,dp=8,mbs=1,zero=2,recompute=full,schedule=1f1b");
  const Plan piped = Planner(m, c, o).plan();
  expect_terms_add_up(piped);
  ASSERT_EQ(piped.config.pp, 2);
  ASSERT_EQ(piped.config.num_micro_batches, 8);
  for (const StagePlan& s : piped.stages) {
    EXPECT_EQ(s.time.zero_comm_s, 0) << "nothing per micro-batch at ZeRO-2";
    EXPECT_GT(s.time.dp_comm_s, 0) << "the step's reduce-scatter and gather";
    // fp32 sharded gradients (4 / 8 bytes) plus the whole fp32 accumulation (4 bytes) per parameter.
    EXPECT_NEAR(s.memory.gradients, s.params_per_device * (4.0 / 8 + 4), 1e-6 * s.memory.gradients);
  }
  // ZeRO-3 in a pipeline: each backward gathers again (the forward resharded), the gradients still once a step,
  // and the gathered weights stay whole: 4 / 8 + 2 bytes per parameter.
  o.pins = parse_pins("tp=1,pp=2,dp=8,mbs=1,zero=3,recompute=full,schedule=1f1b");
  const Plan z3 = Planner(m, c, o).plan();
  expect_terms_add_up(z3);
  for (const StagePlan& s : z3.stages) {
    EXPECT_GT(s.time.zero_comm_s, 0);
    EXPECT_NEAR(s.memory.weights, s.params_per_device * (4.0 / 8 + 2), 1e-6 * s.memory.weights);
  }
  // Without a pipeline nothing changes: ZeRO-2 gathers at every micro-batch's forward.
  o.pins = parse_pins("tp=1,pp=1,dp=16,mbs=1,zero=2,recompute=full");
  EXPECT_GT(Planner(m, c, o).plan().stages[0].time.zero_comm_s, 0);
}

TEST(TimeBreakdown, StageTermsAddUpToTheIterationTime) {
  // A pipeline with data parallelism, ZeRO-1 and selective recomputation; an interleaved one; ZeRO-3.
  const Plan a = plan_of("gpt3-13b", "dgx-h100:4", 256, "tp=4,pp=4,dp=2,mbs=1,recompute=selective,zero=1");
  expect_terms_add_up(a);
  EXPECT_GT(a.stages[0].time.pp_bubble_s, 0);
  EXPECT_GT(a.stages[0].time.pp_p2p_s, 0);
  EXPECT_GT(a.stages[0].time.dp_comm_s, 0);
  EXPECT_GT(a.stages[0].time.tp_comm_s, 0);
  EXPECT_GT(a.stages[0].time.recompute_s, 0);
  // Interleaved: every rank sends p2p, the last too (its first v - 1 chunks feed rank 0's next ones); the first and
  // the last send 2v - 1 times per micro-batch, the middle ranks 2v.
  const Plan il = plan_of("gpt3-13b", "dgx-h100:4", 256, "tp=2,pp=4,schedule=interleaved,v=2,recompute=full");
  expect_terms_add_up(il);
  ASSERT_EQ(il.stages.size(), 4u);
  EXPECT_GT(il.stages[3].time.pp_p2p_s, 0);
  EXPECT_NEAR(il.stages[3].time.pp_p2p_s, il.stages[0].time.pp_p2p_s, 1e-12);
  EXPECT_NEAR(il.stages[1].time.pp_p2p_s / il.stages[0].time.pp_p2p_s, 4.0 / 3.0, 1e-9);
  expect_terms_add_up(plan_of("llama2-7b", "dgx-h100:2", 64, "tp=1,pp=1,zero=3,recompute=full"));
  // An MoE pipeline under expert parallelism: the expert all-to-all is its own term, inside the total.
  const Plan moe = plan_of("moe:layers=4,hidden=1024,heads=16,experts=8,top_k=2,seq=1024,vocab=32000", "dgx-h100:1",
                           64, "pp=2,ep=2,zero=1");
  expect_terms_add_up(moe);
  EXPECT_EQ(moe.config.ep, 2);
  EXPECT_GT(moe.stages[0].time.ep_comm_s, 0);
  // The critical stage is the slowest per micro-batch and the JSON carries its terms.
  const nlohmann::ordered_json j = plan_to_json(a, parse_model_spec("gpt3-13b"), parse_cluster_spec("dgx-h100:4"), 256);
  EXPECT_NEAR(j["time_breakdown"]["total_s"].get<double>(), a.iteration_time_s, 1e-9 * a.iteration_time_s);
  EXPECT_NEAR(j["stages"][0]["time_breakdown"]["total_s"].get<double>(), a.iteration_time_s, 1e-9);
  EXPECT_TRUE(j["time_breakdown"].contains("ep_comm_s"));
  EXPECT_TRUE(j["time_breakdown"].contains("reshard_s"));
}

// Stages of 4 GPUs on 8-GPU nodes: stage 1's activations go to the next node, and stage 2's gradients come back
// over it. Every send was priced over NVLink while a stage was smaller than a node.
TEST(TimeBreakdown, PipelineSendsAcrossANodeBoundaryPayTheNetwork) {
  const Plan p = plan_of("gpt3-13b", "dgx-h100:2", 64, "tp=4,pp=4,dp=1,mbs=1,zero=1,schedule=1f1b,recompute=full");
  expect_terms_add_up(p);
  ASSERT_EQ(p.stages.size(), 4u);
  const auto p2p = [&](int s) { return p.stages[s].time.pp_p2p_s; };
  EXPECT_GT(p2p(1), 2 * p2p(0)) << "stage 1 sends forward across the node boundary";
  EXPECT_GT(p2p(2), 2 * p2p(3)) << "stage 2 sends its gradients back across it";
  EXPECT_NEAR(p2p(1), p2p(2), 1e-9 * p2p(1));
  // Inside one node every boundary is NVLink: stage 1's sends cost what stage 0's two-way ones would.
  const Plan one = plan_of("gpt3-13b", "dgx-h100:1", 64, "tp=2,pp=4,dp=1,mbs=1,zero=1,schedule=1f1b,recompute=full");
  EXPECT_LT(one.stages[1].time.pp_p2p_s, 2.5 * one.stages[0].time.pp_p2p_s);
}

TEST(TimeBreakdown, UnfusedAttentionAddsMemoryBoundTimeAndRecomputationShowsUp) {
  const std::string fix = "tp=8,pp=1,dp=1,mbs=1,recompute=none,zero=1";
  const Plan flash = plan_of("gpt3-13b", "dgx-a100:1", 8, fix);
  const Plan unfused = plan_of("gpt3-13b", "dgx-a100:1", 8, fix, AttentionKernel::kUnfused);
  // The b h s^2 scores go through DRAM twice (softmax, dropout) forward and back: more memory-bound time.
  EXPECT_GT(unfused.stages[0].time.memory_bound_s, 1.5 * flash.stages[0].time.memory_bound_s);
  EXPECT_GT(unfused.iteration_time_s, flash.iteration_time_s);
  EXPECT_EQ(flash.stages[0].time.recompute_s, 0);
  const Plan full = plan_of("gpt3-13b", "dgx-a100:1", 8, "tp=8,pp=1,dp=1,mbs=1,recompute=full,zero=1");
  // Full recomputation repeats the forward: a third of the kernels (backward is twice forward) and the forward's
  // collectives, which are some but not all of the layer's.
  const TimeBreakdown& f = full.stages[0].time;
  EXPECT_GT(f.recompute_s, (f.compute_s + f.memory_bound_s) / 3 + 1e-6);
  EXPECT_LT(f.recompute_s, (f.compute_s + f.memory_bound_s) / 3 + f.tp_comm_s);
}

TEST(TimeBreakdown, HiddenCollectivesChargeTheirInterference) {
  // Four identical MLP layers (134M parameters each), tp 1 x dp 8 on one node, 8 micro-batches of 1 x 512 tokens:
  // ZeRO-3 gathers each layer's weights forward and backward and reduce-scatters its gradients beside its work;
  // without ZeRO the gradients are all-reduced beside the last backward. Interference 1 charges every collective
  // whole, 0 only what the work cannot hide (at least the last layer's bucket of the reduction).
  const std::string spec = "mlp:layers=4,hidden=4096,seq=512";
  const ModelGraph model = parse_model_spec(spec);
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  auto plan = [&](int zero, double interference) {
    PlannerOptions o;
    o.global_batch = 64;
    o.pins = parse_pins("tp=1,pp=1,dp=8,mbs=1,recompute=none,zero=" + std::to_string(zero));
    o.cost.overlap_interference = interference;
    const Plan p = Planner(model, cluster, o).plan();
    EXPECT_EQ(p.config.num_micro_batches, 8);
    return p.stages.at(0);
  };
  const double m = 8, L = 4;
  const CommGroup dp{8, 8};
  const double w = static_cast<double>(layer_params(model.layers[0])) * dtype_bytes(model.dtype);
  const double zc = reduce_scatter_s(cluster, dp, w) + 2 * all_gather_s(cluster, dp, w);
  // A layer's work: the stage's time per micro-batch without ZeRO traffic, split over its identical layers.
  const StagePlan plain_full = plan(0, 1), plain_none = plan(0, 0);
  const double tl = plain_none.time_per_micro_batch_s / L;
  const StagePlan z3_full = plan(3, 1), z3_none = plan(3, 0);
  EXPECT_NEAR(z3_full.time.zero_comm_s, m * L * zc, 1e-9 * m * L * zc);
  EXPECT_NEAR(z3_none.time.zero_comm_s, m * L * std::max(0.0, zc - tl), 1e-9 * m * L * zc);
  EXPECT_GT(z3_none.time.zero_comm_s, 0);  // the collectives outlast the work here: both terms are exercised
  EXPECT_LT(z3_none.time.zero_comm_s, z3_full.time.zero_comm_s);
  // The reduction: all of it, or what the last backward (twice the forward: 2/3 of the work) leaves exposed.
  const double sync = all_reduce_s(cluster, dp, L * static_cast<double>(layer_params(model.layers[0])) *
                                                    state_bytes(Engine::kGeneric).gradient_reduce);
  EXPECT_NEAR(plain_full.time.dp_comm_s, sync, 1e-9 * sync);
  EXPECT_NEAR(plain_none.time.dp_comm_s, std::max(sync / L, sync - L * tl * 2 / 3), 1e-9 * sync);
  EXPECT_LT(plain_none.time.dp_comm_s, plain_full.time.dp_comm_s);
}

}  // namespace
}  // namespace tuner::parallel
