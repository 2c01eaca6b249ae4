#include "search/bayes_opt_strategy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tuner::search {

BayesOptStrategy::BayesOptStrategy(const ConfigSpace& space, uint64_t seed, BayesOptParams params)
    : space_(space), seen_(space), rng_(seed), params_(params) {
  for (const auto& knob : space_.knobs()) {
    const auto [lo, hi] = std::minmax_element(knob.values.begin(), knob.values.end());
    const bool powers_of_two = std::all_of(knob.values.begin(), knob.values.end(),
                                           [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; });
    const bool log2_scale = powers_of_two && *hi >= 4 * *lo;
    const double a = log2_scale ? std::log2(static_cast<double>(*lo)) : static_cast<double>(*lo);
    const double b = log2_scale ? std::log2(static_cast<double>(*hi)) : static_cast<double>(*hi);
    log_scale_.push_back(log2_scale);
    low_.push_back(a);
    span_.push_back(b > a ? b - a : 1.0);
  }
}

std::vector<double> BayesOptStrategy::coordinates(const Config& c) const {
  std::vector<double> x(c.size());
  for (size_t k = 0; k < c.size(); ++k) {
    const double v = log_scale_[k] ? std::log2(static_cast<double>(c[k])) : static_cast<double>(c[k]);
    x[k] = (v - low_[k]) / span_[k];
  }
  return x;
}

void BayesOptStrategy::observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) {
  for (size_t i = 0; i < configs.size() && i < outcomes.size(); ++i) {
    seen_.insert(configs[i]);
    configs_.push_back(configs[i]);
    const bool ok = outcomes[i].ok && outcomes[i].time_ms > 0;
    log_time_.push_back(ok ? std::log(outcomes[i].time_ms) : std::numeric_limits<double>::quiet_NaN());
    if (const auto idx = space_.index_of(configs[i])) improvement_.measured(*idx, ok ? 1.0 / outcomes[i].time_ms : 0.0);
  }
  fit();
}

double BayesOptStrategy::mean_log_speed(const Config& c) const {
  const auto x = coordinates(c);
  double mean = 0;
  gp_.predict(x.data(), &mean, nullptr);
  return -mean;
}

void BayesOptStrategy::fit() {
  double worst = -std::numeric_limits<double>::infinity();
  best_log_time_ = std::numeric_limits<double>::infinity();
  for (double t : log_time_)
    if (!std::isnan(t)) {
      worst = std::max(worst, t);
      best_log_time_ = std::min(best_log_time_, t);
    }
  if (!std::isfinite(worst)) return;  // nothing ok yet: the process keeps its prior
  const double failed = worst + 1.0;  // e times slower than the slowest measured
  // Rows: the best half of max_rows by time, then evenly spaced among the rest (the process stays small).
  std::vector<size_t> order(configs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto y_of = [&](size_t i) { return std::isnan(log_time_[i]) ? failed : log_time_[i]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y_of(a) < y_of(b); });
  std::vector<size_t> rows = order;
  if (rows.size() > params_.max_rows) {
    const size_t best = params_.max_rows / 2, rest = params_.max_rows - best;
    rows.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(best));
    const double step = static_cast<double>(order.size() - best) / static_cast<double>(rest);
    for (size_t j = 0; j < rest; ++j) rows.push_back(order[best + static_cast<size_t>(j * step)]);
  }
  std::vector<double> x, y;
  for (size_t i : rows) {
    const auto c = coordinates(configs_[i]);
    x.insert(x.end(), c.begin(), c.end());
    y.push_back(y_of(i));
  }
  gp_.fit(x, space_.knobs().size(), y, params_.noise);
  // The process's scale on log speed, for the improvement estimate.
  std::vector<double> scores, speeds;
  for (size_t i = 0; i < configs_.size(); ++i) {
    scores.push_back(mean_log_speed(configs_[i]));
    speeds.push_back(std::isnan(log_time_[i]) ? 0.0 : std::exp(-log_time_[i]));
  }
  improvement_.calibrate(scores, speeds);
}

std::vector<uint64_t> BayesOptStrategy::candidates() {
  std::vector<uint64_t> out;
  if (space_.size() <= params_.pool) {
    for (uint64_t i = 0; i < space_.size(); ++i)
      if (!seen_.contains(i)) out.push_back(i);
    return out;
  }
  SeenSet probe = seen_;
  for (const auto& c : draw_unseen(space_, probe, rng_, params_.pool)) out.push_back(*space_.index_of(c));
  // One-knob neighbours of the best measured configs.
  std::vector<size_t> order;
  for (size_t i = 0; i < configs_.size(); ++i)
    if (!std::isnan(log_time_[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return log_time_[a] < log_time_[b]; });
  if (order.size() > params_.neighbours_of) order.resize(params_.neighbours_of);
  for (size_t i : order)
    for (size_t k = 0; k < space_.knobs().size(); ++k)
      for (int64_t v : space_.knobs()[k].values) {
        Config c = configs_[i];
        c[k] = v;
        auto idx = space_.index_of(c);
        if (idx && probe.insert_index(*idx)) out.push_back(*idx);
      }
  return out;
}

std::vector<Config> BayesOptStrategy::propose(size_t n) {
  if (gp_.rows() == 0) {  // nothing ok measured yet: a random first batch
    expected_improvement_ = -1;
    return draw_unseen(space_, seen_, rng_, std::min(n, params_.initial));
  }
  const size_t want = std::min(n, std::max(params_.initial, configs_.size()));
  const std::vector<uint64_t> pool = candidates();
  const size_t d = space_.knobs().size();
  std::vector<double> coords, ei, means;
  for (uint64_t idx : pool) {
    const auto x = coordinates(space_.at(idx));
    double mean = 0, sd = 0;
    gp_.predict(x.data(), &mean, &sd);
    coords.insert(coords.end(), x.begin(), x.end());
    ei.push_back(search::expected_improvement(mean, sd, best_log_time_));
    means.push_back(mean);
  }
  // Greedy batch: the best EI, then each pick damps its neighbours by 1 - correlation.
  std::vector<double> damp(pool.size(), 1.0);
  std::vector<Config> out;
  std::vector<uint64_t> keys;
  std::vector<double> scores;
  while (out.size() < want) {
    size_t best = pool.size();
    for (size_t i = 0; i < pool.size(); ++i)
      if (damp[i] > 0 && (best == pool.size() || ei[i] * damp[i] > ei[best] * damp[best])) best = i;
    if (best == pool.size()) break;
    damp[best] = 0;
    keys.push_back(pool[best]);
    scores.push_back(-means[best]);
    seen_.insert_index(pool[best]);
    out.push_back(space_.at(pool[best]));
    for (size_t i = 0; i < pool.size(); ++i) {
      if (damp[i] == 0) continue;
      double r = 0;
      for (size_t k = 0; k < d; ++k) r += (coords[i * d + k] - coords[best * d + k]) * (coords[i * d + k] - coords[best * d + k]);
      damp[i] *= 1.0 - matern52(std::sqrt(r), gp_.length_scale());
    }
  }
  expected_improvement_ = out.empty() ? -1 : improvement_.expect(keys, scores);
  return out;
}

}  // namespace tuner::search
