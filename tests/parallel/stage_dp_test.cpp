// The inter-op stage DP against brute force on small chains, with and without
// memory limits and per-stage extras.
#include <gtest/gtest.h>

#include <random>

#include "search/parallel/stage_dp.h"

namespace tuner::parallel {
namespace {

TEST(StageDp, MatchesBruteForceOnRandomChains) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> len(2, 9), cost(1, 20);
    StageDpRequest r;
    const int L = len(rng);
    for (int l = 0; l < L; ++l) r.layer_cost.push_back(cost(rng) * 1e-3);
    r.stages = 1 + static_cast<int>(seed % std::min(L, 4));
    r.micro_batches = 1 + seed % 8;
    if (seed % 2) r.stage_extra.assign(r.stages, 2e-3);
    // Memory: a stage may hold at most `cap` layers, fewer on the first stage (it keeps more in flight).
    const int cap = (L + r.stages - 1) / r.stages + static_cast<int>(seed % 3);
    if (seed % 3 == 0) r.fits = [cap](int stage, int b, int e) { return e - b <= (stage == 0 ? cap - 1 : cap); };
    StageDpResult dp = solve_stage_dp(r), bf = solve_stage_brute_force(r);
    ASSERT_EQ(dp.feasible, bf.feasible) << "seed " << seed;
    if (!bf.feasible) continue;
    EXPECT_NEAR(dp.objective, bf.objective, 1e-12) << "seed " << seed;
    EXPECT_DOUBLE_EQ(pipeline_objective(r, dp.starts), dp.objective);
  }
}

TEST(StageDp, HandComputedPartition) {
  // Layers 4 1 1 1 1 4 (ms) in 2 stages, 4 micro-batches.
  // Cut after 3 layers: 6 | 6 -> 12 + 3 x 6 = 30; after 2: 5 | 7 -> 12 + 3 x 7 = 33. Optimum 30 ms.
  StageDpRequest r;
  r.layer_cost = {4e-3, 1e-3, 1e-3, 1e-3, 1e-3, 4e-3};
  r.stages = 2;
  r.micro_batches = 4;
  StageDpResult dp = solve_stage_dp(r);
  ASSERT_TRUE(dp.feasible);
  EXPECT_EQ(dp.starts, (std::vector<int>{0, 3, 6}));
  EXPECT_NEAR(dp.objective, 30e-3, 1e-12);
}

TEST(StageDp, InfeasibleWhenNothingFits) {
  StageDpRequest r;
  r.layer_cost = {1, 1, 1};
  r.stages = 2;
  r.fits = [](int, int b, int e) { return e - b <= 1; };  // 3 layers cannot go in 2 stages of 1
  EXPECT_FALSE(solve_stage_dp(r).feasible);
  EXPECT_FALSE(solve_stage_brute_force(r).feasible);
  r.stages = 4;  // more stages than layers
  EXPECT_FALSE(solve_stage_dp(r).feasible);
}

}  // namespace
}  // namespace tuner::parallel
