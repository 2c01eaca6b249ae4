// Exact solver of the unconstrained sharding problem by variable elimination (declared in sharding_ilp.h).
//
// Without a memory row the problem is a minimum-cost labelling of a small graph: unary costs per strategy and a
// resharding matrix per edge. Eliminating nodes one at a time (min-sum bucket elimination) solves it exactly: the
// node whose elimination makes the smallest table goes first; its factors are summed, minimised over its
// strategies into one factor over its neighbours, and the argmin is kept for the way back. A transformer layer
// (11 ops, ~35 strategies, 13 edges) needs tables of a few hundred entries, microseconds where CBC's set-up,
// presolve and cuts take milliseconds. When a table would exceed max_table entries (a dense graph of many-
// strategy ops), it gives up and the caller solves the ILP instead.
//
// Ties keep the lowest strategy index, so the result is deterministic.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {

namespace {

/// A cost table over a scope of nodes, row-major with the last node fastest.
struct Factor {
  std::vector<int> scope;
  std::vector<double> table;
};

/// What eliminating one node left behind: for every assignment of `scope`, the node's best strategy.
struct Elimination {
  int node = 0;
  std::vector<int> scope;
  std::vector<int> argmin;
};

/// Entries of a table over `scope` (times `extra`), saturating at INT64_MAX: a dense graph's would overflow.
int64_t table_size(const std::vector<int>& scope, const std::vector<int>& domain, int64_t extra = 1) {
  int64_t n = extra;
  for (int v : scope) {
    if (n > std::numeric_limits<int64_t>::max() / domain[v]) return std::numeric_limits<int64_t>::max();
    n *= domain[v];
  }
  return n;
}

}  // namespace

std::optional<ShardingSolution> solve_sharding_by_elimination(const ShardingRequest& req, int64_t max_table) {
  const int n = static_cast<int>(req.nodes.size());
  ShardingSolution sol;
  std::vector<int> domain(n);
  for (int v = 0; v < n; ++v) {
    domain[v] = static_cast<int>(req.nodes[v].cost.size());
    if (domain[v] == 0) {
      sol.status = "infeasible: node " + req.nodes[v].name + " has no strategy";
      return sol;
    }
  }
  std::vector<Factor> factors;
  for (int v = 0; v < n; ++v) factors.push_back({{v}, req.nodes[v].cost});
  for (const ShardingEdge& e : req.edges) {
    if (e.src < 0 || e.src >= n || e.dst < 0 || e.dst >= n)
      throw std::invalid_argument("sharding edge names a node out of range");
    if (e.resharding.size() != static_cast<size_t>(domain[e.src]) * domain[e.dst])
      throw std::invalid_argument("sharding edge matrix has the wrong size");
    if (std::all_of(e.resharding.begin(), e.resharding.end(), [](double r) { return r == 0; })) continue;
    if (e.src == e.dst) {  // a node's edge to itself charges its diagonal
      Factor f{{e.src}, std::vector<double>(domain[e.src])};
      for (int p = 0; p < domain[e.src]; ++p) f.table[p] = e.resharding[static_cast<size_t>(p) * domain[e.src] + p];
      factors.push_back(std::move(f));
      continue;
    }
    // Scopes are kept sorted: transpose when the source is the higher index.
    Factor f{{std::min(e.src, e.dst), std::max(e.src, e.dst)}, e.resharding};
    if (e.src > e.dst)
      for (int p = 0; p < domain[e.src]; ++p)
        for (int q = 0; q < domain[e.dst]; ++q)
          f.table[static_cast<size_t>(q) * domain[e.src] + p] = e.resharding[static_cast<size_t>(p) * domain[e.dst] + q];
    factors.push_back(std::move(f));
  }

  std::vector<bool> gone(n, false);
  std::vector<Elimination> trail;
  for (int step = 0; step < n; ++step) {
    // The node whose elimination builds the smallest table (its neighbours' domains); ties: the lowest index.
    int pick = -1;
    std::vector<int> pick_scope;
    int64_t pick_size = 0;
    for (int v = 0; v < n; ++v) {
      if (gone[v]) continue;
      std::vector<int> scope;
      for (const Factor& f : factors)
        if (std::find(f.scope.begin(), f.scope.end(), v) != f.scope.end())
          for (int u : f.scope)
            if (u != v) scope.push_back(u);
      std::sort(scope.begin(), scope.end());
      scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
      const int64_t size = table_size(scope, domain, domain[v]);
      if (pick < 0 || size < pick_size) pick = v, pick_scope = std::move(scope), pick_size = size;
    }
    if (pick_size > max_table) return std::nullopt;
    // Sum the factors that mention the node over scope + node, then minimise the node out.
    std::vector<Factor> bucket, rest;
    for (Factor& f : factors)
      (std::find(f.scope.begin(), f.scope.end(), pick) != f.scope.end() ? bucket : rest).push_back(std::move(f));
    factors = std::move(rest);
    const int64_t out_size = table_size(pick_scope, domain);
    Factor reduced{pick_scope, std::vector<double>(out_size)};
    Elimination el{pick, pick_scope, std::vector<int>(out_size, 0)};
    std::vector<int> assign(n, 0);
    for (int64_t idx = 0; idx < out_size; ++idx) {
      int64_t rem = idx;
      for (int k = static_cast<int>(pick_scope.size()) - 1; k >= 0; --k) {
        assign[pick_scope[k]] = static_cast<int>(rem % domain[pick_scope[k]]);
        rem /= domain[pick_scope[k]];
      }
      double best = std::numeric_limits<double>::infinity();
      int arg = 0;
      for (int p = 0; p < domain[pick]; ++p) {
        assign[pick] = p;
        double sum = 0;
        for (const Factor& f : bucket) {
          int64_t at = 0;
          for (int u : f.scope) at = at * domain[u] + assign[u];
          sum += f.table[at];
        }
        if (sum < best) best = sum, arg = p;
      }
      reduced.table[idx] = best;
      el.argmin[idx] = arg;
    }
    gone[pick] = true;
    trail.push_back(std::move(el));
    if (!reduced.scope.empty()) factors.push_back(std::move(reduced));
  }
  // Back-substitute in reverse: each node's scope was eliminated after it, so it is already assigned.
  sol.choice.assign(n, 0);
  for (auto it = trail.rbegin(); it != trail.rend(); ++it) {
    int64_t idx = 0;
    for (int u : it->scope) idx = idx * domain[u] + sol.choice[u];
    sol.choice[it->node] = it->argmin[idx];
  }
  const ShardingEvaluation ev = evaluate(req, sol);
  sol.objective = ev.total;
  sol.feasible = ev.violations.empty();
  sol.optimal = sol.feasible;
  sol.status = sol.feasible ? "optimal" : "infeasible";
  return sol;
}

ShardingSolution solve_sharding(const ShardingRequest& req, const IlpOptions& opts) {
  if (!std::isfinite(req.memory_budget))
    if (auto exact = solve_sharding_by_elimination(req)) return *exact;
  return solve_sharding_ilp(req, opts);
}

}  // namespace tuner::parallel
