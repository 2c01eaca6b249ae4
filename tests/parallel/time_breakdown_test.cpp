// The plan's time breakdown: every stage's terms add up to the iteration time,
// for plans with pipelines, data parallelism, ZeRO and recomputation, and the
// terms respond to what they stand for (recomputation, unfused attention).
#include <gtest/gtest.h>

#include "search/parallel/cluster_spec.h"
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

TEST(TimeBreakdown, StageTermsAddUpToTheIterationTime) {
  // A pipeline with data parallelism, ZeRO-1 and selective recomputation; an interleaved one; ZeRO-3.
  const Plan a = plan_of("gpt3-13b", "dgx-h100:4", 256, "tp=4,pp=4,dp=2,mbs=1,recompute=selective,zero=1");
  expect_terms_add_up(a);
  EXPECT_GT(a.stages[0].time.pp_bubble_s, 0);
  EXPECT_GT(a.stages[0].time.pp_p2p_s, 0);
  EXPECT_GT(a.stages[0].time.dp_comm_s, 0);
  EXPECT_GT(a.stages[0].time.tp_comm_s, 0);
  EXPECT_GT(a.stages[0].time.recompute_s, 0);
  expect_terms_add_up(plan_of("gpt3-13b", "dgx-h100:4", 256, "tp=2,pp=4,schedule=interleaved,v=2,recompute=full"));
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

}  // namespace
}  // namespace tuner::parallel
