// Grid search: every valid config in index order, skipping those already measured.
#pragma once

#include "search/strategy.h"

namespace tuner::search {

class GridStrategy final : public SearchStrategy {
 public:
  explicit GridStrategy(const ConfigSpace& space) : space_(space), seen_(space) {}
  std::string name() const override { return "grid"; }
  void mark_measured(const Config& c) override { seen_.insert(c); }
  std::vector<Config> propose(size_t n) override;
  bool independent_of_results() const override { return true; }
  void update(const std::vector<Config>&, const std::vector<TrialOutcome>&) override {}

 private:
  const ConfigSpace& space_;
  SeenSet seen_;
  uint64_t next_ = 0;
};

}  // namespace tuner::search
