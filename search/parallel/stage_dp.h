// Inter-operator pipeline stages by dynamic programming, in the form of Alpa's
// inter-op DP: split a chain of L layers into p contiguous, non-empty stages
// minimising  sum_i t_i + (B - 1) max_j t_j  (t_i a stage's time per
// micro-batch, B micro-batches), subject to every stage fitting in memory.
// t_max runs over the sorted distinct stage costs from a lower bound up; for
// each, a DP finds the least sum with every stage <= t_max; the walk stops once
// B t_max cannot beat the best found. Feasibility only grows with t_max, so the
// walk starts at the smallest feasible candidate, found by bisection.
//
// Plain data in, plain data out; a brute-force partitioner for small chains
// checks it in the tests. What a layer costs and what fits is the planner's.
#pragma once

#include <functional>
#include <limits>
#include <vector>

namespace tuner::parallel {

struct StageDpRequest {
  std::vector<double> layer_cost;     ///< Time per micro-batch of each layer (seconds, >= 0).
  int stages = 1;                     ///< p.
  double micro_batches = 1;           ///< B.
  std::vector<double> stage_extra;    ///< Constant added to stage i's time (e.g. p2p sends); empty: 0.
  /// Whether stage `stage` holding layers [begin, end) fits in memory; empty: everything fits.
  /// Must be monotone: when a range fits, every sub-range fits in the same stage.
  std::function<bool(int stage, int begin, int end)> fits;
};

struct StageDpResult {
  bool feasible = false;
  std::vector<int> starts;            ///< stages + 1 entries: stage i holds [starts[i], starts[i+1]).
  std::vector<double> stage_cost;     ///< t_i.
  double objective = std::numeric_limits<double>::infinity();
  int t_max_tried = 0;                ///< Candidates the DP ran for.
};

/// The objective of a given partition (infinity when a stage is empty or does not fit).
double pipeline_objective(const StageDpRequest& req, const std::vector<int>& starts,
                          std::vector<double>* stage_cost = nullptr);

StageDpResult solve_stage_dp(const StageDpRequest& req);
/// Every partition; for small chains (tests).
StageDpResult solve_stage_brute_force(const StageDpRequest& req);

}  // namespace tuner::parallel
