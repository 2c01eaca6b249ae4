// Grid search: every valid config in index order, skipping those already measured.
#pragma once

#include "search/strategy.h"

namespace tuner::search {

class GridStrategy final : public SearchStrategy {
 public:
  explicit GridStrategy(const ConfigSpace& space) : space_(space), seen_(space) {}
  std::string name() const override { return "grid"; }
  std::vector<Config> propose(size_t n) override;
  /// Marks the configs seen (skipped when the grid reaches them).
  void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>&) override {
    for (const auto& c : configs) seen_.insert(c);
  }
  bool independent_of_results() const override { return true; }

 private:
  const ConfigSpace& space_;
  SeenSet seen_;
  uint64_t next_ = 0;
};

}  // namespace tuner::search
