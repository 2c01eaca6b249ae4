// The learned cost model: gradient-boosted trees (XGBoost) that rank configs
// from their feature vectors, in the manner of AutoTVM; it implements the
// CostModel interface (cost_model.h, which also defines FeatureMatrix). This file owns the
// booster's life cycle (fit from scratch, predict, save/load as bytes) and
// the rank:pairwise training loss with per-row weights; it turns every
// XGBoost failure into an error value carrying XGBoost's own message.
//
// It is not responsible for featurisation (which knobs or loop features go
// into a row), for normalising targets (callers pass GFLOP/s divided by the
// best seen, failed trials as 0), for deciding when to refit (AutoTVM refits
// every plan of 64 measurements), nor for storing models in the database.
// The XGBoost C API is included only by xgboost_model.cpp.
//
// Scores are "larger = predicted better" and only their order is meaningful.
//
// Per-row weights: XGBoost 1.7 accepts only one weight per query group for
// its ranking objectives, so for objective "rank:pairwise" the pairwise
// logistic loss is computed here (same loss and pair sampling as XGBoost's:
// for each row, `pairs_per_row` random partners with a different target;
// gradient p - 1, hessian 2p(1 - p) on p = sigmoid(s_better - s_worse)) and
// each pair is weighted by the product of its rows' weights, normalised so
// the largest weight is 1. Rows of weight 0 are dropped before training.
// Any other objective is handed to XGBoost as is (row weights as XGBoost's
// "weight"; one query group of all rows for other "rank:" objectives, which
// then accept only uniform weights).
//
// Thread-safety: an XgbModel is not thread-safe. predict() is const but
// XGBoost mutates the booster's prediction cache, so call it from one thread
// at a time; distinct XgbModel objects may be used from different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"

namespace tuner::costmodel {

/// Training parameters; defaults are AutoTVM's XGBoost settings.
struct XgbParams {
  int max_depth = 3;              ///< Maximum depth of each tree.
  double eta = 0.3;               ///< Learning rate (shrinkage of each tree's leaf values).
  double gamma = 1e-4;            ///< Minimum loss reduction to split a leaf.
  double min_child_weight = 1;    ///< Minimum hessian sum in a child.
  double lambda = 1;              ///< L2 regularisation on leaf values.
  int rounds = 60;                ///< Boosting rounds per fit (upper bound when early stopping).
  /// Stop after this many rounds without gain in the training-set top-k
  /// recall score (see early_stop_top_k), as AutoTVM does, and keep only the
  /// trees up to the best round (AutoTVM keeps them all); 0 disables it.
  int early_stop_rounds = 20;
  /// k of the early-stopping score: the mean over j = 1..k of the fraction of
  /// the predicted top-j whose target reaches the true j-th best target,
  /// computed on the training rows (AutoTVM: recall@plan_size, plan_size 64).
  int early_stop_top_k = 64;
  std::string objective = "rank:pairwise";  ///< XGBoost objective; "rank:pairwise" is computed here (see above).
  int pairs_per_row = 1;          ///< rank:pairwise: random partners per row and round (XGBoost's num_pairsample).
  std::string tree_method = "hist";  ///< XGBoost tree_method ("hist", "exact", "approx").
  /// XGBoost nthread; 0 = XGBoost's default (all cores). 1 by default: at a
  /// tuner's sizes more threads gain little, and libgomp's spinning barriers
  /// on a busy machine (parallel compiles) slowed a 2000 x 40 fit with 2
  /// threads on 2 cores from 0.17 s to 4 s; with 1 thread it stays 0.17 s.
  int threads = 1;
  /// Seeds pair sampling and XGBoost's "seed" (taken modulo 2^63): fits on
  /// the same data with the same parameters give bit-identical predictions.
  uint64_t seed = 1;
};

/// An XGBoost booster that ranks configs: the CostModel the tuner uses.
/// Move-only.
class XgbModel final : public CostModel {
 public:
  explicit XgbModel(XgbParams p = {});
  ~XgbModel() override;
  XgbModel(XgbModel&&) noexcept;
  XgbModel& operator=(XgbModel&&) noexcept;
  XgbModel(const XgbModel&) = delete;
  XgbModel& operator=(const XgbModel&) = delete;

  /// Trains a new booster from scratch on (x, targets); larger targets are
  /// better (e.g. GFLOP/s normalised by the best seen, failed trials 0).
  /// weights: per-row weights >= 0 (empty = all 1), e.g. to down-weight
  /// transferred history; rows of weight 0 are ignored.
  /// Returns false with *error set (when error is non-null) on bad input
  /// (shape mismatch, NaN target, negative weight, fewer than 2 rows of
  /// positive weight) or when XGBoost fails; the model then stays as it was.
  bool fit(const FeatureMatrix& x, const std::vector<float>& targets, const std::vector<float>& weights,
           std::string* error) override;

  /// One score per row of x, larger = predicted better; empty when never
  /// fitted and on failure (see the overload below).
  std::vector<float> predict(const FeatureMatrix& x) const override;

  /// One score per row of x, larger = predicted better. Empty when the model
  /// was never fitted or loaded, and on failure (x.cols differs from the
  /// trained feature count, or XGBoost fails), with *error set when non-null.
  std::vector<float> predict(const FeatureMatrix& x, std::string* error) const;

  /// True once a fit() or load() has succeeded.
  bool fitted() const;

  /// Number of features the booster was trained on (0 when not fitted).
  size_t num_features() const { return num_features_; }

  /// Number of boosting rounds kept in the booster (after early stopping).
  int rounds() const { return rounds_; }

  /// The booster as bytes (XGBoost's UBJSON model format, exact), for load().
  /// Empty when not fitted.
  std::string save() const override;

  /// Replaces the booster by one saved with save(). On failure (garbage,
  /// truncated bytes) returns false with *error set and keeps the old model.
  bool load(const std::string& bytes, std::string* error) override;

  const XgbParams& params() const { return params_; }

  /// Scores of several fitted models on the same rows, the rows copied into XGBoost once (an ensemble's
  /// members): out[m] for models[m]. Empty, with *error set when non-null, when any prediction fails.
  static std::vector<std::vector<float>> predict_all(const std::vector<const XgbModel*>& models,
                                                     const FeatureMatrix& x, std::string* error = nullptr);

 private:
  /// Frees a BoosterHandle (void* in XGBoost's C API) with XGBoosterFree.
  struct BoosterDeleter {
    void operator()(void* handle) const;
  };
  using BoosterPtr = std::unique_ptr<void, BoosterDeleter>;

  XgbParams params_;
  BoosterPtr booster_;
  size_t num_features_ = 0;
  int rounds_ = 0;
};

}  // namespace tuner::costmodel
