// Per-stage submeshes (Alpa's inter-op pass with its submesh choice): the stage
// DP when each stage may run its layers one of several ways -- a variant is a
// submesh shape (tp x dp of the stage's GPUs, its own per-device micro-batch and
// layer shardings) or a memory level of the layer ILP (a sharding solved under a
// tighter memory row, slower but leaner). A stage's time is its layers' cost under
// its variant, plus a per-stage extra (point-to-point sends), plus what entering
// it costs after the previous stage's variant at its first layer: the resharding
// between submesh shapes (resharding.h), or a layout change between layer kinds.
//
// Objective, as Alpa's:  sum_i t_i + (B - 1) max_j t_j  over partitions of K
// units (layer_clustering.h) into p stages and a variant per stage, each stage
// fitting its memory at its pipeline position. Unlike the single-variant DP
// (stage_dp.h) the sum is not the same for every partition, so it is solved as
// Alpa does: a DP minimising sum_i t_i under a bound t_max on every stage
// (O(p K^2 V^2) per bound), the smallest feasible bound found by bisection, then
// larger bounds on a geometric ladder while (B - 1)(t_max - t*) can still be
// repaid by a smaller sum. The bound ladder is the one approximation: bounds
// between its rungs are not tried.
//
// Stages of unequal GPU counts: a variant may also carry a weight (its GPUs), and
// the stages' weights must then cover the cluster exactly, as Alpa's submeshes
// do. The DP carries the weight used so far as one more dimension (W = budget + 1
// values), so its work grows by W; the planner sizes the units for that.
//
// Plain data and callbacks in, plain data out; a brute force checks it in the tests.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "search/parallel/stage_dp.h"

namespace tuner::parallel {

struct VariantDpRequest {
  int stages = 1;                      ///< p.
  double micro_batches = 1;            ///< B.
  std::vector<int> units;              ///< Unit starts in layers: K + 1 entries, first 0, last L.
  int variants = 1;                    ///< V.
  /// Time per micro-batch of layers [begin, end) under variant v (>= 0, additive over layers).
  std::function<double(int v, int begin, int end)> cost;
  /// Added to stage `stage` under variant v (e.g. its p2p sends); empty: 0.
  std::function<double(int stage, int v)> extra;
  /// Resharding charged to a stage running variant `to` from layer `begin` (a unit start) after one running
  /// `from` (>= 0); empty: 0. It replaces nothing in `cost`: a caller whose cost counts a layout change at the
  /// stage's first layer leaves it out of `cost` there and charges it here.
  std::function<double(int from, int to, int begin)> boundary;
  /// Whether stage `stage` under v holds layers [begin, end); monotone: sub-ranges fit. Empty: all fit.
  std::function<bool(int stage, int v, int begin, int end)> fits;
  int max_rounds = 10;                 ///< Bounds tried above the smallest feasible one (1: that one only).
  /// Unequal submeshes (Alpa's cover of the cluster): when set, variant v takes weight[v] > 0 GPUs (in any
  /// unit) and the stages' weights must add up to `budget` exactly. Empty: no such constraint.
  std::vector<int> weight;
  int budget = 0;
};

struct VariantDpResult {
  bool feasible = false;
  std::vector<int> starts;             ///< p + 1 layer indices.
  std::vector<int> variant;            ///< Per stage.
  std::vector<double> stage_cost;      ///< t_i, extras and resharding included.
  double objective = std::numeric_limits<double>::infinity();
  int64_t cells = 0;                   ///< (stage, end, variant, start, previous variant) visits: the DP's work.
};

VariantDpResult solve_variant_dp(const VariantDpRequest& req);
/// Every partition and variant assignment over the units; for small requests (tests).
VariantDpResult solve_variant_brute_force(const VariantDpRequest& req);
/// The objective of a given assignment (infinity when a stage is empty or does not fit).
double variant_objective(const VariantDpRequest& req, const std::vector<int>& starts, const std::vector<int>& variant,
                         std::vector<double>* stage_cost = nullptr);

}  // namespace tuner::parallel
