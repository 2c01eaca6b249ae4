// Stages of unequal GPU counts (Alpa's submeshes covering the cluster): the
// weighted per-stage DP against brute force, and the planner choosing them for a
// model with one heavy layer group and not for a uniform model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"
#include "search/parallel/submesh.h"

namespace tuner::parallel {
namespace {

/// A chain of generic MLP layers: `light` layers 4096 -> ffn -> 4096 and, in the middle, `heavy` layers whose
/// inner width is `factor` times as wide (their work and weights `factor` times a light layer's).
ModelGraph heavy_group_model(int light, int heavy, int factor, int64_t ffn = 8192) {
  auto layer = [](const std::string& name, int repeat, int64_t inner) {
    return nlohmann::json{{"name", name},
                          {"repeat", repeat},
                          {"output", "add"},
                          {"ops",
                           {{{"name", "up"}, {"type", "linear"}, {"in", 4096}, {"out", inner}, {"inputs", {"input"}}},
                            {{"name", "act"}, {"type", "elementwise"}, {"in", inner}, {"out", inner}, {"inputs", {"up"}}},
                            {{"name", "down"}, {"type", "linear"}, {"in", inner}, {"out", 4096}, {"inputs", {"act"}}},
                            {{"name", "add"}, {"type", "elementwise"}, {"in", 4096}, {"out", 4096}, {"inputs", {"input", "down"}}}}}};
  };
  nlohmann::json doc = {{"name", "heavy-group"}, {"seq", 2048}, {"dtype", "bf16"}};
  doc["layers"] = {layer("light_a", light / 2, ffn), layer("heavy", heavy, ffn * factor),
                   layer("light_b", light - light / 2, ffn)};
  return model_from_json(doc, "heavy-group");
}

/// A random request over a short chain whose variants take 1, 2 or 4 GPUs; the stages must cover `budget`.
VariantDpRequest weighted_request(uint32_t seed, std::vector<std::vector<double>>& cost) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(2, 7), c(1, 20), var(2, 3);
  const int L = len(rng), V = var(rng);
  cost.assign(V, {});
  for (int v = 0; v < V; ++v)
    for (int l = 0; l < L; ++l) cost[v].push_back(c(rng) * 1e-3 / (1 << v));  // more GPUs: faster
  VariantDpRequest r;
  r.stages = 1 + static_cast<int>(seed % std::min(L, 4));
  r.micro_batches = 1 + seed % 9;
  for (int l = 0; l <= L; ++l) r.units.push_back(l);
  r.variants = V;
  r.cost = [&cost](int v, int b, int e) {
    double t = 0;
    for (int l = b; l < e; ++l) t += cost[v][l];
    return t;
  };
  if (seed % 2) r.boundary = [](int a, int b, int) { return a == b ? 0.0 : 1.5e-3; };
  if (seed % 3 == 0) r.fits = [](int, int v, int b, int e) { return e - b <= 2 + v; };
  for (int v = 0; v < V; ++v) r.weight.push_back(1 << v);  // 1, 2, 4 GPUs
  r.budget = 2 * r.stages - static_cast<int>(seed % 5 == 0);  // some budgets odd: 1-GPU stages needed
  return r;
}

TEST(UnequalStages, WeightedDpMatchesBruteForceAndCoversTheBudgetExactly) {
  int feasible = 0, unequal = 0;
  for (uint32_t seed = 1; seed <= 80; ++seed) {
    std::vector<std::vector<double>> cost;
    VariantDpRequest r = weighted_request(seed, cost);
    r.max_rounds = 40;
    const VariantDpResult dp = solve_variant_dp(r), bf = solve_variant_brute_force(r);
    ASSERT_EQ(dp.feasible, bf.feasible) << "seed " << seed;
    if (!bf.feasible) continue;
    ++feasible;
    EXPECT_NEAR(dp.objective, bf.objective, 1e-9) << "seed " << seed;
    int gpus = 0;
    for (int v : dp.variant) gpus += r.weight[v];
    EXPECT_EQ(gpus, r.budget) << "seed " << seed;
    unequal += std::any_of(dp.variant.begin(), dp.variant.end(), [&](int v) { return v != dp.variant[0]; });
  }
  EXPECT_GT(feasible, 40);
  EXPECT_GT(unequal, 5);  // the budget does not force one count per stage
  // A budget no assignment reaches: 3 stages of 2 or 4 GPUs never make 7.
  std::vector<std::vector<double>> cost;
  VariantDpRequest r = weighted_request(3, cost);
  r.stages = 3, r.budget = 7;
  r.variants = 2, r.weight = {2, 4};
  EXPECT_FALSE(solve_variant_dp(r).feasible);
  EXPECT_FALSE(solve_variant_brute_force(r).feasible);
}

/// dgx-h100:4 with 5 GB per GPU (3 GB usable): the 25-layer models below need a pipeline, as a large model on
/// 80 GB GPUs would, at a small model's planning cost.
ClusterSpec small_memory_cluster() {
  ClusterSpec c = parse_cluster_spec("dgx-h100:4");
  c.memory_per_gpu_bytes = 5'000'000'000;
  return c;
}

PlannerOptions megatron_options() {
  PlannerOptions o;
  o.global_batch = 256;
  o.engine = Engine::kMegatron;  // ZeRO 0/1: the weights stay whole on every replica
  return o;
}

bool unequal_counts(const Plan& p) {
  return std::any_of(p.stages.begin(), p.stages.end(), [&](const StagePlan& s) { return s.gpus != p.stages[0].gpus; });
}

TEST(UnequalStages, HeavyLayerGetsMoreGpusAndBeatsEveryUniformPlan) {
  const ModelGraph g = heavy_group_model(24, 1, 12);  // layer 12 does 12x a light layer's work
  const ClusterSpec c = small_memory_cluster();
  PlannerOptions uniform = megatron_options();
  uniform.unequal_stage_gpus = false;
  const Plan best_uniform = Planner(g, c, uniform).plan();  // per-stage shapes included
  EXPECT_FALSE(unequal_counts(best_uniform));
  const Plan plan = Planner(g, c, megatron_options()).plan();
  ASSERT_TRUE(unequal_counts(plan));
  EXPECT_EQ(plan.partition, "unequal");
  EXPECT_FALSE(plan.uniform_stages);
  EXPECT_LT(plan.iteration_time_s, best_uniform.iteration_time_s * 0.97);
  const ParallelConfig& cfg = plan.config;
  const int64_t pipeline_seqs = static_cast<int64_t>(cfg.micro_batch) * cfg.dp;
  int sum = 0, heavy_gpus = 0, most = 0;
  double sum_t = 0, t_max = 0;
  for (const StagePlan& s : plan.stages) {
    sum += s.gpus;
    most = std::max(most, s.gpus);
    if (s.first_layer <= 12 && 12 < s.end_layer) heavy_gpus = s.gpus;
    EXPECT_EQ(s.gpus, s.shape.tp * s.shape.dp * cfg.cp);
    // Alpa's submeshes: 1, 2, 4 GPUs inside a node, or whole nodes; tp a power of two inside a node.
    EXPECT_TRUE(s.gpus < 8 ? (s.gpus & (s.gpus - 1)) == 0 : s.gpus % 8 == 0) << s.gpus;
    EXPECT_TRUE(s.shape.tp <= 8 && (s.shape.tp & (s.shape.tp - 1)) == 0) << s.shape.tp;
    // Every stage sees the same global batch: its replicas split the pipeline micro-batch evenly.
    EXPECT_EQ(static_cast<int64_t>(s.shape.micro_batch) * s.shape.dp, pipeline_seqs);
    EXPECT_EQ(pipeline_seqs * cfg.num_micro_batches, 256);
    EXPECT_LE(s.memory.total(), plan.memory_capacity_bytes);
    sum_t += s.time_per_micro_batch_s, t_max = std::max(t_max, s.time_per_micro_batch_s);
  }
  EXPECT_EQ(sum, c.total_gpus());
  EXPECT_EQ(heavy_gpus, most);  // the heavy layer's stage holds the most GPUs
  EXPECT_GT(heavy_gpus, c.total_gpus() / cfg.pp);
  EXPECT_NEAR(plan.pipeline_s, cfg.num_micro_batches * t_max + sum_t - t_max, 1e-9 * plan.pipeline_s);
  // A boundary from more GPUs to fewer charges the receiver's larger share (the resharding term).
  for (size_t s = 1; s < plan.stages.size(); ++s)
    if (plan.stages[s].gpus < plan.stages[s - 1].gpus) {
      EXPECT_GT(plan.stages[s].time.reshard_s, 0) << s;
    }
  // Each stage's sends are priced at its own boundaries' links: a boundary whose two stages' GPUs stay inside a node
  // is NVLink, the others the network (every send paid the network once any boundary crossed a node).
  std::vector<int64_t> first_gpu = {0};
  for (const StagePlan& s : plan.stages) first_gpu.push_back(first_gpu.back() + s.gpus);
  const auto crosses = [&](size_t k) { return first_gpu[k - 1] / 8 != (first_gpu[k + 1] - 1) / 8; };
  bool some_inside = false;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& st = plan.stages[s];
    const double bytes = static_cast<double>(st.shape.micro_batch) * 2048 * 4096 * 2 / st.shape.tp;
    double want = 0;
    if (s + 1 < plan.stages.size()) want += p2p_s(c, crosses(s + 1), bytes), some_inside |= !crosses(s + 1);
    if (s > 0) want += p2p_s(c, crosses(s), bytes);
    EXPECT_NEAR(st.time.pp_p2p_s, cfg.num_micro_batches * want, 1e-9 * cfg.num_micro_batches * want) << "stage " << s;
  }
  EXPECT_TRUE(some_inside) << "the case shows a boundary inside a node";
  // The JSON reports every stage's GPUs.
  const auto j = plan_to_json(plan, g, c, 256);
  int json_sum = 0;
  for (const auto& st : j["stages"]) json_sum += st["gpus"].get<int>();
  EXPECT_EQ(json_sum, c.total_gpus());
  EXPECT_FALSE(j["uniform_stages"].get<bool>());

  // Deterministic: the same plan again, to the bit.
  const Plan again = Planner(g, c, megatron_options()).plan();
  ASSERT_EQ(again.stages.size(), plan.stages.size());
  EXPECT_EQ(again.iteration_time_s, plan.iteration_time_s);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    EXPECT_EQ(again.stages[s].first_layer, plan.stages[s].first_layer);
    EXPECT_EQ(again.stages[s].gpus, plan.stages[s].gpus);
    EXPECT_EQ(again.stages[s].shape, plan.stages[s].shape);
  }
}

TEST(UnequalStages, UniformLayersKeepEqualCountsThoughTheSearchRuns) {
  const ModelGraph g = heavy_group_model(24, 1, 1);  // 25 identical layers
  const ClusterSpec c = small_memory_cluster();
  PlannerOptions off = megatron_options();
  off.unequal_stage_gpus = false;
  const Plan without = Planner(g, c, off).plan();
  const Plan plan = Planner(g, c, megatron_options()).plan();
  ASSERT_GT(plan.config.pp, 1);  // the memory needs a pipeline
  // Its stages are unbalanced by memory (early stages keep more micro-batches in flight), so unequal counts are
  // searched -- more DP cells -- but halving a stage doubles its time: they do not pay.
  EXPECT_GT(plan.submesh_dp_cells, without.submesh_dp_cells);
  EXPECT_FALSE(unequal_counts(plan));
  EXPECT_NE(plan.partition, "unequal");
  EXPECT_EQ(plan.iteration_time_s, without.iteration_time_s);
  int sum = 0;
  for (const StagePlan& s : plan.stages) sum += s.gpus;
  EXPECT_EQ(sum, c.total_gpus());
}

TEST(UnequalStages, PinsAndExportsKeepEqualCounts) {
  const ModelGraph g = heavy_group_model(24, 1, 12);
  const ClusterSpec c = small_memory_cluster();
  for (const char* pins : {"pp=4", "tp=4", "dp=2"}) {
    PlannerOptions o = megatron_options();
    o.pins = parse_pins(pins);
    const Plan p = Planner(g, c, o).plan();
    EXPECT_FALSE(unequal_counts(p)) << pins;
  }
  PlannerOptions o = megatron_options();
  o.per_stage_submeshes = false;  // what --export sets
  EXPECT_FALSE(unequal_counts(Planner(g, c, o).plan()));
  // evaluate_unequal refuses a single stage, and offers half and twice the stage's GPUs.
  Planner p(g, c, megatron_options());
  ParallelConfig cfg;
  cfg.tp = 4, cfg.pp = 1, cfg.dp = 8, cfg.micro_batch = 1, cfg.zero = 1;
  std::string why;
  EXPECT_FALSE(p.evaluate_unequal(cfg, &why));
  EXPECT_NE(why.find("one stage"), std::string::npos) << why;
  cfg.pp = 4, cfg.dp = 2, cfg.micro_batch = 2;
  std::vector<int> counts;
  for (const StageShape& s : p.unequal_shapes(cfg)) {
    counts.push_back(s.tp * s.dp);
    EXPECT_EQ(static_cast<int64_t>(s.micro_batch) * s.dp, 4);  // the pipeline micro-batch: mbs 2 x dp 2
  }
  EXPECT_EQ(counts.front(), 8);
  EXPECT_NE(std::find(counts.begin(), counts.end(), 4), counts.end());
  EXPECT_NE(std::find(counts.begin(), counts.end(), 16), counts.end());
}

}  // namespace
}  // namespace tuner::parallel
