#include "search/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tuner::search {

namespace {

double distance(const double* a, const double* b, size_t d) {
  double s = 0;
  for (size_t k = 0; k < d; ++k) s += (a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(s);
}

/// Solves L z = b in place (L lower triangular, n x n row-major).
void forward_solve(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= l[i * n + k] * b[k];
    b[i] = s / l[i * n + i];
  }
}

/// Solves L^T z = b in place.
void backward_solve(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

constexpr double kLengthScales[] = {0.08, 0.15, 0.25, 0.4, 0.7, 1.2};

}  // namespace

double matern52(double r, double length_scale) {
  const double a = std::sqrt(5.0) * r / length_scale;
  return (1.0 + a + a * a / 3.0) * std::exp(-a);
}

bool cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double diag = a[j * n + j];
    for (size_t k = 0; k < j; ++k) diag -= a[j * n + k] * a[j * n + k];
    if (!(diag > 0)) return false;
    const double ljj = std::sqrt(diag);
    a[j * n + j] = ljj;
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / ljj;
    }
    for (size_t k = j + 1; k < n; ++k) a[j * n + k] = 0;  // keep the upper triangle clean
  }
  return true;
}

double GaussianProcess::fit_with(double length_scale, double noise, std::vector<double>& l,
                                 std::vector<double>& alpha) const {
  l.assign(n_ * n_, 0.0);
  for (size_t i = 0; i < n_; ++i)
    for (size_t j = 0; j <= i; ++j) {
      const double k = matern52(distance(&x_[i * d_], &x_[j * d_], d_), length_scale) + (i == j ? noise : 0.0);
      l[i * n_ + j] = k;
      l[j * n_ + i] = k;
    }
  if (!cholesky(l, n_)) return -std::numeric_limits<double>::infinity();
  alpha = y_;
  forward_solve(l, n_, alpha);
  double fit_term = 0;
  for (double v : alpha) fit_term += v * v;  // y^T K^-1 y = |L^-1 y|^2
  backward_solve(l, n_, alpha);
  double log_det = 0;
  for (size_t i = 0; i < n_; ++i) log_det += std::log(l[i * n_ + i]);
  return -0.5 * fit_term - log_det;
}

bool GaussianProcess::fit(const std::vector<double>& x, size_t d, const std::vector<double>& y, double noise) {
  n_ = y.size();
  d_ = d;
  x_ = x;
  if (n_ == 0) return false;
  y_mean_ = 0;
  for (double v : y) y_mean_ += v;
  y_mean_ /= static_cast<double>(n_);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_);
  y_sd_ = n_ > 1 && var > 0 ? std::sqrt(var / static_cast<double>(n_ - 1)) : 1.0;
  y_.resize(n_);
  for (size_t i = 0; i < n_; ++i) y_[i] = (y[i] - y_mean_) / y_sd_;
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> l, alpha;
  for (double ls : kLengthScales) {
    const double lml = fit_with(ls, noise, l, alpha);
    if (lml > best) {
      best = lml;
      length_scale_ = ls;
      l_ = l;
      alpha_ = alpha;
    }
  }
  if (std::isfinite(best)) return true;
  n_ = 0;
  return false;
}

void GaussianProcess::predict(const double* x, double* mean, double* sd) const {
  if (n_ == 0) {
    *mean = y_mean_;
    if (sd) *sd = y_sd_;
    return;
  }
  std::vector<double> k(n_);
  double mu = 0;
  for (size_t i = 0; i < n_; ++i) {
    k[i] = matern52(distance(x, &x_[i * d_], d_), length_scale_);
    mu += k[i] * alpha_[i];
  }
  *mean = y_mean_ + y_sd_ * mu;
  if (!sd) return;
  forward_solve(l_, n_, k);
  double var = 1.0;
  for (double v : k) var -= v * v;
  *sd = y_sd_ * std::sqrt(std::max(var, 1e-12));
}

double expected_improvement(double mean, double sd, double best) {
  if (sd <= 0) return std::max(0.0, best - mean);
  const double z = (best - mean) / sd;
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  return (best - mean) * cdf + sd * pdf;
}

}  // namespace tuner::search
