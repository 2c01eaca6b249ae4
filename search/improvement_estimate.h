// What a model-guided search expects its next batch to gain over the best
// config measured so far: the basis of `--min-improvement` for a ranking model
// (xgb), whose scores order configs but are not times.
//
// The scores are put on the scale of log speed by a least-squares line
// fitted on the measured rows after each refit (the better half of the
// successful ones: the next improvement can only come from near the top). How
// far that line can be trusted is learned out of sample: every proposed
// config's prediction is kept until the config is measured, and the
// residuals of the latest `window` of them (measured log speed minus
// prediction) give a bias and a spread. The next batch's configs are then
// taken as independent normals N(prediction + bias, spread^2) in log speed,
// and the batch's expected improvement is E[max(0, max_i X_i - log best)],
// integrated numerically: what measuring the whole batch is expected to add
// to the incumbent's log speed. No estimate until the line can be fitted
// (a positive slope on at least 4 rows) and `min_residuals` (32) residuals are
// known; a model whose predictions of what it picks keep missing then
// reports a wide spread, and a large expected improvement, rather than a
// confident stop.
//
// Not responsible for the model or the choice of configs. Deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace tuner::search {

/// log speed = intercept + slope x score; valid only when fitted with a positive slope.
struct ScoreLine {
  double intercept = 0;
  double slope = 0;
  bool valid = false;
  double at(double score) const { return intercept + slope * score; }
};

/// Least squares of log(speed) on score over the better half (by speed) of the rows with speed > 0;
/// invalid with fewer than 4 such rows, scores all equal, or a slope <= 0.
ScoreLine fit_score_line(const std::vector<double>& scores, const std::vector<double>& speeds);

/// E[max(0, max_i X_i)] for independent X_i ~ N(mean_i, sd^2) (sd >= 0), by numerical integration of
/// P(max > t) over t >= 0.
double batch_expected_improvement(const std::vector<double>& mean, double sd);

class ImprovementEstimate {
 public:
  explicit ImprovementEstimate(size_t window = 64, size_t min_residuals = 32, size_t recent_batches = 2)
      : window_(window), min_residuals_(min_residuals), recent_batches_(recent_batches) {}

  /// After each refit: the model's scores of the measured rows and their speeds (1 / time, 0 for failures).
  void calibrate(const std::vector<double>& scores, const std::vector<double>& speeds);
  /// The model's scores of the configs about to be proposed (keys: their space indices): remembers each
  /// prediction until measured(), and returns the batch's expected relative speed-up over the best
  /// measured speed (exp(E[gain in log speed]) - 1), or -1 when there is no estimate yet. Never less than
  /// what the latest `recent_batches` sets of new rows actually added to the best: a search that is still
  /// improving is not told to stop by a model that cannot see where the improvement comes from.
  double expect(const std::vector<uint64_t>& keys, const std::vector<double>& scores);
  /// A config measured (speed 0: failed): the residual of its prediction, when one was made, joins the window.
  void measured(uint64_t key, double speed);
  /// Out-of-sample residuals known (at most the window).
  size_t residuals() const { return residuals_.size(); }

 private:
  size_t window_, min_residuals_, recent_batches_;
  size_t rows_ = 0;               ///< Rows at the last calibrate() that brought new ones.
  std::deque<double> recent_gains_;  ///< Gain in log best speed of each of the last recent_batches_ row sets.
  ScoreLine line_;
  double best_speed_ = 0;
  std::map<uint64_t, double> pending_;  ///< Predicted log speed by space index, until measured.
  std::deque<double> residuals_;        ///< log(measured speed) - predicted, the latest first out.
};

}  // namespace tuner::search
