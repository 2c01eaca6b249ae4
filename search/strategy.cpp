#include "search/strategy.h"

#include <algorithm>
#include <stdexcept>

#include "search/bayes_opt_strategy.h"
#include "search/genetic_strategy.h"
#include "search/grid_strategy.h"
#include "search/random_strategy.h"

namespace tuner::search {

bool SeenSet::insert(const Config& c) {
  auto idx = space_.index_of(c);
  if (!idx) return false;
  return seen_.insert(*idx).second;
}

std::string strategy_names() { return "xgb, bo, ga, random, grid"; }

void check_strategy_name(const std::string& name) {
  if (name != "grid" && name != "random" && name != "xgb" && name != "ga" && name != "bo")
    throw std::invalid_argument("unknown strategy '" + name + "'; allowed: " + strategy_names());
}

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ConfigSpace& space, uint64_t seed) {
  check_strategy_name(name);
  if (name == "grid") return std::make_unique<GridStrategy>(space);
  if (name == "random") return std::make_unique<RandomStrategy>(space, seed);
  if (name == "ga") return std::make_unique<GeneticStrategy>(space, seed);
  if (name == "bo") return std::make_unique<BayesOptStrategy>(space, seed);
  throw std::invalid_argument("strategy 'xgb' needs a cost model and a featurizer: build ModelGuidedStrategy");
}

std::vector<Config> GridStrategy::propose(size_t n) {
  std::vector<Config> out;
  while (out.size() < n && next_ < space_.size()) {
    uint64_t i = next_++;
    if (seen_.insert_index(i)) out.push_back(space_.at(i));
  }
  return out;
}

std::vector<Config> draw_unseen(const ConfigSpace& space, SeenSet& seen, Rng& rng, size_t n) {
  std::vector<Config> out;
  const uint64_t total = space.size();
  while (out.size() < n && seen.size() < total) {
    // Rejection sampling while the space is mostly unseen; a shuffle of the rest once it is mostly seen.
    if (seen.size() * 2 < total) {
      std::uniform_int_distribution<uint64_t> d(0, total - 1);
      uint64_t i = d(rng);
      if (seen.insert_index(i)) out.push_back(space.at(i));
      continue;
    }
    std::vector<uint64_t> rest;
    for (uint64_t i = 0; i < total; ++i)
      if (!seen.contains(i)) rest.push_back(i);
    std::shuffle(rest.begin(), rest.end(), rng);
    for (uint64_t i : rest) {
      if (out.size() >= n) break;
      seen.insert_index(i);
      out.push_back(space.at(i));
    }
  }
  return out;
}

std::vector<Config> RandomStrategy::propose(size_t n) { return draw_unseen(space_, seen_, rng_, n); }

}  // namespace tuner::search
