// The per-stage DP (submesh.h) against brute force, layer clustering, and the
// resharding costs at layer and stage boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/layer_clustering.h"
#include "search/parallel/layer_table.h"
#include "search/parallel/resharding.h"
#include "search/parallel/stage_dp.h"
#include "search/parallel/submesh.h"

namespace tuner::parallel {
namespace {

std::vector<int> every_layer(int L) {
  std::vector<int> u;
  for (int l = 0; l <= L; ++l) u.push_back(l);
  return u;
}

/// A random request: V variants with their own layer costs, per-variant extras, resharding between different
/// variants and a memory cap that is tighter on early stages and for some variants.
VariantDpRequest random_request(uint32_t seed, std::vector<std::vector<double>>& cost) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(2, 7), c(1, 20), var(1, 3);
  const int L = len(rng), V = var(rng);
  cost.assign(V, {});
  for (int v = 0; v < V; ++v)
    for (int l = 0; l < L; ++l) cost[v].push_back(c(rng) * 1e-3);
  VariantDpRequest r;
  r.stages = 1 + static_cast<int>(seed % std::min(L, 3));
  r.micro_batches = 1 + seed % 9;
  r.units = every_layer(L);
  r.variants = V;
  r.cost = [&cost](int v, int b, int e) {
    double t = 0;
    for (int l = b; l < e; ++l) t += cost[v][l];
    return t;
  };
  if (seed % 2) r.extra = [](int s, int v) { return 1e-3 * ((s + v) % 2); };
  if (seed % 3) r.boundary = [](int a, int b, int begin) { return a == b ? 1e-4 * (begin % 3) : 2.5e-3; };
  const int cap = (L + r.stages - 1) / r.stages + static_cast<int>(seed % 2);
  if (seed % 4 == 0) r.fits = [cap](int s, int v, int b, int e) { return e - b <= cap - (s == 0) + (v == 1); };
  return r;
}

TEST(VariantDp, MatchesBruteForceOnRandomRequests) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::vector<std::vector<double>> cost;
    VariantDpRequest r = random_request(seed, cost);
    r.max_rounds = 40;  // enough bounds for these small chains: the ladder is then exact
    const VariantDpResult dp = solve_variant_dp(r), bf = solve_variant_brute_force(r);
    ASSERT_EQ(dp.feasible, bf.feasible) << "seed " << seed;
    if (!bf.feasible) continue;
    EXPECT_NEAR(dp.objective, bf.objective, 1e-9) << "seed " << seed;
    EXPECT_DOUBLE_EQ(variant_objective(r, dp.starts, dp.variant), dp.objective) << "seed " << seed;
  }
}

TEST(VariantDp, OneVariantIsTheStageDp) {
  // With one way to run every stage the sum of stage times is fixed and both DPs minimise the largest stage.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> c(1, 30);
    StageDpRequest s;
    for (int l = 0; l < 20; ++l) s.layer_cost.push_back(c(rng) * 1e-3);
    s.stages = 2 + static_cast<int>(seed % 5);
    s.micro_batches = 8;
    s.stage_extra.assign(s.stages, 1e-3);
    s.stage_extra.back() = 0;
    VariantDpRequest v;
    v.stages = s.stages, v.micro_batches = s.micro_batches, v.units = every_layer(20);
    v.cost = [&](int, int b, int e) {
      double t = 0;
      for (int l = b; l < e; ++l) t += s.layer_cost[l];
      return t;
    };
    v.extra = [&](int st, int) { return s.stage_extra[st]; };
    const StageDpResult a = solve_stage_dp(s);
    const VariantDpResult b = solve_variant_dp(v);
    ASSERT_TRUE(a.feasible && b.feasible);
    EXPECT_NEAR(a.objective, b.objective, 1e-9) << "seed " << seed;
  }
}

TEST(VariantDp, StagesTakeTheVariantThatSuitsTheirLayers) {
  // Two kinds of layers: "blocks" fast on variant 0, a "head" fast on variant 1 (3 ms vs 12 ms). Two stages,
  // 16 micro-batches: blocks | head on variant 0 gives max(8, 12) = 12 ms, with variant 1 on the head stage
  // max(8, 3 + 1 resharding) = 8 ms: 8 + 4 + 15 x 8 = 132 ms against 8 + 12 + 15 x 12 = 200 ms.
  VariantDpRequest r;
  r.stages = 2, r.micro_batches = 16, r.units = every_layer(5), r.variants = 2;
  r.cost = [](int v, int b, int e) {
    double t = 0;
    for (int l = b; l < e; ++l) t += l < 4 ? (v == 0 ? 2e-3 : 4e-3) : (v == 0 ? 12e-3 : 3e-3);
    return t;
  };
  r.boundary = [](int a, int b, int) { return a == b ? 0.0 : 1e-3; };
  const VariantDpResult dp = solve_variant_dp(r);
  ASSERT_TRUE(dp.feasible);
  EXPECT_EQ(dp.starts, (std::vector<int>{0, 4, 5}));
  EXPECT_EQ(dp.variant, (std::vector<int>{0, 1}));
  EXPECT_NEAR(dp.objective, 132e-3, 1e-12);
}

TEST(VariantDp, MemoryLevelsPerStageBeatOneCapForAllStages) {
  // The planner's memory levels: variant 0 is the fastest sharding (1 ms a layer, 10 GB of states), variant 1
  // the capped one (1.5 ms, 6 GB). Under 1F1B stage s keeps 4 - s micro-batches of 4 GB a layer in flight;
  // 80 GB per GPU. On variant 0 the stages hold at most 3, 3, 4, 5 layers (80 / 26, 80 / 22, 80 / 18, 80 / 14):
  // 15 < 16, so some stage must take the capped sharding. The old fallback caps every stage.
  VariantDpRequest r;
  r.stages = 4, r.micro_batches = 32, r.units = every_layer(16), r.variants = 2;
  r.cost = [](int v, int b, int e) { return (e - b) * (v == 0 ? 1e-3 : 1.5e-3); };
  r.fits = [](int s, int v, int b, int e) { return (e - b) * ((v == 0 ? 10.0 : 6.0) + 4.0 * (4 - s)) <= 80; };
  const VariantDpResult dp = solve_variant_dp(r);
  ASSERT_TRUE(dp.feasible);
  for (size_t s = 0; s < dp.variant.size(); ++s)
    EXPECT_TRUE(r.fits(static_cast<int>(s), dp.variant[s], dp.starts[s], dp.starts[s + 1])) << "stage " << s;
  EXPECT_NE(std::count(dp.variant.begin(), dp.variant.end(), 1), 0);  // some stage needs the lean sharding
  EXPECT_NE(std::count(dp.variant.begin(), dp.variant.end(), 0), 0);  // and not every stage
  EXPECT_NEAR(dp.objective, solve_variant_brute_force(r).objective, 1e-12);
  // The best partition with the capped sharding on every stage (the old fallback) is slower.
  VariantDpRequest one_cap = r;
  one_cap.variants = 1;
  one_cap.cost = [&r](int, int b, int e) { return r.cost(1, b, e); };
  one_cap.fits = [&r](int s, int, int b, int e) { return r.fits(s, 1, b, e); };
  const VariantDpResult old = solve_variant_dp(one_cap);
  ASSERT_TRUE(old.feasible);
  EXPECT_LT(dp.objective, old.objective);
  // The fastest sharding on every stage fits no partition at all.
  VariantDpRequest fastest = one_cap;
  fastest.cost = [&r](int, int b, int e) { return r.cost(0, b, e); };
  fastest.fits = [&r](int s, int, int b, int e) { return r.fits(s, 0, b, e); };
  EXPECT_FALSE(solve_variant_dp(fastest).feasible);
}

TEST(LayerClustering, KeepsKindsApartAndBalancesRuns) {
  // embedding (kind 0), 96 blocks (kind 1), head (kind 2) into about 12 units: the ends stay alone.
  std::vector<double> cost(98, 1.0);
  std::vector<int> kind(98, 1);
  kind.front() = 0, kind.back() = 2;
  cost.front() = 0.5, cost.back() = 3;
  const std::vector<int> u = cluster_layers(cost, kind, 12);
  ASSERT_GE(u.size(), 3u);
  EXPECT_EQ(u[0], 0);
  EXPECT_EQ(u[1], 1);
  EXPECT_EQ(u[u.size() - 2], 97);
  EXPECT_EQ(u.back(), 98);
  // The blocks in equal pieces near total / target = 99.5 / 12 layers.
  const int pieces = static_cast<int>(u.size()) - 3;
  EXPECT_GE(pieces, 10);
  EXPECT_LE(pieces, 13);
  for (size_t i = 2; i + 2 < u.size(); ++i) EXPECT_LE(std::abs((u[i] - u[i - 1]) - 96 / pieces), 1);
  // A chain no longer than the target is left as it is.
  EXPECT_EQ(cluster_layers({1, 2, 3}, {0, 1, 0}, 8), (std::vector<int>{0, 1, 2, 3}));
}

TEST(LayerClustering, KeepsTheOptimumOnSmallChainsAndCutsTheWorkOnLongOnes) {
  // Blocks of 1 ms, each followed by a norm that costs nothing: merging each pair into a unit moves no stage time,
  // so the clustered DP finds the same objective as the DP over all layers.
  std::vector<double> cost;
  std::vector<int> kind;
  for (int i = 0; i < 12; ++i) {
    cost.push_back(1e-3 * (1 + i % 3)), kind.push_back(2 * i);
    cost.push_back(0), kind.push_back(2 * i + 1);
  }
  VariantDpRequest r;
  r.stages = 4, r.micro_batches = 8, r.variants = 1;
  r.cost = [&](int, int b, int e) {
    double t = 0;
    for (int l = b; l < e; ++l) t += cost[l];
    return t;
  };
  r.units = every_layer(24);
  const VariantDpResult all = solve_variant_dp(r);
  std::vector<int> pairs;
  for (int l = 0; l <= 24; l += 2) pairs.push_back(l);
  r.units = pairs;
  const VariantDpResult clustered = solve_variant_dp(r);
  ASSERT_TRUE(all.feasible && clustered.feasible);
  EXPECT_NEAR(clustered.objective, all.objective, 1e-12);
  EXPECT_LT(clustered.cells, all.cells);
  // A long chain of identical layers: clustering to 40 units does a small fraction of the DP's cells and stays
  // within one unit of the stage balance.
  std::vector<double> long_cost(400, 1e-3);
  std::vector<int> same(400, 0);
  r.stages = 8;
  r.cost = [&](int, int b, int e) { return (e - b) * 1e-3; };
  r.units = every_layer(400);
  r.max_rounds = 1;
  const VariantDpResult full = solve_variant_dp(r);
  r.units = cluster_layers(long_cost, same, 40);
  EXPECT_LE(r.units.size(), 42u);
  const VariantDpResult fast = solve_variant_dp(r);
  ASSERT_TRUE(full.feasible && fast.feasible);
  EXPECT_LT(fast.cells * 100, full.cells);
  const double unit = 1000.0 / (r.units.size() - 1) * 1e-3;
  EXPECT_LE(fast.objective, full.objective + r.micro_batches * unit);
}

TEST(Resharding, ZeroForTheSameLayoutPositiveOtherwise) {
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  const double bytes = 2.0 * 2048 * 4096 * 2;
  const char R[2] = {'R', 'R'}, T[2] = {'R', 'T'}, F[2] = {'R', 'F'};
  const Mesh mesh{1, 8};
  EXPECT_EQ(layout_reshard_s(c, mesh, R, R, bytes), 0);
  EXPECT_EQ(layout_reshard_s(c, mesh, T, T, bytes), 0);
  EXPECT_GT(layout_reshard_s(c, mesh, R, T, bytes), 0);
  EXPECT_GT(layout_reshard_s(c, mesh, T, F, bytes), 0);
  // On a mesh of one GPU along the dimension nothing moves.
  EXPECT_EQ(layout_reshard_s(c, Mesh{1, 1}, R, T, bytes), 0);
  // Stages: the same shape pays nothing; another tp x dp view of the same GPUs pays, more for more bytes.
  const StageShape a{8, 1, 4}, b{2, 4, 1};
  EXPECT_EQ(stage_reshard_s(c, a, a, bytes), 0);
  EXPECT_GT(stage_reshard_s(c, a, b, bytes), 0);
  EXPECT_GT(stage_reshard_s(c, b, a, bytes), 0);
  EXPECT_GT(stage_reshard_s(c, a, b, 2 * bytes), stage_reshard_s(c, a, b, bytes));
}

TEST(Resharding, MemoryLevelsOfOneShapePayTheirLayoutChange) {
  // Two memory levels of one stage shape (tp 8): the fastest runs the blocks head-split, reading and leaving the
  // activation replicated; the capped level runs them token-split. Inside a level identical layers pay nothing (the
  // layer ILP charges that edge); a stage boundary from one level to the other changes the layout and pays it.
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  const double sample = 2048.0 * 4096 * 2;
  LayerPlan head_split, token_split;
  token_split.in_layout[1] = token_split.out_layout[1] = 'T';
  LayerTable fast, capped;
  fast.shape = capped.shape = StageShape{8, 2, 2};
  fast.lp = {&head_split, &head_split};
  capped.lp = {&token_split, &token_split};
  EXPECT_EQ(layer_entry_s(c, fast, fast, 1, sample), 0);
  EXPECT_EQ(layer_entry_s(c, capped, capped, 1, sample), 0);
  const Mesh mesh = tensor_mesh(c, 8);
  const double change = layout_reshard_s(c, mesh, head_split.out_layout, token_split.in_layout, 2 * sample);
  EXPECT_GT(change, 0);
  EXPECT_EQ(layer_entry_s(c, fast, capped, 1, sample), change);
  EXPECT_EQ(layer_entry_s(c, capped, fast, 1, sample),
            layout_reshard_s(c, mesh, token_split.out_layout, head_split.in_layout, 2 * sample));
  // Two levels whose shardings agree pay nothing; another shape pays the stage resharding only.
  LayerPlan head_split_too;
  LayerTable also_fast = capped;
  also_fast.lp = {&head_split_too, &head_split_too};
  EXPECT_EQ(layer_entry_s(c, fast, also_fast, 1, sample), 0);
  LayerTable other = capped;
  other.shape = StageShape{4, 4, 1};
  EXPECT_EQ(layer_entry_s(c, fast, other, 1, sample), stage_reshard_s(c, fast.shape, other.shape, sample));
}

}  // namespace
}  // namespace tuner::parallel
