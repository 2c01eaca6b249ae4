#include "search/improvement_estimate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tuner::search {

ScoreLine fit_score_line(const std::vector<double>& scores, const std::vector<double>& speeds) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < scores.size() && i < speeds.size(); ++i)
    if (speeds[i] > 0 && std::isfinite(scores[i])) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(), [&speeds](size_t a, size_t b) { return speeds[a] > speeds[b]; });
  ok.resize(std::max<size_t>(std::min<size_t>(ok.size(), 4), (ok.size() + 1) / 2));
  ScoreLine line;
  if (ok.size() < 4) return line;
  double sx = 0, sy = 0;
  for (size_t i : ok) {
    sx += scores[i];
    sy += std::log(speeds[i]);
  }
  const double n = static_cast<double>(ok.size()), mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (size_t i : ok) {
    sxx += (scores[i] - mx) * (scores[i] - mx);
    sxy += (scores[i] - mx) * (std::log(speeds[i]) - my);
  }
  if (!(sxx > 0) || !(sxy > 0)) return line;
  line.slope = sxy / sxx;
  line.intercept = my - line.slope * mx;
  line.valid = true;
  return line;
}

double batch_expected_improvement(const std::vector<double>& mean, double sd) {
  if (mean.empty()) return 0;
  const double top = *std::max_element(mean.begin(), mean.end());
  if (!(sd > 0)) return std::max(0.0, top);
  const double end = top + 8 * sd;
  if (end <= 0) return 0;
  // Configs predicted more than 8 spreads below 0 never exceed it: left out. Below the lowest of the rest
  // (less 8 spreads) every config exceeds t, P(max > t) = 1.
  std::vector<double> near;
  for (double m : mean)
    if (m > -8 * sd) near.push_back(m);
  const double start = std::max(0.0, *std::min_element(near.begin(), near.end()) - 8 * sd);
  // The integrand changes over a spread: steps of an eighth of one, within a bound; a spread too small
  // for the bound is no spread at all.
  const double range = end - start;
  if (range / (sd / 8) > 20000) return std::max(0.0, top);
  const int steps = 2 * std::max(200, static_cast<int>(std::ceil(range / (sd / 8) / 2)));
  // P(max > t) = 1 - prod Phi((t - m_i) / sd), integrated over [start, end] by Simpson's rule.
  auto tail = [&near, sd](double t) {
    double below = 1;
    for (double m : near) below *= 0.5 * std::erfc(-(t - m) / (sd * std::sqrt(2.0)));
    return 1 - below;
  };
  const double h = range / steps;
  double sum = tail(start) + tail(end);
  for (int k = 1; k < steps; ++k) sum += (k % 2 ? 4 : 2) * tail(start + k * h);
  return start + sum * h / 3;
}

void ImprovementEstimate::calibrate(const std::vector<double>& scores, const std::vector<double>& speeds) {
  line_ = fit_score_line(scores, speeds);
  double best = 0;
  for (double s : speeds) best = std::max(best, s);
  if (speeds.size() > rows_) {
    recent_gains_.push_back(best_speed_ > 0 && best > best_speed_ ? std::log(best / best_speed_) : 0.0);
    while (recent_gains_.size() > recent_batches_) recent_gains_.pop_front();
    rows_ = speeds.size();
  }
  best_speed_ = best;
}

double ImprovementEstimate::expect(const std::vector<uint64_t>& keys, const std::vector<double>& scores) {
  if (!line_.valid || !(best_speed_ > 0)) return -1;
  std::vector<double> gain;
  for (size_t i = 0; i < keys.size() && i < scores.size(); ++i) {
    pending_[keys[i]] = line_.at(scores[i]);
    gain.push_back(line_.at(scores[i]) - std::log(best_speed_));
  }
  if (residuals_.size() < std::max<size_t>(min_residuals_, 2)) return -1;
  const double n = static_cast<double>(residuals_.size());
  const double bias = std::accumulate(residuals_.begin(), residuals_.end(), 0.0) / n;
  double var = 0;
  for (double r : residuals_) var += (r - bias) * (r - bias);
  const double sd = std::sqrt(var / (n - 1));
  for (double& g : gain) g += bias;
  double realized = 0;
  for (double g : recent_gains_) realized = std::max(realized, g);
  return std::exp(std::max(batch_expected_improvement(gain, sd), realized)) - 1;
}

void ImprovementEstimate::measured(uint64_t key, double speed) {
  const auto it = pending_.find(key);
  if (it == pending_.end()) return;
  if (speed > 0) {
    residuals_.push_back(std::log(speed) - it->second);
    while (residuals_.size() > window_) residuals_.pop_front();
  }
  pending_.erase(it);
}

}  // namespace tuner::search
