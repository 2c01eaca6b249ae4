// Random search: valid configs drawn uniformly without replacement under a seed.
#pragma once

#include "search/strategy.h"

namespace tuner::search {

class RandomStrategy final : public SearchStrategy {
 public:
  RandomStrategy(const ConfigSpace& space, uint64_t seed) : space_(space), seen_(space), rng_(seed) {}
  std::string name() const override { return "random"; }
  void mark_measured(const Config& c) override { seen_.insert(c); }
  std::vector<Config> propose(size_t n) override;
  bool independent_of_results() const override { return true; }
  void update(const std::vector<Config>&, const std::vector<TrialOutcome>&) override {}

 private:
  const ConfigSpace& space_;
  SeenSet seen_;
  Rng rng_;
};

}  // namespace tuner::search
