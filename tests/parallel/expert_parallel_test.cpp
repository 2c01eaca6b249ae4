// Expert parallelism (ep) as its own degree: the rule, the all-to-all, the memory it saves, the search, --fix ep
// and the exports.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/expert_parallel.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

const char* kSmallMoe = "moe:layers=4,hidden=1024,heads=16,experts=8,top_k=2,seq=1024,vocab=32000";

Plan plan_with(const std::string& model, const std::string& cluster, const std::string& pins, int64_t batch = 64,
               Engine engine = Engine::kGeneric) {
  PlannerOptions o;
  o.global_batch = batch;
  o.pins = parse_pins(pins);
  o.engine = engine;
  return Planner(parse_model_spec(model), parse_cluster_spec(cluster), o).plan();
}

std::string error_of(const std::string& model, const std::string& cluster, const std::string& pins) {
  try {
    plan_with(model, cluster, pins);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ExpertParallel, RuleFollowsMegatron) {
  EXPECT_EQ(model_experts(parse_model_spec(kSmallMoe)), 8);
  EXPECT_EQ(model_experts(parse_model_spec("gpt3-1.3b")), 0);
  // ep divides the experts and dp x cp; 1 always runs.
  EXPECT_EQ(expert_parallel_degrees(8, 16), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(expert_parallel_degrees(8, 4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(expert_parallel_degrees(0, 64), (std::vector<int>{1}));
  EXPECT_NE(expert_parallel_violation(3, 8, 12).find("does not divide the 8 experts"), std::string::npos);
  EXPECT_NE(expert_parallel_violation(8, 8, 4).find("dp x cp = 4"), std::string::npos);
  EXPECT_NE(expert_parallel_violation(2, 0, 4).find("mixture-of-experts"), std::string::npos);
  // Expert parameters of the Mixtral-like preset: 32 layers x 8 experts x 3 x 4096 x 14336 (45.1e9 of 46.7e9).
  EXPECT_NEAR(model_expert_params(parse_model_spec("moe")) / 1e9, 32.0 * 8 * 3 * 4096 * 14336 / 1e9, 1e-6);
}

TEST(ExpertParallel, LeastWeightsPerDeviceDivideTheExpertsByEpToo) {
  // The planner re-solves a layer's sharding under a memory cap only when the fastest sharding holds more weights
  // than the least it could. With ep >= tp that least is far below all weights / tp: the experts are divided by
  // ep as well, so a sharding that keeps the attention replicated is under all / tp and still not lean.
  const ModelGraph g = parse_model_spec(kSmallMoe);
  const auto block = std::find_if(g.layers.begin(), g.layers.end(),
                                  [](const Layer& l) { return layer_expert_params(l) > 0; });
  ASSERT_NE(block, g.layers.end());
  const double all = static_cast<double>(layer_params(*block)), experts = static_cast<double>(layer_expert_params(*block));
  const double least = least_params_per_device(all, experts, 2, 4);
  EXPECT_DOUBLE_EQ(least, (all - experts) / 2 + experts / 8);
  EXPECT_DOUBLE_EQ(least_params_per_device(all, 0, 2, 4), all / 2);  // a dense layer: split by tp only
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  OpCostModel costs(c.gpu, CostParams{}, nullptr);
  const LayerPlan fastest = plan_layer_sharding(*block, g, c, tensor_mesh(c, 2), 8, costs,
                                                std::numeric_limits<double>::infinity(), 16, 1, 4);
  ASSERT_FALSE(fastest.ops.empty());
  EXPECT_LE(fastest.params_per_device, all / 2);
  EXPECT_GT(fastest.params_per_device, 1.01 * least);
}

TEST(ExpertParallel, AllToAllGrowsWhenTheGroupSpansNodes) {
  const ClusterSpec c = parse_cluster_spec("dgx-h100:4");
  const double b = 64e6;  // bytes each GPU sends
  const double in_node = all_to_all_per_gpu_s(c, {8, 8}, b);
  const double two_nodes = all_to_all_per_gpu_s(c, {16, 8}, b);
  const double four_nodes = all_to_all_per_gpu_s(c, {32, 8}, b);
  // In a node: 7/8 of b over NVLink at 450 GB/s; across: (n - 8)/n of b over the 50 GB/s network.
  EXPECT_NEAR(in_node, 3e-6 + 7.0 / 8 * b / 450e9, 1e-9);
  EXPECT_NEAR(two_nodes, 8e-6 + 8.0 / 16 * b / 50e9, 1e-9);
  EXPECT_GT(two_nodes, 5 * in_node);
  EXPECT_GT(four_nodes, two_nodes);
  EXPECT_EQ(all_to_all_per_gpu_s(c, {1, 1}, b), 0);
  // The ep group: data-parallel ranks tp apart, so tp = 8 puts every ep rank on its own node.
  EXPECT_EQ(expert_group(c, 1, 8).per_node, 8);
  EXPECT_EQ(expert_group(c, 8, 4).per_node, 1);
  EXPECT_EQ(expert_data_group(c, 1, 4, 32).size, 8);
}

TEST(ExpertParallel, EpDividesExpertStatesAndKeepsTheOthers) {
  const ModelGraph m = parse_model_spec(kSmallMoe);
  const double experts = static_cast<double>(model_expert_params(m));
  const double dense = static_cast<double>(model_params(m)) - experts;
  const Plan e1 = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,dp=8,ep=1,zero=0,mbs=1,recompute=none");
  const Plan e4 = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,dp=8,ep=4,zero=0,mbs=1,recompute=none");
  EXPECT_EQ(e1.config.ep, 1);
  EXPECT_EQ(e4.config.ep, 4);
  EXPECT_NEAR(e1.stages[0].params_per_device, dense + experts, 1);
  EXPECT_NEAR(e4.stages[0].params_per_device, dense + experts / 4, 1);
  // Weights and gradients (bf16, 2 + 2 bytes) and Adam states (12) of the experts shrink by ep.
  EXPECT_NEAR(e1.stages[0].memory.weights - e4.stages[0].memory.weights, 2 * experts * 3 / 4, 16);
  EXPECT_NEAR(e1.stages[0].memory.optimizer - e4.stages[0].memory.optimizer, 12 * experts * 3 / 4, 64);
  // Dispatch and combine cost all-to-all time; without ep there is none.
  EXPECT_EQ(e1.stages[0].time.ep_comm_s, 0);
  EXPECT_GT(e4.stages[0].time.ep_comm_s, 0);
  EXPECT_NEAR(e4.stages[0].time.total(), e4.iteration_time_s, 1e-9 * e4.iteration_time_s);
  // Under ZeRO-1 the expert Adam states are sharded over the expert data-parallel group (8 / 4 = 2 GPUs): the
  // same bytes as sharding all of them over 8, so ep saves their weights and gradients only.
  const Plan z1 = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,dp=8,ep=4,zero=1,mbs=1,recompute=none");
  EXPECT_NEAR(z1.stages[0].memory.optimizer, 12 * (dense / 8 + experts / 4 / 2), 64);
}

TEST(ExpertParallel, EpSpanningNodesPaysTheNetwork) {
  // tp = 4 on two DGX H100 nodes: dp = 4, two data-parallel ranks per node. ep = 2 stays inside a node, ep = 4
  // spans both. Each GPU dispatches the same tokens either way, so the all-to-all time per GPU is the links':
  // in a node 1/2 of the bytes over NVLink (450 GB/s); across, 2/4 of them over the network (50 GB/s), 9x slower.
  // Long sequences, so that bandwidth and not the per-collective latency sets the time.
  const std::string m = "moe:layers=2,hidden=1024,heads=16,experts=8,top_k=2,seq=4096,vocab=32000";
  const Plan in_node = plan_with(m, "dgx-h100:2", "tp=4,pp=1,dp=4,ep=2,zero=0,mbs=4,recompute=none");
  const Plan spanning = plan_with(m, "dgx-h100:2", "tp=4,pp=1,dp=4,ep=4,zero=0,mbs=4,recompute=none");
  ASSERT_GT(in_node.stages[0].time.ep_comm_s, 0);
  const double ratio = spanning.stages[0].time.ep_comm_s / in_node.stages[0].time.ep_comm_s;
  EXPECT_GT(ratio, 6) << ratio;
  EXPECT_LT(ratio, 9.5) << ratio;
}

TEST(ExpertParallel, PlannerPicksEpForABigMoeAndDenseModelsStayAtOne) {
  // The Mixtral-like preset (46.7B, 45.1B of it in experts) on four DGX H100 nodes for Megatron-LM: without ep
  // each GPU keeps all experts of its stage.
  PlannerOptions o;
  o.global_batch = 256;
  o.engine = Engine::kMegatron;
  o.pins = parse_pins("tp=2,mbs=1,recompute=full,schedule=1f1b");
  Planner planner(parse_model_spec("moe"), parse_cluster_spec("dgx-h100:4"), o);
  const Plan best = planner.plan();
  EXPECT_GT(best.config.ep, 1) << describe(best.config);
  // Memory is why: the same degrees with ep = 1 need more per GPU (or do not fit at all).
  ParallelConfig one = best.config;
  one.ep = 1;
  std::string why;
  const std::optional<Plan> without = planner.evaluate(one, false, &why);
  if (without) {
    EXPECT_GT(without->peak_memory_bytes, best.peak_memory_bytes);
  }
  // Dense models are planned with ep = 1 only.
  EXPECT_EQ(plan_with("gpt:layers=4,hidden=1024,heads=16,seq=1024", "dgx-h100:1", "mbs=1").config.ep, 1);
}

TEST(ExpertParallel, FixEpIsHonouredAndBadValuesAreRefused) {
  EXPECT_EQ(plan_with(kSmallMoe, "dgx-h100:1", "ep=2,mbs=1").config.ep, 2);
  EXPECT_EQ(parse_pins("ep=4").ep, 4);
  EXPECT_EQ(to_string(parse_pins("tp=2,ep=4")), "tp=2,ep=4");
  // Not dividing the experts: names the value and the allowed ones.
  const std::string three = error_of(kSmallMoe, "dgx-h100:1", "ep=3");
  EXPECT_NE(three.find("--fix ep=3 does not divide the 8 experts; allowed: 1, 2, 4, 8"), std::string::npos) << three;
  // Not dividing the data-parallel group the other pins leave.
  const std::string wide = error_of(kSmallMoe, "dgx-h100:1", "tp=4,pp=1,ep=8");
  EXPECT_NE(wide.find("--fix ep=8 does not divide the data-parallel group (dp x cp = 2); allowed: 1, 2"),
            std::string::npos)
      << wide;
  // A dense model has no experts to divide.
  const std::string dense = error_of("gpt:layers=4,hidden=1024,heads=16,seq=1024", "dgx-h100:1", "ep=2");
  EXPECT_NE(dense.find("--fix ep=2 needs a mixture-of-experts model"), std::string::npos) << dense;
  EXPECT_NE(dense.find("allowed: 1"), std::string::npos) << dense;
}

TEST(ExpertParallel, PerStageSubmeshesKeepEpAndDeriveTheExpertGroupFromTheirOwnShape) {
  // Each stage divides its experts over ep of its own dp_i x cp ranks: a shape whose dp_i x cp ep does not divide
  // is not offered (tp = 4 x dp = 1 under ep = 2), and every stage of a per-stage plan keeps the configuration's ep.
  const std::string m = "moe:layers=8,hidden=1024,heads=16,experts=8,top_k=2,seq=1024,vocab=256000";
  PlannerOptions o;
  o.global_batch = 64;
  Planner planner(parse_model_spec(m), parse_cluster_spec("dgx-h100:2"), o);
  ParallelConfig c;
  c.tp = 2, c.pp = 4, c.dp = 2, c.ep = 2, c.micro_batch = 2, c.zero = 1;
  std::set<std::pair<int, int>> shapes;
  for (const StageShape& s : planner.stage_shapes(c)) shapes.insert({s.tp, s.dp});
  EXPECT_EQ(shapes, (std::set<std::pair<int, int>>{{2, 2}, {1, 4}}));
  c.ep = 1;
  EXPECT_EQ(planner.stage_shapes(c).size(), 3u);  // tp = 4 x dp = 1 too
  c.ep = 2;
  std::string why;
  const std::optional<Plan> p = planner.evaluate_submeshes(c, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->config.ep, 2);
  for (const StagePlan& st : p->stages) {
    EXPECT_EQ(st.shape.dp * p->config.cp % 2, 0);
    EXPECT_NEAR(st.time.total(), p->iteration_time_s, 1e-9 * p->iteration_time_s);
    bool blocks = false;
    for (int l = st.first_layer; l < st.end_layer; ++l)
      blocks = blocks || planner.model().layers[l].kind == LayerKind::kTransformer;
    if (blocks) {
      EXPECT_GT(st.time.ep_comm_s, 0);
    }
  }
}

TEST(ExpertParallel, ExportsCarryEp) {
  const ModelGraph m = parse_model_spec(kSmallMoe);
  const Plan mg = plan_with(kSmallMoe, "dgx-h100:1", "tp=2,pp=1,ep=4,mbs=1,zero=1", 64, Engine::kMegatron);
  const std::string args = export_megatron(mg, m, 64);
  EXPECT_NE(args.find("--expert-model-parallel-size 4\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--expert-tensor-parallel-size " + std::to_string(expert_tensor_parallel_degree(mg)) + "\n"),
            std::string::npos);
  EXPECT_NE(args.find("--moe-token-dispatcher-type alltoall\n"), std::string::npos);

  const Plan ds = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,ep=4,mbs=1,zero=2", 64, Engine::kDeepSpeed);
  std::vector<std::string> warnings;
  (void)export_deepspeed(ds, m, 64, &warnings);
  bool named = false;
  for (const auto& w : warnings)
    named = named || (w.find("deepspeed.moe.layer.MoE(") != std::string::npos && w.find("ep_size=4") != std::string::npos);
  EXPECT_TRUE(named);

  // torchtitan borrows ep from FSDP's shard ranks: fine under zero 2/3 (dp_shard = dp); under replication (zero 0)
  // it is not planned for torchtitan at all.
  const Plan tt = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,ep=4,mbs=1,zero=3", 64, Engine::kTorchtitan);
  warnings.clear();
  const std::string toml = export_torchtitan(tt, m, 64, &warnings);
  EXPECT_NE(toml.find("expert_parallel_degree = 4\n"), std::string::npos) << toml;
  for (const auto& w : warnings) EXPECT_EQ(w.find("dp_shard"), std::string::npos) << w;
  EXPECT_THROW(plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,ep=4,mbs=1,zero=0", 64, Engine::kTorchtitan), SpecError);
  // A plan made for no engine may still replicate; its torchtitan export says ep is outside dp_shard.
  const Plan rep = plan_with(kSmallMoe, "dgx-h100:1", "tp=1,pp=1,ep=4,mbs=1,zero=0", 64, Engine::kGeneric);
  warnings.clear();
  (void)export_torchtitan(rep, m, 64, &warnings);
  bool outside = false;
  for (const auto& w : warnings) outside = outside || w.find("ep=4 is outside") != std::string::npos;
  EXPECT_TRUE(outside);

  // And the plan JSON.
  EXPECT_EQ(plan_to_json(mg, m, parse_cluster_spec("dgx-h100:1"), 64)["ep"], 4);
}

}  // namespace
}  // namespace tuner::parallel
