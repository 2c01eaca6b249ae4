// The sharding ILP (CBC) against the exhaustive solver on seeded random graphs,
// the memory constraint, and evaluate() as an independent check.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {
namespace {

ShardingRequest random_request(uint32_t seed, int nodes, int max_strategies, bool with_memory) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cost(0.0, 10.0), mem(1.0, 5.0);
  std::uniform_int_distribution<int> ns(1, max_strategies);
  ShardingRequest r;
  for (int v = 0; v < nodes; ++v) {
    ShardingNode n;
    n.name = "n" + std::to_string(v);
    const int k = ns(rng);
    for (int p = 0; p < k; ++p) {
      n.strategies.push_back("s" + std::to_string(p));
      n.cost.push_back(cost(rng) * 1e-3);  // milliseconds-scale seconds, as layers produce
      n.memory.push_back(mem(rng) * 1e9);
    }
    r.nodes.push_back(n);
  }
  // A chain plus a few random extra edges (a residual-like DAG, and one back edge).
  for (int v = 1; v < nodes; ++v) {
    ShardingEdge e;
    e.src = v - 1;
    e.dst = v;
    r.edges.push_back(e);
  }
  for (int k = 0; k < nodes / 2; ++k) {
    std::uniform_int_distribution<int> pick(0, nodes - 1);
    ShardingEdge e;
    e.src = pick(rng);
    e.dst = pick(rng);
    if (e.src == e.dst) continue;
    r.edges.push_back(e);
  }
  for (auto& e : r.edges) {
    const size_t n = r.nodes[e.src].cost.size() * r.nodes[e.dst].cost.size();
    for (size_t i = 0; i < n; ++i) e.resharding.push_back(cost(rng) * 1e-3 * (i % 3 == 0 ? 0 : 1));
  }
  if (with_memory) {
    double lo = 0, hi = 0;
    for (const auto& n : r.nodes) {
      lo += *std::min_element(n.memory.begin(), n.memory.end());
      hi += *std::max_element(n.memory.begin(), n.memory.end());
    }
    r.memory_budget = lo + 0.4 * (hi - lo);  // binding for most graphs
  }
  return r;
}

TEST(ShardingIlp, MatchesExhaustiveOnRandomGraphs) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    ShardingRequest r = random_request(seed, 4 + static_cast<int>(seed % 3), 4, false);
    ShardingSolution ilp = solve_sharding_ilp(r);
    ShardingSolution ex = solve_sharding_exhaustive(r);
    ASSERT_TRUE(ex.feasible) << "seed " << seed;
    ASSERT_TRUE(ilp.feasible) << "seed " << seed << ": " << ilp.status;
    EXPECT_TRUE(ilp.optimal) << "seed " << seed;
    EXPECT_NEAR(ilp.objective, ex.objective, 1e-9 + 1e-7 * ex.objective) << "seed " << seed;
    EXPECT_TRUE(evaluate(r, ilp).violations.empty()) << "seed " << seed;
  }
}

TEST(ShardingIlp, MatchesExhaustiveUnderABindingMemoryBudget) {
  int binding = 0;
  for (uint32_t seed = 100; seed < 110; ++seed) {
    ShardingRequest r = random_request(seed, 5, 4, true);
    ShardingSolution ex = solve_sharding_exhaustive(r);
    ShardingSolution ilp = solve_sharding_ilp(r);
    ASSERT_EQ(ilp.feasible, ex.feasible) << "seed " << seed;
    if (!ex.feasible) continue;
    EXPECT_NEAR(ilp.objective, ex.objective, 1e-9 + 1e-7 * ex.objective) << "seed " << seed;
    const ShardingEvaluation ev = evaluate(r, ilp);
    EXPECT_TRUE(ev.violations.empty()) << "seed " << seed;
    EXPECT_LE(ev.memory, r.memory_budget * (1 + 1e-9));
    ShardingRequest free = r;
    free.memory_budget = INFINITY;
    if (solve_sharding_exhaustive(free).objective < ex.objective - 1e-12) ++binding;
  }
  EXPECT_GT(binding, 0) << "the budget should change the optimum on some graphs";
}

TEST(ShardingIlp, HandBuiltThreeNodeChain) {
  // a -> b -> c, two strategies each. Costs (ms): a {1, 3}, b {2, 1}, c {4, 1}.
  // Edges charge 5 ms whenever the two ends differ, 0 when equal.
  // All strategy 1: 3 + 1 + 1 = 5; all strategy 0: 1 + 2 + 4 = 7; mixes pay >= 5 extra. Optimum 5 ms.
  ShardingRequest r;
  r.nodes = {{"a", {"x", "y"}, {1e-3, 3e-3}, {0, 0}},
             {"b", {"x", "y"}, {2e-3, 1e-3}, {0, 0}},
             {"c", {"x", "y"}, {4e-3, 1e-3}, {0, 0}}};
  r.edges = {{0, 1, {0, 5e-3, 5e-3, 0}}, {1, 2, {0, 5e-3, 5e-3, 0}}};
  ShardingSolution s = solve_sharding_ilp(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice, (std::vector<int>{1, 1, 1}));
  EXPECT_NEAR(s.objective, 5e-3, 1e-12);
}

TEST(ShardingIlp, InfeasibleBudgetIsReported) {
  ShardingRequest r;
  r.nodes = {{"a", {"x"}, {1.0}, {10.0}}};
  r.memory_budget = 5.0;
  EXPECT_FALSE(solve_sharding_ilp(r).feasible);
  EXPECT_FALSE(solve_sharding_exhaustive(r).feasible);
}

TEST(ShardingEvaluate, RecomputesCostAndListsViolations) {
  ShardingRequest r;
  r.nodes = {{"a", {"x", "y"}, {1, 2}, {3, 4}}, {"b", {"x", "y"}, {10, 20}, {5, 6}}};
  r.edges = {{0, 1, {0, 7, 8, 0}}};
  r.memory_budget = 9;
  ShardingSolution s;
  s.choice = {0, 1};  // 1 + 20 + 7 = 28; memory 3 + 6 = 9
  ShardingEvaluation ev = evaluate(r, s);
  EXPECT_DOUBLE_EQ(ev.total, 28);
  EXPECT_DOUBLE_EQ(ev.resharding_cost, 7);
  EXPECT_DOUBLE_EQ(ev.memory, 9);
  EXPECT_TRUE(ev.violations.empty());
  s.choice = {1, 1};  // memory 4 + 6 = 10 > 9
  EXPECT_EQ(evaluate(r, s).violations.size(), 1u);
  s.choice = {2, 0};
  EXPECT_FALSE(evaluate(r, s).violations.empty());
  s.choice = {0};
  EXPECT_FALSE(evaluate(r, s).violations.empty());
}

}  // namespace
}  // namespace tuner::parallel
