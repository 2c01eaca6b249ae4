// The kernel search-strategy interface, and the factory that builds one by name.
//
// Lifecycle, each step only after the one before:
//   1. construction with the space and a seed (the strategy owns its Rng);
//   2. mark_measured(c) or add_result(c, outcome) for every config already in the database (resume);
//   3. propose(n) -> up to n configs never proposed or measured before (empty: the space is exhausted);
//   4. update(configs, outcomes) with the results of exactly the configs of the last proposal;
//   then 3 and 4 again, with add_result() for configs that other processes measured meanwhile. A config
//   proposed but not measured here (another process had claimed it) may be left out of update().
//   Measurement failures reach update() as outcomes with ok == false.
//   A strategy whose independent_of_results() is true may be asked for its next proposal before
//   update() of the previous one (the loop then compiles one batch ahead of measurement).
// Under the same seed, space and history a strategy proposes the same configs in the same order.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "search/config_space.h"

namespace tuner::search {

/// What a measurement said of one config.
struct TrialOutcome {
  bool ok = false;     ///< Compiled, ran and matched the reference.
  double time_ms = 0;  ///< Median time in ms when ok (lower is better).
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  /// Records a config measured earlier, so it is never proposed.
  virtual void mark_measured(const Config& c) = 0;
  /// A result measured elsewhere (an earlier session, or another process sharing the database, possibly of a
  /// config this strategy proposed but did not get to measure): never proposed from now on, and learned
  /// from as the strategy learns (a model-guided strategy at its next fit). Default: mark_measured.
  virtual void add_result(const Config& c, const TrialOutcome& outcome) {
    (void)outcome;
    mark_measured(c);
  }
  /// Up to n new configs; empty when nothing is left to propose.
  virtual std::vector<Config> propose(size_t n) = 0;
  /// True when proposals never depend on results (grid, random).
  virtual bool independent_of_results() const { return false; }
  /// Results of the last proposal (same order).
  virtual void update(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) = 0;
};

/// Strategy names the factory knows, comma separated.
std::string strategy_names();
/// Throws std::invalid_argument naming the allowed names when `name` is not a strategy.
void check_strategy_name(const std::string& name);
/// Builds "grid", "random" or "ga"; throws std::invalid_argument naming the allowed names otherwise ("xgb" is
/// a ModelGuidedStrategy, which the tuner builds with its cost model and featurizer).
/// The space must outlive the strategy.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ConfigSpace& space, uint64_t seed);

/// Shared book-keeping: which valid-config indices were proposed or measured.
class SeenSet {
 public:
  explicit SeenSet(const ConfigSpace& space) : space_(space) {}
  /// Marks c; returns false if it was already seen (or is not a valid config).
  bool insert(const Config& c);
  bool contains(uint64_t index) const { return seen_.count(index) != 0; }
  bool insert_index(uint64_t index) { return seen_.insert(index).second; }
  size_t size() const { return seen_.size(); }

 private:
  const ConfigSpace& space_;
  std::unordered_set<uint64_t> seen_;
};

/// Up to n valid configs drawn uniformly among those not in `seen` (marking them seen).
std::vector<Config> draw_unseen(const ConfigSpace& space, SeenSet& seen, Rng& rng, size_t n);

}  // namespace tuner::search
