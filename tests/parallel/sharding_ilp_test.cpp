// The sharding ILP (CBC) and the elimination solver against the exhaustive solver on seeded random graphs,
// the memory constraint, real layers' requests, and evaluate() as an independent check.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/model_spec.h"
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

TEST(ShardingElimination, MatchesExhaustiveOnRandomGraphs) {
  // Denser than the ILP's graphs: parallel edges, edges in both directions, up to 9 nodes of up to 5 strategies.
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    ShardingRequest r = random_request(seed, 3 + static_cast<int>(seed % 7), 5, false);
    for (int k = 0; k < 3; ++k) {  // extra edges that repeat or reverse existing ones
      ShardingEdge e = r.edges[(seed + k) % r.edges.size()];
      if (k % 2 == 0) {
        const int ns = static_cast<int>(r.nodes[e.src].cost.size()), nd = static_cast<int>(r.nodes[e.dst].cost.size());
        std::vector<double> t(e.resharding.size());
        for (int p = 0; p < ns; ++p)
          for (int q = 0; q < nd; ++q) t[q * ns + p] = e.resharding[p * nd + q] * 0.5;
        std::swap(e.src, e.dst);
        e.resharding = t;
      }
      r.edges.push_back(e);
    }
    const ShardingSolution ex = solve_sharding_exhaustive(r);
    const std::optional<ShardingSolution> el = solve_sharding_by_elimination(r);
    ASSERT_TRUE(el.has_value()) << "seed " << seed;
    ASSERT_TRUE(el->feasible && el->optimal) << "seed " << seed << ": " << el->status;
    EXPECT_NEAR(el->objective, ex.objective, 1e-12 + 1e-9 * ex.objective) << "seed " << seed;
    EXPECT_NEAR(evaluate(r, *el).total, el->objective, 1e-15) << "seed " << seed;
    // Deterministic: the same request gives the same choice.
    EXPECT_EQ(solve_sharding_by_elimination(r)->choice, el->choice) << "seed " << seed;
  }
}

TEST(ShardingElimination, HandBuiltChainAndTies) {
  ShardingRequest r;
  r.nodes = {{"a", {"x", "y"}, {1e-3, 3e-3}, {0, 0}},
             {"b", {"x", "y"}, {2e-3, 1e-3}, {0, 0}},
             {"c", {"x", "y"}, {4e-3, 1e-3}, {0, 0}}};
  r.edges = {{0, 1, {0, 5e-3, 5e-3, 0}}, {1, 2, {0, 5e-3, 5e-3, 0}}};
  const auto s = solve_sharding_by_elimination(r);
  ASSERT_TRUE(s && s->feasible);
  EXPECT_EQ(s->choice, (std::vector<int>{1, 1, 1}));
  EXPECT_NEAR(s->objective, 5e-3, 1e-15);
  // Equal costs everywhere: the lowest strategy indices win.
  ShardingRequest tie;
  tie.nodes = {{"a", {"x", "y", "z"}, {1, 1, 1}, {}}, {"b", {"x", "y"}, {2, 2}, {}}};
  tie.edges = {{0, 1, {0, 0, 1, 1, 0, 0}}};
  EXPECT_EQ(solve_sharding_by_elimination(tie)->choice, (std::vector<int>{0, 0}));
}

TEST(ShardingElimination, GivesUpOnLargeTablesAndSolveFallsBackToTheIlp) {
  // A clique of 6 nodes with 4 strategies: eliminating any node builds a 4^6 table.
  ShardingRequest r = random_request(7, 6, 1, false);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> cost(0.0, 1e-3);
  for (auto& n : r.nodes) {
    n.strategies = {"a", "b", "c", "d"};
    n.cost = {cost(rng), cost(rng), cost(rng), cost(rng)};
    n.memory = {1, 1, 1, 1};
  }
  r.edges.clear();
  for (int u = 0; u < 6; ++u)
    for (int v = u + 1; v < 6; ++v) {
      ShardingEdge e{u, v, {}};
      for (int k = 0; k < 16; ++k) e.resharding.push_back(cost(rng));
      r.edges.push_back(e);
    }
  EXPECT_FALSE(solve_sharding_by_elimination(r, 1000).has_value());
  ASSERT_TRUE(solve_sharding_by_elimination(r).has_value());
  const ShardingSolution ex = solve_sharding_exhaustive(r);
  const ShardingSolution s = solve_sharding(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_NEAR(s.objective, ex.objective, 1e-12);
}

TEST(ShardingElimination, SolveKeepsTheMemoryBudgetThroughTheIlp) {
  // Elimination ignores the memory row, so a budgeted request must go to CBC: under a binding budget the
  // unconstrained optimum is over it, and solve_sharding's answer is not.
  int binding = 0;
  for (uint32_t seed = 100; seed < 110; ++seed) {
    const ShardingRequest r = random_request(seed, 5, 4, true);
    const ShardingSolution ex = solve_sharding_exhaustive(r), s = solve_sharding(r);
    ASSERT_EQ(s.feasible, ex.feasible) << "seed " << seed;
    if (!ex.feasible) continue;
    EXPECT_LE(evaluate(r, s).memory, r.memory_budget * (1 + 1e-9)) << "seed " << seed;
    EXPECT_NEAR(s.objective, ex.objective, 1e-9 + 1e-7 * ex.objective) << "seed " << seed;
    if (evaluate(r, *solve_sharding_by_elimination(r)).memory > r.memory_budget) ++binding;
  }
  EXPECT_GT(binding, 0);
}

TEST(ShardingElimination, MatchesCbcOnRealLayers) {
  // Every layer of a Llama and a GPT on 1-, 8- and 16-GPU tensor meshes (the last 2 x 8 over two nodes), at two
  // micro-batch sizes: the same objective as CBC's.
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  OpCostModel costs(c.gpu, CostParams{}, {});
  int requests = 0;
  for (const char* spec : {"llama:layers=2,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=4096,vocab=32000",
                           "gpt:layers=2,hidden=2048,heads=16,seq=2048,vocab=50304"}) {
    const ModelGraph g = parse_model_spec(spec);
    for (const Layer& layer : g.layers)
      for (int tp : {1, 8, 16})
        for (int mbs : {1, 4}) {
          const ShardingRequest r = build_layer_request(layer, g, c, tensor_mesh(c, tp), mbs, costs, INFINITY);
          const auto el = solve_sharding_by_elimination(r);
          ASSERT_TRUE(el.has_value()) << spec << " " << layer.name << " tp " << tp;
          const ShardingSolution ilp = solve_sharding_ilp(r);
          ASSERT_TRUE(ilp.feasible && el->feasible);
          EXPECT_NEAR(el->objective, ilp.objective, 1e-12 + 1e-7 * ilp.objective)
              << spec << " " << layer.name << " tp " << tp << " mbs " << mbs;
          EXPECT_LE(el->objective, ilp.objective * (1 + 1e-12)) << "elimination is exact";
          ++requests;
        }
  }
  EXPECT_GE(requests, 30);
}

TEST(ShardingElimination, ReportsANodeWithoutStrategiesAndRejectsBadMatrices) {
  ShardingRequest r;
  r.nodes = {{"a", {"x"}, {1.0}, {0}}, {"empty", {}, {}, {}}};
  const auto s = solve_sharding_by_elimination(r);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->feasible);
  EXPECT_NE(s->status.find("empty"), std::string::npos) << s->status;
  ShardingRequest bad;
  bad.nodes = {{"a", {"x", "y"}, {1, 2}, {}}, {"b", {"x"}, {1}, {}}};
  bad.edges = {{0, 1, {1, 2, 3}}};
  EXPECT_THROW(solve_sharding_by_elimination(bad), std::invalid_argument);
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
