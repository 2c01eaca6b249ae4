#include "search/genetic_strategy.h"

#include <algorithm>

namespace tuner::search {

void GeneticStrategy::observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) {
  for (size_t i = 0; i < configs.size() && i < outcomes.size(); ++i) {
    seen_.insert(configs[i]);
    const double speed = outcomes[i].ok && outcomes[i].time_ms > 0 ? 1.0 / outcomes[i].time_ms : 0.0;
    measured_.emplace_back(speed, configs[i]);
  }
}

const Config& GeneticStrategy::select(const std::vector<std::pair<double, Config>>& parents) {
  std::uniform_int_distribution<size_t> pick(0, parents.size() - 1);
  size_t best = pick(rng_);
  for (size_t t = 1; t < params_.tournament; ++t) {
    size_t other = pick(rng_);
    if (parents[other].first > parents[best].first) best = other;
  }
  return parents[best].second;
}

std::vector<Config> GeneticStrategy::propose(size_t n) {
  if (measured_.size() < params_.population) return draw_unseen(space_, seen_, rng_, n);
  // Parents: the fittest measured configs (stable order, so a seed replays exactly).
  std::vector<std::pair<double, Config>> parents = measured_;
  std::stable_sort(parents.begin(), parents.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  parents.resize(params_.population);

  std::vector<Config> out;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  while (out.size() < n && seen_.size() < space_.size()) {
    bool placed = false;
    for (int attempt = 0; attempt < params_.tries_per_child && !placed; ++attempt) {
      const Config& a = select(parents);
      const Config& b = select(parents);
      Config child(a.size());
      for (size_t k = 0; k < a.size(); ++k) {
        child[k] = unit(rng_) < 0.5 ? a[k] : b[k];
        if (unit(rng_) < params_.mutation_rate) {
          const auto& values = space_.knobs()[k].values;
          child[k] = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng_)];
        }
      }
      auto idx = space_.index_of(child);
      if (idx && seen_.insert_index(*idx)) {
        out.push_back(std::move(child));
        placed = true;
      }
    }
    if (!placed) {
      auto r = draw_unseen(space_, seen_, rng_, 1);
      if (r.empty()) break;
      out.push_back(std::move(r.front()));
    }
  }
  return out;
}

}  // namespace tuner::search
