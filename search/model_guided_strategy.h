// Model-guided search (`--strategy xgb`): a cost model is refit on every
// batch of results, and the model ranks candidates near the best measured
// configs and, by simulated annealing, across the config space.
//
// Per proposal: most of the batch (local_share) is exploitation, the model's
// best-scored unseen configs within two knob changes of the best measured
// config (and one of the next best few); the rest comes from parallel
// annealing chains that start from the best measured configs and random ones;
// each step changes one knob (a valid neighbour) and is accepted by the
// Metropolis rule at a temperature cooled linearly to 0; the best-scored
// unseen configs become that share. A model that gives a
// spread per candidate (an ensemble) is scored by an upper confidence bound,
// mean + kappa x spread, so exploration shrinks as the members come to agree;
// a model without one keeps an epsilon share drawn uniformly at random. Until the model has enough rows it proposes the
// configs a prior (the analytic model, when the tuner supplies one) ranks
// best, with diversity, else at random; batches start small (8) and grow with
// the model's own rows (a quarter of them), so it is refit often early on. A refiner (the tuner compiles candidates and feeds the
// analytic model their real registers and spills) re-scores the prior's best
// few before the first batch is picked from them. Never proposes a config
// already proposed or measured. Deterministic under the seed (given a
// deterministic model, prior and refiner).
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "costmodel/cost_model.h"
#include "search/improvement_estimate.h"
#include "search/strategy.h"

namespace tuner::search {

/// The feature vector of a config (kernel_features of its profile); supplied by the tuner.
using Featurizer = std::function<std::vector<float>(const Config&)>;
/// What is known of a config before any measurement (e.g. minus the log of the analytic model's time):
/// larger = expected faster. Ranks the first proposals while the model has nothing to learn from.
using Prior = std::function<double(const Config&)>;
/// Re-scores configs the prior ranked best with what costs more to learn (the tuner compiles them and feeds
/// the analytic model their real registers and spills): one value per config, in order, on the prior's
/// scale; NaN where it learns nothing more (the prior's own value is kept).
using PriorRefiner = std::function<std::vector<double>(const std::vector<Config>&)>;

struct AnnealingParams {
  int chains = 128;               ///< Parallel annealing chains.
  int steps = 500;                ///< Most steps per chain.
  int patience = 50;              ///< Stop when the candidate set has not improved for this many steps.
  double start_temperature = 1.0; ///< Cooled linearly to 0 over `steps`.
  double ucb_kappa = 1.0;         ///< Candidates are scored mean + ucb_kappa x spread (an upper confidence bound)
                                  ///< when the model gives a spread (an ensemble); 0: the mean alone.
  double epsilon = 0.05;          ///< Share of each batch drawn uniformly at random (exploration), only while the
                                  ///< model gives no spread; with one, the confidence bound explores instead.
  double transfer_only_epsilon = 0.5;  ///< Random share while the model knows only transferred records.
  size_t diversity_pool = 2;      ///< Annealing keeps this many times the batch's model share as candidates...
  double diversity = 0.5;         ///< ...and the batch is picked greedily for rank + this × share of new knob
                                  ///< values (0: plain top of the ranking).
  double local_share = 0.9;       ///< Share of each model-guided batch that is the model's best configs near the
                                  ///< incumbents (local_seeds, local_hops); the rest comes from annealing over
                                  ///< the whole space. 0.9 because exploitation is what the held-out check
                                  ///< rewarded: 81 of 96 cases (xgb N >= random 3N) against 60 for 0 (both with
                                  ///< first_batch 8, batch_growth 0.25), 77 for 0.75, 76 for 0.5 (3 seeds).
  size_t local_seeds = 4;         ///< The best this many measured configs give their one-knob neighbours...
  size_t local_hops = 2;          ///< ...and the best local_hop_seeds of them everything up to this many knob
  size_t local_hop_seeds = 1;     ///< changes away (a constrained space often needs two changes at once, e.g. a
                                  ///< tile and its per-thread share). More hops or seeds let the model's
                                  ///< favourites drift away from the incumbent, which measured worse.
  size_t local_diversity_pool = 1;  ///< The local picks are chosen for diversity among the model's best this many
                                    ///< times their number (1: its top local candidates).
  size_t min_rows = 8;            ///< Rows (own + transferred) before the model is trusted (random until then).
  double transfer_half_life = 32; ///< Own rows at which a transferred row weighs half as much as an own one.
  size_t transfer_check_rows = 16;  ///< Successful own trials after which transferred rows are dropped when the
                                    ///< model (trained with them) ordered their speeds no better than chance.
  size_t first_batch = 8;         ///< Most configs per proposal while the model has few of its own rows: the
                                  ///< first (random) batch, and the floor of the growth below.
  double batch_growth = 0.25;     ///< Then at most batch_growth x the model's own rows per proposal: batches of
                                  ///< 8, 8, 8, 8, 8, 10, 12, 15... (1: 8, 8, 16, 32, 64), so the model is refit
                                  ///< and steers more often while it knows little; the caller's n caps it.
  size_t prior_pool = 4096;       ///< With a prior: configs it ranks for the first batch (all of a smaller space).
  size_t prior_refine = 64;       ///< With a refiner: the prior's best this many are re-scored by it (compiled,
                                  ///< the tuner's refiner) before the first batch is picked; 0: none.
  size_t prior_first_batch = 8;   ///< With a prior: the most configs of the first proposal (its top picks; the
                                  ///< model steers from the next one); 0: first_batch's cap.
  size_t prior_diversity_pool = 2;  ///< With a prior: its first batch is picked for diversity among the prior's
                                    ///< best this many times the batch.
};

class ModelGuidedStrategy final : public SearchStrategy, public TransferLearner {
 public:
  ModelGuidedStrategy(const ConfigSpace& space, uint64_t seed, std::unique_ptr<costmodel::CostModel> model,
                      Featurizer featurize, AnnealingParams params = {}, Prior prior = {},
                      PriorRefiner refine = {});
  std::string name() const override { return "xgb"; }
  std::vector<Config> propose(size_t n) override;
  /// Measured configs (own proposals, resumed history, other processes' results): never proposed again,
  /// training rows from now on; then refits the model on every row (own + transferred), even when
  /// `configs` is empty.
  void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) override;
  TransferLearner* transfer_learner() override { return this; }
  /// What the last proposal is expected to add to the best speed (search::ImprovementEstimate: the model's
  /// scores calibrated on its measured rows, trusted as far as its earlier predictions held); -1 before
  /// the model has made enough predictions that were then measured.
  double expected_improvement() const override { return expected_improvement_; }

  /// Adds a record of another workload or GPU (transfer learning): its features, and its speed relative
  /// to the best of its own workload and GPU (0 for failures). Transferred rows train the model with
  /// weight min(1, h / transferred rows) / (1 + own rows / h), h = transfer_half_life: together at most
  /// h own rows' worth, and less as the session's own data arrives. No minimum record count. Once
  /// transfer_check_rows own rows are measured, the transferred rows are dropped for good if the model's
  /// scores (made before each measurement) order those rows no better than chance.
  void add_transfer(std::vector<float> features, float relative_speed) override;
  size_t transfer_rows() const override { return transfer_targets_.size(); }
  bool start_from_saved(const std::string& bytes, std::string* error) override;
  std::string saved_model() const override { return fitted_here_ ? model_->save() : std::string(); }
  size_t fitted_rows() const override { return fitted_rows_; }
  /// True once the transferred rows were dropped (they did not predict this workload's results).
  bool transfer_dropped() const { return transfer_dropped_; }
  /// Configs the refiner re-scored (0 without one, or before the first proposal).
  size_t prior_refined() const { return prior_refined_; }
  /// Why the last refit failed (empty when it worked).
  const std::string& model_error() const { return model_error_; }

 private:
  /// The proposal itself (propose() adds its expected improvement).
  std::vector<Config> pick(size_t n);
  void add_row(const Config& c, const TrialOutcome& outcome);
  void refit();
  std::vector<uint64_t> anneal(size_t want);
  std::vector<uint64_t> diverse_pick(const std::vector<uint64_t>& ranked, size_t want) const;
  /// Acquisition score per config: mean + ucb_kappa x spread (empty when the model cannot predict).
  std::vector<float> score(const std::vector<Config>& configs);
  std::vector<Config> prior_pick(size_t want);
  /// Up to `want` unseen configs near the best measured ones (local_seeds, local_hops), best-scored first.
  std::vector<uint64_t> local_pick(size_t want);

  const ConfigSpace& space_;
  SeenSet seen_;
  Rng rng_;
  std::unique_ptr<costmodel::CostModel> model_;
  Featurizer featurize_;
  AnnealingParams params_;
  Prior prior_;
  PriorRefiner refine_;
  size_t prior_refined_ = 0;
  std::map<uint64_t, double> refined_;  ///< The refiner's values by space index.
  bool model_ready_ = false;
  bool fitted_here_ = false;
  bool model_has_spread_ = false;
  bool transfer_dropped_ = false;
  /// Per successful own trial while the model knew transferred rows: (its score before measurement, speed).
  std::vector<std::pair<float, double>> transfer_checks_;  ///< The last scoring saw a positive spread (exploration by the bound).
  size_t fitted_rows_ = 0;
  std::string model_error_;
  ImprovementEstimate improvement_;
  double expected_improvement_ = -1;
  // Training data: one row per measured config.
  costmodel::FeatureMatrix rows_;
  std::vector<double> speeds_;  ///< 1 / time_ms, 0 for failures.
  std::vector<std::pair<double, Config>> best_measured_;  ///< (speed, config), best first, a few kept.
  costmodel::FeatureMatrix transfer_rows_;  ///< Records of other workloads and GPUs.
  std::vector<float> transfer_targets_;
};

}  // namespace tuner::search
