// The intra-operator sharding problem in Alpa's form, as plain data, and its
// solvers. Each node (operator) picks one strategy (one-hot s_v); each strategy
// has a cost (compute + its own communication, c_v + d_v) and a memory; each
// edge (u, v) charges the resharding matrix R_uv[p][q] when u picks p and v
// picks q. Minimise sum_v s_v.(c_v + d_v) + sum_uv e_uv.R_uv subject to
// sum_v s_v.m_v <= memory_budget.
//
// solve_sharding (elimination_solver.cpp) is what callers use: an unconstrained request (no memory row) is solved
// exactly by variable elimination, which takes microseconds on a layer's graph; a budgeted one, or one whose
// elimination tables would grow too large, goes to the ILP.
//
// solve_sharding_ilp (cbc_solver.cpp) linearises the edge products with
// e_uv[p][q] (sum_q e[p][q] <= s_u[p], sum_p e[p][q] <= s_v[q], sum e = 1) and
// solves with CBC; solve_sharding_exhaustive enumerates every assignment (small
// graphs, for tests); evaluate() recomputes a solution's cost and lists its
// constraint violations independently of both. Nothing here knows what an
// operator or a mesh is: layer_sharding.h builds requests.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tuner::parallel {

struct ShardingNode {
  std::string name;
  std::vector<std::string> strategies;  ///< Names, one per strategy.
  std::vector<double> cost;             ///< c_v + d_v per strategy (seconds).
  std::vector<double> memory;           ///< m_v per strategy (bytes).
};

struct ShardingEdge {
  int src = 0, dst = 0;                 ///< Node indices.
  std::vector<double> resharding;       ///< Row-major [src strategy][dst strategy] (seconds).
};

struct ShardingRequest {
  std::vector<ShardingNode> nodes;
  std::vector<ShardingEdge> edges;
  double memory_budget = std::numeric_limits<double>::infinity();  ///< Bytes; infinity: unconstrained.
};

struct ShardingSolution {
  bool feasible = false;
  bool optimal = false;                 ///< Proven optimal by the solver.
  std::vector<int> choice;              ///< Strategy index per node.
  double objective = 0;                 ///< Seconds.
  std::string status;                   ///< Solver's word: "optimal", "infeasible", "time limit", ...
};

struct IlpOptions {
  double time_limit_s = 60;             ///< CBC's limit (Alpa used 600 s).
};

/// Solves the request: by elimination when it has no memory budget and its tables stay small, else by the ILP.
ShardingSolution solve_sharding(const ShardingRequest& req, const IlpOptions& opts = {});
/// Exact min-sum variable elimination, ignoring the memory budget; nullopt when an intermediate table would hold
/// more than max_table entries. Deterministic: ties keep the lowest strategy index.
std::optional<ShardingSolution> solve_sharding_by_elimination(const ShardingRequest& req,
                                                               int64_t max_table = int64_t{1} << 20);
/// CBC through its C API.
ShardingSolution solve_sharding_ilp(const ShardingRequest& req, const IlpOptions& opts = {});
/// Enumerates every assignment; for graphs with a small product of strategy counts (tests).
ShardingSolution solve_sharding_exhaustive(const ShardingRequest& req);

struct ShardingEvaluation {
  double node_cost = 0;        ///< Sum of the chosen strategies' costs.
  double resharding_cost = 0;  ///< Sum of the chosen edge entries.
  double total = 0;
  double memory = 0;           ///< Sum of the chosen strategies' memories.
  std::vector<std::string> violations;  ///< Empty when the solution is valid.
};

/// Recomputes the objective and checks: one choice per node in range, matrices of the right
/// size, memory within budget.
ShardingEvaluation evaluate(const ShardingRequest& req, const ShardingSolution& sol);

}  // namespace tuner::parallel
