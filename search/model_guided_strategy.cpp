#include "search/model_guided_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

namespace tuner::search {

namespace {
constexpr size_t kKeptBest = 16;  // measured configs that seed annealing chains

// Share of the pairs of distinct speeds that the scores order the same way (ties in score count half);
// 0.5 when no pair has distinct speeds.
double concordance(const std::vector<std::pair<float, double>>& rows) {
  double agree = 0, pairs = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = i + 1; j < rows.size(); ++j) {
      if (rows[i].second == rows[j].second) continue;
      pairs += 1;
      const double ds = static_cast<double>(rows[i].first) - rows[j].first, dt = rows[i].second - rows[j].second;
      agree += ds == 0 ? 0.5 : (ds > 0) == (dt > 0) ? 1.0 : 0.0;
    }
  return pairs > 0 ? agree / pairs : 0.5;
}
}  // namespace

ModelGuidedStrategy::ModelGuidedStrategy(const ConfigSpace& space, uint64_t seed,
                                         std::unique_ptr<costmodel::CostModel> model, Featurizer featurize,
                                         AnnealingParams params, Prior prior, PriorRefiner refine)
    : space_(space), seen_(space), rng_(seed), model_(std::move(model)), featurize_(std::move(featurize)),
      params_(params), prior_(std::move(prior)), refine_(std::move(refine)) {}

void ModelGuidedStrategy::add_row(const Config& c, const TrialOutcome& outcome) {
  const double speed = outcome.ok && outcome.time_ms > 0 ? 1.0 / outcome.time_ms : 0.0;
  rows_.add_row(featurize_(c));
  speeds_.push_back(speed);
  if (speed > 0) {
    best_measured_.emplace_back(speed, c);
    std::stable_sort(best_measured_.begin(), best_measured_.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    if (best_measured_.size() > kKeptBest) best_measured_.resize(kKeptBest);
  }
}

void ModelGuidedStrategy::add_transfer(std::vector<float> features, float relative_speed) {
  transfer_rows_.add_row(features);
  transfer_targets_.push_back(relative_speed);
}

std::vector<uint64_t> ModelGuidedStrategy::diverse_pick(const std::vector<uint64_t>& ranked, size_t want) const {
  if (ranked.size() <= want || params_.diversity <= 0) {
    return {ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(std::min(want, ranked.size()))};
  }
  // Greedy, as AutoTVM's submodular pick: each step takes the candidate with the best rank score
  // (1 for the model's best, falling linearly) plus `diversity` times the share of its knob values
  // that no config picked so far has. Ties go to the better-ranked candidate.
  const size_t knobs = space_.knobs().size();
  std::vector<std::set<int64_t>> covered(knobs);
  std::vector<Config> configs;
  for (uint64_t idx : ranked) configs.push_back(space_.at(idx));
  std::vector<bool> taken(ranked.size(), false);
  std::vector<uint64_t> out;
  while (out.size() < want) {
    double best = -1;
    size_t best_i = 0;
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (taken[i]) continue;
      size_t fresh = 0;
      for (size_t k = 0; k < knobs; ++k) fresh += covered[k].count(configs[i][k]) ? 0 : 1;
      const double value = 1.0 - static_cast<double>(i) / static_cast<double>(ranked.size()) +
                           params_.diversity * static_cast<double>(fresh) / static_cast<double>(knobs);
      if (value > best) {
        best = value;
        best_i = i;
      }
    }
    taken[best_i] = true;
    for (size_t k = 0; k < knobs; ++k) covered[k].insert(configs[best_i][k]);
    out.push_back(ranked[best_i]);
  }
  return out;
}

bool ModelGuidedStrategy::start_from_saved(const std::string& bytes, std::string* error) {
  if (!model_->load(bytes, error)) return false;
  model_ready_ = true;
  return true;
}

void ModelGuidedStrategy::refit() {
  const size_t transferred = transfer_dropped_ ? 0 : transfer_rows_.rows;
  if (rows_.rows + transferred < std::max<size_t>(params_.min_rows, 2)) return;
  const double best = best_measured_.empty() ? 1.0 : best_measured_.front().first;
  costmodel::FeatureMatrix x = rows_;
  std::vector<float> targets, weights;
  for (double s : speeds_) targets.push_back(static_cast<float>(s / best));  // failures stay 0
  weights.assign(rows_.rows, 1.0f);
  if (transfer_rows_.rows > 0 && !transfer_dropped_) {
    if (x.rows == 0) x.cols = transfer_rows_.cols;
    x.values.insert(x.values.end(), transfer_rows_.values.begin(), transfer_rows_.values.end());
    x.rows += transfer_rows_.rows;
    targets.insert(targets.end(), transfer_targets_.begin(), transfer_targets_.end());
    // Together the transferred rows weigh at most as much as transfer_half_life own rows (however many
    // there are), halved again for every transfer_half_life own rows: many records of other workloads
    // give the first proposals a direction without drowning the session's own evidence.
    const double h = params_.transfer_half_life;
    const float w = static_cast<float>(std::min(1.0, h / static_cast<double>(transfer_rows_.rows)) /
                                       (1.0 + static_cast<double>(rows_.rows) / h));
    weights.insert(weights.end(), transfer_rows_.rows, w);
  }
  std::string error;
  if (model_->fit(x, targets, weights, &error)) {
    std::vector<float> mean, spread;
    model_has_spread_ = model_->predict_spread(x, &mean, &spread) &&
                        std::any_of(spread.begin(), spread.end(), [](float v) { return v > 0; });
    // The own rows come first in x: their scores put the model's scale on log speed.
    if (mean.size() >= rows_.rows)
      improvement_.calibrate(std::vector<double>(mean.begin(), mean.begin() + static_cast<std::ptrdiff_t>(rows_.rows)),
                             speeds_);
    model_ready_ = true;
    fitted_here_ = true;
    fitted_rows_ = x.rows;
    model_error_.clear();
  } else {
    model_error_ = error;
  }
}

void ModelGuidedStrategy::observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) {
  // While the model was fitted with transferred rows: how well did it foresee these results?
  if (transfer_rows_.rows > 0 && !transfer_dropped_ && fitted_here_ && !configs.empty()) {
    costmodel::FeatureMatrix x;
    for (const auto& c : configs) x.add_row(featurize_(c));
    const std::vector<float> predicted = model_->predict(x);
    // Successful trials only: telling failures (unlaunchable configs) from the rest is easy, and would
    // hide a model that orders the configs that run the wrong way round.
    for (size_t i = 0; i < predicted.size() && i < outcomes.size(); ++i)
      if (outcomes[i].ok && outcomes[i].time_ms > 0) transfer_checks_.emplace_back(predicted[i], 1.0 / outcomes[i].time_ms);
    if (transfer_checks_.size() >= std::max<size_t>(params_.transfer_check_rows, 2) &&
        concordance(transfer_checks_) <= 0.5)
      transfer_dropped_ = true;
  }
  for (size_t i = 0; i < configs.size() && i < outcomes.size(); ++i) {
    seen_.insert(configs[i]);
    if (const auto idx = space_.index_of(configs[i]))
      improvement_.measured(*idx, outcomes[i].ok && outcomes[i].time_ms > 0 ? 1.0 / outcomes[i].time_ms : 0.0);
    add_row(configs[i], outcomes[i]);
  }
  refit();
}

std::vector<float> ModelGuidedStrategy::score(const std::vector<Config>& configs) {
  costmodel::FeatureMatrix x;
  for (const auto& c : configs) x.add_row(featurize_(c));
  std::vector<float> mean, spread;
  if (!model_->predict_spread(x, &mean, &spread) || spread.size() != mean.size()) return {};
  for (size_t i = 0; i < mean.size(); ++i) {
    mean[i] += static_cast<float>(params_.ucb_kappa) * spread[i];
  }
  return mean;
}

std::vector<uint64_t> ModelGuidedStrategy::anneal(size_t want) {
  // Chains start from the best measured configs, the rest at random.
  std::vector<Config> state;
  for (const auto& [speed, c] : best_measured_) {
    if (state.size() >= static_cast<size_t>(params_.chains)) break;
    state.push_back(c);
  }
  while (state.size() < static_cast<size_t>(params_.chains)) state.push_back(space_.sample(rng_));
  std::vector<float> state_score = score(state);
  if (state_score.size() != state.size()) return {};

  // The best unseen configs found so far: index -> score, and the ordered set (score, index).
  std::map<uint64_t, float> found;
  std::set<std::pair<float, uint64_t>> ranked;
  auto offer = [&](const Config& c, float s) {
    auto idx = space_.index_of(c);
    if (!idx || seen_.contains(*idx) || found.count(*idx)) return false;
    if (ranked.size() >= want && s <= ranked.begin()->first) return false;
    found[*idx] = s;
    ranked.emplace(s, *idx);
    if (ranked.size() > want) {
      found.erase(ranked.begin()->second);
      ranked.erase(ranked.begin());
    }
    return true;
  };
  for (size_t i = 0; i < state.size(); ++i) offer(state[i], state_score[i]);

  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int since_improvement = 0;
  for (int step = 0; step < params_.steps && since_improvement < params_.patience; ++step) {
    const double temperature = params_.start_temperature * (1.0 - static_cast<double>(step) / params_.steps);
    std::vector<Config> next = state;
    for (auto& c : next) {
      // One knob to another of its values; an invalid result leaves the chain where it is.
      const size_t k = std::uniform_int_distribution<size_t>(0, c.size() - 1)(rng_);
      const auto& values = space_.knobs()[k].values;
      if (values.size() < 2) continue;
      Config moved = c;
      moved[k] = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng_)];
      if (moved != c && space_.index_of(moved)) c = std::move(moved);
    }
    std::vector<float> next_score = score(next);
    if (next_score.size() != next.size()) break;
    bool improved = false;
    for (size_t i = 0; i < next.size(); ++i) {
      improved = offer(next[i], next_score[i]) || improved;
      const double delta = next_score[i] - state_score[i];
      if (delta >= 0 || (temperature > 0 && unit(rng_) < std::exp(delta / temperature))) {
        state[i] = std::move(next[i]);
        state_score[i] = next_score[i];
      }
    }
    since_improvement = improved ? 0 : since_improvement + 1;
  }
  std::vector<uint64_t> out;
  for (auto it = ranked.rbegin(); it != ranked.rend(); ++it) out.push_back(it->second);
  return out;
}

std::vector<uint64_t> ModelGuidedStrategy::local_pick(size_t want) {
  if (want == 0 || best_measured_.empty()) return {};
  // Candidates: one-knob neighbours of the best local_seeds measured configs, and everything up to
  // local_hops knob changes from the best one; in a fixed order (first reached first), so ties replay.
  std::vector<uint64_t> pool;
  std::set<uint64_t> reached;
  auto reach = [&](const Config& c) {
    const auto idx = space_.index_of(c);
    if (!idx || !reached.insert(*idx).second) return false;
    if (!seen_.contains(*idx)) pool.push_back(*idx);
    return true;
  };
  for (size_t i = 0; i < best_measured_.size() && i < std::max<size_t>(params_.local_seeds, 1); ++i) {
    // Breadth first from this seed; a config another seed reached is still expanded from this one.
    std::vector<Config> frontier{best_measured_[i].second};
    std::set<uint64_t> mine{*space_.index_of(frontier.front())};
    reach(frontier.front());
    const size_t hops = i < params_.local_hop_seeds ? std::max<size_t>(params_.local_hops, 1) : 1;
    for (size_t hop = 0; hop < hops; ++hop) {
      std::vector<Config> next;
      for (const auto& c : frontier)
        for (auto& n : space_.neighbours(c)) {
          if (!mine.insert(*space_.index_of(n)).second) continue;
          reach(n);
          next.push_back(std::move(n));
        }
      frontier = std::move(next);
    }
  }
  if (pool.empty()) return {};
  std::vector<Config> configs;
  for (uint64_t idx : pool) configs.push_back(space_.at(idx));
  const std::vector<float> s = score(configs);
  if (s.size() != configs.size()) return {};
  std::vector<size_t> order(pool.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&s](size_t a, size_t b) { return s[a] > s[b]; });
  std::vector<uint64_t> ranked;
  const size_t keep = want * std::max<size_t>(1, params_.local_diversity_pool);
  for (size_t i = 0; i < order.size() && ranked.size() < keep; ++i) ranked.push_back(pool[order[i]]);
  return diverse_pick(ranked, want);
}

std::vector<Config> ModelGuidedStrategy::prior_pick(size_t want) {
  // The prior ranks every unseen config of a small space, or a uniform sample of a large one; the refiner
  // (when there is one) re-scores the best prior_refine of them, once, before the first batch; the batch
  // is the best of them, picked for diversity as the model's own picks are. Re-scored configs rank before
  // the rest: real registers make an estimate worse more often than better, so an unrefined estimate
  // would otherwise outrank the configs the refiner knows better.
  std::vector<uint64_t> pool;
  if (space_.size() <= params_.prior_pool) {
    for (uint64_t i = 0; i < space_.size(); ++i)
      if (!seen_.contains(i)) pool.push_back(i);
  } else {
    SeenSet probe = seen_;
    for (const auto& c : draw_unseen(space_, probe, rng_, params_.prior_pool)) pool.push_back(*space_.index_of(c));
  }
  std::vector<double> value(pool.size());
  std::vector<char> refined(pool.size(), 0);  // re-scored by the refiner: ranked before every config that is not
  for (size_t i = 0; i < pool.size(); ++i) value[i] = prior_(space_.at(pool[i]));
  auto ranking = [&] {
    std::vector<size_t> order(pool.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return refined[a] != refined[b] ? refined[a] > refined[b] : value[a] > value[b];
    });
    return order;
  };
  std::vector<size_t> order = ranking();
  if (refine_ && params_.prior_refine > 0 && prior_refined_ == 0) {
    std::vector<Config> top;
    for (size_t i = 0; i < order.size() && top.size() < params_.prior_refine; ++i) top.push_back(space_.at(pool[order[i]]));
    const std::vector<double> refined = refine_(top);
    for (size_t i = 0; i < top.size() && i < refined.size(); ++i)
      if (!std::isnan(refined[i])) refined_[pool[order[i]]] = refined[i];
    prior_refined_ = top.size();
  }
  if (!refined_.empty()) {
    for (size_t i = 0; i < pool.size(); ++i) {
      const auto it = refined_.find(pool[i]);
      if (it == refined_.end()) continue;
      value[i] = it->second;
      refined[i] = it->second > -1e29;  // one that cannot compile or launch (-1e30) ranks after every other
    }
    order = ranking();
  }
  std::vector<uint64_t> ranked;
  for (size_t i = 0; i < order.size() && ranked.size() < want * std::max<size_t>(1, params_.prior_diversity_pool); ++i)
    ranked.push_back(pool[order[i]]);
  std::vector<Config> out;
  for (uint64_t idx : diverse_pick(ranked, want))
    if (seen_.insert_index(idx)) out.push_back(space_.at(idx));
  return out;
}

std::vector<Config> ModelGuidedStrategy::propose(size_t n) {
  std::vector<Config> out = pick(n);
  expected_improvement_ = -1;
  if (!model_ready_ || rows_.rows == 0 || out.empty()) return out;
  // What the batch is expected to gain, from the model's scores of all of it (random picks included).
  costmodel::FeatureMatrix x;
  std::vector<uint64_t> keys;
  for (const auto& c : out) {
    x.add_row(featurize_(c));
    keys.push_back(space_.index_of(c).value_or(UINT64_MAX));
  }
  const std::vector<float> scores = model_->predict(x);
  if (scores.size() == out.size())
    expected_improvement_ = improvement_.expect(keys, std::vector<double>(scores.begin(), scores.end()));
  return out;
}

std::vector<Config> ModelGuidedStrategy::pick(size_t n) {
  std::vector<Config> out;
  const uint64_t total = space_.size();
  if (n == 0 || seen_.size() >= total) return out;
  // Small batches while the model knows little of this workload, growing with its own rows.
  if (params_.first_batch > 0) {
    const auto grown = static_cast<size_t>(params_.batch_growth * static_cast<double>(rows_.rows));
    n = std::min(n, std::max(params_.first_batch, grown));
  }
  if (!model_ready_ && prior_) {
    if (params_.prior_first_batch > 0 && rows_.rows == 0) n = std::min(n, params_.prior_first_batch);
    out = prior_pick(n);
    auto rest = draw_unseen(space_, seen_, rng_, n - out.size());
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  std::vector<uint64_t> picks;
  if (model_ready_) {
    // A model that has seen only other workloads' records hedges: half of its first batch is random.
    // With a spread the confidence bound explores; without one, a fixed share is drawn at random.
    const double own_epsilon = model_has_spread_ ? 0.0 : params_.epsilon;
    const double epsilon = rows_.rows == 0 ? std::max(own_epsilon, params_.transfer_only_epsilon) : own_epsilon;
    const size_t random_share = static_cast<size_t>(std::floor(epsilon * static_cast<double>(n)));
    const size_t model_share = n - random_share;
    // Exploitation first: the model's best configs near the incumbents (own rows only; taken, so
    // annealing does not offer them again).
    const size_t local_share =
        rows_.rows == 0 ? 0 : static_cast<size_t>(std::floor(params_.local_share * static_cast<double>(model_share)));
    for (uint64_t idx : local_pick(local_share))
      if (seen_.insert_index(idx)) out.push_back(space_.at(idx));
    const size_t global_share = model_share - out.size();
    if (global_share > 0)
      picks = diverse_pick(anneal(global_share * std::max<size_t>(1, params_.diversity_pool)), global_share);
  }
  for (uint64_t idx : picks) {
    if (out.size() >= n) break;
    if (seen_.insert_index(idx)) out.push_back(space_.at(idx));
  }
  if (model_ready_ && rows_.rows == 0 && transfer_rows_.rows > 0 && !transfer_dropped_ && out.size() < n) {
    // The hedge of a model that knows only other workloads (or GPUs): what it ranks best may not be
    // best here, but what it ranks poor seldom is good. Draw the random share from the best quarter
    // of a uniform sample, as the model scores them.
    const size_t want = n - out.size();
    if (prior_) {
      // With a prior (the analytic model, compiled resources), the hedge is its best picks, first: on real
      // recordings it reaches 95% of the best in 1-2 trials, which a model of another shape or GPU may not.
      std::vector<Config> hedge = prior_pick(want);
      std::vector<Config> mixed;
      for (size_t i = 0; i < std::max(out.size(), hedge.size()); ++i) {
        if (i < hedge.size()) mixed.push_back(std::move(hedge[i]));
        if (i < out.size()) mixed.push_back(std::move(out[i]));
      }
      out = std::move(mixed);
    }
    SeenSet probe = seen_;
    std::vector<Config> pool = prior_ ? std::vector<Config>{} : draw_unseen(space_, probe, rng_, 16 * want);
    std::vector<float> s = pool.empty() ? std::vector<float>{} : score(pool);
    if (s.size() == pool.size() && !pool.empty()) {
      std::vector<size_t> order(pool.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&s](size_t a, size_t b) { return s[a] > s[b]; });
      order.resize(std::min(order.size(), 4 * want));
      std::shuffle(order.begin(), order.end(), rng_);
      std::vector<Config> hedge;
      for (size_t i : order) {
        if (out.size() + hedge.size() >= n) break;
        if (seen_.insert(pool[i])) hedge.push_back(pool[i]);
      }
      // Interleaved with the model's own picks, so neither kind waits for the other to be measured.
      std::vector<Config> mixed;
      for (size_t i = 0; i < std::max(out.size(), hedge.size()); ++i) {
        if (i < out.size()) mixed.push_back(std::move(out[i]));
        if (i < hedge.size()) mixed.push_back(std::move(hedge[i]));
      }
      out = std::move(mixed);
    }
  }
  // The epsilon share, and everything while the model is not ready: uniform over unseen configs.
  auto rest = draw_unseen(space_, seen_, rng_, n - out.size());
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace tuner::search
