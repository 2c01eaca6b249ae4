// The inter-op stage DP against brute force on small chains, with and without
// memory limits and per-stage extras.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(StageDp, GreedyTestOnLongChainsMatchesTheExactOne) {
  // Chains long enough for the greedy bound test (p (L - p + 1) > kExactCells), with random costs, extras on all
  // but the last stage (p2p sends) and a memory cap tighter on earlier stages (more micro-batches in flight).
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> cost(1, 50);
    StageDpRequest r;
    const int L = 150 + static_cast<int>(seed * 7 % 200);
    for (int l = 0; l < L; ++l) r.layer_cost.push_back(cost(rng) * 1e-4);
    r.stages = 40 + static_cast<int>(seed * 13 % 60);
    r.micro_batches = 1 + seed % 32;
    r.stage_extra.assign(r.stages, 3e-4);
    r.stage_extra.back() = 0;
    ASSERT_GT(static_cast<int64_t>(r.stages) * (L - r.stages + 1), kExactCells);
    const int p = r.stages, cap = (L + p - 1) / p + 1 + static_cast<int>(seed % 4);
    if (seed % 2) r.fits = [cap, p](int stage, int b, int e) { return e - b <= cap + stage * 2 / p; };
    const StageDpResult fast = solve_stage_dp(r), exact = solve_stage_dp_exact(r);
    ASSERT_EQ(fast.feasible, exact.feasible) << "seed " << seed;
    if (!exact.feasible) continue;
    EXPECT_NEAR(fast.objective, exact.objective, 1e-9) << "seed " << seed;
    EXPECT_DOUBLE_EQ(pipeline_objective(r, fast.starts), fast.objective);
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

TEST(StageDp, ThousandIdenticalLayersSplitEvenly) {
  // An embedding (2 ms), 1,000 identical blocks (1 ms each, a cost whose float prefix sums differ in the last
  // bit from span to span) and a head (3 ms) in 8 stages: 1005 ms in all, so the largest stage is at least
  // ceil(1005 / 8) = 126 ms (2 + 124 | 6 x ~125.5 | 123 + 3 reach it). Every split with no stage above 126 ms is optimal; the DP returns the even one.
  StageDpRequest r;
  r.layer_cost.assign(1002, 1.1e-3 / 1.1);
  r.layer_cost.front() = 2e-3;
  r.layer_cost.back() = 3e-3;
  r.stages = 8;
  r.micro_batches = 64;
  const StageDpResult dp = solve_stage_dp(r);
  ASSERT_TRUE(dp.feasible);
  ASSERT_EQ(dp.starts.size(), 9u);
  const double t_max = *std::max_element(dp.stage_cost.begin(), dp.stage_cost.end());
  EXPECT_NEAR(t_max, 126e-3, 1e-12);
  EXPECT_NEAR(dp.objective, 1005e-3 + 63 * 126e-3, 1e-9);
  for (size_t s = 0; s + 1 < dp.starts.size(); ++s) {
    EXPECT_GE(dp.stage_cost[s], 124e-3) << "stage " << s;  // even: every stage within 2 layers of the mean
    EXPECT_LE(dp.stage_cost[s], 126e-3 + 1e-12) << "stage " << s;
  }
  // Bisection on the largest stage: a few dozen bound tests, not one per candidate span.
  EXPECT_LE(dp.t_max_tried, 64);
}

TEST(StageDp, MemoryLimitOnALongChain) {
  // 600 equal layers in 4 stages, the first stage holding at most 100: the rest split 500 over three.
  StageDpRequest r;
  r.layer_cost.assign(600, 1e-3);
  r.stages = 4;
  r.micro_batches = 16;
  r.fits = [](int stage, int b, int e) { return stage != 0 || e - b <= 100; };
  const StageDpResult dp = solve_stage_dp(r);
  ASSERT_TRUE(dp.feasible);
  EXPECT_LE(dp.starts[1], 100);
  const double t_max = *std::max_element(dp.stage_cost.begin(), dp.stage_cost.end());
  EXPECT_NEAR(t_max, 167e-3, 1e-12);  // ceil(500 / 3) layers
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
