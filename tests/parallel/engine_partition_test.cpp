// Stage partitions Megatron-LM runs as planned (search/parallel/engine_partition.h): which partitions it
// expresses, and the best expressible partition against every partition of small chains filtered by the
// same rule.
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
  for (Engine e : {Engine::kGeneric, Engine::kDeepSpeed, Engine::kTorchtitan})
    EXPECT_TRUE(engine_expresses_partition(e, m, uneven_middle)) << to_string(e);
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

}  // namespace
}  // namespace tuner::parallel
