// Inter-operator pipeline stages: split a chain of L layers into p contiguous,
// non-empty stages minimising  sum_i t_i + (B - 1) max_j t_j  (t_i a stage's
// time per micro-batch, B micro-batches), subject to every stage fitting in
// memory -- the objective of Alpa's inter-op DP.
//
// Every layer and every stage's extra is counted once in sum_i t_i, so the sum
// is the same for every partition and the best partition is the one with the
// smallest largest stage. solve_stage_dp bisects on that bound. Costs are
// rounded to exact integer units (2^-50 of the total) first: with
// floating-point prefix sums, identical layers give spans that differ in the
// last bit. Among the partitions with the smallest bound, each stage starts
// nearest to where an even split of the work would start it.
//
// A bound is tested one of two ways. Short chains (p (L - p + 1) <= kExactCells)
// carry the set of reachable stage ends from stage to stage, O(p L) per bound
// and exact for any monotone `fits`. Long chains use a greedy test -- each
// stage takes the furthest end within the bound and memory, found by binary
// search -- O(p log^2 L) per bound, which made the planner's 1,000-layer and
// 16,384-GPU plans take seconds instead of minutes (every configuration it
// searches runs this DP). The greedy test is exact unless stages are forced
// down to single layers that fit (or cost, with their extras) differently per
// stage; a partition it returns is always valid.
//
// Plain data in, plain data out; a brute-force partitioner for small chains
// checks it in the tests. What a layer costs and what fits is the planner's.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace tuner::parallel {

/// Infinity: the objective of an infeasible partition, and a bound that rules nothing out (the stage DPs
/// here and in submesh.h, and the planner).
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Chains with p (L - p + 1) up to this many (stage, end) cells are solved with the exact reachable-set test.
inline constexpr int64_t kExactCells = 4096;

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
  int t_max_tried = 0;                ///< Bounds on the largest stage tested.
};

/// The objective of a given partition (infinity when a stage is empty or does not fit).
double pipeline_objective(const StageDpRequest& req, const std::vector<int>& starts,
                          std::vector<double>* stage_cost = nullptr);

StageDpResult solve_stage_dp(const StageDpRequest& req);
/// Always the exact reachable-set test, whatever the chain's length (tests compare the greedy path with it).
StageDpResult solve_stage_dp_exact(const StageDpRequest& req);
/// Every partition; for small chains (tests).
StageDpResult solve_stage_brute_force(const StageDpRequest& req);

}  // namespace tuner::parallel
