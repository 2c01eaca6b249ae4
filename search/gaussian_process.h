// A small Gaussian-process regressor for Bayesian optimisation over config
// spaces (search/bayes_opt_strategy.h): a Matérn 5/2 kernel with one length
// scale for all (normalised) inputs, unit signal variance on standardised
// targets, a small noise term, and exact inference through a Cholesky
// factorisation written here (n is at most a few hundred rows, so O(n^3) is a
// few milliseconds; no linear-algebra dependency). The length scale is chosen
// from a fixed grid by the log marginal likelihood, deterministically.
//
// Not responsible for choosing inputs (the strategy scales knobs to [0, 1]) or
// for the acquisition function beyond expected_improvement() below.
#pragma once

#include <cstddef>
#include <vector>

namespace tuner::search {

/// Matérn 5/2 correlation at distance r for length scale l: (1 + √5 r/l + 5r²/3l²) exp(-√5 r/l).
double matern52(double r, double length_scale);

/// Lower-triangular Cholesky factor of the symmetric positive-definite n x n matrix a (row-major), in place.
/// False when a is not positive definite (a pivot <= 0).
bool cholesky(std::vector<double>& a, size_t n);

class GaussianProcess {
 public:
  /// Fits on rows x (n x d, row-major) with targets y (any scale; standardised inside). Tries each length
  /// scale of the grid and keeps the one of largest log marginal likelihood. False when n == 0 or no
  /// factorisation succeeded (the process then predicts the prior: mean 0, sd 1 in standard units).
  bool fit(const std::vector<double>& x, size_t d, const std::vector<double>& y, double noise = 1e-3);
  /// Posterior mean and standard deviation at a point, in the targets' own units; sd null: the mean alone
  /// (O(n d), without the O(n^2) solve the deviation needs).
  void predict(const double* x, double* mean, double* sd) const;
  double length_scale() const { return length_scale_; }
  size_t rows() const { return n_; }

 private:
  double fit_with(double length_scale, double noise, std::vector<double>& l, std::vector<double>& alpha) const;

  std::vector<double> x_;
  size_t n_ = 0, d_ = 0;
  std::vector<double> y_;          ///< Standardised targets.
  double y_mean_ = 0, y_sd_ = 1;
  double length_scale_ = 0.3;
  std::vector<double> l_;          ///< Cholesky factor of K + noise I.
  std::vector<double> alpha_;      ///< (K + noise I)^-1 y.
};

/// Expected improvement below `best` (minimisation) of a normal prediction (mean, sd): E[max(0, best - Y)].
double expected_improvement(double mean, double sd, double best);

}  // namespace tuner::search
