// The kernel search-strategy interface, and the factory that builds one by name.
//
// Lifecycle (TVM's Tuner: next_batch / update), each step only after the one before:
//   1. construction with the space and a seed (the strategy owns its Rng);
//   2. optionally, through transfer_learner(), knowledge from outside this workload (a model-based
//      strategy only: other workloads' records, a model saved by an earlier session);
//   3. observe(configs, outcomes) with every config already in the database (resume; possibly none);
//   4. propose(n) -> up to n configs never proposed or observed before (empty: the space is exhausted);
//   5. observe(configs, outcomes) with the results of the last proposal;
//   then 4 and 5 again, with observe() also for configs that other processes measured meanwhile. A config
//   proposed but not measured here (another process had claimed it) may be left out of observe().
//   Measurement failures reach observe() as outcomes with ok == false.
//   A strategy whose independent_of_results() is true may be asked for its next proposal before
//   observe() of the previous one (the loop then compiles one batch ahead of measurement).
// Under the same seed, space and history a strategy proposes the same configs in the same order.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "search/config_space.h"
#include "search/transfer_learner.h"

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
  /// Up to n new configs; empty when nothing is left to propose.
  virtual std::vector<Config> propose(size_t n) = 0;
  /// Results of measured configs (same order in both vectors), whoever measured them: this strategy's last
  /// proposal, the database's records on resume, another process sharing the database. An observed config
  /// is never proposed from then on. A learning strategy learns from them at once (the model-guided one
  /// refits its model on everything it has observed at every call, an empty one included).
  virtual void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) = 0;
  /// True when proposals never depend on results (grid, random).
  virtual bool independent_of_results() const { return false; }
  /// The relative speed-up over the best config observed so far that the last proposal is expected to
  /// bring, as the strategy's own model sees it (0.05: 5% faster); negative when the strategy has no such
  /// estimate (the default; early stopping on expected improvement then never triggers).
  virtual double expected_improvement() const { return -1; }
  /// The strategy's side that learns from other workloads and saved models; nullptr (the default) for a
  /// strategy that learns nothing from them.
  virtual TransferLearner* transfer_learner() { return nullptr; }
};

/// Strategy names the factory knows, comma separated.
std::string strategy_names();
/// Throws std::invalid_argument naming the allowed names when `name` is not a strategy.
void check_strategy_name(const std::string& name);
/// Builds "grid", "random", "ga" or "bo"; throws std::invalid_argument naming the allowed names otherwise ("xgb" is
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
