// Bayesian optimisation (`--strategy bo`), as Kernel Tuner offers it: a
// Gaussian process (search/gaussian_process.h, Matérn 5/2) on the numeric
// knobs — each scaled to [0, 1], on a log2 scale when its values are powers
// of two spanning a factor of 4 or more (tiles, vector widths), else linearly
// (stages, padding) — models log(time); expected improvement
// (EI) picks the next configs among a candidate pool: every unseen config of
// a small space, else a uniform sample plus the one-knob neighbours of the
// best configs measured. A batch is chosen greedily, each pick damping the EI
// of candidates near it (local penalisation), so a batch does not crowd one
// spot. The first batch is `initial` random configs; later batches grow with
// the measurements (at most as many as measured so far). Failed trials count
// as slower than the slowest measured. Deterministic under the seed.
//
// What the next batch is expected to gain (--min-improvement) is xgb's
// calibrated estimate (search/improvement_estimate.h) on the process's mean
// log speed: judged by how well the process foresaw the configs it proposed
// and then saw measured, with no estimate before 32 of them. The process's
// own expected improvement was sure of itself on the random first batch alone:
// sessions stopped after 8-16 trials 20-75% short of the best at 5%.
#pragma once

#include <vector>

#include "search/gaussian_process.h"
#include "search/improvement_estimate.h"
#include "search/strategy.h"

namespace tuner::search {

struct BayesOptParams {
  size_t initial = 8;        ///< Random configs in the first batch (before the process is fitted).
  size_t max_rows = 256;     ///< Most measurements the process is fitted on (the best half, then evenly spaced).
  size_t pool = 2048;        ///< Candidates sampled per proposal (every unseen config when the space is smaller).
  size_t neighbours_of = 8;  ///< Best measured configs whose one-knob neighbours join the candidates.
  double noise = 1e-3;       ///< Noise variance of the standardised targets.
};

class BayesOptStrategy final : public SearchStrategy {
 public:
  BayesOptStrategy(const ConfigSpace& space, uint64_t seed, BayesOptParams params = {});
  std::string name() const override { return "bo"; }
  std::vector<Config> propose(size_t n) override;
  void observe(const std::vector<Config>& configs, const std::vector<TrialOutcome>& outcomes) override;
  /// The speed-up the last proposal is expected to bring over the best measured (0.05: 5%); -1 for no estimate.
  double expected_improvement() const override { return expected_improvement_; }

  /// A config's coordinates in [0, 1]^knobs.
  std::vector<double> coordinates(const Config& c) const;

 private:
  void fit();
  std::vector<uint64_t> candidates();
  /// The fitted process's mean log speed (minus its mean log time) at a config.
  double mean_log_speed(const Config& c) const;

  const ConfigSpace& space_;
  SeenSet seen_;
  Rng rng_;
  BayesOptParams params_;
  std::vector<double> low_, span_;  ///< Per knob: the scaled minimum and range.
  std::vector<bool> log_scale_;
  std::vector<Config> configs_;     ///< Measured, in order.
  std::vector<double> log_time_;    ///< log(time_ms); NaN for failures.
  GaussianProcess gp_;
  double best_log_time_ = 0;
  double expected_improvement_ = -1;
  ImprovementEstimate improvement_;
};

}  // namespace tuner::search
