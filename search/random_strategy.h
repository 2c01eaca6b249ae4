// Random search: valid configs drawn uniformly without replacement under a seed.
#pragma once

#include "search/strategy.h"

namespace tuner::search {

class RandomStrategy final : public SearchStrategy {
 public:
  RandomStrategy(const ConfigSpace& space, uint64_t seed) : space_(space), seen_(space), rng_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<Config> propose(size_t n) override;
  /// Marks the configs seen; the draw does not depend on their results.
  void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>&) override {
    for (const auto& c : configs) seen_.insert(c);
  }
  bool independent_of_results() const override { return true; }

 private:
  const ConfigSpace& space_;
  SeenSet seen_;
  Rng rng_;
};

}  // namespace tuner::search
