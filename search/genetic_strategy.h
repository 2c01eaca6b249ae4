// Genetic-algorithm search (`--strategy ga`), the baseline the model-guided
// search is compared with: the best measured configs are the parents;
// children take each knob from one of two tournament-selected parents and
// mutate each knob with a small probability; a child that breaks a constraint
// or was already seen is drawn again (and after a few tries replaced by a
// random unseen config). Random until `population` configs are measured.
#pragma once

#include <utility>

#include "search/strategy.h"

namespace tuner::search {

struct GeneticParams {
  size_t population = 32;        ///< Parents: the best measured configs.
  size_t tournament = 3;         ///< Configs drawn per parent selection; the fittest wins.
  double mutation_rate = 0.1;    ///< Probability that a knob takes a random value.
  int tries_per_child = 20;      ///< Draws before a child is replaced by a random config.
};

class GeneticStrategy final : public SearchStrategy {
 public:
  GeneticStrategy(const ConfigSpace& space, uint64_t seed, GeneticParams params = {})
      : space_(space), seen_(space), rng_(seed), params_(params) {}
  std::string name() const override { return "ga"; }
  std::vector<Config> propose(size_t n) override;
  /// Measured configs (own or from elsewhere): never proposed again, and parent candidates.
  void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) override;

 private:
  const Config& select(const std::vector<std::pair<double, Config>>& parents);

  const ConfigSpace& space_;
  SeenSet seen_;
  Rng rng_;
  GeneticParams params_;
  std::vector<std::pair<double, Config>> measured_;  ///< (speed = 1 / time_ms, 0 if failed, config).
};

}  // namespace tuner::search
