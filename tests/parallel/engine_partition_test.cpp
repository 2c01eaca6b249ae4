// Stage partitions engines run as planned (search/parallel/engine_partition.h): which partitions Megatron-LM
// expresses, the best expressible partition against every partition of small chains filtered by the same
// rule, and the splits DeepSpeed computes itself.
#include "search/parallel/engine_partition.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "search/parallel/model_spec.h"

namespace tuner::parallel {
namespace {

// Chain: embedding, 8 blocks, head (10 layers).
const char* kGpt8 = "gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000";

TEST(EnginePartition, MegatronExpressesOnlyEqualMiddleStages) {
  const ModelGraph m = parse_model_spec(kGpt8);
  ASSERT_EQ(m.layers.size(), 10u);
  const std::vector<int> uneven_middle = {0, 2, 5, 6, 10};  // 1, 3, 1, 3 blocks
  EXPECT_EQ(blocks_per_stage(m, uneven_middle), (std::vector<int>{1, 3, 1, 3}));
  EXPECT_FALSE(engine_expresses_partition(Engine::kMegatron, m, uneven_middle));
  for (Engine e : {Engine::kGeneric, Engine::kTorchtitan})
    EXPECT_TRUE(engine_expresses_partition(e, m, uneven_middle)) << to_string(e);
  // torchtitan takes any split as split points, a stage of the embedding or the head alone included.
  EXPECT_TRUE(engine_expresses_partition(Engine::kTorchtitan, m, {0, 2, 5, 9, 10}));
  // DeepSpeed runs only the splits it computes itself (EnginePartition.DeepSpeeds* below).
  EXPECT_FALSE(engine_expresses_partition(Engine::kDeepSpeed, m, uneven_middle));
  EXPECT_TRUE(engine_expresses_partition(Engine::kMegatron, m, {0, 2, 4, 6, 10}));  // 1, 2, 2, 3
  EXPECT_TRUE(engine_expresses_partition(Engine::kMegatron, m, {0, 6, 10}));        // pp 2: 5 and 3
  EXPECT_FALSE(engine_expresses_partition(Engine::kMegatron, m, {0, 1, 10}));       // the embedding alone
  EXPECT_FALSE(engine_expresses_partition(Engine::kMegatron, m, {0, 9, 10}));       // the head alone
}

// Every partition of a chain of L layers into p non-empty stages.
void each_partition(int L, int p, const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> starts(p + 1, 0);
  starts[p] = L;
  std::function<void(int)> rec = [&](int s) {
    if (s == p) return f(starts);
    for (int b = starts[s - 1] + 1; b <= L - (p - s); ++b) starts[s] = b, rec(s + 1);
  };
  rec(1);
}

TEST(EnginePartition, BestMegatronPartitionMatchesTheBestExpressibleOneOnRandomCosts) {
  const ModelGraph m = parse_model_spec(kGpt8);
  const int L = static_cast<int>(m.layers.size());
  int differs_from_unconstrained = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> cost(1, 30);
    StageDpRequest r;
    for (int l = 0; l < L; ++l) r.layer_cost.push_back(cost(rng) * 1e-3);
    r.stages = 2 + static_cast<int>(seed % 4);  // 2..5
    r.micro_batches = 1 + seed % 8;
    r.stage_extra.assign(r.stages, 1e-3);
    const int cap = 3 + static_cast<int>(seed % 3);
    if (seed % 4 == 0) r.fits = [cap](int stage, int b, int e) { return e - b <= (stage == 0 ? cap - 1 : cap); };
    double best = kInf;
    each_partition(L, r.stages, [&](const std::vector<int>& s) {
      if (engine_expresses_partition(Engine::kMegatron, m, s)) best = std::min(best, pipeline_objective(r, s));
    });
    const std::vector<int> got = best_megatron_partition(r, m, /*window=*/8);
    if (!std::isfinite(best)) {
      EXPECT_TRUE(got.empty()) << "seed " << seed;
      continue;
    }
    ASSERT_FALSE(got.empty()) << "seed " << seed;
    EXPECT_TRUE(engine_expresses_partition(Engine::kMegatron, m, got)) << "seed " << seed;
    EXPECT_NEAR(pipeline_objective(r, got), best, 1e-12) << "seed " << seed;
    const StageDpResult any = solve_stage_brute_force(r);
    differs_from_unconstrained += any.objective < best - 1e-12 ? 1 : 0;
  }
  // The rule bites: on some chains the best partition of all is one Megatron cannot run.
  EXPECT_GT(differs_from_unconstrained, 0);
}

// DeepSpeed's own rules, against what they return: the expected cuts below come from running a transcription of
// deepspeed/runtime/utils.py's partition_balanced and partition_uniform (v0.16) on the same inputs.
TEST(EnginePartition, DeepSpeedsBalancedAndUniformSplitsAreItsOwn) {
  using W = std::vector<double>;
  using P = std::vector<int>;
  EXPECT_EQ(deepspeed_partition_balanced(W{1, 1, 1, 1}, 2), (P{0, 2, 4}));
  EXPECT_EQ(deepspeed_partition_balanced(W{5, 1, 1, 1, 1, 1, 5}, 3), (P{0, 1, 6, 7}));
  EXPECT_EQ(deepspeed_partition_balanced(W{10, 3, 3, 3, 3, 3, 3, 3, 3, 10}, 4), (P{0, 1, 5, 9, 10}));
  // Zero-weight ends and ties: its `>=` sends ties to the later cut.
  EXPECT_EQ(deepspeed_partition_balanced(W{0, 1, 1, 1, 1, 1, 0}, 3), (P{0, 3, 5, 7}));
  EXPECT_EQ(deepspeed_partition_balanced(W{6, 3, 7, 1, 2, 9, 2, 6, 1, 9, 4, 1}, 4), (P{0, 3, 6, 9, 12}));
  // No more items than parts: partition_uniform, empty parts last.
  EXPECT_EQ(deepspeed_partition_balanced(W{1, 2, 3}, 5), (P{0, 1, 2, 3, 3, 3}));
  EXPECT_EQ(deepspeed_partition_uniform(10, 4), (P{0, 3, 6, 8, 10}));
  EXPECT_EQ(deepspeed_partition_uniform(82, 4), (P{0, 21, 42, 62, 82}));
}

TEST(EnginePartition, DeepSpeedsSplitOfAModelWeighsItsLayersByParameters) {
  const ModelGraph g = parse_model_spec(kGpt8);
  // Embedding and head (32000 x 2048 = 65.5M each) weigh about 1.3 blocks (50.3M) each: over 2 stages the
  // weights balance as embedding + 4 blocks | 4 blocks + head; over 4 the ends take 1 block, the middle 3
  // (the transcription of DeepSpeed's rule gives the same cuts for these weights).
  EXPECT_EQ(engine_fixed_partition(Engine::kDeepSpeed, g, 2), (std::vector<int>{0, 5, 10}));
  const std::vector<int> four = engine_fixed_partition(Engine::kDeepSpeed, g, 4);
  EXPECT_EQ(four, (std::vector<int>{0, 2, 5, 8, 10}));
  EXPECT_EQ(blocks_per_stage(g, four), (std::vector<int>{1, 3, 3, 1}));
  // "uniform" counts the embedding and the head as layers: 10 over 4 as 3, 3, 2, 2.
  EXPECT_EQ(engine_fixed_partition(Engine::kDeepSpeed, g, 4, true), (std::vector<int>{0, 3, 6, 8, 10}));
  EXPECT_TRUE(engine_expresses_partition(Engine::kDeepSpeed, g, four));
  EXPECT_TRUE(engine_expresses_partition(Engine::kDeepSpeed, g, {0, 3, 6, 8, 10}));  // "uniform"
  EXPECT_FALSE(engine_expresses_partition(Engine::kDeepSpeed, g, {0, 3, 5, 7, 10}));
  // Other engines take the plan's own; pp 1, and more stages than layers, have none.
  EXPECT_TRUE(engine_fixed_partition(Engine::kMegatron, g, 4).empty());
  EXPECT_TRUE(engine_fixed_partition(Engine::kDeepSpeed, g, 1).empty());
  EXPECT_TRUE(engine_fixed_partition(Engine::kDeepSpeed, g, 11).empty());
}

}  // namespace
}  // namespace tuner::parallel
